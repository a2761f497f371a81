package plan

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/services/upgradescheduler/silence"
)

func TestHoldForLeases(t *testing.T) {
	failed := errors.New("expiring silence 0a1b: 503 Service Unavailable")
	for _, tc := range []struct {
		name     string
		action   *Action
		leaseErr error
		hold     bool
	}{
		{"no action", nil, failed, false},
		{"finalizer, leases in step", &Action{Kind: RemoveFinalizer}, nil, false},
		// A silence that failed to expire (or could not even be listed)
		// must not outlive the object: the finalizer waits.
		{"finalizer, leases failed", &Action{Kind: RemoveFinalizer}, failed, true},
		{"patch ClusterVersion, leases failed", &Action{Kind: PatchClusterVersion, Step: StepUpgradeCommenced}, failed, false},
		{"delete MachineSet, leases failed", &Action{Kind: DeleteMachineSet, Step: StepComputeCapacityRemoved}, failed, false},
		{"notify, leases failed", &Action{Kind: Notify, Step: StepUpgradeCommenced}, failed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HoldForLeases(tc.action, tc.leaseErr); got != tc.hold {
				t.Fatalf("HoldForLeases = %v, want %v", got, tc.hold)
			}
		})
	}
}

func TestExecutedKeepsTheLeasesOfThePass(t *testing.T) {
	now := t0.Add(time.Hour)
	ends := metav1.NewTime(now.Add(silence.DefaultTTL))
	cp := upgradev1alpha1.SilenceLease{Purpose: string(silence.ControlPlane), ID: "cp-new", EndsAt: &ends}
	crit := upgradev1alpha1.SilenceLease{Purpose: string(silence.ControlPlaneCriticals), ID: "crit-new", EndsAt: &ends}
	old := upgradev1alpha1.SilenceLease{Purpose: string(silence.Workers), ID: "workers-old", EndsAt: &ends}
	planned := func() upgradev1alpha1.UpgradeConfigStatus {
		return upgradev1alpha1.UpgradeConfigStatus{
			History: []upgradev1alpha1.UpgradeHistory{{Version: "4.14.16", Phase: upgradev1alpha1.UpgradePhaseUpgrading}},
			// What the status read had: the lease step replaces it.
			Silences:  []upgradev1alpha1.SilenceLease{old},
			Preflight: []upgradev1alpha1.PreflightCheck{{Check: CheckExternalDeps, Passed: true, Details: "planned"}},
		}
	}
	actErr := errors.New("etcdserver: request timed out")
	// The lease step of the pass: the old workers lease expired, the two
	// control-plane leases created.
	step := &LeaseStep{
		Plan: silence.Plan{Actions: []silence.Action{
			{Kind: silence.Expire, Purpose: silence.Workers, ID: "workers-old"},
			{Kind: silence.Create, Purpose: silence.ControlPlane, Silence: silence.Silence{EndsAt: ends.Time}},
			{Kind: silence.Create, Purpose: silence.ControlPlaneCriticals, Silence: silence.Silence{EndsAt: ends.Time}},
		}},
		Existing: []silence.Silence{{ID: "workers-old", EndsAt: ends.Time}},
	}
	for _, tc := range []struct {
		name    string
		applied bool
		record  map[silence.Purpose]string
		want    []upgradev1alpha1.SilenceLease
	}{
		{"leases created this pass are kept", true, map[silence.Purpose]string{silence.ControlPlane: "cp-new", silence.ControlPlaneCriticals: "crit-new"}, []upgradev1alpha1.SilenceLease{cp, crit}},
		{"leases expired this pass stay gone", true, map[silence.Purpose]string{}, nil},
		{"a lease step that stopped half-way records what exists", true, map[silence.Purpose]string{silence.ControlPlane: "cp-new"}, []upgradev1alpha1.SilenceLease{cp}},
		{"a lease step that did not run keeps the record", false, nil, []upgradev1alpha1.SilenceLease{old}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := Output{Status: planned(), Leases: step}
			done := Done{LeasesApplied: tc.applied, Leases: tc.record, Action: &Action{Kind: PatchClusterVersion, Step: StepUpgradeCommenced}, Err: actErr}
			got := Executed(out, done, now)
			if !equality.Semantic.DeepEqual(got.Silences, tc.want) {
				t.Fatalf("silences %+v, want %+v", got.Silences, tc.want)
			}
			c := findStepCondition(got.History[0].Conditions, StepUpgradeCommenced)
			if c == nil || c.Status != corev1.ConditionFalse || c.LastError != actErr.Error() {
				t.Fatalf("action error not recorded: %+v", c)
			}
			// Everything else is the planned status.
			if !equality.Semantic.DeepEqual(got.Preflight, planned().Preflight) {
				t.Fatalf("preflight %+v", got.Preflight)
			}
			// The planned status is not mutated (the reconciler still holds it).
			if !equality.Semantic.DeepEqual(out.Status, planned()) {
				t.Fatalf("planned status mutated: %+v", out.Status)
			}
		})
	}
}

// A delivered notification is recorded; a delivery that settled nothing
// (the policy was gone) and a failed one are not.
func TestExecutedRecordsADeliveredNotification(t *testing.T) {
	now := t0.Add(time.Hour)
	n := &Notification{Event: "StateStarted", Version: "4.14.16", Generation: 2}
	a := &Action{Kind: Notify, Step: StepUpgradeCommenced, Notification: n}
	planned := upgradev1alpha1.UpgradeConfigStatus{History: []upgradev1alpha1.UpgradeHistory{{Version: "4.14.16", Phase: upgradev1alpha1.UpgradePhaseUpgrading}}}
	got := Executed(Output{Status: planned}, Done{Action: a, Outcome: "Sent"}, now)
	if len(got.Notifications) != 1 || got.Notifications[0].Event != "StateStarted" || got.Notifications[0].Outcome != "Sent" || !got.Notifications[0].Time.Time.Equal(now) {
		t.Fatalf("delivery not recorded: %+v", got.Notifications)
	}
	if len(planned.Notifications) != 0 {
		t.Fatal("planned status mutated")
	}
	if got := Executed(Output{Status: planned}, Done{Action: a}, now); len(got.Notifications) != 0 {
		t.Fatalf("a delivery that settled nothing recorded: %+v", got.Notifications)
	}
	failed := Executed(Output{Status: planned}, Done{Action: a, Outcome: "Sent", Err: errors.New("503")}, now)
	if len(failed.Notifications) != 0 || findStepCondition(failed.History[0].Conditions, StepUpgradeCommenced).LastError != "503" {
		t.Fatalf("a failed delivery: %+v", failed)
	}
}

// The alerts are asked for only by the plans that run the health checks.
func TestNeedsAlertsOnlyForHealthChecks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(w *world)
		needs bool
	}{
		{"waiting for the start time: advisory checks", func(w *world) {
			w.uc.Spec.UpgradeAt = t0.Add(24 * time.Hour).Format(time.RFC3339)
		}, true},
		{"at the start: the health check before the upgrade", func(w *world) {
			w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
		}, true},
		{"paused", func(w *world) {
			w.uc.Spec.UpgradeAt = t0.Add(24 * time.Hour).Format(time.RFC3339)
			w.uc.Spec.Paused = true
		}, false},
		{"upgraded", func(w *world) {
			w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
			w.settle()
			w.now = w.now.Add(40 * time.Minute)
			w.cvo()
			w.settle()
			w.now = w.now.Add(30 * time.Minute)
			w.mco()
			w.settle()
			if w.phase() != upgradev1alpha1.UpgradePhaseUpgraded {
				w.t.Fatalf("phase %s", w.phase())
			}
		}, false},
		{"being deleted", func(w *world) {
			w.uc.Finalizers = []string{Finalizer}
			w.uc.DeletionTimestamp = ptrTime(w.now)
		}, false},
		{"no configuration", func(w *world) {
			w.cfg, w.configErr = nil, errors.New("ConfigMap upgradescheduler/upgrade-config not found")
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.uc.Spec.CapacityReservation = false
			w.snap.Alerts = &AlertsResult{}
			tc.setup(w)
			in := Input{UpgradeConfig: w.uc, Config: w.cfg, ConfigError: w.configErr, Snapshot: w.snap, Integrations: w.integrations, Now: w.now}
			in.Snapshot.Alerts, in.Snapshot.AlertsUnread = nil, true
			if got := Plan(in).NeedsAlerts; got != tc.needs {
				t.Fatalf("NeedsAlerts = %v, want %v", got, tc.needs)
			}
		})
	}
}
