package plan

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/window"
)

// gatedWorkers brings a world to wait for its workers while node-gate's run
// db/workers holds the worker pool: 2 of 3 workers are still in "worker",
// one is held in "worker-gate". The worker deadline is 30 minutes.
func gatedWorkers(t *testing.T) *world {
	w := newWorld(t)
	w.uc.Spec.CapacityReservation = false
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	minutes := int32(30)
	w.uc.Spec.Deadlines = &upgradev1alpha1.Deadlines{Workers: &upgradev1alpha1.Deadline{Minutes: &minutes, Policy: upgradev1alpha1.DeadlineFail}}
	w.settle()
	w.cvo()
	w.snap.Pools[1] = pool("worker", 2, 0, "rendered-worker-2")
	w.snap.Pools = append(w.snap.Pools, pool("worker-gate", 1, 0, "rendered-worker-gate-2"))
	w.snap.NodeGateRuns = []gating.Run{{Namespace: "db", Name: "workers", Pools: []string{"worker"}, PausedPools: []string{"worker"},
		GatePools: map[string]string{"worker-gate": "worker"}, Done: 0, Total: 3}}
	w.settle()
	if w.uc.Status.CurrentStep != string(StepWorkerNodesUpgraded) {
		t.Fatalf("waiting in %s, want %s", w.uc.Status.CurrentStep, StepWorkerNodesUpgraded)
	}
	return w
}

func TestGatedWorkersAreOnePoolAndNamedTheRun(t *testing.T) {
	w := gatedWorkers(t)
	c := w.stepCondition(StepWorkerNodesUpgraded)
	want := "worker pools updating: worker (nodes held by node-gate); gated by node-gate run db/workers"
	if c == nil || !strings.Contains(c.Message, want) {
		t.Fatalf("worker step %+v, want its message to contain %q", c, want)
	}
	if strings.Contains(c.Message, "worker-gate (") {
		t.Errorf("the gate pool is listed as a pool of its own: %q", c.Message)
	}
}

// A run that holds the workers as designed never fires the worker
// deadline, however long it takes; the silence's window runs from now.
func TestHoldingRunDefersTheWorkerDeadline(t *testing.T) {
	w := gatedWorkers(t)
	w.now = w.now.Add(5 * time.Hour)
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgrading || w.summary("DeadlineExceeded").Status == metav1.ConditionTrue {
		t.Fatalf("deadline fired while node-gate held the workers as designed: phase %s, %+v", w.phase(), w.summary("DeadlineExceeded"))
	}
	if end := newPlanner(Input{UpgradeConfig: w.uc, Config: w.cfg, Snapshot: w.snap, Now: w.now}).withDeadlines().leaseWindowEnd("workers"); end.Before(w.now) {
		t.Errorf("the worker silence's window ended at %s, before now (%s), while the run holds", end, w.now)
	}
}

// A stopped run (a failed hook) is no reason to wait: the deadline runs from
// the control plane's end as without node-gate, and its message names the
// run.
func TestStoppedRunLetsTheWorkerDeadlineFire(t *testing.T) {
	w := gatedWorkers(t)
	w.snap.NodeGateRuns[0].Stopped = &gating.Stop{Reason: "HookFailed", Message: "node w-1: hook db-rule/backup failed"}
	w.now = w.now.Add(31 * time.Minute)
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseFailed {
		t.Fatalf("phase %s, want Failed by the worker deadline", w.phase())
	}
	c := w.summary("DeadlineExceeded")
	if c == nil || !strings.Contains(c.Message, "node-gate run db/workers is stopped (HookFailed: node w-1: hook db-rule/backup failed)") {
		t.Fatalf("DeadlineExceeded %+v does not name the run", c)
	}
}

// A run that holds but has not moved for longer than the stall bound (its
// node-gate is down, or a hook hangs without a timeout) is stuck: the
// scheduler wakes when the bound passes, the deadline fires and its message
// names the run and since when nothing moved. Until then it holds as
// designed. A run waiting for its own window is timed by its windows' open
// time alone.
func TestStalledRunLetsTheWorkerDeadlineFire(t *testing.T) {
	w := gatedWorkers(t)
	bound := newPlanner(Input{UpgradeConfig: w.uc, Config: w.cfg, Snapshot: w.snap, Now: w.now}).withDeadlines().stallBound()
	if bound < 30*time.Minute {
		t.Fatalf("stall bound %s is shorter than the worker deadline", bound)
	}
	moved := w.now.Add(time.Hour)
	w.snap.NodeGateRuns[0].LastProgress = moved
	w.now = moved.Add(bound)
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgrading {
		t.Fatalf("phase %s at the stall bound, want Upgrading", w.phase())
	}
	if w.last.RequeueAfter != time.Second {
		t.Fatalf("next look in %s, want a second, when the bound has passed", w.last.RequeueAfter)
	}

	w.now = w.now.Add(time.Minute)
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseFailed {
		t.Fatalf("phase %s past the stall bound, want Failed by the worker deadline", w.phase())
	}
	c := w.summary("DeadlineExceeded")
	want := "node-gate run db/workers is stopped (NoProgress: nothing has moved since " + moved.UTC().Format(time.RFC3339)
	if c == nil || !strings.Contains(c.Message, want) {
		t.Fatalf("DeadlineExceeded %+v, want it to contain %q", c, want)
	}

	waiting := gatedWorkers(t)
	waiting.snap.NodeGateRuns[0].LastProgress = moved
	waiting.snap.NodeGateRuns[0].WaitingReason = gating.ReasonOutsideWindow
	waiting.now = w.now
	waiting.settle()
	if waiting.phase() != upgradev1alpha1.UpgradePhaseUpgrading {
		t.Fatalf("phase %s past the bound for a run waiting for its own window, want Upgrading", waiting.phase())
	}

	// The same wait, for a daily 12-hour window that opened an hour after
	// the run's last move: the run defers the deadline until the window has
	// been open for the bound without it moving (its node-gate is down),
	// and not a minute longer.
	if bound >= 12*time.Hour {
		t.Fatalf("stall bound %s does not fit in the window below", bound)
	}
	opens := moved.Add(time.Hour).Truncate(time.Minute)
	down := gatedWorkers(t)
	r := &down.snap.NodeGateRuns[0]
	r.LastProgress, r.WaitingReason = moved, gating.ReasonOutsideWindow
	var err error
	r.Windows, err = window.FromAPI([]commonv1alpha1.MaintenanceWindow{{Start: opens.UTC().Format("15:04"), End: opens.Add(12 * time.Hour).UTC().Format("15:04")}})
	if err != nil {
		t.Fatal(err)
	}
	down.now = opens.Add(bound)
	down.settle()
	if down.phase() != upgradev1alpha1.UpgradePhaseUpgrading {
		t.Fatalf("phase %s when its window has been open for the bound, want Upgrading", down.phase())
	}
	down.now = down.now.Add(time.Minute)
	down.settle()
	if c := down.summary("DeadlineExceeded"); down.phase() != upgradev1alpha1.UpgradePhaseFailed || c == nil || !strings.Contains(c.Message, "db/workers is stopped (NoProgress") {
		t.Fatalf("phase %s, DeadlineExceeded %+v once its window has been open for longer than the bound; want Failed, naming the run", down.phase(), c)
	}
}

// Once the run has finished, the deadline runs again from that moment: the
// pass the run leaves to the MCO gets the whole allowance.
func TestFinishedRunRestartsTheWorkerDeadline(t *testing.T) {
	w := gatedWorkers(t)
	finished := w.now.Add(4 * time.Hour)
	w.snap.NodeGateRuns[0] = gating.Run{Namespace: "db", Name: "workers", Finished: finished}
	w.snap.Pools = w.snap.Pools[:2]
	w.now = finished.Add(29 * time.Minute)
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgrading {
		t.Fatalf("phase %s 29 minutes after the run finished, want Upgrading", w.phase())
	}
	w.now = finished.Add(31 * time.Minute)
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseFailed {
		t.Fatalf("phase %s 31 minutes after the run finished, want Failed", w.phase())
	}
}

// The temporary workers are gated like any other; they go only once no
// node-gate run holds a worker pool, so their removal never races a hold.
func TestTemporaryCapacityOutlivesNodeGateHolds(t *testing.T) {
	w := newWorld(t)
	w.now = t0.Add(time.Hour)
	w.settle()
	w.now = w.now.Add(5 * time.Minute)
	w.machineAPI()
	w.settle()
	w.now = w.now.Add(40 * time.Minute)
	w.cvo()
	w.snap.Pools[1] = pool("worker", 3, 1, "rendered-worker-2")
	w.snap.Pools[1].Status.Configuration.Name = "rendered-worker-1"
	w.settle()
	if w.uc.Status.CurrentStep != string(StepWorkerNodesUpgraded) || w.surgeCount() == 0 {
		t.Fatalf("at %s with %d temporary MachineSets, want the worker step with some", w.uc.Status.CurrentStep, w.surgeCount())
	}
	// The workers are done, but the run still holds worker (its last
	// node's post-update hooks, its pools not yet given back).
	w.mco()
	w.snap.NodeGateRuns = []gating.Run{{Namespace: "db", Name: "workers", Pools: []string{"worker"}, PausedPools: []string{"worker"}, Done: 3, Total: 3}}
	w.settle()
	c := w.stepCondition(StepComputeCapacityRemoved)
	if w.uc.Status.CurrentStep != string(StepComputeCapacityRemoved) || w.surgeCount() == 0 || c == nil ||
		!strings.Contains(c.Message, "temporary capacity kept while node-gate holds worker pools: run db/workers") {
		t.Fatalf("step %s, %d temporary MachineSets, condition %+v", w.uc.Status.CurrentStep, w.surgeCount(), c)
	}
	// The run gives its pools back: the temporary MachineSets go.
	w.snap.NodeGateRuns = []gating.Run{{Namespace: "db", Name: "workers", Done: 3, Total: 3, Finished: w.now}}
	w.settle()
	if w.surgeCount() != 0 || w.phase() != upgradev1alpha1.UpgradePhaseUpgraded {
		t.Fatalf("after the run: %d temporary MachineSets, phase %s", w.surgeCount(), w.phase())
	}
}
