package plan

import (
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

func TestNotificationDue(t *testing.T) {
	rec := func(gen int64, v, e string) upgradev1alpha1.NotificationRecord {
		return upgradev1alpha1.NotificationRecord{Generation: gen, Version: v, Event: e, Outcome: "Sent"}
	}
	sl := map[string]bool{"ServiceLogNotification": true}
	for _, tc := range []struct {
		name     string
		records  []upgradev1alpha1.NotificationRecord
		notifier bool
		gates    map[string]bool
		event    string
		want     bool
	}{
		{"no notifier, nothing is sent", nil, false, sl, EventStarted, false},
		{"not yet sent", nil, true, nil, EventStarted, true},
		{"sent for this generation and version", []upgradev1alpha1.NotificationRecord{rec(2, "4.16.2", EventStarted)}, true, nil, EventStarted, false},
		{"sent for an older generation only", []upgradev1alpha1.NotificationRecord{rec(1, "4.16.2", EventStarted)}, true, nil, EventStarted, true},
		{"sent for another version only", []upgradev1alpha1.NotificationRecord{rec(2, "4.16.1", EventStarted)}, true, nil, EventStarted, true},
		{"another event sent", []upgradev1alpha1.NotificationRecord{rec(2, "4.16.2", EventCompleted)}, true, nil, EventStarted, true},
		{"service log without the gate", nil, true, nil, EventControlPlaneStartedSL, false},
		{"service log with the gate", nil, true, sl, EventControlPlaneStartedSL, true},
		{"service log sent", []upgradev1alpha1.NotificationRecord{rec(2, "4.16.2", EventWorkerPlaneFinishedSL)}, true, sl, EventWorkerPlaneFinishedSL, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NotificationDue(tc.records, tc.notifier, tc.gates, 2, "4.16.2", tc.event); got != tc.want {
				t.Fatalf("NotificationDue = %v, want %v", got, tc.want)
			}
		})
	}
}

// notifyWorld is an OSD upgrade with OCM notifications on.
func notifyWorld(t *testing.T, serviceLogs bool) *world {
	w := newWorld(t)
	if serviceLogs {
		w.cfg = mustConfig(t, "featureGate:\n  enabled: [ServiceLogNotification]\n")
	}
	w.integrations = Integrations{Notifications: true}
	w.uc.Spec.CapacityReservation = false
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	return w
}

func (w *world) runToUpgraded() {
	w.t.Helper()
	w.settle()
	w.now = w.now.Add(10 * time.Minute)
	w.cvo()
	w.settle()
	w.mco()
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgraded {
		w.t.Fatalf("phase %s at %s", w.phase(), w.uc.Status.CurrentStep)
	}
}

func TestNotificationsOncePerEventInOrder(t *testing.T) {
	for _, tc := range []struct {
		name        string
		serviceLogs bool
		want        []string
	}{
		{"policy states only", false, []string{EventStarted, EventCompleted}},
		{"with service logs", true, []string{EventStarted, EventControlPlaneStartedSL, EventControlPlaneFinishedSL, EventWorkerPlaneFinishedSL, EventCompleted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := notifyWorld(t, tc.serviceLogs)
			w.runToUpgraded()
			if strings.Join(w.notified, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("notified %v, want %v", w.notified, tc.want)
			}
			if len(w.uc.Status.Notifications) != len(tc.want) {
				t.Fatalf("records %+v", w.uc.Status.Notifications)
			}
			// More plans (a resync, a restart) send nothing more.
			w.now = w.now.Add(time.Hour)
			w.settle()
			if len(w.notified) != len(tc.want) {
				t.Fatalf("resent: %v", w.notified)
			}
			for _, step := range []upgradev1alpha1.UpgradeConditionType{StepStartedNotificationSent, StepCompletedNotificationSent} {
				if c := w.stepCondition(step); c.Status != corev1.ConditionTrue || c.Attempts != 1 {
					t.Fatalf("%s: %+v", step, c)
				}
			}
		})
	}
}

func TestNotificationRecordedBeforeTheStepMovesOn(t *testing.T) {
	w := notifyWorld(t, true)
	out := w.plan()
	if out.Action == nil || out.Action.Kind != Notify || out.Action.Notification.Event != EventStarted || out.Action.Step != StepStartedNotificationSent {
		t.Fatalf("first action %+v", out.Action)
	}
	n := out.Action.Notification
	if n.PolicyState != "started" || n.Generation != 1 || n.Version != "4.14.15" || !strings.Contains(n.Description, "4.14.15") {
		t.Fatalf("notification %+v", n)
	}
	// The planned status does not claim it sent: only the delivery records it.
	if c := w.stepCondition(StepStartedNotificationSent); c.Status != corev1.ConditionFalse {
		t.Fatalf("step done before the record: %+v", c)
	}
	// The control-plane-started service log goes before the ClusterVersion patch.
	for range 10 {
		out = w.plan()
		if out.Action != nil && out.Action.Kind == PatchClusterVersion {
			break
		}
	}
	if w.desiredPatches != 0 && strings.Join(w.notified, ",") != EventStarted+","+EventControlPlaneStartedSL {
		t.Fatalf("patched before the service log: %v", w.notified)
	}
	if out.Action == nil || out.Action.Kind != PatchClusterVersion {
		t.Fatalf("no commence: %+v", out.Action)
	}
}

func TestNotificationResentWhenTheRecordIsLost(t *testing.T) {
	// The scheduler stops after delivering and before writing the record:
	// the planner asks again (the OCM client then reads back and writes
	// nothing; see ocm.Client.Deliver), and nothing moves on meanwhile.
	w := notifyWorld(t, false)
	w.loseNotificationRecord = true
	out := w.plan()
	if out.Action.Kind != Notify {
		t.Fatalf("%+v", out.Action)
	}
	out = w.plan()
	if out.Action == nil || out.Action.Kind != Notify || out.Action.Notification.Event != EventStarted {
		t.Fatalf("after a lost record: %+v", out.Action)
	}
	w.runToUpgraded()
	if strings.Join(w.notified, ",") != "StateStarted,StateStarted,StateCompleted" {
		t.Fatalf("notified %v", w.notified)
	}
}

func TestDelayedAndFailedNotifications(t *testing.T) {
	w := notifyWorld(t, false)
	w.uc.Spec.Deadlines = &upgradev1alpha1.Deadlines{Start: &upgradev1alpha1.Deadline{Policy: upgradev1alpha1.DeadlineFail}}
	w.holdHealth(true) // blocks the pre-upgrade health check
	w.settle()
	if strings.Join(w.notified, ",") != EventStarted {
		t.Fatalf("before the delay trigger: %v", w.notified)
	}
	w.now = t0.Add(31 * time.Minute)
	w.settle()
	if strings.Join(w.notified, ",") != EventStarted+","+EventDelayed {
		t.Fatalf("after the delay trigger: %v", w.notified)
	}
	w.now = t0.Add(121 * time.Minute)
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseFailed {
		t.Fatalf("phase %s", w.phase())
	}
	if strings.Join(w.notified, ",") != EventStarted+","+EventDelayed+","+EventFailed {
		t.Fatalf("after failing: %v", w.notified)
	}
	// MUO's texts for an attempt held, then failed, at its pre-upgrade
	// health check.
	if d := w.notices[1].Description; d != "Cluster upgrade to version 4.14.15 is experiencing a delay as health alerts are firing in the cluster which could impact the upgrade's operation. The upgrade will continue to retry. This is an informational notification and no action is required by you" {
		t.Fatalf("delayed: %q", d)
	}
	if d := w.notices[2].Description; d != "Cluster upgrade to version 4.14.15 was cancelled during the Pre-Health Check step. Health alerts are firing in the cluster which could impact the upgrade's operation, so the upgrade did not proceed. Automated upgrades will be retried on their next scheduling cycle. If you have manually scheduled an upgrade instead, it must now be rescheduled" {
		t.Fatalf("failed: %q", d)
	}
	if c := w.stepCondition(ConditionFailedNotificationSent); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("%+v", c)
	}
	w.now = w.now.Add(time.Hour)
	w.settle()
	if len(w.notified) != 3 {
		t.Fatalf("resent %v", w.notified)
	}
}

func TestNoNotifierSendsNothing(t *testing.T) {
	w := notifyWorld(t, true)
	w.integrations = Integrations{}
	w.runToUpgraded()
	if len(w.notified) != 0 || len(w.uc.Status.Notifications) != 0 {
		t.Fatalf("notified %v", w.notified)
	}
}

func TestNewGenerationNotifiesAgain(t *testing.T) {
	// A rescheduled policy (spec updated in place) is a new attempt for OCM:
	// its started notification is due again (MUO's stale-metric bug, PR #348,
	// skipped it).
	w := notifyWorld(t, false)
	w.uc.Spec.UpgradeAt = t0.Add(time.Hour).Format(time.RFC3339)
	w.settle()
	w.now = t0.Add(time.Hour)
	w.plan()
	w.plan()
	if strings.Join(w.notified, ",") != EventStarted {
		t.Fatalf("%v", w.notified)
	}
	w.uc.Spec.Desired = upgradev1alpha1.Update{Version: "4.14.16", Channel: "stable-4.14"}
	w.uc.Generation = 2
	w.plan()
	w.plan()
	if strings.Join(w.notified, ",") != EventStarted+","+EventStarted {
		t.Fatalf("%v", w.notified)
	}
	if r := w.uc.Status.Notifications; len(r) != 2 || r[1].Generation != 2 || r[1].Version != "4.14.16" {
		t.Fatalf("%+v", r)
	}
}

func TestDelayedIsOSDOnly(t *testing.T) {
	w := notifyWorld(t, false)
	w.uc.Spec.Type = upgradev1alpha1.ARO
	w.holdHealth(true)
	w.settle()
	w.now = t0.Add(31 * time.Minute)
	w.settle()
	if strings.Join(w.notified, ",") != EventStarted {
		t.Fatalf("ARO: %v", w.notified)
	}
}

func TestControlPlaneStartedWaitsForTheWindow(t *testing.T) {
	w := notifyWorld(t, true)
	// The window opens at 12:00 on the day of t0 (10:00): nothing is sent
	// before it, not even the started notification.
	w.uc.Spec.MaintenanceWindows = []commonv1alpha1.MaintenanceWindow{{Start: "12:00", End: "14:00"}}
	w.settle()
	if len(w.notified) != 0 {
		t.Fatalf("before the window: %v", w.notified)
	}
	w.now = t0.Add(2 * time.Hour)
	w.settle()
	if strings.Join(w.notified, ",") != EventStarted+","+EventControlPlaneStartedSL || w.desiredPatches != 1 {
		t.Fatalf("in the window: %v patches %d", w.notified, w.desiredPatches)
	}
}

func TestPolicyGoneBlocks(t *testing.T) {
	for _, tc := range []struct {
		event string
		want  bool
	}{
		{EventStarted, true},
		{EventDelayed, true},
		{EventFailed, false},
		{EventCompleted, false},
		{EventControlPlaneStartedSL, false},
		{EventWorkerPlaneFinishedSL, false},
	} {
		if got := PolicyGoneBlocks(tc.event); got != tc.want {
			t.Errorf("PolicyGoneBlocks(%s) = %v, want %v", tc.event, got, tc.want)
		}
	}
}

func TestServiceLogKeyIgnoresTheGeneration(t *testing.T) {
	a := Notification{Event: EventControlPlaneStartedSL, Version: "4.14.15", Generation: 1}
	b := a
	b.Generation = 2
	if a.Key("u") != b.Key("u") {
		t.Fatalf("a spec edit changes the service log key: %s vs %s", a.Key("u"), b.Key("u"))
	}
	for _, other := range []Notification{{Event: EventControlPlaneStartedSL, Version: "4.14.16"}, {Event: EventWorkerPlaneFinishedSL, Version: "4.14.15"}} {
		if other.Key("u") == a.Key("u") {
			t.Fatalf("%+v shares the key of %+v", other, a)
		}
	}
	if a.Key("u") == a.Key("v") {
		t.Fatal("another UpgradeConfig shares the key")
	}
}

func TestDelayedAfterASpecEdit(t *testing.T) {
	// started went out under generation 1; a spec edit (pause toggled)
	// must not suppress the delayed notice.
	w := notifyWorld(t, false)
	w.holdHealth(true) // blocks the pre-upgrade health check
	w.settle()
	if strings.Join(w.notified, ",") != EventStarted {
		t.Fatalf("before the edit: %v", w.notified)
	}
	w.uc.Spec.Paused = true
	w.uc.Generation++
	w.settle()
	w.uc.Spec.Paused = false
	w.uc.Generation++
	w.settle()
	w.now = t0.Add(31 * time.Minute)
	w.settle()
	if !strings.Contains(strings.Join(w.notified, ","), EventDelayed) {
		t.Fatalf("after the delay trigger: %v", w.notified)
	}
}

func TestNotificationWanted(t *testing.T) {
	st := func(ph upgradev1alpha1.UpgradePhase) upgradev1alpha1.UpgradeConfigStatus {
		return upgradev1alpha1.UpgradeConfigStatus{History: []upgradev1alpha1.UpgradeHistory{{Version: "4.14.15", Phase: ph}}}
	}
	for _, tc := range []struct {
		st    upgradev1alpha1.UpgradeConfigStatus
		event string
		want  bool
	}{
		{upgradev1alpha1.UpgradeConfigStatus{}, EventStarted, false},
		{st(upgradev1alpha1.UpgradePhaseUpgrading), EventStarted, true},
		{st(upgradev1alpha1.UpgradePhasePending), EventStarted, true},
		{st(upgradev1alpha1.UpgradePhaseCancelled), EventStarted, false},
		{st(upgradev1alpha1.UpgradePhaseUpgraded), EventCompleted, false},
		{st(upgradev1alpha1.UpgradePhaseFailed), EventFailed, true},
		{st(upgradev1alpha1.UpgradePhaseFailed), EventStarted, false},
	} {
		if got := NotificationWanted(tc.st, tc.event); got != tc.want {
			t.Errorf("NotificationWanted(%v, %s) = %v, want %v", tc.st.History, tc.event, got, tc.want)
		}
	}
}

// TestCapacitySkipNotices: MUO's two notices of a capacity reservation that
// did not happen.
func TestCapacitySkipNotices(t *testing.T) {
	t.Run("no worker MachineSet: ScaleSkipped once, with MUO's text, and the upgrade goes on", func(t *testing.T) {
		w := notifyWorld(t, false)
		w.uc.Spec.CapacityReservation = true
		for _, ms := range append([]machinev1beta1.MachineSet(nil), w.snap.MachineSets...) {
			w.removeMachineSet(ms.Name)
		}
		var notice *Notification
		for range 20 {
			out := w.plan()
			if out.Action != nil && out.Action.Kind == Notify && out.Action.Notification.Event == EventScaleSkipped {
				notice = out.Action.Notification
			}
		}
		w.runToUpgraded()
		if got := strings.Join(w.notified, ","); got != "StateStarted,StateScaleSkipped,StateCompleted" {
			t.Fatalf("notified %s", got)
		}
		want := "Cluster upgrade to version 4.14.15 has skipped Scale-Up additional Worker Node step for compute capacity reservation. This is an informational notification and no action is required by you"
		if notice == nil || notice.PolicyState != "delayed" || notice.Description != want {
			t.Fatalf("notice %+v", notice)
		}
	})
	t.Run("copies not ready in time: Skipped, and the upgrade goes on without them", func(t *testing.T) {
		w := notifyWorld(t, false)
		w.cfg = mustConfig(t, "scale:\n  timeOut: 10\n")
		w.uc.Spec.CapacityReservation = true
		w.machineAPIOnCreate(false)
		w.settle()
		if strings.Contains(strings.Join(w.notified, ","), EventSkipped) {
			t.Fatalf("skipped before scale.timeOut: %v", w.notified)
		}
		w.now = w.now.Add(11 * time.Minute)
		w.runToUpgraded()
		if got := strings.Join(w.notified, ","); got != "StateStarted,StateSkipped,StateCompleted" {
			t.Fatalf("notified %s", got)
		}
	})
	t.Run("a ScaleSkipped that fails once is not retried: the upgrade goes on", func(t *testing.T) {
		w := notifyWorld(t, false)
		w.uc.Spec.CapacityReservation = true
		for _, ms := range append([]machinev1beta1.MachineSet(nil), w.snap.MachineSets...) {
			w.removeMachineSet(ms.Name)
		}
		attempts := 0
		for range 40 {
			// OCM fails every notice once the started one is through.
			if len(w.notified) > 0 && attempts == 0 {
				w.failing = map[ActionKind]bool{Notify: true}
			}
			out := w.plan()
			if out.Action != nil && out.Action.Kind == Notify && out.Action.Notification.Event == EventScaleSkipped {
				attempts++
				w.failing = nil
			}
			w.now = w.now.Add(time.Minute)
		}
		if attempts != 1 {
			t.Fatalf("ScaleSkipped tried %d times, want once", attempts)
		}
		if c := w.stepCondition(StepComputeCapacityReserved); c == nil || c.Status != corev1.ConditionTrue {
			t.Fatalf("capacity step not done: %+v", c)
		}
	})
}
