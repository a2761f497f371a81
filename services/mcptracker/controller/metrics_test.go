package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/services/mcptracker/track"
)

// The exposition of one pass, and a deleted pool's series going away.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	start, done := metav1.NewTime(time.Unix(1000, 0)), metav1.NewTime(time.Unix(1600, 0))
	m.Observe(track.Output{
		Pools: []track.PoolStatus{
			{PoolUpdate: upgradev1alpha1.PoolUpdate{Name: "worker", StartTime: &start, CompleteTime: &done, LastUpdateDurationSeconds: 600, MachineCount: 2, Nodes: upgradev1alpha1.PoolNodeCounts{Done: 2}}},
			{PoolUpdate: upgradev1alpha1.PoolUpdate{Name: "infra", StartTime: &start, MachineCount: 3, StuckNodes: 1, Nodes: upgradev1alpha1.PoolNodeCounts{Done: 1, Draining: 1, Degraded: 1}}, Degraded: true},
		},
		NodeDurations: []track.NodeDuration{{Pool: "worker", Duration: 4 * time.Minute}, {Pool: "worker", Duration: 7 * time.Minute}},
	})
	want := `
# HELP upshift_mcp_tracker_nodes Nodes of each MachineConfigPool by update state (pending, draining, updating, rebooting, done, degraded) towards the pool's target configuration.
# TYPE upshift_mcp_tracker_nodes gauge
upshift_mcp_tracker_nodes{pool="infra",state="degraded"} 1
upshift_mcp_tracker_nodes{pool="infra",state="done"} 1
upshift_mcp_tracker_nodes{pool="infra",state="draining"} 1
upshift_mcp_tracker_nodes{pool="infra",state="pending"} 0
upshift_mcp_tracker_nodes{pool="infra",state="rebooting"} 0
upshift_mcp_tracker_nodes{pool="infra",state="updating"} 0
upshift_mcp_tracker_nodes{pool="worker",state="degraded"} 0
upshift_mcp_tracker_nodes{pool="worker",state="done"} 2
upshift_mcp_tracker_nodes{pool="worker",state="draining"} 0
upshift_mcp_tracker_nodes{pool="worker",state="pending"} 0
upshift_mcp_tracker_nodes{pool="worker",state="rebooting"} 0
upshift_mcp_tracker_nodes{pool="worker",state="updating"} 0
# HELP upshift_mcp_tracker_nodes_stuck Nodes of each pool that have stayed in one updating or degraded state longer than the stuck threshold.
# TYPE upshift_mcp_tracker_nodes_stuck gauge
upshift_mcp_tracker_nodes_stuck{pool="infra"} 1
upshift_mcp_tracker_nodes_stuck{pool="worker"} 0
# HELP upshift_mcp_tracker_pool_degraded 1 when a node of the pool is degraded or the pool reports Degraded, else 0.
# TYPE upshift_mcp_tracker_pool_degraded gauge
upshift_mcp_tracker_pool_degraded{pool="infra"} 1
upshift_mcp_tracker_pool_degraded{pool="worker"} 0
# HELP upshift_mcp_tracker_pool_update_complete_timestamp_seconds When the pool's latest update completed (absent while it runs).
# TYPE upshift_mcp_tracker_pool_update_complete_timestamp_seconds gauge
upshift_mcp_tracker_pool_update_complete_timestamp_seconds{pool="worker"} 1600
# HELP upshift_mcp_tracker_pool_update_duration_seconds How long the pool's last completed update took; a running update's time so far is time() minus the start timestamp.
# TYPE upshift_mcp_tracker_pool_update_duration_seconds gauge
upshift_mcp_tracker_pool_update_duration_seconds{pool="worker"} 600
# HELP upshift_mcp_tracker_pool_update_start_timestamp_seconds When the pool's latest update started: the first node told to move to the pool's target configuration.
# TYPE upshift_mcp_tracker_pool_update_start_timestamp_seconds gauge
upshift_mcp_tracker_pool_update_start_timestamp_seconds{pool="infra"} 1000
upshift_mcp_tracker_pool_update_start_timestamp_seconds{pool="worker"} 1000
`
	names := []string{"upshift_mcp_tracker_nodes", "upshift_mcp_tracker_nodes_stuck", "upshift_mcp_tracker_pool_degraded",
		"upshift_mcp_tracker_pool_update_complete_timestamp_seconds", "upshift_mcp_tracker_pool_update_duration_seconds", "upshift_mcp_tracker_pool_update_start_timestamp_seconds"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m.nodeDurations); n != 1 {
		t.Fatalf("%d histogram series", n)
	}

	// infra deleted: its series go; a new worker update running: the start
	// moves on, the completion goes, the last duration stays.
	now := metav1.NewTime(time.Unix(5000, 0))
	m.Observe(track.Output{Pools: []track.PoolStatus{
		{PoolUpdate: upgradev1alpha1.PoolUpdate{Name: "worker", StartTime: &now, LastUpdateDurationSeconds: 600, MachineCount: 2, Nodes: upgradev1alpha1.PoolNodeCounts{Done: 1, Updating: 1}}},
		{PoolUpdate: upgradev1alpha1.PoolUpdate{Name: "infra", RemovedTime: &now}},
	}})
	for _, name := range names {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || (name != "upshift_mcp_tracker_nodes" && n > 1) {
			t.Fatalf("%s: %d series, %v", name, n, err)
		}
	}
	if n, _ := testutil.GatherAndCount(reg, "upshift_mcp_tracker_pool_update_complete_timestamp_seconds"); n != 0 {
		t.Fatal("completion kept while the next update runs")
	}
	if v := testutil.ToFloat64(m.poolDuration.WithLabelValues("worker")); v != 600 {
		t.Fatalf("last duration %v", v)
	}
	if v := testutil.ToFloat64(m.poolStart.WithLabelValues("worker")); v != 5000 {
		t.Fatalf("start %v", v)
	}
	if n, _ := testutil.GatherAndCount(reg, "upshift_mcp_tracker_nodes"); n != 6 {
		t.Fatalf("nodes series %d, want worker's 6 only", n)
	}
}
