package track

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
)

const (
	cfgA = "rendered-worker-a"
	cfgB = "rendered-worker-b"
)

var w = []string{roleWorker}

// One worker pool through a whole update, node by node, in the MCO's order:
// the start comes from the first node's desiredConfig moving, not from the
// pool's counts; completion needs every node Done on the target and the pool
// Updated.
func TestPoolUpdateLifecycle(t *testing.T) {
	step := func(prev State, at time.Duration, p Pool, nodes ...Node) Output {
		t.Helper()
		return run(prev, at, []Pool{p}, nodes)
	}
	// Found updated: no invented times, no Event.
	out := step(State{}, 0, pool("worker", cfgA, roleWorker, true),
		node("w1", w, cfgA, cfgA, "Done"), node("w2", w, cfgA, cfgA, "Done"))
	ps := find(out, "worker")
	if ps.StartTime != nil || ps.CompleteTime != nil || !ps.Settled || len(out.Events) != 0 || ps.Nodes.Done != 2 {
		t.Fatalf("found updated: %+v events %v", ps, out.Events)
	}

	// The render controller moves the target; the pool is Updated=False and
	// its updated count drops (MUO would start its clock here); no node is
	// targeted yet, so the update has not started.
	out = step(out.State, time.Minute, pool("worker", cfgB, roleWorker, false),
		node("w1", w, cfgA, cfgA, "Done"), node("w2", w, cfgA, cfgA, "Done"))
	ps = find(out, "worker")
	if ps.StartTime != nil || ps.Settled || ps.Nodes.Pending != 2 || len(out.Events) != 0 {
		t.Fatalf("target moved, no node targeted: %+v %v", ps, out.Events)
	}

	// The node controller targets w1: the update starts now.
	out = step(out.State, 2*time.Minute, pool("worker", cfgB, roleWorker, false),
		node("w1", w, cfgA, cfgB, "Done"), node("w2", w, cfgA, cfgA, "Done"))
	ps = find(out, "worker")
	if ps.StartTime == nil || !ps.StartTime.Time.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("start: %+v", ps.StartTime)
	}
	if !slices.Equal(reasons(out.Events), []string{ReasonPoolStarted}) || !strings.Contains(out.Events[0].Message, "w1") {
		t.Fatalf("events: %+v", out.Events)
	}
	if ps.Nodes.Updating != 1 || ps.Nodes.Pending != 1 || ps.SlowestNode == nil || ps.SlowestNode.Name != "w1" {
		t.Fatalf("counts: %+v slowest %+v", ps.Nodes, ps.SlowestNode)
	}

	// w1 drains, reboots, finishes.
	out = step(out.State, 3*time.Minute, pool("worker", cfgB, roleWorker, false),
		node("w1", w, cfgA, cfgB, "Working", mcostate.DesiredDrain, "drain-"+cfgB, mcostate.LastAppliedDrain, "uncordon-"+cfgA), node("w2", w, cfgA, cfgA, "Done"))
	if ps = find(out, "worker"); ps.Nodes.Draining != 1 || ps.SlowestNode.State != "draining" || !ps.SlowestNode.Since.Time.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("draining: %+v %+v", ps.Nodes, ps.SlowestNode)
	}
	out = step(out.State, 4*time.Minute, pool("worker", cfgB, roleWorker, false),
		node("w1", w, cfgA, cfgB, "Working", mcostate.PostConfigAction, "Rebooting"), node("w2", w, cfgA, cfgA, "Done"))
	if ps = find(out, "worker"); ps.Nodes.Rebooting != 1 {
		t.Fatalf("rebooting: %+v", ps.Nodes)
	}
	out = step(out.State, 7*time.Minute, pool("worker", cfgB, roleWorker, false),
		node("w1", w, cfgB, cfgB, "Done"), node("w2", w, cfgA, cfgB, "Working"))
	ps = find(out, "worker")
	if ps.Nodes.Done != 1 || ps.Nodes.Updating != 1 || ps.SlowestNode.Name != "w2" || len(out.Events) != 0 {
		t.Fatalf("w1 done: %+v %+v %v", ps.Nodes, ps.SlowestNode, out.Events)
	}
	if len(out.NodeDurations) != 1 || out.NodeDurations[0] != (NodeDuration{Pool: "worker", Duration: 5 * time.Minute}) {
		t.Fatalf("node durations: %+v", out.NodeDurations)
	}

	// Every node Done but the pool not yet Updated: not complete.
	out = step(out.State, 10*time.Minute, pool("worker", cfgB, roleWorker, false),
		node("w1", w, cfgB, cfgB, "Done"), node("w2", w, cfgB, cfgB, "Done"))
	if ps = find(out, "worker"); ps.CompleteTime != nil || ps.Settled || ps.SlowestNode != nil {
		t.Fatalf("pool not Updated yet: %+v", ps)
	}
	out = step(out.State, 11*time.Minute, pool("worker", cfgB, roleWorker, true),
		node("w1", w, cfgB, cfgB, "Done"), node("w2", w, cfgB, cfgB, "Done"))
	ps = find(out, "worker")
	if ps.CompleteTime == nil || !ps.CompleteTime.Time.Equal(t0.Add(11*time.Minute)) || !ps.StartTime.Time.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("complete: %+v", ps)
	}
	if !slices.Equal(reasons(out.Events), []string{ReasonPoolCompleted}) || !strings.Contains(out.Events[0].Message, "9m0s") {
		t.Fatalf("completed event: %+v", out.Events)
	}
	// Completion is final for this target: nothing changes or repeats.
	again := step(out.State, 12*time.Minute, pool("worker", cfgB, roleWorker, true),
		node("w1", w, cfgB, cfgB, "Done"), node("w2", w, cfgB, cfgB, "Done"))
	if len(again.Events) != 0 || !find(again, "worker").CompleteTime.Equal(ps.CompleteTime) {
		t.Fatalf("second pass changed: %+v", again)
	}
}

func TestPoolOf(t *testing.T) {
	pools := []Pool{
		pool("master", "m", roleMaster, true), pool("worker", "w", roleWorker, true),
		pool("infra", "i", roleInfra, true), pool("gpu", "g", "gpu", true),
		{Name: "empty", Selector: labels.Everything()}, {Name: "nil"},
	}
	cases := []struct {
		labels []string
		want   string
	}{
		{[]string{roleWorker}, "worker"},
		{[]string{roleWorker, roleInfra}, "infra"},
		{[]string{roleInfra}, "infra"},
		{[]string{roleMaster, roleWorker}, "master"},
		{[]string{roleMaster, roleInfra}, "master"},
		{[]string{roleWorker, roleInfra, "gpu"}, ""}, // two custom pools: none
		{[]string{"other"}, ""},                      // empty selectors select nothing
	}
	for _, c := range cases {
		l := map[string]string{}
		for _, k := range c.labels {
			l[k] = ""
		}
		if got := PoolOf(l, pools); got != c.want {
			t.Errorf("%v: %q, want %q", c.labels, got, c.want)
		}
	}
}

func TestDegradedAndStuck(t *testing.T) {
	p := pool("worker", cfgB, roleWorker, false)
	out := run(State{Pools: map[string]PoolRecord{"worker": {Name: "worker", Target: cfgA, Settled: true}}}, 0, []Pool{p},
		workers(node("w1", w, cfgA, cfgB, "Working"), node("w2", w, cfgA, cfgA, "Done")))
	if out.Recheck != time.Hour {
		t.Fatalf("recheck %v, want 1h (w1 stuck then)", out.Recheck)
	}
	// Just before the threshold: not stuck; the recheck is the rest.
	out = run(out.State, time.Hour-time.Second, []Pool{p}, workers(node("w1", w, cfgA, cfgB, "Working"), node("w2", w, cfgA, cfgA, "Done")))
	if ps := find(out, "worker"); ps.StuckNodes != 0 || out.Recheck != time.Second {
		t.Fatalf("before threshold: stuck %d recheck %v", ps.StuckNodes, out.Recheck)
	}
	out = run(out.State, time.Hour, []Pool{p}, workers(node("w1", w, cfgA, cfgB, "Working", mcostate.Reason, "waiting for the kubelet"), node("w2", w, cfgA, cfgA, "Done")))
	ps := find(out, "worker")
	if ps.StuckNodes != 1 || len(out.Events) != 1 || out.Events[0].Reason != ReasonNodeStuck || !out.Events[0].Warning ||
		!strings.Contains(out.Events[0].Message, "node w1 of pool worker has been updating for 1h0m0s") || !strings.Contains(out.Events[0].Message, "waiting for the kubelet") {
		t.Fatalf("stuck: %d %+v", ps.StuckNodes, out.Events)
	}
	// Once per stuck phase.
	out = run(out.State, 2*time.Hour, []Pool{p}, workers(node("w1", w, cfgA, cfgB, "Working"), node("w2", w, cfgA, cfgA, "Done")))
	if len(out.Events) != 0 || find(out, "worker").StuckNodes != 1 {
		t.Fatalf("stuck event repeated: %+v", out.Events)
	}
	// Degraded: one Event naming the node and the MCD's reason; the node
	// stays counted as stuck only after a further hour in that phase.
	deg := node("w1", w, cfgA, cfgB, "Degraded", mcostate.Reason, "failed to drain node: w1 after 1h0m0s")
	out = run(out.State, 2*time.Hour+time.Minute, []Pool{p}, workers(deg, node("w2", w, cfgA, cfgA, "Done")))
	ps = find(out, "worker")
	if !ps.Degraded || ps.Nodes.Degraded != 1 || ps.StuckNodes != 0 || !slices.Equal(reasons(out.Events), []string{ReasonPoolDegraded}) ||
		!strings.Contains(out.Events[0].Message, "node w1: failed to drain node") {
		t.Fatalf("degraded: %+v %+v", ps, out.Events)
	}
	if ps.SlowestNode == nil || ps.SlowestNode.State != "degraded" || !strings.HasPrefix(ps.SlowestNode.Reason, "failed to drain") {
		t.Fatalf("slowest: %+v", ps.SlowestNode)
	}
	out = run(out.State, 2*time.Hour+2*time.Minute, []Pool{p}, workers(deg, node("w2", w, cfgA, cfgA, "Done")))
	if len(out.Events) != 0 {
		t.Fatalf("degraded event repeated: %+v", out.Events)
	}
	st, reason, msg := WorkersUpgraded(out.Pools)
	if st != metav1.ConditionFalse || reason != ReasonPoolsDegraded || !strings.Contains(msg, "worker (node w1: failed to drain") {
		t.Fatalf("WorkersUpgraded: %s %s %s", st, reason, msg)
	}
	// StuckAfter 0 turns stuck detection off.
	off := Track(Input{Pools: []Pool{p}, Nodes: []Node{deg}, Prev: out.State, Now: t0.Add(100 * time.Hour)})
	if find(off, "worker").StuckNodes != 0 || off.Recheck != 0 {
		t.Fatal("stuck detection not off")
	}
}

// A custom pool created in the middle of an update takes its nodes from
// worker (custom wins), tracks its own start; deleted again while updating,
// it stays listed with removedTime until the retention passes.
func TestPoolAppearsAndDisappears(t *testing.T) {
	infraCfg := "rendered-infra-1"
	wp := pool("worker", cfgB, roleWorker, false)
	out := run(State{}, 0, []Pool{wp}, workers(node("w1", w, cfgA, cfgB, "Working"), node("w2", []string{roleWorker, roleInfra}, cfgA, cfgA, "Done")))
	// First seen mid-update: its start is unknown and not invented.
	if ps := find(out, "worker"); ps.MachineCount != 2 || ps.StartTime != nil || ps.Nodes.Updating != 1 || len(out.Events) != 0 {
		t.Fatalf("worker first seen mid-update: %+v %v", ps, out.Events)
	}
	ip := pool("infra", infraCfg, roleInfra, false)
	out = run(out.State, time.Minute, []Pool{wp, ip}, workers(node("w1", w, cfgA, cfgB, "Working"), node("w2", []string{roleWorker, roleInfra}, cfgA, cfgA, "Done")))
	if ps := find(out, "worker"); ps.MachineCount != 1 {
		t.Fatalf("worker after infra appeared: %+v", ps)
	}
	ps := find(out, "infra")
	if ps == nil || ps.MachineCount != 1 || ps.Nodes.Pending != 1 || ps.StartTime != nil {
		t.Fatalf("infra appeared: %+v", ps)
	}
	out = run(out.State, 2*time.Minute, []Pool{wp, ip}, workers(node("w1", w, cfgA, cfgB, "Working"), node("w2", []string{roleWorker, roleInfra}, cfgA, infraCfg, "Working")))
	if ps = find(out, "infra"); ps.StartTime == nil || !ps.StartTime.Time.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("infra start: %+v", ps)
	}
	// infra deleted while updating.
	out = run(out.State, 3*time.Minute, []Pool{wp}, workers(node("w1", w, cfgA, cfgB, "Working"), node("w2", []string{roleWorker, roleInfra}, cfgA, infraCfg, "Working")))
	ps = find(out, "infra")
	if ps == nil || ps.RemovedTime == nil || ps.StartTime == nil || !slices.Equal(reasons(out.Events), []string{ReasonPoolRemoved}) {
		t.Fatalf("infra removed: %+v %v", ps, out.Events)
	}
	if find(out, "worker").MachineCount != 2 {
		t.Fatal("w2 not back in worker")
	}
	st, _, msg := WorkersUpgraded(out.Pools)
	if st != metav1.ConditionFalse || strings.Contains(msg, "infra") {
		t.Fatalf("removed pool counted: %s", msg)
	}
	if out.Recheck <= 0 || out.Recheck > 24*time.Hour {
		t.Fatalf("recheck %v", out.Recheck)
	}
	out = run(out.State, 3*time.Minute+24*time.Hour, []Pool{wp}, workers(node("w1", w, cfgB, cfgB, "Done"), node("w2", w, cfgB, cfgB, "Done")))
	if find(out, "infra") != nil {
		t.Fatal("infra kept past retention")
	}
	// Re-created later: a fresh record.
	out = run(out.State, 25*time.Hour, []Pool{wp, ip}, workers(node("w1", w, cfgB, cfgB, "Done")))
	if ps = find(out, "infra"); ps == nil || ps.RemovedTime != nil {
		t.Fatalf("re-created: %+v", ps)
	}
}

func TestEmptyPoolAndRestart(t *testing.T) {
	// A pool with no nodes whose target moves completes at once.
	prev := State{Pools: map[string]PoolRecord{"infra": {Name: "infra", Target: "i1", Settled: true}}}
	out := run(prev, 0, []Pool{pool("infra", "i2", roleInfra, true)}, nil)
	ps := find(out, "infra")
	if ps.StartTime == nil || ps.CompleteTime == nil || !ps.StartTime.Equal(ps.CompleteTime) {
		t.Fatalf("empty pool: %+v", ps)
	}

	// After a restart the start comes back from the status; completion
	// keeps it.
	start := metav1.NewTime(t0)
	seeded := Seed([]upgradev1alpha1.PoolUpdate{{Name: "worker", TargetConfig: cfgB, StartTime: &start}})
	out = run(seeded, 30*time.Minute, []Pool{pool("worker", cfgB, roleWorker, false)}, workers(node("w1", w, cfgB, cfgB, "Done"), node("w2", w, cfgA, cfgB, "Working")))
	if ps = find(out, "worker"); !ps.StartTime.Equal(&start) || len(out.Events) != 0 {
		t.Fatalf("restart: %+v %v", ps, out.Events)
	}
	out = run(out.State, 40*time.Minute, []Pool{pool("worker", cfgB, roleWorker, true)}, workers(node("w1", w, cfgB, cfgB, "Done"), node("w2", w, cfgB, cfgB, "Done")))
	if ps = find(out, "worker"); !ps.StartTime.Equal(&start) || ps.CompleteTime == nil || !ps.CompleteTime.Time.Equal(t0.Add(40*time.Minute)) {
		t.Fatalf("restart completion: %+v", ps)
	}
	// w2 was already moving when the tracker came back: its start is
	// unknown, so no duration is invented for it.
	if len(out.NodeDurations) != 0 {
		t.Fatalf("durations after restart: %+v", out.NodeDurations)
	}

	// Seeded before the start (status written while no node had moved):
	// the start seen after the restart is the real one.
	seeded = Seed([]upgradev1alpha1.PoolUpdate{{Name: "worker", TargetConfig: cfgB}})
	out = run(seeded, 0, []Pool{pool("worker", cfgB, roleWorker, false)}, workers(node("w1", w, cfgA, cfgA, "Done")))
	if ps = find(out, "worker"); ps.StartTime != nil {
		t.Fatalf("not started: %+v", ps)
	}
	out = run(out.State, time.Minute, []Pool{pool("worker", cfgB, roleWorker, false)}, workers(node("w1", w, cfgA, cfgB, "Working")))
	if ps = find(out, "worker"); ps.StartTime == nil || !ps.StartTime.Time.Equal(t0.Add(time.Minute)) {
		t.Fatalf("start after restart: %+v", ps)
	}
	out = run(out.State, 6*time.Minute, []Pool{pool("worker", cfgB, roleWorker, true)}, workers(node("w1", w, cfgB, cfgB, "Done")))
	if len(out.NodeDurations) != 1 || out.NodeDurations[0].Duration != 5*time.Minute || find(out, "worker").CompleteTime == nil {
		t.Fatalf("seen pending then moving: %+v", out.NodeDurations)
	}
}

func TestWorkerTimes(t *testing.T) {
	at := func(m int) *metav1.Time { v := metav1.NewTime(t0.Add(time.Duration(m) * time.Minute)); return &v }
	pools := []PoolStatus{
		{PoolUpdate: upgradev1alpha1.PoolUpdate{Name: "master", StartTime: at(1), CompleteTime: at(9)}},
		{PoolUpdate: upgradev1alpha1.PoolUpdate{Name: "worker", StartTime: at(10), CompleteTime: at(30)}},
	}
	cases := []struct {
		name            string
		entry           upgradev1alpha1.UpgradeHistory
		start, complete *metav1.Time
	}{
		{"not started", upgradev1alpha1.UpgradeHistory{}, nil, nil},
		{"worker started after the upgrade", upgradev1alpha1.UpgradeHistory{StartTime: at(0)}, at(10), at(30)},
		{"same second", upgradev1alpha1.UpgradeHistory{StartTime: at(10)}, at(10), at(30)},
		{"worker update older than the upgrade", upgradev1alpha1.UpgradeHistory{StartTime: at(11)}, nil, nil},
	}
	for _, c := range cases {
		s, e := WorkerTimes(c.entry, pools)
		if !s.Equal(c.start) || !e.Equal(c.complete) {
			t.Errorf("%s: %v %v, want %v %v", c.name, s, e, c.start, c.complete)
		}
	}
}

func TestWorkersUpgraded(t *testing.T) {
	mk := func(name string, settled, degraded bool) PoolStatus {
		return PoolStatus{PoolUpdate: upgradev1alpha1.PoolUpdate{Name: name, MachineCount: 3, Nodes: upgradev1alpha1.PoolNodeCounts{Done: 1}}, Settled: settled, Degraded: degraded, DegradedDetail: "x"}
	}
	cases := []struct {
		pools  []PoolStatus
		status metav1.ConditionStatus
		reason string
	}{
		{nil, metav1.ConditionTrue, ReasonNoWorkerPools},
		{[]PoolStatus{mk("master", false, false)}, metav1.ConditionTrue, ReasonNoWorkerPools},
		{[]PoolStatus{mk("master", false, true), mk("worker", true, false)}, metav1.ConditionTrue, ReasonAllPoolsUpdated},
		{[]PoolStatus{mk("worker", true, false), mk("infra", false, false)}, metav1.ConditionFalse, ReasonPoolsUpdating},
		{[]PoolStatus{mk("worker", false, false), mk("infra", true, true)}, metav1.ConditionFalse, ReasonPoolsDegraded},
	}
	for i, c := range cases {
		s, r, _ := WorkersUpgraded(c.pools)
		if s != c.status || r != c.reason {
			t.Errorf("case %d: %s %s, want %s %s", i, s, r, c.status, c.reason)
		}
	}
}

// The MCO never targets a cordoned node: a pending node cordoned by someone
// else holds its pool, and counts as stuck past the threshold; not while
// its pool is Updated, and not any more once uncordoned.
func TestCordonedPendingNode(t *testing.T) {
	cordoned := node("w2", w, cfgA, cfgA, "Done")
	cordoned.Unschedulable = true
	p := pool("worker", cfgB, roleWorker, false)
	prev := State{Pools: map[string]PoolRecord{"worker": {Name: "worker", Target: cfgA, Settled: true}}}
	out := run(prev, 0, []Pool{p}, workers(node("w1", w, cfgB, cfgB, "Done"), cordoned))
	if out.Recheck != time.Hour {
		t.Fatalf("recheck %v", out.Recheck)
	}
	out = run(out.State, time.Hour, []Pool{p}, workers(node("w1", w, cfgB, cfgB, "Done"), cordoned))
	ps := find(out, "worker")
	if ps.StuckNodes != 1 || ps.Nodes.Pending != 1 || ps.SlowestNode != nil || len(out.Events) != 1 ||
		out.Events[0].Message != "node w2 of pool worker has been pending and cordoned for 1h0m0s (since 2026-01-02T03:00:00Z): the MCO does not update a cordoned node; uncordon it" {
		t.Fatalf("cordoned: %+v %+v", ps, out.Events)
	}
	uncordoned := cordoned
	uncordoned.Unschedulable = false
	out = run(out.State, 2*time.Hour, []Pool{p}, workers(node("w1", w, cfgB, cfgB, "Done"), uncordoned))
	if find(out, "worker").StuckNodes != 0 {
		t.Fatal("still stuck once uncordoned")
	}
	// A cordoned node of an Updated pool holds nothing.
	idle := run(State{}, 0, []Pool{pool("worker", cfgA, roleWorker, true)}, workers(node("w2", w, cfgA, cfgA, "Done")))
	cordonedIdle := node("w2", w, cfgA, cfgA, "Done")
	cordonedIdle.Unschedulable = true
	idle = run(idle.State, 5*time.Hour, []Pool{pool("worker", cfgA, roleWorker, true)}, workers(cordonedIdle))
	idle = run(idle.State, 10*time.Hour, []Pool{pool("worker", cfgA, roleWorker, true)}, workers(cordonedIdle))
	if find(idle, "worker").StuckNodes != 0 || len(idle.Events) != 0 {
		t.Fatalf("idle pool: %+v", idle.Events)
	}
}

// The previous update's duration outlives that update's record: it is in the
// pool's status while the next update runs, and a tracker seeded from that
// status (a restart between or during updates) still has it.
func TestLastDurationSurvivesNextUpdateAndRestart(t *testing.T) {
	prev := State{Pools: map[string]PoolRecord{"worker": {Name: "worker", Target: cfgA, Settled: true}}}
	// Update to cfgB: starts at 1m, completes at 10m30s (whole seconds kept).
	out := run(prev, time.Minute, []Pool{pool("worker", cfgB, roleWorker, false)}, workers(node("w1", w, cfgA, cfgB, "Working")))
	if ps := find(out, "worker"); ps.LastUpdateDurationSeconds != 0 {
		t.Fatalf("no update timed yet, got %d", ps.LastUpdateDurationSeconds)
	}
	out = run(out.State, 10*time.Minute+30*time.Second+400*time.Millisecond, []Pool{pool("worker", cfgB, roleWorker, true)}, workers(node("w1", w, cfgB, cfgB, "Done")))
	ps := find(out, "worker")
	if ps.CompleteTime == nil || ps.LastUpdateDurationSeconds != 570 {
		t.Fatalf("completed: %+v", ps.PoolUpdate)
	}
	if got := int64(ps.CompleteTime.Sub(ps.StartTime.Time).Seconds()); got != ps.LastUpdateDurationSeconds {
		t.Fatalf("duration %d is not completeTime-startTime %d", ps.LastUpdateDurationSeconds, got)
	}

	for _, tc := range []struct {
		name  string
		state func() State
	}{
		{"same process", func() State { return out.State }},
		// The restart: all that is left is what status.pools said.
		{"restarted from status", func() State { return Seed([]upgradev1alpha1.PoolUpdate{ps.PoolUpdate}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The next update (to cfgC) starts: start and completion now
			// describe it, the last duration is still the cfgB one.
			next := run(tc.state(), time.Hour, []Pool{pool("worker", "rendered-worker-c", roleWorker, false)}, workers(node("w1", w, cfgB, "rendered-worker-c", "Working")))
			np := find(next, "worker")
			if np.StartTime == nil || np.CompleteTime != nil || np.LastUpdateDurationSeconds != 570 {
				t.Fatalf("next update running: %+v", np.PoolUpdate)
			}
			// Seeded again mid-update, it still holds.
			again := run(Seed([]upgradev1alpha1.PoolUpdate{np.PoolUpdate}), time.Hour+time.Minute, []Pool{pool("worker", "rendered-worker-c", roleWorker, false)}, workers(node("w1", w, cfgB, "rendered-worker-c", "Working")))
			if ap := find(again, "worker"); ap.LastUpdateDurationSeconds != 570 || !ap.StartTime.Equal(np.StartTime) {
				t.Fatalf("restarted mid-update: %+v", ap.PoolUpdate)
			}
			// It completes after 20 minutes: the last duration becomes that.
			done := run(next.State, 80*time.Minute, []Pool{pool("worker", "rendered-worker-c", roleWorker, true)}, workers(node("w1", w, "rendered-worker-c", "rendered-worker-c", "Done")))
			if dp := find(done, "worker"); dp.LastUpdateDurationSeconds != 1200 {
				t.Fatalf("second completion: %+v", dp.PoolUpdate)
			}
		})
	}
}

// node-gate's gate pool is not a pool of its own: the nodes it releases into
// it are counted in their source pool, moving to the gate pool's target; a
// node done there still has its move back to make, so the source pool
// completes only once every node is back and done on its own target. The
// gate pool is never listed, not even when it goes away or when it was seen
// before the run that names it.
func TestGatePoolCountedInSource(t *testing.T) {
	const cfgG = "rendered-worker-gate-b"
	released := func(n Node) Node {
		n.Labels = map[string]string{roleWorker: "", "nodegate.upshift.io/released-from": "worker"}
		return n
	}
	worker := func(updated bool) Pool { return pool("worker", cfgB, roleWorker, updated) }
	gate := func(of string) Pool {
		return Pool{Name: "worker-gate", Target: cfgG, GateOf: of,
			Selector: labels.SelectorFromSet(labels.Set{"nodegate.upshift.io/released-from": "worker"})}
	}
	names := func(out Output) []string {
		var n []string
		for _, p := range out.Pools {
			n = append(n, p.Name)
		}
		return n
	}
	out := run(State{}, 0, []Pool{pool("worker", cfgA, roleWorker, true)}, workers(node("w1", w, cfgA, cfgA, "Done"), node("w2", w, cfgA, cfgA, "Done")))

	// The pools render B; node-gate creates the gate pool, seen here before
	// the run that names it: a pool of its own for this one pass.
	out = run(out.State, time.Minute, []Pool{worker(false), gate("")}, workers(node("w1", w, cfgA, cfgA, "Done"), node("w2", w, cfgA, cfgA, "Done")))
	if got := names(out); !slices.Equal(got, []string{"worker", "worker-gate"}) {
		t.Fatalf("before the run is read: %v", got)
	}

	// w1 released into the gate and told to move: the worker pool started.
	out = run(out.State, 2*time.Minute, []Pool{worker(false), gate("worker")}, workers(released(node("w1", w, cfgA, cfgG, "Working")), node("w2", w, cfgA, cfgA, "Done")))
	ps := find(out, "worker")
	if got := names(out); !slices.Equal(got, []string{"worker"}) {
		t.Fatalf("gate pool listed: %v", got)
	}
	if ps.MachineCount != 2 || ps.Nodes.Updating != 1 || ps.Nodes.Pending != 1 || ps.StartTime == nil || ps.SlowestNode == nil || ps.SlowestNode.Name != "w1" {
		t.Fatalf("w1 in the gate: %+v", ps)
	}
	if !slices.Equal(reasons(out.Events), []string{ReasonPoolStarted}) || !strings.Contains(out.Events[0].Message, "node w1 was released by node-gate into its gate pool worker-gate") {
		t.Fatalf("events: %+v", out.Events)
	}
	if st, _, msg := WorkersUpgraded(out.Pools); st != metav1.ConditionFalse || msg != "updating: worker (0 of 2 nodes done)" {
		t.Fatalf("WorkersUpgraded: %s %q", st, msg)
	}

	// w1 done in the gate: one more move to make, so pending, and the pool
	// is not done even once w1 is back and w2 sits done in the gate.
	out = run(out.State, 5*time.Minute, []Pool{worker(false), gate("worker")}, workers(released(node("w1", w, cfgG, cfgG, "Done")), node("w2", w, cfgA, cfgA, "Done")))
	if ps = find(out, "worker"); ps.Nodes.Pending != 2 || ps.Nodes.Done != 0 || len(out.NodeDurations) != 1 || out.NodeDurations[0].Pool != "worker" {
		t.Fatalf("w1 done in the gate: %+v durations %+v", ps.Nodes, out.NodeDurations)
	}
	out = run(out.State, 9*time.Minute, []Pool{worker(true), gate("worker")}, workers(node("w1", w, cfgG, cfgG, "Done"), released(node("w2", w, cfgG, cfgG, "Done"))))
	if ps = find(out, "worker"); ps.Settled || ps.CompleteTime != nil || ps.Nodes.Pending != 2 {
		t.Fatalf("w2 still in the gate: %+v", ps)
	}

	// A degraded gate pool is its source's degradation.
	dg := gate("worker")
	dg.Degraded, dg.DegradedMessage = true, "render failed"
	deg := run(out.State, 10*time.Minute, []Pool{worker(false), dg}, workers(node("w1", w, cfgG, cfgG, "Done"), released(node("w2", w, cfgG, cfgG, "Done"))))
	if ps = find(deg, "worker"); !ps.Degraded || ps.DegradedDetail != "gate pool worker-gate: render failed" {
		t.Fatalf("gate degraded: %+v", ps)
	}

	// The run ends: the gate pool goes, both nodes move back; completion
	// once both are done on the pool's own target. No PoolRemoved.
	out = run(out.State, 11*time.Minute, []Pool{worker(true)}, workers(node("w1", w, cfgB, cfgB, "Done"), node("w2", w, cfgB, cfgB, "Done")))
	ps = find(out, "worker")
	if got := names(out); !slices.Equal(got, []string{"worker"}) {
		t.Fatalf("after the run: %v", got)
	}
	if !ps.Settled || ps.CompleteTime == nil || !ps.StartTime.Time.Equal(t0.Add(2*time.Minute)) || ps.Nodes.Done != 2 {
		t.Fatalf("completion: %+v", ps)
	}
	if !slices.Equal(reasons(out.Events), []string{ReasonPoolCompleted}) {
		t.Fatalf("events: %+v", out.Events)
	}
}

// node-gate holds the waiting workers in its paused gate pool before the
// update, and new nodes join the pool (the scheduler's extra capacity) on
// the config it runs. Neither is the pool starting an update, whether the
// tracker watched the pool settle, came back from a status written then
// (which has no start and no completion), or first sees the pool that way.
// The start is the first node the MCO tells to move to the next target.
func TestHeldAndJoiningNodesAreNoStart(t *testing.T) {
	const cfgGA = "rendered-worker-gate-a"
	held := func(n Node) Node {
		n.Labels = map[string]string{roleWorker: "", "nodegate.upshift.io/held-from": "worker"}
		return n
	}
	gate := Pool{Name: "worker-gate", Target: cfgGA, GateOf: "worker",
		Selector: labels.SelectorFromSet(labels.Set{"nodegate.upshift.io/held-from": "worker"})}
	// w1 and w2 held in the gate; then w9 joins the worker pool on A.
	holding := workers(held(node("w1", w, cfgA, cfgA, "Done")), held(node("w2", w, cfgA, cfgA, "Done")), node("w9", w, cfgA, cfgA, "Done"))

	watched := run(State{}, 0, []Pool{pool("worker", cfgA, roleWorker, true)}, workers(node("w1", w, cfgA, cfgA, "Done"), node("w2", w, cfgA, cfgA, "Done"))).State
	for _, tc := range []struct {
		name string
		prev State
	}{
		{"watched settling", watched},
		{"restarted from the status", Seed([]upgradev1alpha1.PoolUpdate{{Name: "worker", TargetConfig: cfgA}})},
		{"first seen holding", State{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := run(tc.prev, time.Minute, []Pool{pool("worker", cfgA, roleWorker, true), gate}, holding[:2])
			out = run(out.State, 2*time.Minute, []Pool{pool("worker", cfgA, roleWorker, true), gate}, holding)
			if ps := find(out, "worker"); ps.StartTime != nil || ps.CompleteTime != nil || ps.Nodes.Pending != 2 || ps.Nodes.Done != 1 {
				t.Fatalf("holding: %+v", ps)
			}
			if len(out.Events) != 0 {
				t.Fatalf("events: %+v", out.Events)
			}

			// The pool renders B; w1 is released and told to move.
			out = run(out.State, 3*time.Minute, []Pool{pool("worker", cfgB, roleWorker, false), gate},
				workers(node("w1", w, cfgA, cfgA, "Done"), held(node("w2", w, cfgA, cfgA, "Done")), node("w9", w, cfgA, cfgA, "Done")))
			out = run(out.State, 4*time.Minute, []Pool{pool("worker", cfgB, roleWorker, false), gate},
				workers(node("w1", w, cfgA, cfgB, "Working"), held(node("w2", w, cfgA, cfgA, "Done")), node("w9", w, cfgA, cfgA, "Done")))
			ps := find(out, "worker")
			if ps.StartTime == nil || !ps.StartTime.Time.Equal(t0.Add(4*time.Minute)) {
				t.Fatalf("start: %+v", ps)
			}
			if !slices.Equal(reasons(out.Events), []string{ReasonPoolStarted}) || !strings.Contains(out.Events[0].Message, "node w1 was told to move") {
				t.Fatalf("events: %+v", out.Events)
			}
			out = run(out.State, 9*time.Minute, []Pool{pool("worker", cfgB, roleWorker, true)},
				workers(node("w1", w, cfgB, cfgB, "Done"), node("w2", w, cfgB, cfgB, "Done"), node("w9", w, cfgB, cfgB, "Done")))
			if ps = find(out, "worker"); !ps.StartTime.Time.Equal(t0.Add(4*time.Minute)) || ps.CompleteTime == nil || !ps.CompleteTime.Time.Equal(t0.Add(9*time.Minute)) {
				t.Fatalf("completion: %+v", ps)
			}
		})
	}
}
