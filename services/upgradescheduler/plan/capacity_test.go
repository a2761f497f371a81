package plan

import (
	"strings"
	"testing"
	"time"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/gating"
)

// With scale.leadTime the temporary machines are requested that long before
// the start, provision while the attempt is Pending, and the upgrade commences
// at its start without waiting for them.
func TestCapacityRequestedAhead(t *testing.T) {
	w := newWorld(t) // upgradeAt t0+1h
	w.cfg = mustConfig(t, "scale:\n  leadTime: 10\n")
	w.settle()
	if w.surgeCount() != 0 || w.last.RequeueAfter != 50*time.Minute {
		t.Fatalf("an hour before the start: %d temporary MachineSets, next look in %s, want none and 50m", w.surgeCount(), w.last.RequeueAfter)
	}
	w.now = t0.Add(50 * time.Minute)
	w.settle()
	c := w.summary("Progressing")
	if w.surgeCount() != 2 || w.creates["c1-worker-a-upgrade"] != 1 || w.creates["c1-worker-b-upgrade"] != 1 ||
		w.phase() != upgradev1alpha1.UpgradePhasePending || w.desiredPatches != 0 || w.eventCount("CapacityRequestedAhead") != 1 ||
		c == nil || !strings.Contains(c.Message, "temporary capacity requested ahead of it: waiting for c1-worker-a-upgrade, c1-worker-b-upgrade") {
		t.Fatalf("at the lead time: %d copies (creates %v), phase %s, %d ClusterVersion patches, Progressing %+v",
			w.surgeCount(), w.creates, w.phase(), w.desiredPatches, c)
	}
	w.now = t0.Add(55 * time.Minute)
	w.machineAPI()
	w.settle()
	if c := w.summary("Progressing"); !strings.HasSuffix(c.Message, "temporary capacity ready ahead of it") {
		t.Fatalf("provisioned before the start: Progressing %q", c.Message)
	}
	w.now = t0.Add(time.Hour)
	w.settle()
	step := w.stepCondition(StepComputeCapacityReserved)
	if w.desiredPatches != 1 || w.uc.Status.CapacityReservation.Outcome != CapacityReady || step == nil ||
		!step.StartTime.Equal(step.CompleteTime) || w.creates["c1-worker-a-upgrade"] != 1 {
		t.Fatalf("at the start: %d ClusterVersion patches, capacity %+v, step %+v, creates %v; want commenced at once on the ready copies",
			w.desiredPatches, w.uc.Status.CapacityReservation, step, w.creates)
	}
}

// Requested ahead, the copies' scale.timeOut counts from the start, not from
// the request: the lead time is not taken from the wait the step allows.
func TestCapacityAheadTimesOutFromTheStart(t *testing.T) {
	w := newWorld(t)
	w.cfg = mustConfig(t, "scale:\n  leadTime: 10\n")
	w.now = t0.Add(50 * time.Minute)
	w.settle()
	w.now = t0.Add(time.Hour)
	w.settle()
	w.now = t0.Add(time.Hour + 29*time.Minute)
	w.settle()
	if w.desiredPatches != 0 || w.uc.Status.CurrentStep != string(StepComputeCapacityReserved) {
		t.Fatalf("29 minutes after the start: %d ClusterVersion patches in step %s, want still waiting for capacity", w.desiredPatches, w.uc.Status.CurrentStep)
	}
	w.now = t0.Add(time.Hour + 30*time.Minute)
	w.settle()
	if w.desiredPatches != 1 || w.uc.Status.CapacityReservation.Outcome != CapacityTimedOut {
		t.Fatalf("30 minutes after the start: %d ClusterVersion patches, capacity %+v", w.desiredPatches, w.uc.Status.CapacityReservation)
	}
}

// Copies made for a start that moved further away than the lead time go, and
// are requested again when the new start comes near; a node-gate run holding
// a worker pool keeps them meanwhile.
func TestCapacityAheadFollowsTheSchedule(t *testing.T) {
	w := newWorld(t)
	w.cfg = mustConfig(t, "scale:\n  leadTime: 10\n")
	w.now = t0.Add(50 * time.Minute)
	w.settle()
	w.machineAPI()
	later := t0.Add(5 * time.Hour)
	w.uc.Spec.UpgradeAt = later.Format(time.RFC3339)
	w.uc.Generation++
	w.snap.NodeGateRuns = []gating.Run{{Namespace: "db", Name: "workers", Pools: []string{"worker"}, PausedPools: []string{"worker"}}}
	w.settle()
	if c := w.summary("Progressing"); w.surgeCount() != 2 || !strings.Contains(c.Message, "kept while node-gate holds worker pools: run db/workers") {
		t.Fatalf("rescheduled under a node-gate hold: %d copies, Progressing %q", w.surgeCount(), c.Message)
	}
	w.snap.NodeGateRuns = nil
	w.settle()
	if w.surgeCount() != 0 || w.deletes["c1-worker-a-upgrade"] != 1 || w.deletes["c1-worker-b-upgrade"] != 1 ||
		w.uc.Status.CapacityReservation != nil || w.eventCount("CapacityCleanup") != 2 {
		t.Fatalf("rescheduled: %d copies (deletes %v), capacity %+v", w.surgeCount(), w.deletes, w.uc.Status.CapacityReservation)
	}
	w.now = later.Add(-10 * time.Minute)
	w.settle()
	if w.surgeCount() != 2 || w.creates["c1-worker-a-upgrade"] != 2 {
		t.Fatalf("near the new start: %d copies (creates %v)", w.surgeCount(), w.creates)
	}
}

// Without a lead time (MUO's way) an attempt sent back to Pending by a later
// upgradeAt no longer keeps the machines it reserved until the new start.
func TestRescheduledAttemptReleasesItsCapacity(t *testing.T) {
	w := newWorld(t)
	w.now = t0.Add(time.Hour)
	w.holdHealth(true)
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	w.settle()
	w.holdHealth(false)
	w.settle() // copies created, waiting for them
	if w.surgeCount() != 2 || w.desiredPatches != 0 {
		t.Fatalf("setup: %d copies, %d ClusterVersion patches", w.surgeCount(), w.desiredPatches)
	}
	w.uc.Spec.UpgradeAt = t0.Add(26 * time.Hour).Format(time.RFC3339)
	w.uc.Generation++
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhasePending || w.surgeCount() != 0 || w.uc.Status.CapacityReservation != nil {
		t.Fatalf("rescheduled a day later: phase %s, %d copies, capacity %+v", w.phase(), w.surgeCount(), w.uc.Status.CapacityReservation)
	}
}

// The lead time counts back from the start the maintenance windows allow,
// not from upgradeAt.
func TestCapacityAheadOfTheWindow(t *testing.T) {
	w := newWorld(t) // upgradeAt 11:00
	w.cfg = mustConfig(t, "scale:\n  leadTime: 10\n")
	w.uc.Spec.MaintenanceWindows = []commonv1alpha1.MaintenanceWindow{{Start: "13:00", End: "15:00"}}
	w.now = t0.Add(time.Hour) // 11:00
	w.settle()
	if w.surgeCount() != 0 || w.last.RequeueAfter != 110*time.Minute {
		t.Fatalf("at upgradeAt, two hours before the window: %d copies, next look in %s", w.surgeCount(), w.last.RequeueAfter)
	}
	w.now = t0.Add(2*time.Hour + 50*time.Minute) // 12:50
	w.settle()
	if w.surgeCount() != 2 || w.phase() != upgradev1alpha1.UpgradePhasePending {
		t.Fatalf("ten minutes before the window: %d copies, phase %s", w.surgeCount(), w.phase())
	}
}
