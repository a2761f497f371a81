package chartmetrics

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/services/mcptracker/controller"
	"github.com/upshift-io/upshift/services/mcptracker/track"
)

// trackerMetrics are the names controller.NewMetrics registers.
var trackerMetrics = []string{
	"upshift_mcp_tracker_nodes", "upshift_mcp_tracker_nodes_stuck", "upshift_mcp_tracker_pool_degraded",
	"upshift_mcp_tracker_pool_update_start_timestamp_seconds", "upshift_mcp_tracker_pool_update_complete_timestamp_seconds",
	"upshift_mcp_tracker_pool_update_duration_seconds", "upshift_mcp_tracker_node_update_duration_seconds",
	"upshift_mcp_tracker_status_writes_total",
}

// TestEveryMetricTheTrackerChartQueriesIsRegistered is the mcp-tracker
// chart's counterpart of the scheduler's check: its alerts and panels query
// only metrics and labels the tracker's process registers.
func TestEveryMetricTheTrackerChartQueriesIsRegistered(t *testing.T) {
	m := controller.NewMetrics(ctrlmetrics.Registry)
	t0 := metav1.NewTime(time.Date(2026, 11, 21, 22, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	// One completed pool gives a series of every pool metric.
	m.Observe(track.Output{
		Pools: []track.PoolStatus{{PoolUpdate: upgradev1alpha1.PoolUpdate{Name: "worker", StartTime: &t0, CompleteTime: &t1,
			Nodes: upgradev1alpha1.PoolNodeCounts{Done: 3}}}},
		NodeDurations: []track.NodeDuration{{Pool: "worker", Duration: time.Minute}},
	})
	for _, name := range trackerMetrics {
		if !registered(name) {
			t.Fatalf("%s is not registered: the check below would prove nothing", name)
		}
	}
	alerts, panels := checkChartQueries(t, "mcp-tracker", "mcpt", "mcp-tracker", exposed(t))
	if alerts != 5 || panels < 9 {
		t.Errorf("found %d alerts and %d panel queries, want 5 and at least 9", alerts, panels)
	}
}
