package plan

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// TestPlannerProperties runs random sequences of observed states through the
// planner: the clock jumps, the CVO, the MCO and the machine API progress or
// not, operators degrade and recover, side effects fail, status writes are
// lost (a crash between acting and recording), someone deletes a temporary
// MachineSet, the user pauses, cancels, or changes the deadlines. Whatever the
// sequence:
//   - ClusterVersion's desiredUpdate is never patched once it points at the target;
//   - no temporary MachineSet is ever created twice;
//   - once the attempt ends, the temporary capacity is removed;
//   - the upgrade always reaches a terminal phase once the cluster cooperates.
func TestPlannerProperties(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runSequence(t, seed) })
	}
}

func runSequence(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	w := newWorld(t)
	w.uc.Finalizers = []string{Finalizer}
	if rng.Intn(2) == 0 {
		w.uc.Spec.Type = upgradev1alpha1.ARO
	}
	w.uc.Spec.CapacityReservation = rng.Intn(4) != 0
	if rng.Intn(3) == 0 {
		w.uc.Spec.UpgradeAt = t0.Add(-time.Hour).Format(time.RFC3339)
	}
	if rng.Intn(4) == 0 {
		w.uc.Spec.MaintenanceWindows = []commonv1alpha1.MaintenanceWindow{{Start: "09:00", End: "17:00", TimeZone: "Europe/Berlin"}}
	}
	if rng.Intn(3) == 0 {
		policies := []upgradev1alpha1.DeadlinePolicy{"alert", "pause", "fail"}
		w.uc.Spec.Deadlines = &upgradev1alpha1.Deadlines{
			ControlPlane: &upgradev1alpha1.Deadline{Minutes: ptr(int32(rng.Intn(120))), Policy: policies[rng.Intn(3)]},
			Workers:      &upgradev1alpha1.Deadline{Minutes: ptr(int32(rng.Intn(120))), Policy: policies[rng.Intn(3)]},
			PostCheck:    &upgradev1alpha1.Deadline{Minutes: ptr(int32(rng.Intn(120))), Policy: policies[rng.Intn(3)]},
		}
	}
	// The alerts never change the course here (every sequence must end),
	// but whether a plan could do without them is checked on each step.
	// (Decided by the seed, not rng, to keep each seed's sequence.)
	if seed%2 == 0 {
		w.snap.Alerts = &AlertsResult{}
	}
	target := w.uc.Spec.Desired.Version
	successfulCreates := map[string]int{}
	var trace []string

	step := func() {
		// Decide as the reconciler would, then maybe fail the action or lose
		// the status write.
		before := *w.uc.Status.DeepCopy()
		in := Input{UpgradeConfig: w.uc, Config: w.cfg, Snapshot: w.snap, Now: w.now}
		out := Plan(in)
		checkAlertsUnread(t, in, out)
		trace = append(trace, fmt.Sprintf("%s plan: phase=%s step=%s action=%v", w.now.Format("15:04"), phaseOf(out.Status), out.Status.CurrentStep, describe(out.Action)))
		if a := out.Action; a != nil {
			switch {
			case a.Kind == PatchClusterVersion && a.ClusterVersion.DesiredUpdate != nil:
				if d := w.snap.ClusterVersion.Spec.DesiredUpdate; d != nil && d.Version == target {
					t.Fatalf("seed %d: desiredUpdate patched again although it points at %s\n%s", seed, target, tail(trace))
				}
			case a.Kind == CreateMachineSet:
				for _, ms := range w.snap.MachineSets {
					if ms.Name == a.MachineSet.Name {
						t.Fatalf("seed %d: creating %s which exists\n%s", seed, ms.Name, tail(trace))
					}
				}
			}
			if rng.Intn(5) == 0 {
				w.uc.Status = RecordActionError(out.Status, a.Step, errors.New("injected failure"), w.now)
				return
			}
			if a.Kind == CreateMachineSet {
				successfulCreates[a.MachineSet.Name]++
				if successfulCreates[a.MachineSet.Name] > 1 {
					t.Fatalf("seed %d: %s created twice\n%s", seed, a.MachineSet.Name, tail(trace))
				}
			}
			w.apply(a)
		}
		if rng.Intn(8) == 0 {
			w.uc.Status = before // the status write was lost
			return
		}
		w.uc.Status = out.Status
	}

	for i := 0; i < 80; i++ {
		switch rng.Intn(12) {
		case 0, 1, 2, 3:
			step()
		case 4:
			w.now = w.now.Add(time.Duration(rng.Intn(50)) * time.Minute)
		case 5:
			if rng.Intn(2) == 0 {
				w.cvo()
			}
		case 6:
			if w.snap.ClusterVersion.Spec.DesiredUpdate != nil && rng.Intn(2) == 0 {
				w.mco()
			}
		case 7:
			w.machineAPI()
		case 8:
			c := &w.snap.ClusterOperators[rng.Intn(3)].Status.Conditions[1]
			if c.Status == configv1.ConditionTrue {
				c.Status = configv1.ConditionFalse
			} else {
				c.Status = configv1.ConditionTrue
			}
		case 9:
			// Someone deletes a temporary MachineSet this upgrade has recorded.
			if cr := w.uc.Status.CapacityReservation; cr != nil && len(cr.MachineSets) > 0 {
				w.removeMachineSet(cr.MachineSets[rng.Intn(len(cr.MachineSets))])
			}
		case 10:
			w.uc.Spec.Paused = !w.uc.Spec.Paused
			w.uc.Generation++
		case 11:
			if rng.Intn(4) == 0 {
				w.uc.Spec.Cancel = true
				w.uc.Generation++
			}
		}
		if ph := phaseOf(w.uc.Status); terminal(ph) && !w.uc.Spec.Paused {
			// A terminal attempt never creates capacity again.
			if out := Plan(Input{UpgradeConfig: w.uc, Config: w.cfg, Snapshot: w.snap, Now: w.now}); out.Action != nil && out.Action.Kind != DeleteMachineSet {
				t.Fatalf("seed %d: action %v in terminal phase %s\n%s", seed, describe(out.Action), ph, tail(trace))
			}
		}
	}

	// Now the cluster cooperates: unpause, heal, let time pass. The upgrade
	// must end, and nothing temporary may be left.
	w.uc.Spec.Paused = false
	w.uc.Generation++
	for _, co := range w.snap.ClusterOperators {
		co.Status.Conditions[1].Status = configv1.ConditionFalse
	}
	for i := range w.snap.ClusterOperators {
		w.snap.ClusterOperators[i].Status.Conditions[1].Status = configv1.ConditionFalse
	}
	for i := 0; i < 200 && !(terminal(phaseOf(w.uc.Status)) && w.surgeCount() == 0); i++ {
		if w.uc.Status.PausedByDeadline != nil {
			w.uc.Generation++
		}
		w.now = w.now.Add(10 * time.Minute)
		w.cvo()
		if w.snap.ClusterVersion.Spec.DesiredUpdate != nil {
			w.mco()
		}
		w.machineAPI()
		step()
	}
	if ph := phaseOf(w.uc.Status); !terminal(ph) {
		t.Fatalf("seed %d: never ended: phase %s step %s\n%s", seed, ph, w.uc.Status.CurrentStep, tail(trace))
	}
	if n := w.surgeCount(); n != 0 {
		t.Fatalf("seed %d: %d temporary MachineSets left in phase %s\n%s", seed, n, phaseOf(w.uc.Status), tail(trace))
	}
	// Deleting the UpgradeConfig afterwards releases it.
	w.uc.DeletionTimestamp = ptrTime(w.now)
	w.settle()
	if !w.finalizerRemoved {
		t.Fatalf("seed %d: finalizer not removed", seed)
	}
}

func phaseOf(st upgradev1alpha1.UpgradeConfigStatus) upgradev1alpha1.UpgradePhase {
	if len(st.History) == 0 {
		return ""
	}
	return st.History[0].Phase
}

func describe(a *Action) string {
	if a == nil {
		return "-"
	}
	switch {
	case a.MachineSet != nil:
		return string(a.Kind) + " " + a.MachineSet.Name
	case a.ClusterVersion != nil:
		return string(a.Kind) + " " + string(a.ClusterVersion.MergePatch())
	}
	return string(a.Kind)
}

func tail(trace []string) string {
	if len(trace) > 40 {
		trace = trace[len(trace)-40:]
	}
	out := ""
	for _, l := range trace {
		out += l + "\n"
	}
	return out
}
