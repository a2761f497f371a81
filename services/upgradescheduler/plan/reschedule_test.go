package plan

import (
	"testing"
	"time"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// An attempt Upgrading but not yet commenced whose upgradeAt moves later (an
// OCM policy rescheduled) goes back to Pending, keeps its history entry, and
// commences only at the new time.
func TestRescheduledBeforeCommencementWaitsAgain(t *testing.T) {
	w := newWorld(t)
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	w.uc.Spec.CapacityReservation = false
	w.holdHealth(true) // holds the pre-upgrade health check
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgrading || w.desiredPatches != 0 {
		t.Fatalf("setup: phase %s, %d ClusterVersion patches", w.phase(), w.desiredPatches)
	}
	later := t0.Add(3 * time.Hour)
	w.uc.Spec.UpgradeAt = later.Format(time.RFC3339)
	w.uc.Generation++
	w.holdHealth(false)
	w.now = t0.Add(time.Minute)
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhasePending || w.desiredPatches != 0 || len(w.uc.Status.History) != 1 || !w.hasEvent("UpgradeRescheduled") {
		t.Fatalf("rescheduled: phase %s, %d ClusterVersion patches, %d history entries", w.phase(), w.desiredPatches, len(w.uc.Status.History))
	}
	if w.uc.Status.History[0].StartTime != nil {
		t.Fatal("the start time of the attempt that did not commence is still set")
	}
	w.now = later
	w.settle()
	if w.desiredPatches != 1 || w.phase() != upgradev1alpha1.UpgradePhaseUpgrading || !w.uc.Status.History[0].StartTime.Time.Equal(later) {
		t.Fatalf("at the new time: phase %s, %d ClusterVersion patches", w.phase(), w.desiredPatches)
	}

	// After commencement a new upgradeAt changes nothing.
	w.uc.Spec.UpgradeAt = later.Add(time.Hour).Format(time.RFC3339)
	w.uc.Generation++
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgrading {
		t.Fatalf("after commencement: phase %s", w.phase())
	}
}

// A Failed attempt (its start deadline passed) rescheduled for the same
// release runs again.
func TestFailedRescheduledRunsAgain(t *testing.T) {
	w := newWorld(t)
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	w.uc.Spec.CapacityReservation = false
	min := int32(30)
	w.uc.Spec.Deadlines = &upgradev1alpha1.Deadlines{Start: &upgradev1alpha1.Deadline{Minutes: &min, Policy: upgradev1alpha1.DeadlineFail}}
	w.holdHealth(true)
	w.settle()
	w.now = t0.Add(time.Hour)
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseFailed {
		t.Fatalf("setup: phase %s", w.phase())
	}
	// Not rescheduled: a new generation alone (another edit) reopens nothing.
	w.uc.Spec.Paused = false
	w.uc.Generation++
	w.holdHealth(false)
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseFailed {
		t.Fatalf("a spec edit that is no reschedule: phase %s", w.phase())
	}
	at := t0.Add(2 * time.Hour)
	w.uc.Spec.UpgradeAt = at.Format(time.RFC3339)
	w.uc.Generation++
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhasePending || !w.hasEvent("UpgradeRescheduled") || len(w.uc.Status.History) != 1 {
		t.Fatalf("rescheduled after failing: phase %s, %d history entries", w.phase(), len(w.uc.Status.History))
	}
	w.now = at
	w.settle()
	if w.desiredPatches != 1 {
		t.Fatalf("%d ClusterVersion patches, want the rescheduled attempt to commence", w.desiredPatches)
	}
}
