package gating

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

func TestRead(t *testing.T) {
	f, tr := false, true
	done := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	cond := func(typ string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(done)}
	}
	for _, tc := range []struct {
		name string
		st   nodegatev1alpha1.MutexRunConfigStatus
		want Run
	}{
		{"gating: the run paused worker and created worker-gate", nodegatev1alpha1.MutexRunConfigStatus{
			Phase:   nodegatev1alpha1.RunProgressing,
			Pools:   []nodegatev1alpha1.PoolRecord{{Name: "worker", GatePool: "worker-gate", GatePoolCreated: true, OriginalPaused: &f}},
			Summary: nodegatev1alpha1.Summary{Total: 5, Succeeded: 2, Skipped: 1},
		}, Run{Pools: []string{"worker"}, PausedPools: []string{"worker"}, GatePools: map[string]string{"worker-gate": "worker"}, Done: 2, Total: 4}},
		{"a pool paused before the run is not the run's; its gate pool is", nodegatev1alpha1.MutexRunConfigStatus{
			Phase: nodegatev1alpha1.RunProgressing,
			Pools: []nodegatev1alpha1.PoolRecord{{Name: "infra", GatePool: "infra-gate", GatePoolCreated: true, OriginalPaused: &tr}},
		}, Run{Pools: []string{"infra"}, GatePools: map[string]string{"infra-gate": "infra"}}},
		{"a canary the run paused", nodegatev1alpha1.MutexRunConfigStatus{
			Phase: nodegatev1alpha1.RunProgressing,
			Pools: []nodegatev1alpha1.PoolRecord{{Name: "worker", GatePool: "canary", OriginalPaused: &f, OriginalGatePaused: &f}},
		}, Run{Pools: []string{"worker"}, PausedPools: []string{"worker", "canary"}, GatePools: map[string]string{}}},
		{"stopped by a failed hook, named by Degraded", nodegatev1alpha1.MutexRunConfigStatus{
			Phase: nodegatev1alpha1.RunPaused,
			Pools: []nodegatev1alpha1.PoolRecord{{Name: "worker", OriginalPaused: &f}},
			Conditions: []metav1.Condition{cond("Paused", "True", "HookFailed", "a hook failed"),
				cond("Degraded", "True", "HookFailed", "node w-1: hook r/backup failed")},
		}, Run{Pools: []string{"worker"}, PausedPools: []string{"worker"}, GatePools: map[string]string{},
			Stopped: &Stop{Reason: "HookFailed", Message: "node w-1: hook r/backup failed"}, LastProgress: done}},
		{"blocked mid-run, its rule deleted: stopped, named by Blocked", nodegatev1alpha1.MutexRunConfigStatus{
			Phase:      nodegatev1alpha1.RunBlocked,
			Pools:      []nodegatev1alpha1.PoolRecord{{Name: "worker", OriginalPaused: &f}},
			Conditions: []metav1.Condition{cond("Blocked", "True", "MissingRule", "MutexRule ops/r does not exist")},
		}, Run{Pools: []string{"worker"}, PausedPools: []string{"worker"}, GatePools: map[string]string{},
			Waiting: "MissingRule: MutexRule ops/r does not exist", WaitingReason: "MissingRule",
			Stopped: &Stop{Reason: "MissingRule", Message: "MutexRule ops/r does not exist", Blocked: true}, LastProgress: done}},
		{"waiting for the control plane", nodegatev1alpha1.MutexRunConfigStatus{
			Phase:      nodegatev1alpha1.RunWaiting,
			RunID:      "r-2",
			Pools:      []nodegatev1alpha1.PoolRecord{{Name: "worker", OriginalPaused: &f}},
			Conditions: []metav1.Condition{cond("Progressing", "False", "ControlPlaneUpdating", "the control plane is updating")},
		}, Run{Pools: []string{"worker"}, PausedPools: []string{"worker"}, GatePools: map[string]string{}, RunID: "r-2",
			Waiting: "ControlPlaneUpdating: the control plane is updating", WaitingReason: "ControlPlaneUpdating", LastProgress: done}},
		{"finished: nothing held, the end known", nodegatev1alpha1.MutexRunConfigStatus{
			Phase:      nodegatev1alpha1.RunCompleted,
			Pools:      []nodegatev1alpha1.PoolRecord{{Name: "worker"}},
			Conditions: []metav1.Condition{cond("Ready", "True", "Completed", "")},
		}, Run{GatePools: map[string]string{}, Finished: done, LastProgress: done}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Read(&nodegatev1alpha1.MutexRunConfig{Status: tc.st})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Read =\n %+v\nwant\n %+v", got, tc.want)
			}
			if got.Holds() != (len(tc.want.Pools) > 0) {
				t.Errorf("Holds = %v", got.Holds())
			}
		})
	}
}

// at is minute m past 10:00 on the day of the tests below.
func at(m int) *metav1.Time {
	v := metav1.NewTime(time.Date(2026, 12, 5, 10, m, 0, 0, time.UTC))
	return &v
}

// A run's last move is the latest time its status records, in a node, a
// hook or a condition; a run is stalled once that is older than the bound,
// unless it records no time at all. A run waiting for its own window is
// timed by the time its windows are open (below).
func TestStalled(t *testing.T) {
	st := nodegatev1alpha1.MutexRunConfigStatus{
		Phase: nodegatev1alpha1.RunProgressing,
		Nodes: []nodegatev1alpha1.NodeRecord{
			{Name: "w-1", StartTime: at(1), ReleasedTime: at(2), UpdatedTime: at(7), CompletionTime: at(8)},
			{Name: "w-2", StartTime: at(3), Hooks: []nodegatev1alpha1.HookRecord{{StartTime: at(4), CompletionTime: at(9)}, {StartTime: at(10)}}},
		},
		Conditions: []metav1.Condition{{Type: "Progressing", Status: "True", LastTransitionTime: *at(5)}},
	}
	r := Read(&nodegatev1alpha1.MutexRunConfig{Status: st})
	if want := at(10).Time; !r.LastProgress.Equal(want) {
		t.Fatalf("LastProgress %s, want the hook started last, %s", r.LastProgress, want)
	}
	if stalls, ok := r.StallsAt(20 * time.Minute); !ok || !stalls.Equal(at(30).Time) {
		t.Fatalf("StallsAt = %s, %v; want %s, the last move plus the bound", stalls, ok, at(30).Time)
	}
	if _, ok := (Run{LastProgress: r.LastProgress, WaitingReason: ReasonOutsideWindow}).StallsAt(20 * time.Minute); ok {
		t.Fatal("a run waiting for windows it does not have stalls at some instant")
	}
	// Waiting since 10:10 for its daily window of 11:00-11:30, read from
	// its spec through a reader's cache.
	waiting := Read(TrimRun(&nodegatev1alpha1.MutexRunConfig{
		Spec: nodegatev1alpha1.MutexRunConfigSpec{MaintenanceWindows: []commonv1alpha1.MaintenanceWindow{{Start: "11:00", End: "11:30"}}},
		Status: nodegatev1alpha1.MutexRunConfigStatus{Phase: nodegatev1alpha1.RunWaiting, Conditions: []metav1.Condition{{
			Type: "Progressing", Status: "False", Reason: ReasonOutsideWindow, LastTransitionTime: *at(10)}}},
	}))
	if stalls, ok := waiting.StallsAt(40 * time.Minute); !ok || !stalls.Equal(at(24*60+70).Time) {
		t.Fatalf("StallsAt = %s, %v; want %s: 30 minutes of today's window and 10 of tomorrow's", stalls, ok, at(24*60+70).Time)
	}
	for _, tc := range []struct {
		name    string
		run     Run
		minutes int
		bound   time.Duration
		want    bool
	}{
		{"within the bound", r, 30, 20 * time.Minute, false},
		{"past the bound", r, 31, 20 * time.Minute, true},
		{"no bound", r, 59, 0, false},
		{"waiting for windows it does not have", Run{LastProgress: r.LastProgress, WaitingReason: ReasonOutsideWindow}, 59, 20 * time.Minute, false},
		{"waiting for its own window, shut", waiting, 59, 20 * time.Minute, false},
		{"waiting for its own window, open for the bound", waiting, 80, 20 * time.Minute, false},
		{"waiting for its own window, open for longer (node-gate down)", waiting, 81, 20 * time.Minute, true},
		{"waiting for the health gate", Run{LastProgress: r.LastProgress, WaitingReason: "AlertsFiring"}, 59, 20 * time.Minute, true},
		{"no time recorded", Run{}, 59, 20 * time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.run.Stalled(at(tc.minutes).Time, tc.bound); got != tc.want {
				t.Errorf("Stalled = %v, want %v", got, tc.want)
			}
		})
	}
}

// The round's expected end is its pace so far carried over the nodes left:
// two nodes done in the 20 minutes since the first started, two left, so
// 20 more minutes after the last completion; unknown before a node is done
// and once none is left.
func TestExpectedFinish(t *testing.T) {
	st := nodegatev1alpha1.MutexRunConfigStatus{
		Phase:   nodegatev1alpha1.RunProgressing,
		Summary: nodegatev1alpha1.Summary{Total: 5, Skipped: 1, Succeeded: 2},
		Nodes: []nodegatev1alpha1.NodeRecord{
			{Name: "w-1", StartTime: at(0), ReleasedTime: at(1), CompletionTime: at(10)},
			{Name: "w-2", ReleasedTime: at(2), CompletionTime: at(20)},
			{Name: "w-3", StartTime: at(15)},
			{Name: "w-4"},
		},
	}
	if got, want := Read(&nodegatev1alpha1.MutexRunConfig{Status: st}).ExpectedFinish, at(40).Time; !got.Equal(want) {
		t.Fatalf("ExpectedFinish %s, want %s", got, want)
	}
	for name, sum := range map[string]nodegatev1alpha1.Summary{
		"none done yet": {Total: 5, Skipped: 1},
		"all done":      {Total: 5, Skipped: 1, Succeeded: 4},
	} {
		st.Summary = sum
		if got := Read(&nodegatev1alpha1.MutexRunConfig{Status: st}).ExpectedFinish; !got.IsZero() {
			t.Errorf("%s: ExpectedFinish %s, want none", name, got)
		}
	}
}

func TestGatePools(t *testing.T) {
	runs := []Run{{GatePools: map[string]string{"worker-gate": "worker"}}, {}, {GatePools: map[string]string{"infra-gate": "infra"}}}
	if got, want := GatePools(runs), map[string]string{"worker-gate": "worker", "infra-gate": "infra"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

// A gate pool is known by the run that records it or, while the reader's
// cache of runs lags its cache of pools, by its own label.
func TestGatePoolSource(t *testing.T) {
	gates := map[string]string{"worker-gate": "worker"}
	pool := func(name string, labels map[string]string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Name: name, Labels: labels}
	}
	for _, tc := range []struct {
		name   string
		pool   *metav1.ObjectMeta
		source string
		ok     bool
	}{
		{"recorded by a run", pool("worker-gate", nil), "worker", true},
		{"labelled, its run not seen yet", pool("infra-gate", map[string]string{GatePoolLabel: "infra"}), "infra", true},
		{"a pool", pool("infra", map[string]string{"custom": "x"}), "", false},
		{"an empty label", pool("odd", map[string]string{GatePoolLabel: ""}), "", false},
	} {
		source, ok := GatePoolSource(gates, tc.pool)
		if source != tc.source || ok != tc.ok {
			t.Errorf("%s: got %q, %v; want %q, %v", tc.name, source, ok, tc.source, tc.ok)
		}
	}
}

// A run owns the drains of the nodes it released while its spec sets
// drainRemediation; a run without it, or being deleted, owns none. The
// reader's cache keeps the spec field that decides it.
func TestDrainOwner(t *testing.T) {
	nodes := []nodegatev1alpha1.NodeRecord{
		{Name: "w1", Phase: nodegatev1alpha1.NodeReleased},
		{Name: "w2", Phase: nodegatev1alpha1.NodePreHooks},
		{Name: "w3", Phase: nodegatev1alpha1.NodeReleased},
	}
	remediating := &nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "workers"},
		Spec:   nodegatev1alpha1.MutexRunConfigSpec{DrainRemediation: &nodegatev1alpha1.DrainRemediation{}},
		Status: nodegatev1alpha1.MutexRunConfigStatus{Nodes: nodes}}
	plain := &nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "workers"},
		Status: nodegatev1alpha1.MutexRunConfigStatus{Nodes: nodes}}
	deleting := remediating.DeepCopy()
	deleting.Name, deleting.DeletionTimestamp = "going", &metav1.Time{}

	runs := []Run{Read(plain), Read(deleting), Read(TrimRun(remediating))}
	if got := runs[2].Drains; !reflect.DeepEqual(got, []string{"w1", "w3"}) {
		t.Fatalf("drains of the remediating run, read through its cache trim: %v", got)
	}
	for node, want := range map[string]string{"w1": "db/workers", "w2": "", "w3": "db/workers", "w9": ""} {
		r, ok := DrainOwner(runs, node)
		if got := map[bool]string{true: r.Key()}[ok]; got != want {
			t.Errorf("owner of %s: %q, want %q", node, got, want)
		}
	}
}

func TestReleasedAhead(t *testing.T) {
	run := Run{RunID: "r-2"}
	rec := func(phase nodegatev1alpha1.NodePhase, target string) *nodegatev1alpha1.NodeRecord {
		return &nodegatev1alpha1.NodeRecord{Name: "w-1", Phase: phase, HooksTarget: target}
	}
	node := func(labels, annotations map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w-1", Labels: labels, Annotations: annotations}}
	}
	marked := map[string]string{ReleasedAnnotation: ReleaseMark("r-2", "rendered-new")}
	for _, tc := range []struct {
		name string
		run  Run
		rec  *nodegatev1alpha1.NodeRecord
		node *corev1.Node
		want bool
	}{
		{"hooks done, out of the gate pool, marked", run, rec(nodegatev1alpha1.NodePreHooks, "rendered-new"), node(nil, marked), true},
		{"still pending, marked", run, rec(nodegatev1alpha1.NodePending, "rendered-new"), node(nil, marked), true},
		{"the status says released already", run, rec(nodegatev1alpha1.NodeReleased, "rendered-new"), node(nil, marked), false},
		{"held again", run, rec(nodegatev1alpha1.NodePreHooks, "rendered-new"), node(map[string]string{HoldLabel: "worker"}, marked), false},
		{"no mark", run, rec(nodegatev1alpha1.NodePreHooks, "rendered-new"), node(nil, nil), false},
		{"another round's mark", Run{RunID: "r-3"}, rec(nodegatev1alpha1.NodePreHooks, "rendered-new"), node(nil, marked), false},
		{"hooks for another target", run, rec(nodegatev1alpha1.NodePreHooks, "rendered-newer"), node(nil, marked), false},
		{"no target recorded", run, rec(nodegatev1alpha1.NodePreHooks, ""), node(nil, marked), false},
		{"no node", run, rec(nodegatev1alpha1.NodePreHooks, "rendered-new"), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.run.ReleasedAhead(tc.rec, tc.node); got != tc.want {
				t.Errorf("ReleasedAhead = %v, want %v", got, tc.want)
			}
		})
	}
}
