package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/services/mcptracker/track"
)

// Metrics are the mcp-tracker's Prometheus metrics. Every label is a pool
// name or a phase name: bounded, never a node name.
type Metrics struct {
	nodes         *prometheus.GaugeVec
	stuck         *prometheus.GaugeVec
	degraded      *prometheus.GaugeVec
	poolStart     *prometheus.GaugeVec
	poolComplete  *prometheus.GaugeVec
	poolDuration  *prometheus.GaugeVec
	nodeDurations *prometheus.HistogramVec
	writes        prometheus.Counter

	pools map[string]bool // pools with series, to delete those of gone pools
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_mcp_tracker_nodes",
			Help: "Nodes of each MachineConfigPool by update state (pending, draining, updating, rebooting, done, degraded) towards the pool's target configuration.",
		}, []string{"pool", "state"}),
		stuck: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_mcp_tracker_nodes_stuck",
			Help: "Nodes of each pool that have stayed in one updating or degraded state longer than the stuck threshold.",
		}, []string{"pool"}),
		degraded: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_mcp_tracker_pool_degraded",
			Help: "1 when a node of the pool is degraded or the pool reports Degraded, else 0.",
		}, []string{"pool"}),
		poolStart: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_mcp_tracker_pool_update_start_timestamp_seconds",
			Help: "When the pool's latest update started: the first node told to move to the pool's target configuration.",
		}, []string{"pool"}),
		poolComplete: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_mcp_tracker_pool_update_complete_timestamp_seconds",
			Help: "When the pool's latest update completed (absent while it runs).",
		}, []string{"pool"}),
		poolDuration: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_mcp_tracker_pool_update_duration_seconds",
			Help: "How long the pool's last completed update took; a running update's time so far is time() minus the start timestamp.",
		}, []string{"pool"}),
		nodeDurations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "upshift_mcp_tracker_node_update_duration_seconds",
			Help:    "Time from a node being told to move to its pool's target configuration to it running it with state Done.",
			Buckets: []float64{30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400},
		}, []string{"pool"}),
		writes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "upshift_mcp_tracker_status_writes_total",
			Help: "Server-side applies of UpgradeConfig status by the mcp-tracker.",
		}),
		pools: map[string]bool{},
	}
	reg.MustRegister(m.nodes, m.stuck, m.degraded, m.poolStart, m.poolComplete, m.poolDuration, m.nodeDurations, m.writes)
	return m
}

// Observe sets the gauges from a pass and records the node durations.
func (m *Metrics) Observe(out track.Output) {
	seen := map[string]bool{}
	for _, p := range out.Pools {
		if p.RemovedTime != nil {
			continue
		}
		seen[p.Name] = true
		for _, ph := range mcostate.Phases {
			m.nodes.WithLabelValues(p.Name, string(ph)).Set(float64(track.Count(p.Nodes, ph)))
		}
		m.stuck.WithLabelValues(p.Name).Set(float64(p.StuckNodes))
		m.degraded.WithLabelValues(p.Name).Set(b2f(p.Degraded))
		if p.StartTime != nil {
			m.poolStart.WithLabelValues(p.Name).Set(float64(p.StartTime.Unix()))
		} else {
			m.poolStart.DeleteLabelValues(p.Name)
		}
		if p.CompleteTime != nil {
			m.poolComplete.WithLabelValues(p.Name).Set(float64(p.CompleteTime.Unix()))
		} else {
			m.poolComplete.DeleteLabelValues(p.Name)
		}
		// From the pool's record, which a restarted tracker reads back from
		// status.pools: the slow-update alert has its previous duration on
		// the first update after a restart too.
		if p.LastUpdateDurationSeconds > 0 {
			m.poolDuration.WithLabelValues(p.Name).Set(float64(p.LastUpdateDurationSeconds))
		}
	}
	for _, d := range out.NodeDurations {
		m.nodeDurations.WithLabelValues(d.Pool).Observe(d.Duration.Seconds())
	}
	for name := range m.pools {
		if !seen[name] {
			for _, v := range []*prometheus.GaugeVec{m.nodes, m.stuck, m.degraded, m.poolStart, m.poolComplete, m.poolDuration} {
				v.DeletePartialMatch(prometheus.Labels{"pool": name})
			}
			m.nodeDurations.DeletePartialMatch(prometheus.Labels{"pool": name})
		}
	}
	m.pools = seen
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
