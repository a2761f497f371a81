package plan

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

func TestStepListsAreMUOsWithUniqueNames(t *testing.T) {
	osd := []upgradev1alpha1.UpgradeConditionType{
		"StartedNotificationSent", "UpgradeDelayedCheckCompleted", "IsClusterUpgradable", "ClusterHealthyBeforeUpgrade",
		"ExternalDependenciesAvailable", "ComputeCapacityReserved", "ControlPlaneMaintenanceWindowCreated", "UpgradeCommenced",
		"ControlPlaneUpgraded", "ControlPlaneMaintenanceWindowRemoved", "WorkersMaintenanceWindowCreated", "WorkerNodesUpgraded",
		"ComputeCapacityRemoved", "WorkersMaintenanceWindowRemoved", "ClusterHealthyAfterUpgrade", "PostUpgradeTasksCompleted",
		"CompletedNotificationSent",
	}
	aro := []upgradev1alpha1.UpgradeConditionType{
		"StartedNotificationSent", "ClusterHealthyBeforeUpgrade", "ExternalDependenciesAvailable", "ComputeCapacityReserved",
		"ControlPlaneMaintenanceWindowCreated", "UpgradeCommenced", "ControlPlaneUpgraded", "ControlPlaneMaintenanceWindowRemoved",
		"WorkersMaintenanceWindowCreated", "WorkerNodesUpgraded", "ComputeCapacityRemoved", "WorkersMaintenanceWindowRemoved",
		"ClusterHealthyAfterUpgrade", "CompletedNotificationSent",
	}
	if got := Steps(upgradev1alpha1.OSD); !reflect.DeepEqual(got, osd) {
		t.Errorf("OSD steps:\n got %v\nwant %v", got, osd)
	}
	if got := Steps(upgradev1alpha1.ARO); !reflect.DeepEqual(got, aro) {
		t.Errorf("ARO steps:\n got %v\nwant %v", got, aro)
	}
	seen := map[upgradev1alpha1.UpgradeConditionType]bool{}
	for _, s := range osd {
		if seen[s] {
			t.Errorf("step name %s used twice", s)
		}
		seen[s] = true
	}
}

// TestOSDHappyPath drives an OSD upgrade with capacity reservation from New to
// Upgraded, checking every phase and side effect on the way.
func TestOSDHappyPath(t *testing.T) {
	w := newWorld(t)
	out := w.plan()
	if w.phase() != upgradev1alpha1.UpgradePhasePending || out.Action != nil {
		t.Fatalf("first plan: phase %s action %+v", w.phase(), out.Action)
	}
	if out.RequeueAfter != time.Hour {
		t.Fatalf("RequeueAfter = %v, want the hour until upgradeAt", out.RequeueAfter)
	}
	if h := w.uc.Status.History[0]; h.Version != "4.14.15" || h.PrecedingVersion != "4.14.10" {
		t.Fatalf("history entry %+v", h)
	}
	if c := w.summary("Validated"); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Validated = %+v", c)
	}
	// Advisory pre-flight while waiting: all pass, alerts not configured.
	if len(w.uc.Status.Preflight) != 6 {
		t.Fatalf("preflight %+v", w.uc.Status.Preflight)
	}
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhasePending {
		t.Fatal("started before upgradeAt")
	}

	w.now = t0.Add(time.Hour)
	out = w.plan()
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgrading || out.Action == nil || out.Action.Kind != CreateMachineSet || out.Action.MachineSet.Name != "c1-worker-a-upgrade" {
		t.Fatalf("at upgradeAt: phase %s action %+v", w.phase(), out.Action)
	}
	ms := out.Action.MachineSet
	if *ms.Spec.Replicas != 1 || ms.Labels[SurgeLabel] != "true" || ms.Spec.Selector.MatchLabels[MachineSetLabel] != "c1-worker-a-upgrade" || ms.Spec.Template.Labels[SurgeLabel] != "true" {
		t.Fatalf("surge MachineSet %+v", ms)
	}
	out = w.plan()
	if out.Action == nil || out.Action.MachineSet.Name != "c1-worker-b-upgrade" {
		t.Fatalf("second surge: %+v", out.Action)
	}
	out = w.plan()
	if out.Action != nil || out.RequeueAfter != 30*time.Minute || w.stepCondition(StepComputeCapacityReserved).Status != corev1.ConditionFalse {
		t.Fatalf("waiting for capacity: action %+v requeue %v", out.Action, out.RequeueAfter)
	}
	w.now = w.now.Add(5 * time.Minute)
	w.machineAPI()
	out = w.plan()
	if out.Action == nil || out.Action.Kind != PatchClusterVersion || out.Action.ClusterVersion.Channel != nil ||
		string(out.Action.ClusterVersion.MergePatch()) != `{"spec":{"desiredUpdate":{"image":null,"version":"4.14.15"}}}` {
		t.Fatalf("commence: %+v", out.Action)
	}
	if w.uc.Status.CapacityReservation.Outcome != CapacityReady {
		t.Fatalf("capacity %+v", w.uc.Status.CapacityReservation)
	}
	out = w.plan()
	if out.Action != nil || w.desiredPatches != 1 || w.uc.Status.CurrentStep != string(StepControlPlaneUpgraded) {
		t.Fatalf("after commence: action %+v patches %d step %s", out.Action, w.desiredPatches, w.uc.Status.CurrentStep)
	}
	// Only the control-plane deadline can wake us now.
	if out.RequeueAfter != 90*time.Minute {
		t.Fatalf("RequeueAfter = %v, want the control-plane deadline", out.RequeueAfter)
	}
	w.now = w.now.Add(40 * time.Minute)
	w.cvo()
	w.snap.Pools[1] = pool("worker", 3, 1, "rendered-worker-2")
	w.snap.Pools[1].Status.Configuration.Name = "rendered-worker-1"
	w.settle()
	if w.uc.Status.CurrentStep != string(StepWorkerNodesUpgraded) {
		t.Fatalf("at %s, want WorkerNodesUpgraded", w.uc.Status.CurrentStep)
	}
	w.now = w.now.Add(30 * time.Minute)
	w.mco()
	out = w.plan()
	if out.Action == nil || out.Action.Kind != DeleteMachineSet || out.Action.MachineSet.Name != "c1-worker-a-upgrade" {
		t.Fatalf("capacity removal: %+v", out.Action)
	}
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgraded || w.surgeCount() != 0 || w.uc.Status.CapacityReservation.Outcome != CapacityRemoved {
		t.Fatalf("end: phase %s surge %d capacity %+v", w.phase(), w.surgeCount(), w.uc.Status.CapacityReservation)
	}
	h := w.uc.Status.History[0]
	if h.StartTime == nil || !h.StartTime.Time.Equal(t0.Add(time.Hour)) || h.CompleteTime == nil {
		t.Fatalf("history times %+v", h)
	}
	// Newest first: conditions[0] is the last step, as MUO's printer columns expect.
	types := w.conditionTypes()
	if len(types) != 17 || types[0] != StepCompletedNotificationSent || types[16] != StepStartedNotificationSent {
		t.Fatalf("conditions %v", types)
	}
	for _, c := range h.Conditions {
		if c.Status != corev1.ConditionTrue || c.Reason != string(c.Type)+" done" || !strings.HasPrefix(c.Message, string(c.Type)+" is completed") || c.CompleteTime == nil {
			t.Errorf("condition %+v", c)
		}
	}
	if w.stepCondition(StepUpgradeCommenced).Attempts != 1 || w.stepCondition(StepComputeCapacityReserved).Attempts != 2 {
		t.Errorf("attempts: commence %d capacity %d", w.stepCondition(StepUpgradeCommenced).Attempts, w.stepCondition(StepComputeCapacityReserved).Attempts)
	}
	if c := w.summary("Completed"); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Upgraded" {
		t.Errorf("Completed = %+v", c)
	}
	if w.uc.Status.CurrentStep != "" {
		t.Errorf("currentStep %q after the end", w.uc.Status.CurrentStep)
	}
	for name, n := range w.creates {
		if n != 1 {
			t.Errorf("%s created %d times", name, n)
		}
	}
	if !w.hasEvent("PhaseUpgrading") || !w.hasEvent("PhaseUpgraded") {
		t.Errorf("events %+v", w.events)
	}
	// Terminal and settled: further plans do nothing.
	if out := w.plan(); out.Action != nil || out.RequeueAfter != 0 {
		t.Errorf("after the end: %+v", out)
	}
}

func TestAROStepListAndNoUpgradeableGate(t *testing.T) {
	w := newWorld(t)
	w.uc.Spec.Type = upgradev1alpha1.ARO
	w.uc.Spec.CapacityReservation = false
	w.uc.Spec.Desired.Version, w.uc.Spec.Desired.Channel = "4.15.3", "stable-4.15"
	// Upgradeable=False would block a minor update on OSD; ARO has no such step.
	w.snap.ClusterVersion.Status.Conditions[0] = configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionFalse, Reason: "AdminAckRequired", Message: "ack"}
	w.now = t0.Add(2 * time.Hour)
	out := w.plan()
	if out.Action == nil || out.Action.ClusterVersion == nil || *out.Action.ClusterVersion.Channel != "stable-4.15" {
		t.Fatalf("ARO should set the channel first: %+v", out.Action)
	}
	if w.stepCondition(StepIsClusterUpgradable) != nil || w.stepCondition(StepUpgradeDelayedCheckCompleted) != nil {
		t.Fatal("ARO ran an OSD-only step")
	}
	// The CVO now offers 4.15.3 as a conditional update: sent with its image.
	w.snap.ClusterVersion.Status.ConditionalUpdates = append(w.snap.ClusterVersion.Status.ConditionalUpdates, configv1.ConditionalUpdate{Release: configv1.Release{Version: "4.15.3", Image: "quay.io/r@sha256:" + hex64('d')}})
	out = w.plan()
	if out.Action == nil || out.Action.ClusterVersion.DesiredUpdate == nil || out.Action.ClusterVersion.DesiredUpdate.Image == "" {
		t.Fatalf("conditional update must carry its image: %+v", out.Action)
	}
}

func TestUpgradeableFalseBlocksMinorOnlyOnOSD(t *testing.T) {
	w := newWorld(t)
	w.uc.Spec.CapacityReservation = false
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	w.snap.ClusterVersion.Status.Conditions[0] = configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionFalse, Reason: "AdminAckRequired", Message: "needs an ack"}
	// z-stream: not blocked.
	out := w.plan()
	if out.Action == nil || out.Action.Kind != PatchClusterVersion {
		t.Fatalf("z-stream must not be blocked by Upgradeable=False: %+v", out.Action)
	}
	w = newWorld(t)
	w.uc.Spec.CapacityReservation = false
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	w.uc.Spec.Desired.Version, w.uc.Spec.Desired.Channel = "4.15.3", "stable-4.15"
	w.snap.ClusterVersion.Status.Conditions[0] = configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionFalse, Reason: "AdminAckRequired", Message: "needs an ack"}
	out = w.plan()
	c := w.stepCondition(StepIsClusterUpgradable)
	if out.Action != nil || c == nil || c.Status != corev1.ConditionFalse || !strings.Contains(c.LastError, "Upgradeable=False (AdminAckRequired: needs an ack)") {
		t.Fatalf("minor update must wait: action %+v condition %+v", out.Action, c)
	}
}

// TestUpgradeAtInThePast: an upgradeAt already past when the generation is
// first observed starts now, and the start window runs from that observation.
func TestUpgradeAtInThePast(t *testing.T) {
	w := newWorld(t)
	w.uc.Spec.UpgradeAt = t0.Add(-72 * time.Hour).Format(time.RFC3339)
	w.uc.Spec.CapacityReservation = false
	w.snap.ClusterOperators[0].Status.Conditions[1].Status = configv1.ConditionTrue // etcd Degraded: blocks the pre-check
	w.plan()
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgrading || !w.uc.Status.GenerationObservedTime.Time.Equal(t0) {
		t.Fatalf("phase %s observed %v", w.phase(), w.uc.Status.GenerationObservedTime)
	}
	if w.last.RequeueAfter != 30*time.Minute { // the delay trigger comes first
		t.Fatalf("RequeueAfter = %v", w.last.RequeueAfter)
	}
	// 119 minutes after the observation: not failed, although upgradeAt is 3 days old.
	w.now = t0.Add(119 * time.Minute)
	w.plan()
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgrading {
		t.Fatalf("failed early: %s", w.phase())
	}
	if c := w.summary("Delayed"); c == nil || c.Status != metav1.ConditionTrue || !w.hasEvent("UpgradeDelayed") {
		t.Fatalf("the delay was not reported: %+v", c)
	}
	if w.last.RequeueAfter != time.Minute {
		t.Fatalf("RequeueAfter = %v, want the minute to the start deadline", w.last.RequeueAfter)
	}
	w.now = t0.Add(120 * time.Minute)
	w.plan()
	if w.phase() != upgradev1alpha1.UpgradePhaseFailed {
		t.Fatalf("phase %s, want Failed at the start deadline", w.phase())
	}
	f := w.stepCondition(ConditionFailedUpgrade)
	if f == nil || f.Status != corev1.ConditionTrue || !strings.Contains(f.Message, "ClusterHealthyBeforeUpgrade") || !strings.Contains(f.Message, "etcd") {
		t.Fatalf("FailedUpgrade %+v", f)
	}
	if c := w.summary("DeadlineExceeded"); c == nil || c.Reason != "StartDeadlineExceeded" {
		t.Fatalf("DeadlineExceeded %+v", c)
	}
	// A new generation (the spec edited) starts a new observation, but the
	// failed attempt for this version stays failed.
	if w.desiredPatches != 0 {
		t.Fatal("commenced despite failing checks")
	}
}

// TestDeadlinePolicies covers every deadline with every policy at its edge.
func TestDeadlinePolicies(t *testing.T) {
	type setup func(w *world) // brings the world to wait in the deadline's step
	waitStart := func(w *world) {
		w.holdHealth(true)
		w.settle()
	}
	waitControlPlane := func(w *world) {
		w.settle() // commences; the CVO never completes
	}
	waitWorkers := func(w *world) {
		w.settle()
		w.cvo()
		w.snap.Pools[1] = pool("worker", 3, 0, "rendered-worker-2")
		w.settle()
	}
	waitPost := func(w *world) {
		w.settle()
		w.cvo()
		w.mco()
		w.snap.ClusterOperators[1].Status.Conditions[0].Status = configv1.ConditionFalse // kube-apiserver unavailable
		w.settle()
	}
	for _, tc := range []struct {
		name     string
		deadline string
		setup    setup
		minutes  int32
		// anchorOffset is when the deadline's clock starts, from t0.
		want string
	}{
		{"start", DeadlineStart, waitStart, 120, ""},
		{"controlPlane", DeadlineControlPlane, waitControlPlane, 90, ""},
		{"workers", DeadlineWorkers, waitWorkers, 200, ""},
		{"postCheck", DeadlinePostCheck, waitPost, 60, ""},
	} {
		for _, policy := range []upgradev1alpha1.DeadlinePolicy{upgradev1alpha1.DeadlineAlert, upgradev1alpha1.DeadlinePause, upgradev1alpha1.DeadlineFail} {
			t.Run(tc.name+"/"+string(policy), func(t *testing.T) {
				w := newWorld(t)
				w.uc.Spec.CapacityReservation = true
				w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
				w.machineAPIOnCreate(true)
				d := &upgradev1alpha1.Deadline{Minutes: &tc.minutes, Policy: policy}
				w.uc.Spec.Deadlines = &upgradev1alpha1.Deadlines{}
				switch tc.deadline {
				case DeadlineStart:
					w.uc.Spec.Deadlines.Start = d
				case DeadlineControlPlane:
					w.uc.Spec.Deadlines.ControlPlane = d
				case DeadlineWorkers:
					w.uc.Spec.Deadlines.Workers = d
				case DeadlinePostCheck:
					w.uc.Spec.Deadlines.PostCheck = d
				}
				tc.setup(w)
				_, anchor := newPlanner(Input{UpgradeConfig: w.uc, Config: w.cfg, Snapshot: w.snap, Now: w.now}).withDeadlines().deadline(tc.deadline)
				if anchor.IsZero() {
					t.Fatalf("the %s deadline has no anchor yet; step %s", tc.deadline, w.uc.Status.CurrentStep)
				}
				due := anchor.Add(time.Duration(tc.minutes) * time.Minute)
				step := w.uc.Status.CurrentStep
				// One second before: nothing happens, and we are woken at the deadline.
				w.now = due.Add(-time.Second)
				out := w.plan()
				if w.phase() != upgradev1alpha1.UpgradePhaseUpgrading || w.summary("DeadlineExceeded").Status != metav1.ConditionFalse {
					t.Fatalf("before the deadline: phase %s", w.phase())
				}
				if out.RequeueAfter != time.Second {
					t.Fatalf("RequeueAfter = %v, want 1s to the deadline", out.RequeueAfter)
				}
				w.now = due
				w.plan()
				c := w.summary("DeadlineExceeded")
				if c == nil || c.Status != metav1.ConditionTrue || !strings.HasPrefix(c.Reason, strings.ToUpper(tc.deadline[:1])) {
					t.Fatalf("DeadlineExceeded %+v", c)
				}
				switch policy {
				case upgradev1alpha1.DeadlineAlert:
					if w.phase() != upgradev1alpha1.UpgradePhaseUpgrading || w.uc.Status.CurrentStep != step {
						t.Fatalf("alert must keep waiting: phase %s step %s", w.phase(), w.uc.Status.CurrentStep)
					}
					n := len(w.events)
					w.now = due.Add(time.Minute)
					w.plan()
					for _, e := range w.events[n:] {
						if strings.HasSuffix(e.Reason, "DeadlineExceeded") {
							t.Fatalf("alert event repeated: %+v", e)
						}
					}
				case upgradev1alpha1.DeadlinePause:
					if w.uc.Status.PausedByDeadline == nil || w.uc.Status.PausedByDeadline.Deadline != tc.deadline {
						t.Fatalf("pausedByDeadline %+v", w.uc.Status.PausedByDeadline)
					}
					// Held: even when the cluster would let the step move on.
					w.cvo()
					w.mco()
					w.holdHealth(false)
					w.snap.ClusterOperators[1].Status.Conditions[0].Status = configv1.ConditionTrue
					if out := w.plan(); out.Action != nil || w.uc.Status.CurrentStep != step || w.summary("Paused").Status != metav1.ConditionTrue {
						t.Fatalf("pause must hold: action %+v step %s", out.Action, w.uc.Status.CurrentStep)
					}
					// A spec change resumes.
					w.uc.Generation++
					w.settle()
					if w.uc.Status.PausedByDeadline != nil || w.uc.Status.CurrentStep == step {
						t.Fatalf("did not resume: step %s", w.uc.Status.CurrentStep)
					}
				case upgradev1alpha1.DeadlineFail:
					if w.phase() != upgradev1alpha1.UpgradePhaseFailed || w.stepCondition(ConditionFailedUpgrade) == nil {
						t.Fatalf("fail: phase %s", w.phase())
					}
					w.settle()
					if w.surgeCount() != 0 {
						t.Fatalf("%d temporary MachineSets left after Failed", w.surgeCount())
					}
				}
			})
		}
	}
}

// machineAPIOnCreate makes temporary MachineSets ready as soon as they exist.
func (w *world) machineAPIOnCreate(on bool) { w.autoMachineAPI = on }

func (p *planner) withDeadlines() *planner {
	p.dl = p.cfg.DeadlinesFor(p.spec)
	return p
}

func TestPausedHoldsEverySideEffect(t *testing.T) {
	w := newWorld(t)
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	w.uc.Spec.Paused = true
	out := w.plan()
	if out.Action != nil || w.summary("Paused").Status != metav1.ConditionTrue || w.surgeCount() != 0 {
		t.Fatalf("paused: %+v", out)
	}
	w.uc.Spec.Paused = false
	w.uc.Generation++
	out = w.plan()
	if out.Action == nil || out.Action.Kind != CreateMachineSet {
		t.Fatalf("unpaused: %+v", out.Action)
	}
	// Paused in the middle, with a temporary MachineSet present: none is
	// created or deleted, even on a terminal phase.
	w.uc.Spec.Paused = true
	w.uc.Spec.Cancel = true
	if out := w.plan(); out.Action != nil {
		t.Fatalf("paused: %+v", out.Action)
	}
}

func TestCancel(t *testing.T) {
	w := newWorld(t)
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	w.plan() // creates the first temporary MachineSet
	w.plan()
	if w.surgeCount() != 2 {
		t.Fatalf("%d temporary MachineSets", w.surgeCount())
	}
	w.uc.Spec.Cancel = true
	w.uc.Generation++
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseCancelled || w.surgeCount() != 0 || w.stepCondition(ConditionUpgradeCancelled) == nil {
		t.Fatalf("cancel: phase %s surge %d", w.phase(), w.surgeCount())
	}
	if w.uc.Status.History[0].Conditions[0].Type != ConditionUpgradeCancelled {
		t.Fatal("the printer columns must show the cancellation")
	}

	// Withdrawing the cancellation in a later generation schedules the
	// same target again (an OCM policy removed and added back).
	w.uc.Spec.Cancel = false
	w.uc.Generation++
	w.autoMachineAPI = true
	w.settle()
	w.cvo()
	w.mco()
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgraded || len(w.uc.Status.History) != 1 || !w.hasEvent("UpgradeRescheduled") {
		t.Fatalf("after withdrawing cancel: phase %s history %d", w.phase(), len(w.uc.Status.History))
	}

	// After commencement, cancel is refused and the upgrade goes on.
	w = newWorld(t)
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	w.uc.Spec.CapacityReservation = false
	w.settle()
	w.uc.Spec.Cancel = true
	w.uc.Generation++
	w.cvo()
	w.mco()
	w.settle()
	if c := w.summary("Cancelled"); w.phase() != upgradev1alpha1.UpgradePhaseUpgraded || c == nil || c.Reason != "AlreadyCommenced" {
		t.Fatalf("cancel after commencement: phase %s condition %+v", w.phase(), c)
	}
}

func TestMaintenanceWindows(t *testing.T) {
	w := newWorld(t)
	w.uc.Spec.CapacityReservation = false
	// t0 is Friday 2026-11-20 10:00 UTC; the window is Saturday 22:00-02:00 Berlin (21:00-01:00 UTC).
	w.uc.Spec.MaintenanceWindows = []commonv1alpha1.MaintenanceWindow{{Days: []commonv1alpha1.Weekday{"Saturday"}, Start: "22:00", End: "02:00", TimeZone: "Europe/Berlin"}}
	out := w.plan()
	opens := time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	if out.RequeueAfter != opens.Sub(t0) {
		t.Fatalf("RequeueAfter = %v, want until the window opens (%v)", out.RequeueAfter, opens.Sub(t0))
	}
	w.now = opens.Add(-time.Second)
	if w.plan(); w.phase() != upgradev1alpha1.UpgradePhasePending {
		t.Fatal("started before the window")
	}
	// Health blocks the pre-check until after the window closes: no commencement outside.
	w.now = opens
	w.holdHealth(true)
	w.plan()
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgrading {
		t.Fatalf("phase %s at the window", w.phase())
	}
	w.now = opens.Add(4*time.Hour + time.Minute) // the window closed at +4h
	w.holdHealth(false)
	out = w.plan()
	if c := w.stepCondition(StepUpgradeCommenced); out.Action != nil || w.desiredPatches != 0 || (c != nil && c.Status == corev1.ConditionTrue) {
		t.Fatalf("commenced outside the window: %+v, condition %+v", out.Action, c)
	}
	// The start deadline (120m from the window's opening) has passed too: OSD fails.
	if w.phase() != upgradev1alpha1.UpgradePhaseFailed {
		t.Fatalf("phase %s", w.phase())
	}

	// With a longer start deadline, the next window's opening is the wake-up.
	w = newWorld(t)
	w.uc.Spec.CapacityReservation = false
	w.uc.Spec.MaintenanceWindows = []commonv1alpha1.MaintenanceWindow{{Days: []commonv1alpha1.Weekday{"Saturday"}, Start: "22:00", End: "02:00", TimeZone: "Europe/Berlin"}}
	w.uc.Spec.Deadlines = &upgradev1alpha1.Deadlines{Start: &upgradev1alpha1.Deadline{Minutes: ptr(int32(10 * 24 * 60))}}
	w.now = opens
	w.holdHealth(true)
	w.plan()
	w.now = opens.Add(4*time.Hour + time.Minute)
	w.holdHealth(false)
	out = w.plan()
	if out.Action != nil || out.RequeueAfter != opens.AddDate(0, 0, 7).Sub(w.now) {
		t.Fatalf("want to wait for next Saturday: %+v", out)
	}
	w.now = opens.AddDate(0, 0, 7)
	if out = w.plan(); out.Action == nil || out.Action.Kind != PatchClusterVersion {
		t.Fatalf("did not commence in the next window: %+v", out.Action)
	}
}

func TestValidation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(w *world)
		reason string
		msg    string
	}{
		{"downgrade", func(w *world) { w.uc.Spec.Desired.Version = "4.14.9" }, "NotAnUpgrade", "spec.desired.version: 4.14.9 is not newer than the current version 4.14.10"},
		{"same version", func(w *world) { w.uc.Spec.Desired.Version = "4.14.10" }, "NotAnUpgrade", "not newer"},
		{"numeric, not lexical", func(w *world) { w.uc.Spec.Desired.Version = "4.14.9" }, "NotAnUpgrade", "4.14.9"},
		{"not semver", func(w *world) { w.uc.Spec.Desired.Version = "4.14" }, "InvalidVersion", "spec.desired.version:"},
		{"not offered", func(w *world) { w.uc.Spec.Desired.Version = "4.14.20" }, "VersionNotAvailable", "spec.desired.version: 4.14.20 is not in ClusterVersion availableUpdates or conditionalUpdates"},
		{"channel does not carry the version", func(w *world) { w.uc.Spec.Desired.Channel = "stable-4.15" }, "ChannelMismatch", "spec.desired.channel: stable-4.15 does not carry version 4.14.15"},
		{"bad channel", func(w *world) { w.uc.Spec.Desired.Channel = "stable" }, "InvalidChannel", "spec.desired.channel:"},
		{"no channel", func(w *world) { w.uc.Spec.Desired.Channel = "" }, "MissingChannel", "spec.desired.channel: required"},
		{"nothing", func(w *world) { w.uc.Spec.Desired = upgradev1alpha1.Update{} }, "MissingTarget", "spec.desired: needs"},
		{"image not by digest", func(w *world) { w.uc.Spec.Desired = upgradev1alpha1.Update{Image: "quay.io/ocp/release:4.14.15"} }, "InvalidImage", "spec.desired.image:"},
		{"bad upgradeAt", func(w *world) { w.uc.Spec.UpgradeAt = "tomorrow" }, "InvalidUpgradeAt", "spec.upgradeAt:"},
		{"bad window zone", func(w *world) {
			w.uc.Spec.MaintenanceWindows = []commonv1alpha1.MaintenanceWindow{{Start: "01:00", End: "02:00", TimeZone: "Europe/Atlantis"}}
		}, "InvalidMaintenanceWindows", "spec.maintenanceWindows[0].timeZone:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.modify(w)
			w.now = t0.Add(2 * time.Hour)
			out := w.plan()
			c := w.summary("Validated")
			if out.Action != nil || w.phase() != upgradev1alpha1.UpgradePhasePending || c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason || !strings.Contains(c.Message, tc.msg) {
				t.Fatalf("action %+v phase %s Validated %+v", out.Action, w.phase(), c)
			}
			if !w.hasEvent("ValidationFailed") {
				t.Error("no ValidationFailed event")
			}
		})
	}
	// Valid: image mode by digest says the version cannot be confirmed, and commences by image.
	w := newWorld(t)
	w.uc.Spec.CapacityReservation = false
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	img := "quay.io/openshift-release-dev/ocp-release@sha256:" + hex64('e')
	w.uc.Spec.Desired = upgradev1alpha1.Update{Image: img}
	out := w.plan()
	if c := w.summary("Validated"); c.Status != metav1.ConditionTrue || c.Reason != "ImageVersionUnconfirmed" {
		t.Fatalf("image mode: %+v", c)
	}
	if out.Action == nil || string(out.Action.ClusterVersion.MergePatch()) != `{"spec":{"desiredUpdate":{"image":"`+img+`","version":null}}}` || w.uc.Status.History[0].Version != img {
		t.Fatalf("image mode patch %+v", out.Action)
	}
}

func TestHealthChecksNameWhatFails(t *testing.T) {
	w := newWorld(t)
	w.uc.Spec.CapacityReservation = false
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	w.snap.ClusterOperators[0].Status.Conditions[1].Status = configv1.ConditionTrue  // etcd Degraded
	w.snap.ClusterOperators[2].Status.Conditions[0].Status = configv1.ConditionFalse // machine-config unavailable
	w.snap.ClusterVersion.Status.Conditions = append(w.snap.ClusterVersion.Status.Conditions, configv1.ClusterOperatorStatusCondition{Type: "Failing", Status: configv1.ConditionTrue, Reason: "ClusterOperatorDegraded", Message: "etcd is degraded"})
	w.snap.Pools[1].Status.Conditions = append(w.snap.Pools[1].Status.Conditions, mcfgv1.MachineConfigPoolCondition{Type: mcfgv1.MachineConfigPoolDegraded, Status: corev1.ConditionTrue})
	w.snap.Nodes[1].Status.Conditions[0].Status = corev1.ConditionFalse // worker-0 NotReady
	w.snap.Nodes[3].Spec.Unschedulable = true                           // worker-1 cordoned
	w.snap.Nodes[5].Spec.Unschedulable = true                           // worker-2 cordoned but updating: fine
	w.snap.Nodes[5].Annotations[annotationState] = "Working"
	w.snap.PDBs = []policyv1.PodDisruptionBudget{pdb("app", "db", 0, 2), pdb("app", "web", 1, 3), pdb("app", "empty", 0, 0)}
	w.plan()
	want := map[string]string{
		CheckCriticalAlerts:       "not configured",
		CheckClusterOperators:     "Degraded: etcd; not Available: machine-config",
		CheckClusterVersion:       "Failing: ClusterOperatorDegraded: etcd is degraded",
		CheckMachineConfigPools:   "Degraded: worker",
		CheckNodes:                "NotReady: worker-0; cordoned and not updating: worker-1",
		CheckPodDisruptionBudgets: "allow no disruption and would block a drain: app/db",
	}
	advisory := map[string]bool{CheckClusterVersion: true, CheckMachineConfigPools: true, CheckNodes: true, CheckPodDisruptionBudgets: true}
	for _, c := range w.uc.Status.Preflight {
		if exp, ok := want[c.Check]; !ok || !strings.Contains(c.Details, exp) || c.Passed != (c.Check == CheckCriticalAlerts) || c.LastRun == nil ||
			c.Advisory != advisory[c.Check] {
			t.Errorf("%s: %+v, want details %q, advisory %v", c.Check, c, exp, advisory[c.Check])
		}
	}
	// Only what MUO blocks on is in the step's error; the advisory findings
	// are reported, not blocking.
	c := w.stepCondition(StepClusterHealthyBeforeUpgrade)
	if c.Status != corev1.ConditionFalse || c.LastError != "health checks failing before the upgrade: ClusterOperators (Degraded: etcd; not Available: machine-config)" {
		t.Fatalf("pre-check condition %+v", c)
	}
	if n := w.eventCount("HealthCheckAdvisory"); n != 4 {
		t.Errorf("%d HealthCheckAdvisory Events, want one per advisory finding (4)", n)
	}
	if hc := w.summary("HealthChecksPassing"); hc.Status != metav1.ConditionFalse {
		t.Fatalf("HealthChecksPassing %+v", hc)
	}
	// An unreachable alert source fails closed.
	w.snap.Alerts = &AlertsResult{Err: "connection refused"}
	w.plan()
	for _, c := range w.uc.Status.Preflight {
		if c.Check == CheckCriticalAlerts && (c.Passed || !strings.Contains(c.Details, "metrics unavailable: connection refused")) {
			t.Errorf("alerts %+v", c)
		}
	}
}

// TestAdvisoryChecksDoNotBlockUnlessPromoted: as MUO, a cordoned node, a
// PodDisruptionBudget at its limit, a degraded pool or a Failing
// ClusterVersion do not hold the upgrade; blockingHealthChecks makes one
// block, and the others stay advisory.
func TestAdvisoryChecksDoNotBlockUnlessPromoted(t *testing.T) {
	findings := func(w *world) {
		w.uc.Spec.CapacityReservation = false
		w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
		w.snap.Nodes[3].Spec.Unschedulable = true
		w.snap.PDBs = []policyv1.PodDisruptionBudget{pdb("app", "db", 0, 2)}
	}
	w := newWorld(t)
	findings(w)
	w.plan()
	if c := w.stepCondition(StepClusterHealthyBeforeUpgrade); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("advisory findings held the pre-check: %+v", c)
	}
	if hc := w.summary("HealthChecksPassing"); hc.Status != metav1.ConditionTrue || hc.Reason != "AdvisoryFindings" ||
		hc.Message != "advisory findings (they do not hold the upgrade): Nodes, PodDisruptionBudgets" {
		t.Fatalf("HealthChecksPassing %+v", hc)
	}

	w = newWorld(t)
	w.cfg = mustConfig(t, "blockingHealthChecks: [PodDisruptionBudgets]\n")
	findings(w)
	w.plan()
	if c := w.stepCondition(StepClusterHealthyBeforeUpgrade); c == nil || c.Status != corev1.ConditionFalse ||
		c.LastError != "health checks failing before the upgrade: PodDisruptionBudgets (allow no disruption and would block a drain: app/db)" {
		t.Fatalf("a promoted check must block, and only it: %+v", c)
	}
	if n := w.eventCount("HealthCheckFailed"); n != 1 {
		t.Errorf("%d HealthCheckFailed Events, want 1 (the promoted check)", n)
	}
}

func TestCapacityReservation(t *testing.T) {
	t.Run("no worker MachineSet: skipped, upgrade continues", func(t *testing.T) {
		w := newWorld(t)
		w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
		w.snap.MachineSets = w.snap.MachineSets[2:] // only infra
		out := w.plan()
		if out.Action == nil || out.Action.Kind != PatchClusterVersion || w.uc.Status.CapacityReservation.Outcome != CapacitySkipped || !w.hasEvent("CapacityReservationSkipped") {
			t.Fatalf("%+v %+v", out.Action, w.uc.Status.CapacityReservation)
		}
	})
	t.Run("timeout: continue without, and say so", func(t *testing.T) {
		w := newWorld(t)
		w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
		w.plan()
		w.plan()
		w.now = t0.Add(30*time.Minute - time.Second)
		if out := w.plan(); out.Action != nil || out.RequeueAfter != time.Second {
			t.Fatalf("before the scale timeout: %+v", out)
		}
		w.now = t0.Add(30 * time.Minute)
		out := w.plan()
		c := w.stepCondition(StepComputeCapacityReserved)
		if out.Action == nil || out.Action.Kind != PatchClusterVersion || w.uc.Status.CapacityReservation.Outcome != CapacityTimedOut ||
			c.Status != corev1.ConditionTrue || !strings.Contains(c.LastError, "continuing the upgrade without it") {
			t.Fatalf("%+v %+v", out.Action, c)
		}
	})
	t.Run("partial: the second copy is created although the first exists (MUO bug)", func(t *testing.T) {
		w := newWorld(t)
		w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
		w.snap.MachineSets = append(w.snap.MachineSets, *SurgeMachineSet(w.snap.MachineSets[0]))
		out := w.plan()
		if out.Action == nil || out.Action.Kind != CreateMachineSet || out.Action.MachineSet.Name != "c1-worker-b-upgrade" {
			t.Fatalf("%+v", out.Action)
		}
	})
	t.Run("machine without nodeRef is not ready (MUO panics)", func(t *testing.T) {
		w := newWorld(t)
		w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
		w.plan()
		w.plan()
		w.machineAPI()
		w.snap.Machines[0].Status.NodeRef = nil
		if out := w.plan(); out.Action != nil || w.uc.Status.CurrentStep != string(StepComputeCapacityReserved) {
			t.Fatalf("%+v", out.Action)
		}
	})
	t.Run("start deadline while waiting for capacity: Failed first, cleanup next, and a lost Failed write never commences", func(t *testing.T) {
		w := newWorld(t)
		w.uc.Spec.Deadlines = &upgradev1alpha1.Deadlines{Start: &upgradev1alpha1.Deadline{Minutes: ptr(int32(1)), Policy: upgradev1alpha1.DeadlineFail}}
		w.now = t0.Add(time.Hour) // upgradeAt
		w.plan()
		w.plan() // both copies created, neither provisions
		waiting := w.uc.Status.DeepCopy()
		w.now = t0.Add(time.Hour + time.Minute)
		out := w.plan()
		if w.phase() != upgradev1alpha1.UpgradePhaseFailed || out.Action != nil {
			t.Fatalf("at the deadline: phase %s action %+v, want Failed and no side effect before the status says so", w.phase(), out.Action)
		}
		if out := w.plan(); out.Action == nil || out.Action.Kind != DeleteMachineSet {
			t.Fatalf("after Failed was written: %+v, want the cleanup", out.Action)
		}
		// The Failed write is lost (a crash, a conflict) after the copy was
		// deleted: the re-plan from the old status finds a copy missing, which
		// capacity reservation treats as gone; it must still fail, not commence.
		w.uc.Status = *waiting
		w.machineAPI() // the remaining copy is ready now
		w.plan()
		if w.phase() != upgradev1alpha1.UpgradePhaseFailed || w.desiredPatches != 0 {
			t.Fatalf("re-plan from the lost write: phase %s, ClusterVersion patches %d", w.phase(), w.desiredPatches)
		}
	})
	t.Run("a copy deleted by someone else is not recreated", func(t *testing.T) {
		w := newWorld(t)
		w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
		w.plan()
		w.plan()
		w.plan() // both observed and recorded
		w.removeMachineSet("c1-worker-a-upgrade")
		w.machineAPI()
		out := w.plan()
		if out.Action == nil || out.Action.Kind != PatchClusterVersion || w.creates["c1-worker-a-upgrade"] != 1 {
			t.Fatalf("%+v creates %v", out.Action, w.creates)
		}
		if c := w.stepCondition(StepComputeCapacityReserved); !strings.Contains(c.Message, "not recreated: c1-worker-a-upgrade") {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("deleting the UpgradeConfig removes the capacity, then the finalizer", func(t *testing.T) {
		w := newWorld(t)
		w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
		w.uc.Finalizers = []string{Finalizer}
		w.plan()
		w.plan()
		w.uc.DeletionTimestamp = ptrTime(w.now)
		w.settle()
		if w.surgeCount() != 0 || !w.finalizerRemoved {
			t.Fatalf("surge %d finalizer removed %v", w.surgeCount(), w.finalizerRemoved)
		}
	})
}

func TestActionErrorsAreRecordedAndRetried(t *testing.T) {
	w := newWorld(t)
	w.uc.Spec.CapacityReservation = false
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	out := Plan(Input{UpgradeConfig: w.uc, Config: w.cfg, Snapshot: w.snap, Now: w.now})
	if out.Action == nil {
		t.Fatal("no action")
	}
	w.uc.Status = RecordActionError(out.Status, out.Action.Step, errors.New("etcdserver: request timed out"), w.now)
	c := w.stepCondition(StepUpgradeCommenced)
	if c.LastError != "etcdserver: request timed out" || c.Attempts != 1 || c.Status != corev1.ConditionFalse {
		t.Fatalf("%+v", c)
	}
	out = w.plan()
	if out.Action == nil || w.stepCondition(StepUpgradeCommenced).Attempts != 2 {
		t.Fatalf("retry: %+v", out.Action)
	}
	w.settle()
	if c := w.stepCondition(StepUpgradeCommenced); c.Status != corev1.ConditionTrue || c.LastError != "etcdserver: request timed out" {
		t.Fatalf("lastError must stay visible after success: %+v", c)
	}
}

func TestExternalDependencyChecks(t *testing.T) {
	w := newWorld(t)
	w.cfg = mustConfig(t, "extDependencyAvailabilityChecks:\n  http:\n    urls: [https://api.openshift.com]\n")
	w.uc.Spec.CapacityReservation = false
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	w.externalOK = false
	out := w.plan()
	if out.Action != nil || out.RequeueAfter != time.Minute || w.externalChecks != 1 {
		t.Fatalf("a failed check is retried a minute later: %+v, checks %d", out, w.externalChecks)
	}
	if c := w.stepCondition(StepExternalDependenciesAvailable); c == nil || c.LastError != "external dependencies unavailable: checked" {
		t.Fatalf("the failure is on the step: %+v", c)
	}
	out = w.plan()
	if out.Action != nil || out.RequeueAfter != time.Minute || w.externalChecks != 1 {
		t.Fatalf("failed check retried at once: %+v, checks %d", out, w.externalChecks)
	}
	w.now = w.now.Add(time.Minute)
	w.externalOK = true
	out = w.plan() // re-checked, passed: the upgrade commences in the same plan
	if out.Action == nil || out.Action.Kind != PatchClusterVersion || w.externalChecks != 2 {
		t.Fatalf("%+v checks %d", out.Action, w.externalChecks)
	}
	w.plan()
	if w.externalChecks != 2 {
		t.Fatalf("a passed check ran again: %d", w.externalChecks)
	}
}

func TestConfigErrorKeepsLastGood(t *testing.T) {
	w := newWorld(t)
	w.configErr = errors.New("maintenance.controlPlaneTime: must be at least 1 minute(s), got 0")
	w.plan()
	if c := w.summary("ConfigValid"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "InvalidConfigKeptLastGood" || !strings.Contains(c.Message, "maintenance.controlPlaneTime") {
		t.Fatalf("%+v", c)
	}
	if w.phase() != upgradev1alpha1.UpgradePhasePending {
		t.Fatal("must keep working on the last good configuration")
	}
	if !w.hasEvent("InvalidConfig") {
		t.Fatal("no InvalidConfig event")
	}
	n := len(w.events)
	w.plan()
	for _, e := range w.events[n:] {
		if e.Reason == "InvalidConfig" {
			t.Fatal("InvalidConfig event repeated for the same error")
		}
	}
	w2 := newWorld(t)
	w2.cfg = nil
	w2.configErr = errors.New("ConfigMap managed-upgrade-operator-config has no key config.yaml")
	out := w2.plan()
	if out.Action != nil || len(w2.uc.Status.History) != 0 || w2.summary("ConfigValid").Reason != "InvalidConfig" {
		t.Fatalf("without any config: %+v", out)
	}
}

func TestConfigUnknownKeysAreReportedOnce(t *testing.T) {
	w := newWorld(t)
	// A misspelt key: MUO ignores it and so do we, but not silently.
	w.cfg = mustConfig(t, "maintenance:\n  controlPlaneTme: 30\n")
	w.plan()
	c := w.summary("ConfigValid")
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "ValidWithWarnings" || !strings.Contains(c.Message, "controlPlaneTme") {
		t.Fatalf("%+v", c)
	}
	if !w.hasEvent("ConfigKeysIgnored") {
		t.Fatal("no ConfigKeysIgnored event")
	}
	n := len(w.events)
	w.plan()
	for _, e := range w.events[n:] {
		if e.Reason == "ConfigKeysIgnored" {
			t.Fatal("ConfigKeysIgnored repeated for the same keys")
		}
	}
	w.cfg = mustConfig(t, "")
	w.plan()
	if c := w.summary("ConfigValid"); c.Reason != "Valid" {
		t.Fatalf("fixed: %+v", c)
	}
}

func TestNewTargetSupersedesPending(t *testing.T) {
	w := newWorld(t)
	w.plan()
	w.uc.Spec.Desired.Version = "4.14.16"
	w.uc.Generation++
	w.plan()
	h := w.uc.Status.History
	if len(h) != 2 || h[0].Version != "4.14.16" || h[1].Phase != upgradev1alpha1.UpgradePhaseCancelled || h[0].Phase != upgradev1alpha1.UpgradePhasePending {
		t.Fatalf("history %+v", h)
	}
}

func TestAlreadyCommencedStartsUpgrading(t *testing.T) {
	w := newWorld(t)
	w.snap.ClusterVersion.Spec.DesiredUpdate = &configv1.Update{Version: "4.14.15"}
	w.plan()
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgrading || w.desiredPatches != 0 || w.surgeCount() != 0 {
		t.Fatalf("phase %s patches %d surge %d", w.phase(), w.desiredPatches, w.surgeCount())
	}
}

func TestLastErrorFitsTheAPI(t *testing.T) {
	w := newWorld(t)
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	for i := 0; i < 300; i++ {
		w.snap.PDBs = append(w.snap.PDBs, pdb("namespace-with-a-rather-long-name-"+strings.Repeat("x", 40), "budget-"+strings.Repeat("y", 40)+string(rune('a'+i%26))+strings.Repeat("z", i%7), 0, 1))
	}
	w.snap.Alerts = &AlertsResult{Err: strings.Repeat("e", 5000)}
	w.plan()
	c := w.stepCondition(StepClusterHealthyBeforeUpgrade)
	if c == nil || len(c.LastError) > 4096 || !strings.HasSuffix(c.LastError, "...") {
		t.Fatalf("lastError of %d bytes", len(c.LastError))
	}
	for _, p := range w.uc.Status.Preflight {
		if len(p.Details) > 4096 {
			t.Errorf("%s details of %d bytes", p.Check, len(p.Details))
		}
	}
	st := RecordActionError(w.uc.Status, StepClusterHealthyBeforeUpgrade, errors.New(strings.Repeat("x", 10000)), w.now)
	if l := len(findStepCondition(st.History[0].Conditions, StepClusterHealthyBeforeUpgrade).LastError); l > 4096 {
		t.Fatalf("RecordActionError lastError of %d bytes", l)
	}
}

func TestStepsAfterCommencement(t *testing.T) {
	t.Run("control plane progress is described, and Degraded worker pools are named", func(t *testing.T) {
		w := newWorld(t)
		w.uc.Spec.CapacityReservation = false
		w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
		w.settle()
		w.snap.ClusterVersion.Status.History = append([]configv1.UpdateHistory{{State: configv1.PartialUpdate, Version: "4.14.15", StartedTime: metav1.NewTime(t0)}}, w.snap.ClusterVersion.Status.History...)
		w.plan()
		if c := w.stepCondition(StepControlPlaneUpgraded); !strings.Contains(c.Message, "ClusterVersion is updating to 4.14.15 (Partial since 2026-11-20T10:00:00Z)") {
			t.Fatalf("%+v", c)
		}
		w.cvo()
		w.snap.Pools[1] = pool("worker", 3, 2, "rendered-worker-2")
		w.snap.Pools[1].Status.Conditions = append(w.snap.Pools[1].Status.Conditions, mcfgv1.MachineConfigPoolCondition{Type: mcfgv1.MachineConfigPoolDegraded, Status: corev1.ConditionTrue})
		w.settle()
		c := w.stepCondition(StepWorkerNodesUpgraded)
		if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "worker pools updating: worker") || c.LastError != "worker pools Degraded: worker" {
			t.Fatalf("%+v", c)
		}
		// The master pool is not a worker pool.
		w.snap.Pools[0] = pool("master", 3, 1, "rendered-master-2")
		w.snap.Pools[1] = pool("worker", 3, 3, "rendered-worker-2")
		w.settle()
		if w.phase() != upgradev1alpha1.UpgradePhaseUpgraded {
			t.Fatalf("phase %s at %s", w.phase(), w.uc.Status.CurrentStep)
		}
	})
	t.Run("FedRAMP requests the FileIntegrity re-init once", func(t *testing.T) {
		w := newWorld(t)
		w.cfg = mustConfig(t, "environment:\n  fedramp: true\n")
		w.uc.Spec.CapacityReservation = false
		w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
		w.settle()
		w.cvo()
		w.mco()
		var reinits int
		for i := 0; i < 20 && w.phase() != upgradev1alpha1.UpgradePhaseUpgraded; i++ {
			if out := w.plan(); out.Action != nil && out.Action.Kind == ReinitFileIntegrity {
				reinits++
			}
		}
		if reinits != 1 || w.phase() != upgradev1alpha1.UpgradePhaseUpgraded {
			t.Fatalf("re-inits %d phase %s", reinits, w.phase())
		}
	})
	t.Run("without integrations the managed-service steps say so", func(t *testing.T) {
		w := newWorld(t)
		w.uc.Spec.CapacityReservation = false
		w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
		w.settle()
		for step, want := range map[upgradev1alpha1.UpgradeConditionType]string{
			StepStartedNotificationSent:              "no notifier configured",
			StepControlPlaneMaintenanceWindowCreated: "no Alertmanager configured",
		} {
			if c := w.stepCondition(step); c == nil || c.Status != corev1.ConditionTrue || !strings.Contains(c.Message, want) {
				t.Errorf("%s: %+v", step, c)
			}
		}
		w = newWorld(t)
		w.integrations = Integrations{Notifications: true, Silences: true}
		w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
		w.plan()
		if c := w.stepCondition(StepStartedNotificationSent); strings.Contains(c.Message, "no notifier") {
			t.Errorf("%+v", c)
		}
	})
	t.Run("an unchanged plan writes nothing", func(t *testing.T) {
		// Pending, before upgradeAt: the advisory checks run on every plan.
		w := newWorld(t)
		w.uc.Spec.UpgradeAt = t0.Add(24 * time.Hour).Format(time.RFC3339)
		w.settle()
		before := w.uc.Status.DeepCopy()
		w.now = w.now.Add(time.Minute)
		w.plan()
		if !reflect.DeepEqual(before, &w.uc.Status) {
			t.Fatalf("status changed on a plan that learnt nothing:\n%+v\n%+v", before, w.uc.Status)
		}
		// After preflightRefresh the unchanged results are refreshed.
		w.now = w.now.Add(preflightRefresh)
		w.plan()
		if reflect.DeepEqual(before.Preflight, w.uc.Status.Preflight) {
			t.Fatal("lastRun not refreshed")
		}
	})
}

// MUO keeps an UpgradeConfig that does not validate Pending, past its
// window too: the passed start deadline is reported, never applied (policy
// fail included). Once it validates, the window is judged as usual.
func TestValidationFailurePastTheWindowStaysPending(t *testing.T) {
	w := newWorld(t)
	w.uc.Spec.Deadlines = &upgradev1alpha1.Deadlines{Start: &upgradev1alpha1.Deadline{Minutes: ptr(int32(1)), Policy: upgradev1alpha1.DeadlineFail}}
	w.uc.Spec.Desired.Version = "4.14.20" // not offered
	w.plan()
	w.now = t0.Add(time.Hour + 2*time.Minute) // upgradeAt + 2 minutes
	out := w.plan()
	c := w.summary("DeadlineExceeded")
	if w.phase() != upgradev1alpha1.UpgradePhasePending || out.Action != nil || c == nil || c.Status != metav1.ConditionTrue ||
		!strings.Contains(c.Message, "validation: spec.desired.version: 4.14.20 is not in ClusterVersion availableUpdates") {
		t.Fatalf("phase %s action %+v DeadlineExceeded %+v, want Pending with the breach reported", w.phase(), out.Action, c)
	}
	w.now = w.now.Add(24 * time.Hour)
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhasePending {
		t.Fatalf("a day later: phase %s, want Pending", w.phase())
	}
	// Valid now, past the window: the deadline's policy applies.
	w.uc.Spec.Desired.Version = "4.14.15"
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseFailed {
		t.Fatalf("valid past the window: phase %s, want Failed (policy fail)", w.phase())
	}
}
