// Package metrics exports node-gate's progress: nodes by gate phase, hook
// and gated-update durations, why a run holds nodes back, and the pods the
// drain remediation forced. Durations are observed once, when the status
// records the transition (old status → new status), so a restart that
// re-reads a finished hook does not count it again.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

// Metric names.
const (
	NodesName          = "upshift_node_gate_nodes"
	HookDurationName   = "upshift_node_gate_hook_duration_seconds"
	NodeDurationName   = "upshift_node_gate_node_update_duration_seconds"
	BlockedName        = "upshift_node_gate_blocked"
	PausedName         = "upshift_node_gate_run_paused"
	HookFailuresName   = "upshift_node_gate_hook_failures_total"
	ForcedDrainName    = "upshift_node_gate_forced_drain_actions_total"
	DrainBlockedName   = "upshift_node_gate_drain_blocked_nodes"
	DrainStuckPodsName = "upshift_node_gate_drain_stuck_pods"
)

// NodePhases are the label values of NodesName, all exported (zeros too) so
// that a query never misses a series.
var NodePhases = []nodegatev1alpha1.NodePhase{
	nodegatev1alpha1.NodePending, nodegatev1alpha1.NodePreHooks, nodegatev1alpha1.NodeReleased,
	nodegatev1alpha1.NodeUpdated, nodegatev1alpha1.NodePostHooks, nodegatev1alpha1.NodeCompleted,
	nodegatev1alpha1.NodeFailed, nodegatev1alpha1.NodeSkipped,
}

// Metrics are node-gate's collectors.
type Metrics struct {
	nodes        *prometheus.GaugeVec
	hookDuration *prometheus.HistogramVec
	nodeDuration *prometheus.HistogramVec
	blocked      *prometheus.GaugeVec
	paused       *prometheus.GaugeVec
	hookFailures *prometheus.CounterVec
	forced       *prometheus.CounterVec
	drainBlocked *prometheus.GaugeVec
	stuckPods    *prometheus.GaugeVec
}

// New registers the collectors on reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NodesName,
			Help: "Nodes of a MutexRunConfig's current round by gate phase."}, []string{"run", "phase"}),
		hookDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: HookDurationName,
			Help:    "Duration of hooks that ended, from the creation of their last attempt's Job to node-gate seeing it end, by stage (Pre, Post) and result (Succeeded, Ignored).",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600}}, []string{"stage", "result"}),
		nodeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: NodeDurationName,
			Help:    "Gated update of one node, from its first pre-hook to the end of its post-hooks.",
			Buckets: []float64{30, 60, 120, 300, 600, 900, 1800, 3600, 2 * 3600, 4 * 3600}}, []string{"pool"}),
		blocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: BlockedName,
			Help: "1 while a run holds nodes back, with the reason (a refused start, a hook failure, spec.paused, the control plane, a closed window, alerts)."}, []string{"run", "reason"}),
		paused: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: PausedName,
			Help: "1 while a run is paused (by a failed hook or spec.paused)."}, []string{"run"}),
		hookFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: HookFailuresName,
			Help: "Hook attempts that failed (including retried and ignored ones)."}, []string{"run"}),
		forced: prometheus.NewCounterVec(prometheus.CounterOpts{Name: ForcedDrainName,
			Help: "Steps the drain remediation took on pods, by kind (Delete, ForceDelete, RemoveFinalizers)."}, []string{"kind"}),
		drainBlocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: DrainBlockedName,
			Help: "Released nodes whose drain is blocked past the remediation timeout."}, []string{"run"}),
		stuckPods: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: DrainStuckPodsName,
			Help: "Pods every remediation step was taken on and that are still on their node."}, []string{"run"}),
	}
	reg.MustRegister(m.nodes, m.hookDuration, m.nodeDuration, m.blocked, m.paused, m.hookFailures, m.forced, m.drainBlocked, m.stuckPods)
	for _, k := range []commonv1alpha1.DrainStep{commonv1alpha1.DrainStepDelete, commonv1alpha1.DrainStepForceDelete, commonv1alpha1.DrainStepRemoveFinalizers} {
		m.forced.WithLabelValues(string(k))
	}
	return m
}

// Observe exports a run's new status; old is the status it replaces (the
// transitions between them are the observations).
func (m *Metrics) Observe(run string, old, cur *nodegatev1alpha1.MutexRunConfigStatus, blockedReason string, drainBlocked, stuckPods int) {
	count := map[nodegatev1alpha1.NodePhase]int{}
	for _, r := range cur.Nodes {
		count[r.Phase]++
	}
	for _, ph := range NodePhases {
		m.nodes.WithLabelValues(run, string(ph)).Set(float64(count[ph]))
	}
	m.blocked.DeletePartialMatch(prometheus.Labels{"run": run})
	if blockedReason != "" {
		m.blocked.WithLabelValues(run, blockedReason).Set(1)
	}
	paused := 0.0
	if cur.Phase == nodegatev1alpha1.RunPaused || cur.PausedGeneration != 0 {
		paused = 1
	}
	m.paused.WithLabelValues(run).Set(paused)
	m.hookFailures.WithLabelValues(run)
	m.drainBlocked.WithLabelValues(run).Set(float64(drainBlocked))
	m.stuckPods.WithLabelValues(run).Set(float64(stuckPods))

	prevNodes := map[string]*nodegatev1alpha1.NodeRecord{}
	for i := range old.Nodes {
		prevNodes[old.Nodes[i].Name] = &old.Nodes[i]
	}
	sameRound := old.RunID == cur.RunID
	for _, r := range cur.Nodes {
		var p *nodegatev1alpha1.NodeRecord
		if sameRound {
			p = prevNodes[r.Name]
		}
		if r.Phase == nodegatev1alpha1.NodeCompleted && (p == nil || p.Phase != nodegatev1alpha1.NodeCompleted) &&
			r.StartTime != nil && r.CompletionTime != nil {
			m.nodeDuration.WithLabelValues(r.Pool).Observe(r.CompletionTime.Sub(r.StartTime.Time).Seconds())
		}
		prevHooks := map[string]nodegatev1alpha1.HookRecord{}
		if p != nil {
			for _, h := range p.Hooks {
				prevHooks[hookKey(h)] = h
			}
		}
		for _, h := range r.Hooks {
			ph, had := prevHooks[hookKey(h)]
			// A failed attempt shows as a new attempt number (retry) or as
			// the Failed/Ignored phase.
			if had && ph.Attempts == h.Attempts && ph.Phase == h.Phase {
				continue
			}
			switch {
			case h.Phase == nodegatev1alpha1.HookSucceeded && ph.Phase != nodegatev1alpha1.HookSucceeded:
				m.observeHook(h, "Succeeded")
			case h.Phase == nodegatev1alpha1.HookFailed && ph.Phase != nodegatev1alpha1.HookFailed,
				h.Phase == nodegatev1alpha1.HookIgnored && ph.Phase != nodegatev1alpha1.HookIgnored && h.LastError != "":
				m.observeHook(h, string(h.Phase))
				m.hookFailures.WithLabelValues(run).Inc()
			case had && h.Phase == nodegatev1alpha1.HookRunning && h.Attempts > ph.Attempts && ph.Attempts > 0:
				// A retry: the previous attempt failed.
				m.hookFailures.WithLabelValues(run).Inc()
			}
		}
	}
}

func (m *Metrics) observeHook(h nodegatev1alpha1.HookRecord, result string) {
	// A failed attempt has no completion time in the status (the Job's end
	// is not recorded): it is counted, not timed.
	if h.StartTime == nil || h.CompletionTime == nil {
		return
	}
	m.hookDuration.WithLabelValues(string(h.Stage), result).Observe(h.CompletionTime.Sub(h.StartTime.Time).Seconds())
}

func hookKey(h nodegatev1alpha1.HookRecord) string {
	return h.Rule + "/" + string(h.Stage) + "/" + h.Name
}

// Forced counts one drain remediation step.
func (m *Metrics) Forced(step commonv1alpha1.DrainStep) {
	m.forced.WithLabelValues(string(step)).Inc()
}

// Forget drops a deleted run's series.
func (m *Metrics) Forget(run string) {
	for _, v := range []*prometheus.GaugeVec{m.nodes, m.blocked, m.paused, m.drainBlocked, m.stuckPods} {
		v.DeletePartialMatch(prometheus.Labels{"run": run})
	}
	m.hookFailures.DeletePartialMatch(prometheus.Labels{"run": run})
}
