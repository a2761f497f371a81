package assess

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/gating"
)

// gatedSnapshot is baseSnapshot during a node-gate run that paused the
// worker pool and created the gate pool worker-gate (rendered w-gate-new,
// same release as w-new): worker-0 is done, worker-1 was released into the
// gate pool and is updating, worker-2 runs its pre-update hook, worker-3
// waits for its turn.
func gatedSnapshot(originalPaused bool) Snapshot {
	s := baseSnapshot()
	s.MachineConfigPools[1].Spec.Paused = true
	gate := pool("worker-gate", "worker", "w-gate-new", false)
	gate.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"nodegate.upshift.io/released-from": "worker"}}
	s.MachineConfigPools = append(s.MachineConfigPools, gate)
	s.MachineConfigs = append(s.MachineConfigs, mc("w-gate-new", "4.18.1"))
	released := node("worker-1", "worker", "w-old", "w-gate-new", "Working")
	released.Labels["nodegate.upshift.io/released-from"] = "worker"
	s.Nodes = []*corev1.Node{
		node("master-0", "master", "m-new", "m-new", "Done"),
		node("worker-0", "worker", "w-gate-new", "w-gate-new", "Done"),
		released,
		node("worker-2", "worker", "w-old", "w-old", "Done"),
		node("worker-3", "worker", "w-old", "w-old", "Done"),
	}
	s.NodeGateRuns = []nodegatev1alpha1.MutexRunConfig{gateRunObject(originalPaused)}
	return s
}

func gateRunObject(originalPaused bool) nodegatev1alpha1.MutexRunConfig {
	run := nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "workers"}}
	run.Status = nodegatev1alpha1.MutexRunConfigStatus{
		Phase: nodegatev1alpha1.RunProgressing,
		Pools: []nodegatev1alpha1.PoolRecord{{Name: "worker", GatePool: "worker-gate", GatePoolCreated: true,
			TargetConfig: "w-gate-new", OriginalPaused: &originalPaused}},
		Summary: nodegatev1alpha1.Summary{Total: 4, Succeeded: 1, InProgress: 2, Pending: 1},
		Nodes: []nodegatev1alpha1.NodeRecord{
			{Name: "worker-0", Pool: "worker", Phase: nodegatev1alpha1.NodeCompleted},
			{Name: "worker-1", Pool: "worker", Phase: nodegatev1alpha1.NodeReleased},
			{Name: "worker-2", Pool: "worker", Phase: nodegatev1alpha1.NodePreHooks, Hooks: []nodegatev1alpha1.HookRecord{
				{Rule: "db-rule", Name: "job", Stage: nodegatev1alpha1.StagePre, Phase: nodegatev1alpha1.HookSucceeded},
				{Rule: "db-rule", Name: "backup", Stage: nodegatev1alpha1.StagePre, Phase: nodegatev1alpha1.HookRunning},
				{Rule: "db-rule", Name: "cleanup", Stage: nodegatev1alpha1.StagePost, Phase: nodegatev1alpha1.HookPending},
			}},
			{Name: "worker-3", Pool: "worker", Phase: nodegatev1alpha1.NodePending},
		},
	}
	return run
}

// A node whose pre-update hooks all ran ahead of its turn (a rule's
// lookahead) waits for its turn, and says so.
func TestGatedNodeWithHooksDoneWaitsForItsTurn(t *testing.T) {
	s := gatedSnapshot(false)
	s.NodeGateRuns[0].Status.Nodes[2].Hooks[1].Phase = nodegatev1alpha1.HookSucceeded
	n := nodeInsight(mustAssess(t, s), "worker-2")
	if n == nil {
		t.Fatal("no insight for worker-2")
	}
	if want := "Gated by node-gate run db/workers: pre-update hooks done, waiting for its turn"; n.Message != want {
		t.Errorf("message %q, want %q", n.Message, want)
	}
}

func nodeInsight(r Result, name string) *updatev1alpha1.NodeStatusInsight {
	for i := range r.Nodes {
		if r.Nodes[i].Name == name {
			return &r.Nodes[i]
		}
	}
	return nil
}

func TestGatedPoolIsReportedAsGatedNotStalled(t *testing.T) {
	r := mustAssess(t, gatedSnapshot(false))

	for _, h := range r.Status.Health {
		if h.Impact.Type == updatev1alpha1.UpdateStalledImpactType || strings.Contains(h.Impact.Description, "unpaused by the administrator") {
			t.Errorf("a run gating as designed stalls nothing, got %q: %q", h.Impact.Summary, h.Impact.Description)
		}
	}
	info := healthByUID(r, "nodegate-db-workers-gating")
	if info == nil {
		t.Fatalf("no gating insight among %+v", r.Status.Health)
	}
	if info.Impact.Level != updatev1alpha1.InfoImpactLevel ||
		info.Impact.Summary != "Pools 'worker' are gated by node-gate run db/workers: 1 of 4 nodes done" {
		t.Errorf("gating insight = %s %q", info.Impact.Level, info.Impact.Summary)
	}
	if info.Remediation.EstimatedFinish != nil {
		t.Errorf("an expected finish %s with no node timed", info.Remediation.EstimatedFinish)
	}
	if res := info.Scope.Resources; len(res) != 2 || res[0].Resource != "mutexrunconfigs" || res[0].Namespace != "db" || res[0].Name != "workers" || res[1].Name != "worker" {
		t.Errorf("gating insight resources = %+v, want the run then the pool", res)
	}

	for name, want := range map[string]struct{ phase, message string }{
		"worker-0": {"Completed", ""},
		"worker-1": {"Updating", ""},
		"worker-2": {"Gated", "Gated by node-gate run db/workers: pre-update hook backup of rule db-rule running"},
		"worker-3": {"Gated", "Gated by node-gate run db/workers: waiting for its turn"},
	} {
		n := nodeInsight(r, name)
		if n == nil {
			t.Fatalf("no insight for %s", name)
		}
		if got := cond(n.Conditions, "Updating"); got.Reason != want.phase || got.Status != metav1.ConditionStatus(map[bool]string{true: "True", false: "False"}[want.phase == "Updating"]) {
			t.Errorf("%s: Updating = %s/%s, want reason %s", name, got.Status, got.Reason, want.phase)
		}
		if n.Message != want.message {
			t.Errorf("%s: message = %q, want %q", name, n.Message, want.message)
		}
		// The gate pool's nodes are the worker pool's.
		if n.PoolResource.Name != "worker" {
			t.Errorf("%s: reported in pool %q, want worker", name, n.PoolResource.Name)
		}
	}

	// One worker pool, every worker counted once in it; the gate pool is
	// not a pool of its own.
	if len(r.Status.WorkerPools) != 1 || r.Status.WorkerPools[0].Name != "worker" {
		t.Fatalf("worker pools = %+v, want worker only", r.Status.WorkerPools)
	}
	p := r.Status.WorkerPools[0].Pool
	if p.Assessment != updatev1alpha1.PoolProgressing || p.Completion != 25 {
		t.Errorf("pool = %s %d%%, want Progressing 25%%", p.Assessment, p.Completion)
	}
	for typ, want := range map[updatev1alpha1.NodeSummaryType]int32{"Total": 4, "Excluded": 0, "Outdated": 3, "Progressing": 1} {
		if got := p.Summary(typ); got != want {
			t.Errorf("summary %s = %d, want %d", typ, got, want)
		}
	}
}

// The gating insight says when the run should end, at its pace so far:
// worker-0 took 20 minutes from the first start to its completion, so the
// three nodes left should take an hour more.
func TestGatingInsightSaysWhenTheRunShouldEnd(t *testing.T) {
	s := gatedSnapshot(false)
	at := func(m int) *metav1.Time {
		v := metav1.NewTime(s.Now.Add(time.Duration(m) * time.Minute).Truncate(time.Second))
		return &v
	}
	nodes := s.NodeGateRuns[0].Status.Nodes
	nodes[0].StartTime, nodes[0].CompletionTime = at(-40), at(-20)
	nodes[1].StartTime = at(-19)
	info := healthByUID(mustAssess(t, s), "nodegate-db-workers-gating")
	want := at(40)
	if info == nil || info.Remediation.EstimatedFinish == nil || !info.Remediation.EstimatedFinish.Equal(want) {
		t.Fatalf("gating insight %+v, want an expected finish at %s", info, want)
	}
	if sum := "Pools 'worker' are gated by node-gate run db/workers: 1 of 4 nodes done, expected to finish at " +
		want.UTC().Format(time.RFC3339); info.Impact.Summary != sum {
		t.Errorf("summary %q, want %q", info.Impact.Summary, sum)
	}
}

// A run that holds the pools and has not moved for gateStallAfter
// (node-gate down, a hook hung) stalls the update and says so; one that
// moved within it is gating as designed, and the assessment is due again
// when the bound passes. A run waiting for its own window stalls only
// once the window has been open for the bound.
func TestStalledRunIsReportedStalled(t *testing.T) {
	s := gatedSnapshot(false)
	last := s.Now.Add(-30 * time.Minute).Truncate(time.Second)
	nodes := s.NodeGateRuns[0].Status.Nodes
	nodes[0].StartTime, nodes[0].CompletionTime = &metav1.Time{Time: last.Add(-time.Hour)}, &metav1.Time{Time: last.Add(-10 * time.Minute)}
	nodes[2].Hooks[1].StartTime = &metav1.Time{Time: last}

	r := mustAssess(t, s)
	if healthByUID(r, "nodegate-db-workers-stalled") != nil || healthByUID(r, "nodegate-db-workers-gating") == nil {
		t.Fatalf("a run that moved 30 minutes ago is reported as %+v, want gating", r.Status.Health)
	}
	if due := last.Add(gateStallAfter + time.Nanosecond); r.NextCheck.IsZero() || r.NextCheck.After(due) {
		t.Errorf("next check %s, want one by %s, when the run would be stalled", r.NextCheck, due)
	}

	s.Now = last.Add(gateStallAfter)
	if healthByUID(mustAssess(t, s), "nodegate-db-workers-stalled") != nil {
		t.Fatal("stalled at exactly the bound")
	}
	s.Now = last.Add(gateStallAfter + time.Second)
	r = mustAssess(t, s)
	h := healthByUID(r, "nodegate-db-workers-stalled")
	if h == nil {
		t.Fatalf("no stalled insight among %+v", r.Status.Health)
	}
	want := "node-gate run db/workers has not moved since " + last.UTC().Format(time.RFC3339) + ": nodes of 'worker' wait for it"
	if h.Impact.Level != updatev1alpha1.WarningImpactLevel || h.Impact.Type != updatev1alpha1.UpdateStalledImpactType || h.Impact.Summary != want {
		t.Errorf("stalled insight = %s %s %q, want a Warning %s %q", h.Impact.Level, h.Impact.Type, h.Impact.Summary, updatev1alpha1.UpdateStalledImpactType, want)
	}
	for _, part := range []string{"kubectl -n db describe mutexrunconfig workers", "Do not unpause the pools"} {
		if !strings.Contains(h.Impact.Description, part) {
			t.Errorf("description %q lacks %q", h.Impact.Description, part)
		}
	}
	if healthByUID(r, "nodegate-db-workers-gating") != nil {
		t.Error("a stalled run is also reported as gating")
	}

	s.NodeGateRuns[0].Status.Phase = nodegatev1alpha1.RunWaiting
	s.NodeGateRuns[0].Status.Conditions = []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionFalse,
		Reason: gating.ReasonOutsideWindow, Message: "no maintenance window is open", LastTransitionTime: metav1.Time{Time: last}}}
	s.Now = last.Add(24 * time.Hour)
	if r := mustAssess(t, s); healthByUID(r, "nodegate-db-workers-stalled") != nil {
		t.Errorf("a run waiting for windows its spec does not have is reported stalled: %+v", r.Status.Health)
	}

	// Its own daily window opened two hours after its last move: only the
	// time it is open counts, so the run stalls gateStallAfter later.
	opens := last.Add(2 * time.Hour).Truncate(time.Minute)
	s.NodeGateRuns[0].Spec.MaintenanceWindows = []commonv1alpha1.MaintenanceWindow{{
		Start: opens.UTC().Format("15:04"), End: opens.Add(12 * time.Hour).UTC().Format("15:04")}}
	s.Now = opens.Add(gateStallAfter)
	if r := mustAssess(t, s); healthByUID(r, "nodegate-db-workers-stalled") != nil {
		t.Errorf("a run whose window has been open for gateStallAfter is reported stalled: %+v", r.Status.Health)
	}
	s.Now = opens.Add(gateStallAfter + time.Second)
	if r := mustAssess(t, s); healthByUID(r, "nodegate-db-workers-stalled") == nil {
		t.Errorf("a run whose window has been open for longer than gateStallAfter, without a move, is not reported stalled: %+v", r.Status.Health)
	}
}

func TestPausedRunStallsTheUpdateAndSaysWhoActs(t *testing.T) {
	s := gatedSnapshot(false)
	st := &s.NodeGateRuns[0].Status
	st.Phase = nodegatev1alpha1.RunPaused
	st.Conditions = []metav1.Condition{
		{Type: "Paused", Status: metav1.ConditionTrue, Reason: "HookFailed", Message: "a hook failed; change the spec (for example toggle spec.paused) to resume"},
		{Type: "Degraded", Status: metav1.ConditionTrue, Reason: "HookFailed", Message: "node worker-2: hook db-rule/backup failed: BackoffLimitExceeded"},
	}
	r := mustAssess(t, s)
	h := healthByUID(r, "nodegate-db-workers-paused")
	if h == nil {
		t.Fatalf("no insight for the paused run among %+v", r.Status.Health)
	}
	if h.Impact.Level != updatev1alpha1.WarningImpactLevel || h.Impact.Type != updatev1alpha1.UpdateStalledImpactType ||
		h.Impact.Summary != "node-gate run db/workers is paused (HookFailed): nodes of 'worker' wait for it" {
		t.Errorf("paused run insight = %s %s %q", h.Impact.Level, h.Impact.Type, h.Impact.Summary)
	}
	for _, want := range []string{"node worker-2: hook db-rule/backup failed: BackoffLimitExceeded", "kubectl -n db describe mutexrunconfig workers", "Do not unpause the pools"} {
		if !strings.Contains(h.Impact.Description, want) {
			t.Errorf("description %q lacks %q", h.Impact.Description, want)
		}
	}
	if healthByUID(r, "nodegate-db-workers-gating") != nil || healthByUID(r, "mcp-worker-paused") != nil {
		t.Errorf("a paused run is reported once, as paused: %+v", r.Status.Health)
	}
	if n := nodeInsight(r, "worker-3"); n == nil || !strings.HasPrefix(n.Message, "Gated by node-gate run db/workers, which is paused (HookFailed): node worker-2") {
		t.Errorf("worker-3 message = %q", n.Message)
	}
}

// A run whose configuration is refused while it holds the pools (its rule
// deleted mid-run) is stuck as well: blocked, and the advice is to fix
// the configuration, not to touch the run's spec or the pools.
func TestBlockedRunStallsTheUpdateAndSaysWhatToFix(t *testing.T) {
	s := gatedSnapshot(false)
	st := &s.NodeGateRuns[0].Status
	st.Phase = nodegatev1alpha1.RunBlocked
	st.Conditions = []metav1.Condition{{Type: "Blocked", Status: metav1.ConditionTrue, Reason: "MissingRule", Message: "MutexRule db/db-rule does not exist"}}
	r := mustAssess(t, s)
	h := healthByUID(r, "nodegate-db-workers-paused")
	if h == nil || h.Impact.Type != updatev1alpha1.UpdateStalledImpactType ||
		h.Impact.Summary != "node-gate run db/workers is blocked (MissingRule): nodes of 'worker' wait for it" {
		t.Fatalf("blocked run insight = %+v", h)
	}
	for _, want := range []string{"MutexRule db/db-rule does not exist", "Fix what the run's Blocked condition names", "Do not unpause the pools"} {
		if !strings.Contains(h.Impact.Description, want) {
			t.Errorf("description %q lacks %q", h.Impact.Description, want)
		}
	}
	if strings.Contains(h.Impact.Description, "spec.paused") {
		t.Errorf("a blocked run is not resumed through its spec: %q", h.Impact.Description)
	}
	if n := nodeInsight(r, "worker-3"); n == nil || n.Message != "Gated by node-gate run db/workers, which is blocked (MissingRule): MutexRule db/db-rule does not exist" {
		t.Errorf("worker-3 message = %q", n.Message)
	}
}

// A pool the administrator had paused before the run stays the
// administrator's: the run will give it back paused, and oc's words apply.
func TestPoolPausedBeforeTheRunKeepsOcWording(t *testing.T) {
	r := mustAssess(t, gatedSnapshot(true))
	h := healthByUID(r, "mcp-worker-paused")
	if h == nil || h.Impact.Summary != "Outdated nodes in a paused pool 'worker' will not be updated" {
		t.Fatalf("want oc's paused-pool insight, got %+v", r.Status.Health)
	}
	if n := nodeInsight(r, "worker-3"); cond(n.Conditions, "Updating").Reason != "Paused" {
		t.Errorf("worker-3 phase = %s, want Paused", cond(n.Conditions, "Updating").Reason)
	}
	// The gate pool the run created is still the run's: its nodes are
	// reported in their source pool.
	if len(r.Status.WorkerPools) != 1 {
		t.Errorf("worker pools = %d, want 1 (the gate pool folded into worker)", len(r.Status.WorkerPools))
	}
}

// A run that waits before it has planned its nodes says what it waits for.
func TestWaitingRunSaysWhy(t *testing.T) {
	s := gatedSnapshot(false)
	st := &s.NodeGateRuns[0].Status
	st.Phase, st.Nodes, st.Summary = nodegatev1alpha1.RunWaiting, nil, nodegatev1alpha1.Summary{}
	st.Conditions = []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionFalse, Reason: "ControlPlaneUpdating",
		Message: "the control plane is updating to 4.18.1"}}
	r := mustAssess(t, s)
	if h := healthByUID(r, "nodegate-db-workers-gating"); h == nil ||
		h.Impact.Summary != "Pools 'worker' are gated by node-gate run db/workers; waiting: ControlPlaneUpdating: the control plane is updating to 4.18.1" {
		t.Errorf("gating insight = %+v", h)
	}
	// A node says why by the reason alone: the message is the health
	// insight's, and its changes must not rewrite every held node.
	if n := nodeInsight(r, "worker-3"); n.Message != "Gated by node-gate run db/workers: waiting: ControlPlaneUpdating" {
		t.Errorf("worker-3 message = %q", n.Message)
	}
	st.Conditions[0].Message = "an update to 4.18.1 is requested and the control plane has not finished it"
	if n := nodeInsight(mustAssess(t, s), "worker-3"); n.Message != "Gated by node-gate run db/workers: waiting: ControlPlaneUpdating" {
		t.Errorf("worker-3 message after the run's message changed = %q", n.Message)
	}
}

// heldSnapshot is baseSnapshot during a node-gate run that holds the
// worker pool's nodes in its paused gate pool worker-gate (the hold label)
// while worker runs: worker-2's pre-update hooks ran for w-new, and
// node-gate has just released it (label removed, release mark set), but
// the run's status, written after the release, still says PreHooks.
func heldSnapshot() Snapshot {
	s := baseSnapshot()
	gate := pool("worker-gate", "worker", "w-old", true)
	gate.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{gating.HoldLabel: "worker"}}
	s.MachineConfigPools = append(s.MachineConfigPools, gate)
	held := func(n *corev1.Node) { n.Labels[gating.HoldLabel] = "worker" }
	s.Nodes = []*corev1.Node{
		node("master-0", "master", "m-new", "m-new", "Done"),
		node("worker-0", "worker", "w-new", "w-new", "Done"),
		node("worker-2", "worker", "w-old", "w-old", "Done", annotate(gating.ReleasedAnnotation, "round-2/w-new")),
		node("worker-3", "worker", "w-old", "w-old", "Done", held),
	}
	truth, falsity := true, false
	run := nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "workers"}}
	run.Status = nodegatev1alpha1.MutexRunConfigStatus{
		Phase: nodegatev1alpha1.RunProgressing,
		RunID: "round-2",
		Pools: []nodegatev1alpha1.PoolRecord{{Name: "worker", GatePool: "worker-gate", GatePoolCreated: true,
			TargetConfig: "w-new", OriginalPaused: &falsity, OriginalGatePaused: &truth}},
		Summary: nodegatev1alpha1.Summary{Total: 3, Succeeded: 1, InProgress: 1, Pending: 1},
		Nodes: []nodegatev1alpha1.NodeRecord{
			{Name: "worker-0", Pool: "worker", Phase: nodegatev1alpha1.NodeCompleted},
			{Name: "worker-2", Pool: "worker", Phase: nodegatev1alpha1.NodePreHooks, HooksTarget: "w-new", Hooks: []nodegatev1alpha1.HookRecord{
				{Rule: "db-rule", Name: "job", Stage: nodegatev1alpha1.StagePre, Phase: nodegatev1alpha1.HookSucceeded},
			}},
			{Name: "worker-3", Pool: "worker", Phase: nodegatev1alpha1.NodePending},
		},
	}
	s.NodeGateRuns = []nodegatev1alpha1.MutexRunConfig{run}
	return s
}

// A node node-gate released is reported released as soon as the node shows
// it (no hold label, this round's release mark for the target its hooks ran
// for), not as waiting for its hooks until the run's status catches up,
// which would also rewrite its insight twice. A node without the mark was
// released by someone else, and says what its record says.
func TestReleasedNodeIsReportedBeforeTheRunStatusSaysSo(t *testing.T) {
	const released = "Gated by node-gate run db/workers: released, waiting for the machine-config operator"
	const hooksDone = "Gated by node-gate run db/workers: pre-update hooks done, waiting for its turn"
	for _, tc := range []struct {
		name   string
		change func(s *Snapshot)
		want   string
	}{
		{"marked by this round", func(*Snapshot) {}, released},
		{"the status caught up", func(s *Snapshot) {
			s.NodeGateRuns[0].Status.Nodes[1].Phase = nodegatev1alpha1.NodeReleased
		}, released},
		{"no mark: someone else removed the label", func(s *Snapshot) {
			delete(s.Nodes[2].Annotations, gating.ReleasedAnnotation)
		}, hooksDone},
		{"the mark of an earlier round", func(s *Snapshot) {
			s.Nodes[2].Annotations[gating.ReleasedAnnotation] = "round-1/w-new"
		}, hooksDone},
		{"the mark of another target: hooks ran again since", func(s *Snapshot) {
			s.NodeGateRuns[0].Status.Nodes[1].HooksTarget = "w-newer"
		}, hooksDone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := heldSnapshot()
			tc.change(&s)
			r := mustAssess(t, s)
			n := nodeInsight(r, "worker-2")
			if n == nil {
				t.Fatal("no insight for worker-2")
			}
			if n.Message != tc.want {
				t.Errorf("message = %q, want %q", n.Message, tc.want)
			}
			// Out of the gate pool, the node waits in its running pool.
			if got := cond(n.Conditions, "Updating"); got.Reason != "Pending" || n.PoolResource.Name != "worker" {
				t.Errorf("Updating reason %s in pool %s, want Pending in worker", got.Reason, n.PoolResource.Name)
			}
			if h := nodeInsight(r, "worker-3"); h == nil || cond(h.Conditions, "Updating").Reason != "Gated" {
				t.Errorf("worker-3, held, = %+v, want Gated", h)
			}
		})
	}
}

// Without runs (node-gate not installed, or a run that restored
// everything), nothing changes: a paused pool is oc's, a pool named like a
// gate pool is a pool.
func TestWithoutRunsEverythingIsOcs(t *testing.T) {
	s := gatedSnapshot(false)
	restored := s.NodeGateRuns[0]
	restored.Status.Phase = nodegatev1alpha1.RunCompleted
	restored.Status.Pools = []nodegatev1alpha1.PoolRecord{{Name: "worker", TargetConfig: "w-gate-new"}}
	for name, runs := range map[string][]nodegatev1alpha1.MutexRunConfig{"no runs": nil, "restored run": {restored}} {
		t.Run(name, func(t *testing.T) {
			s.NodeGateRuns = runs
			r := mustAssess(t, s)
			if healthByUID(r, "mcp-worker-paused") == nil {
				t.Errorf("want oc's paused-pool insight, got %+v", r.Status.Health)
			}
			if len(r.Status.WorkerPools) != 2 {
				t.Errorf("worker pools = %d, want worker and worker-gate", len(r.Status.WorkerPools))
			}
			for i := range r.Nodes {
				if strings.Contains(r.Nodes[i].Message, "node-gate") || cond(r.Nodes[i].Conditions, "Updating").Reason == "Gated" {
					t.Errorf("%s: %q", r.Nodes[i].Name, r.Nodes[i].Message)
				}
			}
		})
	}
}

// After an API server restart the caches of runs and of pools list again
// separately, and for a while the controller may see a gate pool before
// the run that records it. The pool's own gate-for label still folds it
// into its source pool: reported as a pool of its own, the worker pool
// would read as done while its nodes wait in the gate pool.
func TestGatePoolKnownByItsLabelBeforeItsRun(t *testing.T) {
	s := gatedSnapshot(false)
	s.NodeGateRuns = nil
	gate := &s.MachineConfigPools[len(s.MachineConfigPools)-1]
	gate.Labels = map[string]string{gating.GatePoolLabel: "worker"}

	r := mustAssess(t, s)
	if len(r.Status.WorkerPools) != 1 || r.Status.WorkerPools[0].Name != "worker" {
		t.Fatalf("worker pools = %+v, want worker only", r.Status.WorkerPools)
	}
	if total := r.Status.WorkerPools[0].Pool.Summary("Total"); total != 4 {
		t.Errorf("worker pool counts %d nodes, want 4", total)
	}
	n := nodeInsight(r, "worker-1")
	if n == nil || n.PoolResource.Name != "worker" {
		t.Fatalf("worker-1 = %+v, want it reported in pool worker", n)
	}
}
