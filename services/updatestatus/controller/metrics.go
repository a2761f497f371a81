package controller

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
)

// Metrics are the controller's Prometheus metrics. The names are an
// interface: the chart's alerts and dashboard use them. Pool labels are
// bounded by the status itself (at most 32 worker pools plus master); node
// names never become labels.
type Metrics struct {
	reg prometheus.Registerer

	reconcileDuration      prometheus.Histogram
	insightCount           *prometheus.GaugeVec
	controlPlaneCompletion prometheus.Gauge
	controlPlaneAssessment *prometheus.GaugeVec
	updating               prometheus.Gauge
	poolCompletion         *prometheus.GaugeVec
	poolNodes              *prometheus.GaugeVec
	poolAssessment         *prometheus.GaugeVec
	writes                 *prometheus.CounterVec
	writeErrors            *prometheus.CounterVec
	pendingWrites          *prometheus.GaugeVec
	lastSuccess            prometheus.Gauge
	// lastSuccess is registered only once it has a value: a 0 would read as
	// "last success in 1970" to an alert on its age.
	registerLastSuccess sync.Once
	successMu           sync.Mutex
	lastSuccessAt       time.Time

	// poolsSeen are the pools with series, so that pools that go away lose
	// theirs.
	poolsMu   sync.Mutex
	poolsSeen map[string]bool
}

// NewMetrics creates the controller's metrics and registers them with reg
// (the manager's registry in the binary, a fresh one in a test).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reg: reg,
		reconcileDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "upshift_update_status_reconcile_duration_seconds",
			Help:    "Time to recompute and publish the whole update status.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		insightCount: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_update_status_insights",
			Help: "Insights in the last computation, by type (clusterVersion, clusterOperator, pool, node, health) and level (health: impact level; others: none).",
		}, []string{"type", "level"}),
		controlPlaneCompletion: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "upshift_update_status_control_plane_completion_percent",
			Help: "Share of platform ClusterOperators at the target version, 0-100.",
		}),
		controlPlaneAssessment: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_update_status_control_plane_assessment",
			Help: "State set of the control plane's assessment: 1 for the current value, 0 for the others.",
		}, []string{"assessment"}),
		updating: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "upshift_update_status_updating",
			Help: "1 while the control plane or a worker pool is updating, else 0.",
		}),
		poolCompletion: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_update_status_pool_completion_percent",
			Help: "Share of a MachineConfigPool's nodes that are updated, 0-100.",
		}, []string{"pool"}),
		poolNodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_update_status_pool_nodes",
			Help: "Nodes of a MachineConfigPool by update phase (Draining, Updating, Rebooting, Paused, Gated, Pending, Completed; Gated: held by a node-gate run).",
		}, []string{"pool", "phase"}),
		poolAssessment: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_update_status_pool_assessment",
			Help: "State set of a MachineConfigPool's assessment: 1 for the current value, 0 for the others.",
		}, []string{"pool", "assessment"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "upshift_update_status_writes_total",
			Help: "Write requests to the apiserver, by kind of object written.",
		}, []string{"kind"}),
		writeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "upshift_update_status_write_errors_total",
			Help: "Failed write requests to the apiserver that are retried outside a recomputation, by kind of object written.",
		}, []string{"kind"}),
		pendingWrites: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_update_status_pending_writes",
			Help: "Objects with a write handed over and not done yet (waiting, under way or to be retried), by kind of object written.",
		}, []string{"kind"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "upshift_update_status_last_success_timestamp_seconds",
			Help: "Unix time of the latest cluster read whose status was written (or found current) while every node insight's last write had succeeded; absent before the first.",
		}),
		poolsSeen: map[string]bool{},
	}
	reg.MustRegister(m.reconcileDuration, m.insightCount, m.controlPlaneCompletion, m.controlPlaneAssessment,
		m.updating, m.poolCompletion, m.poolNodes, m.poolAssessment, m.writes, m.writeErrors, m.pendingWrites)
	// Exported from the start, so that alerts and dashboards have a series.
	for _, kind := range []string{kindInsight, kindStatus} {
		m.writeErrors.WithLabelValues(kind)
		m.pendingWrites.WithLabelValues(kind)
	}
	return m
}

// The kinds of object written, as the write metrics label them.
const (
	kindInsight   = "nodeprogressinsight"
	kindStatus    = "upgradestatus"
	kindConfigMap = "configmap"
)

// Values of the state sets: every value the API defines.
var (
	controlPlaneAssessments = []updatev1alpha1.ControlPlaneAssessment{
		updatev1alpha1.ControlPlaneAssessmentUnknown, updatev1alpha1.ControlPlaneAssessmentProgressing,
		updatev1alpha1.ControlPlaneAssessmentSlow, updatev1alpha1.ControlPlaneAssessmentStalled,
		updatev1alpha1.ControlPlaneAssessmentCompleted, updatev1alpha1.ControlPlaneAssessmentDegraded,
	}
	poolAssessments = []updatev1alpha1.PoolAssessment{
		updatev1alpha1.PoolPending, updatev1alpha1.PoolCompleted, updatev1alpha1.PoolDegraded,
		updatev1alpha1.PoolExcluded, updatev1alpha1.PoolProgressing,
	}
	nodePhases = []assess.Phase{
		assess.PhaseDraining, assess.PhaseUpdating, assess.PhaseRebooting,
		assess.PhasePaused, assess.PhaseGated, assess.PhasePending, assess.PhaseUpdated,
	}
)

// markSuccess records that the status of a recomputation that read the
// cluster at seen was written (or had nothing to write) while no node
// insight write was failing. The time is the read's, not the write's: the
// metric says how current the published status is, and a recomputation
// that read the cluster before a change and finished after it does not
// stand for the change. It never moves back.
func (m *Metrics) markSuccess(seen time.Time) {
	m.successMu.Lock()
	defer m.successMu.Unlock()
	if !seen.After(m.lastSuccessAt) {
		return
	}
	m.lastSuccessAt = seen
	m.lastSuccess.Set(float64(seen.UnixNano()) / 1e9)
	m.registerLastSuccess.Do(func() { m.reg.MustRegister(m.lastSuccess) })
}

// observe records the state of a computation.
func (m *Metrics) observe(r *assess.Result) {
	m.insightCount.Reset()
	none := "none"
	pools := map[string]*updatev1alpha1.MachineConfigPoolStatusInsight{}
	if cp := r.Status.ControlPlane; cp != nil {
		if cv := cp.ClusterVersion; cv != nil {
			m.insightCount.WithLabelValues("clusterVersion", none).Set(1)
			m.controlPlaneCompletion.Set(float64(cv.Completion))
			for _, a := range controlPlaneAssessments {
				m.controlPlaneAssessment.WithLabelValues(string(a)).Set(boolValue(a == cv.Assessment))
			}
		}
		m.insightCount.WithLabelValues("clusterOperator", none).Set(float64(len(cp.ClusterOperators)))
		if cp.Pool != nil {
			m.insightCount.WithLabelValues("pool", none).Add(1)
			pools[cp.Pool.Name] = cp.Pool
		}
	}
	for i := range r.Status.WorkerPools {
		pools[r.Status.WorkerPools[i].Name] = &r.Status.WorkerPools[i].Pool
	}
	m.insightCount.WithLabelValues("pool", none).Add(float64(len(r.Status.WorkerPools)))
	m.insightCount.WithLabelValues("node", none).Set(float64(len(r.Nodes)))
	for _, h := range r.Status.Health {
		m.insightCount.WithLabelValues("health", string(h.Impact.Level)).Inc()
	}
	m.updating.Set(boolValue(isUpdating(&r.Status)))

	phases := map[string]map[string]int{}
	for i := range r.Nodes {
		n := &r.Nodes[i]
		if pools[n.PoolResource.Name] == nil {
			continue // a pool the status leaves out has no series either
		}
		if phases[n.PoolResource.Name] == nil {
			phases[n.PoolResource.Name] = map[string]int{}
		}
		if c := meta.FindStatusCondition(n.Conditions, updatev1alpha1.ConditionUpdating); c != nil {
			phases[n.PoolResource.Name][c.Reason]++
		}
	}

	m.poolsMu.Lock()
	defer m.poolsMu.Unlock()
	for name, p := range pools {
		m.poolCompletion.WithLabelValues(name).Set(float64(p.Completion))
		for _, a := range poolAssessments {
			m.poolAssessment.WithLabelValues(name, string(a)).Set(boolValue(a == p.Assessment))
		}
		for _, ph := range nodePhases {
			m.poolNodes.WithLabelValues(name, string(ph)).Set(float64(phases[name][string(ph)]))
		}
		m.poolsSeen[name] = true
	}
	for name := range m.poolsSeen {
		if pools[name] == nil {
			for _, v := range []*prometheus.GaugeVec{m.poolCompletion, m.poolAssessment, m.poolNodes} {
				v.DeletePartialMatch(prometheus.Labels{"pool": name})
			}
			delete(m.poolsSeen, name)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
