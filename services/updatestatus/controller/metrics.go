package controller

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
)

// The metric names are an interface: the chart's alerts and dashboard use
// them. Pool labels are bounded by the status itself (at most 32 worker
// pools plus master); node names never become labels.
var (
	reconcileDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "upshift_update_status_reconcile_duration_seconds",
		Help:    "Time to recompute and publish the whole update status.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	})
	insightCount = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "upshift_update_status_insights",
		Help: "Insights in the last computation, by type (clusterVersion, clusterOperator, pool, node, health) and level (health: impact level; others: none).",
	}, []string{"type", "level"})
	controlPlaneCompletion = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "upshift_update_status_control_plane_completion_percent",
		Help: "Share of platform ClusterOperators at the target version, 0-100.",
	})
	controlPlaneAssessment = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "upshift_update_status_control_plane_assessment",
		Help: "State set of the control plane's assessment: 1 for the current value, 0 for the others.",
	}, []string{"assessment"})
	updatingGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "upshift_update_status_updating",
		Help: "1 while the control plane or a worker pool is updating, else 0.",
	})
	poolCompletion = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "upshift_update_status_pool_completion_percent",
		Help: "Share of a MachineConfigPool's nodes that are updated, 0-100.",
	}, []string{"pool"})
	poolNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "upshift_update_status_pool_nodes",
		Help: "Nodes of a MachineConfigPool by update phase (Draining, Updating, Rebooting, Paused, Pending, Completed).",
	}, []string{"pool", "phase"})
	poolAssessment = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "upshift_update_status_pool_assessment",
		Help: "State set of a MachineConfigPool's assessment: 1 for the current value, 0 for the others.",
	}, []string{"pool", "assessment"})
	writes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "upshift_update_status_writes_total",
		Help: "Write requests to the apiserver, by kind of object written.",
	}, []string{"kind"})
	writeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "upshift_update_status_write_errors_total",
		Help: "Failed write requests to the apiserver that are retried outside a recomputation, by kind of object written.",
	}, []string{"kind"})
	pendingWrites = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "upshift_update_status_pending_writes",
		Help: "Objects with a write handed over and not done yet (waiting, under way or to be retried), by kind of object written.",
	}, []string{"kind"})
	lastSuccess = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "upshift_update_status_last_success_timestamp_seconds",
		Help: "Unix time at which the status of a recomputation was last written (or found current) while every node insight's last write had succeeded; absent before the first.",
	})
	// lastSuccess is registered only once it has a value: a 0 would read as
	// "last success in 1970" to an alert on its age.
	registerLastSuccess sync.Once
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
		assess.PhasePaused, assess.PhasePending, assess.PhaseUpdated,
	}
)

func init() {
	metrics.Registry.MustRegister(reconcileDuration, insightCount, controlPlaneCompletion, controlPlaneAssessment,
		updatingGauge, poolCompletion, poolNodes, poolAssessment, writes, writeErrors, pendingWrites)
	// Exported from the start, so that alerts and dashboards have a series.
	for _, kind := range []string{"nodeprogressinsight", "upgradestatus"} {
		writeErrors.WithLabelValues(kind)
		pendingWrites.WithLabelValues(kind)
	}
}

// markSuccess records, at now, that a recomputation's status was written
// (or had nothing to write) while no node insight write was failing.
func markSuccess(now time.Time) {
	lastSuccess.Set(float64(now.UnixNano()) / 1e9)
	registerLastSuccess.Do(func() { metrics.Registry.MustRegister(lastSuccess) })
}

// poolsSeen are the pools with series, so that pools that go away lose theirs.
var (
	poolsMu   sync.Mutex
	poolsSeen = map[string]bool{}
)

// observe records the state of a computation.
func observe(r *assess.Result) {
	insightCount.Reset()
	none := "none"
	pools := map[string]*updatev1alpha1.MachineConfigPoolStatusInsight{}
	if cp := r.Status.ControlPlane; cp != nil {
		if cv := cp.ClusterVersion; cv != nil {
			insightCount.WithLabelValues("clusterVersion", none).Set(1)
			controlPlaneCompletion.Set(float64(cv.Completion))
			for _, a := range controlPlaneAssessments {
				controlPlaneAssessment.WithLabelValues(string(a)).Set(boolValue(a == cv.Assessment))
			}
		}
		insightCount.WithLabelValues("clusterOperator", none).Set(float64(len(cp.ClusterOperators)))
		if cp.Pool != nil {
			insightCount.WithLabelValues("pool", none).Add(1)
			pools[cp.Pool.Name] = cp.Pool
		}
	}
	for i := range r.Status.WorkerPools {
		pools[r.Status.WorkerPools[i].Name] = &r.Status.WorkerPools[i].Pool
	}
	insightCount.WithLabelValues("pool", none).Add(float64(len(r.Status.WorkerPools)))
	insightCount.WithLabelValues("node", none).Set(float64(len(r.Nodes)))
	for _, h := range r.Status.Health {
		insightCount.WithLabelValues("health", string(h.Impact.Level)).Inc()
	}
	updatingGauge.Set(boolValue(isUpdating(&r.Status)))

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

	poolsMu.Lock()
	defer poolsMu.Unlock()
	for name, p := range pools {
		poolCompletion.WithLabelValues(name).Set(float64(p.Completion))
		for _, a := range poolAssessments {
			poolAssessment.WithLabelValues(name, string(a)).Set(boolValue(a == p.Assessment))
		}
		for _, ph := range nodePhases {
			poolNodes.WithLabelValues(name, string(ph)).Set(float64(phases[name][string(ph)]))
		}
		poolsSeen[name] = true
	}
	for name := range poolsSeen {
		if pools[name] == nil {
			for _, v := range []*prometheus.GaugeVec{poolCompletion, poolAssessment, poolNodes} {
				v.DeletePartialMatch(prometheus.Labels{"pool": name})
			}
			delete(poolsSeen, name)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
