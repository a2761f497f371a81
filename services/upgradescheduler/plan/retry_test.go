package plan

import (
	"encoding/json"
	"testing"
	"time"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

func TestNotifyRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		attempts int32
		want     time.Duration
	}{
		{0, 10 * time.Second},
		{1, 10 * time.Second},
		{2, 20 * time.Second},
		{3, 40 * time.Second},
		{6, 320 * time.Second},
		{7, 10 * time.Minute},
		{100, 10 * time.Minute},
	} {
		if got := NotifyRetryAfter(tc.attempts); got != tc.want {
			t.Errorf("NotifyRetryAfter(%d) = %v, want %v", tc.attempts, got, tc.want)
		}
	}
}

// A notification that keeps failing is retried with backoff, not on every
// plan, and waiting writes no status (so it makes no watch event).
func TestFailingNotificationBacksOff(t *testing.T) {
	w := notifyWorld(t, false)
	w.failing = map[ActionKind]bool{Notify: true}
	count := func() int32 { return w.stepCondition(StepStartedNotificationSent).Attempts }
	w.settle()
	if count() != 1 {
		t.Fatalf("attempts after the first failure: %d", count())
	}
	for i := 0; i < 5; i++ {
		before := w.uc.Status.DeepCopy()
		out := w.plan()
		if out.Action != nil || count() != 1 {
			t.Fatalf("retried within the backoff: attempts %d, action %+v", count(), out.Action)
		}
		if out.RequeueAfter <= 0 || out.RequeueAfter > NotifyRetryAfter(1) {
			t.Fatalf("RequeueAfter %v", out.RequeueAfter)
		}
		if !equalJSON(before, &w.uc.Status) {
			t.Fatal("waiting changed the status")
		}
	}
	// Over ten simulated minutes, attempts at 0, 10, 30, 70, 150, 310 s.
	for end := t0.Add(10 * time.Minute); w.now.Before(end); w.now = w.now.Add(time.Second) {
		w.plan()
	}
	if count() != 6 {
		t.Fatalf("%d attempts in ten minutes, want 6", count())
	}
	// OCM back: the next retry delivers and the upgrade moves on.
	w.failing = nil
	w.now = w.now.Add(notifyRetryMax)
	w.settle()
	if len(w.notified) == 0 || w.notified[0] != EventStarted {
		t.Fatalf("notified %v", w.notified)
	}
}

// After a failure before commencement the temporary capacity is removed
// even while the failed notice cannot be delivered.
func TestCleanupBeforeTheFailedNotice(t *testing.T) {
	w := notifyWorld(t, false)
	w.uc.Spec.CapacityReservation = true
	w.machineAPIOnCreate(true)
	min := int32(30)
	w.uc.Spec.Deadlines = &upgradev1alpha1.Deadlines{Start: &upgradev1alpha1.Deadline{Minutes: &min, Policy: upgradev1alpha1.DeadlineFail}}
	w.failing = map[ActionKind]bool{PatchClusterVersion: true} // commencement keeps failing
	for i := 0; i < 10; i++ {
		w.plan()
	}
	if w.surgeCount() == 0 {
		t.Fatal("setup: no temporary MachineSets")
	}
	w.failing = map[ActionKind]bool{PatchClusterVersion: true, Notify: true}
	w.now = t0.Add(time.Hour)
	for i := 0; i < 20; i++ {
		w.plan()
		w.now = w.now.Add(time.Minute)
	}
	if w.phase() != upgradev1alpha1.UpgradePhaseFailed || w.surgeCount() != 0 {
		t.Fatalf("phase %s, %d temporary MachineSets left while OCM is down", w.phase(), w.surgeCount())
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// With OCM on, commencement checks the policy in OCM first: while that
// fails, it is retried with the same backoff.
func TestFailingCommencementBacksOffWithOCM(t *testing.T) {
	w := notifyWorld(t, false)
	w.failing = map[ActionKind]bool{PatchClusterVersion: true}
	w.settle()
	c := w.stepCondition(StepUpgradeCommenced)
	if c == nil || c.Attempts != 1 {
		t.Fatalf("after the first failure: %+v", c)
	}
	for end := w.now.Add(time.Minute); w.now.Before(end); w.now = w.now.Add(time.Second) {
		w.plan()
	}
	// Attempts at 0, 10 and 30 s.
	if n := w.stepCondition(StepUpgradeCommenced).Attempts; n != 3 {
		t.Fatalf("%d attempts in a minute, want 3", n)
	}
}
