package plan

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// The mcp-tracker writes status.pools, the WorkersUpgraded condition and
// history[].workerStartTime/workerCompleteTime with server-side apply. The
// scheduler writes the whole status with an update of the object it read, so
// the planner must carry those fields over unchanged at every step, or the
// scheduler's next write would wipe them.
func TestPlanKeepsTheTrackersFields(t *testing.T) {
	w := newWorld(t)
	w.autoMachineAPI = true
	start := metav1.NewTime(t0.Add(90 * time.Minute))
	pools := []upgradev1alpha1.PoolUpdate{{Name: "worker", TargetConfig: "rendered-worker-2", StartTime: &start, MachineCount: 3,
		Nodes: upgradev1alpha1.PoolNodeCounts{Done: 1, Updating: 2}}}
	workers := metav1.Condition{Type: upgradev1alpha1.WorkersUpgradedCondition, Status: metav1.ConditionFalse, Reason: "PoolsUpdating",
		Message: "updating: worker (1 of 3 nodes done)", LastTransitionTime: start}
	injectedHistory := false
	inject := func() {
		w.uc.Status.Pools = pools
		meta.SetStatusCondition(&w.uc.Status.Conditions, workers)
		if injectedHistory = len(w.uc.Status.History) > 0; injectedHistory {
			w.uc.Status.History[0].WorkerStartTime = &start
		}
	}
	check := func(when string) {
		t.Helper()
		if !reflect.DeepEqual(w.uc.Status.Pools, pools) {
			t.Fatalf("%s: status.pools changed: %+v", when, w.uc.Status.Pools)
		}
		if c := meta.FindStatusCondition(w.uc.Status.Conditions, upgradev1alpha1.WorkersUpgradedCondition); c == nil || !reflect.DeepEqual(*c, workers) {
			t.Fatalf("%s: WorkersUpgraded changed: %+v", when, c)
		}
		if h := w.uc.Status.History; injectedHistory && !h[0].WorkerStartTime.Equal(&start) {
			t.Fatalf("%s: workerStartTime changed: %v", when, h[0].WorkerStartTime)
		}
	}
	phases := map[upgradev1alpha1.UpgradePhase]bool{}
	phase := func() upgradev1alpha1.UpgradePhase {
		if len(w.uc.Status.History) == 0 {
			return ""
		}
		return w.phase()
	}
	for i := 0; i < 200 && phase() != upgradev1alpha1.UpgradePhaseUpgraded; i++ {
		if i > 0 {
			w.now = w.now.Add(10 * time.Minute)
		}
		inject()
		w.plan()
		check(string(phase()))
		phases[phase()] = true
		w.cvo()
		if w.snap.ClusterVersion.Status.Desired.Version == "4.14.15" {
			w.mco()
		}
	}
	if !phases[upgradev1alpha1.UpgradePhaseUpgrading] || phase() != upgradev1alpha1.UpgradePhaseUpgraded {
		t.Fatalf("the scenario did not run the upgrade through: phases %v, last %s", phases, phase())
	}
}
