package controller

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/upshift-io/upshift/services/updatestatus/assess"
)

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
	writes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "upshift_update_status_writes_total",
		Help: "Write requests to the apiserver, by kind of object written.",
	}, []string{"kind"})

	// lastSuccess is the Unix time of the last successful computation; 0 until then.
	lastSuccess      atomic.Int64
	sinceLastSuccess = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "upshift_update_status_seconds_since_last_success",
		Help: "Seconds since the update status was last computed and published successfully; -1 before the first time.",
	}, func() float64 {
		t := lastSuccess.Load()
		if t == 0 {
			return -1
		}
		return time.Since(time.Unix(t, 0)).Seconds()
	})
)

func init() {
	metrics.Registry.MustRegister(reconcileDuration, insightCount, controlPlaneCompletion, writes, sinceLastSuccess)
}

// observe records the sizes of a computation.
func observe(r *assess.Result) {
	insightCount.Reset()
	none := "none"
	if cp := r.Status.ControlPlane; cp != nil {
		if cp.ClusterVersion != nil {
			insightCount.WithLabelValues("clusterVersion", none).Set(1)
			controlPlaneCompletion.Set(float64(cp.ClusterVersion.Completion))
		}
		insightCount.WithLabelValues("clusterOperator", none).Set(float64(len(cp.ClusterOperators)))
		if cp.Pool != nil {
			insightCount.WithLabelValues("pool", none).Add(1)
		}
	}
	insightCount.WithLabelValues("pool", none).Add(float64(len(r.Status.WorkerPools)))
	insightCount.WithLabelValues("node", none).Set(float64(len(r.Nodes)))
	for _, h := range r.Status.Health {
		insightCount.WithLabelValues("health", string(h.Impact.Level)).Inc()
	}
}
