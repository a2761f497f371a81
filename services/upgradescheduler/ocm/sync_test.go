package ocm

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

func TestDecideSync(t *testing.T) {
	spec := func(v, at string) *upgradev1alpha1.UpgradeConfigSpec {
		return &upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: v, Channel: "stable-4.16"}, UpgradeAt: at,
			PDBForceDrainTimeout: 60, Type: upgradev1alpha1.OSD, CapacityReservation: true}
	}
	uc := func(s *upgradev1alpha1.UpgradeConfigSpec, policy string, phase upgradev1alpha1.UpgradePhase, ann ...string) *upgradev1alpha1.UpgradeConfig {
		o := &upgradev1alpha1.UpgradeConfig{ObjectMeta: metav1.ObjectMeta{Name: UpgradeConfigName, Annotations: map[string]string{PolicyAnnotation: policy}}, Spec: *s}
		for _, a := range ann {
			o.Annotations[a] = "x"
		}
		if phase != "" {
			o.Status.History = []upgradev1alpha1.UpgradeHistory{{Version: s.Desired.Version, Phase: phase}}
		}
		return o
	}
	p1 := &Policy{ID: "p1", Version: "4.16.2", State: StateScheduled}
	s1 := spec("4.16.2", "2026-11-23T10:00:00Z")
	later := spec("4.16.2", "2026-11-23T12:00:00Z")
	newer := spec("4.16.3", "2026-11-23T12:00:00Z")
	withWindows := *s1
	withWindows.Paused = true
	for _, tc := range []struct {
		name string
		in   SyncInput
		want SyncAction
	}{
		{"no UpgradeConfig, a policy: create", SyncInput{Picked: p1, Spec: s1}, SyncCreate},
		{"same spec: nothing", SyncInput{Existing: uc(s1, "p1", upgradev1alpha1.UpgradePhasePending), Picked: p1, Spec: s1}, SyncNone},
		{"user's own fields are not OCM's: nothing", SyncInput{Existing: uc(&withWindows, "p1", upgradev1alpha1.UpgradePhasePending), Picked: p1, Spec: s1}, SyncNone},
		{"rescheduled: update in place", SyncInput{Existing: uc(s1, "p1", upgradev1alpha1.UpgradePhasePending), Picked: p1, Spec: later}, SyncUpdate},
		{"new version before commencement: update", SyncInput{Existing: uc(s1, "p1", upgradev1alpha1.UpgradePhasePending), Picked: p1, Spec: newer}, SyncUpdate},
		{"new version while commenced: wait", SyncInput{Existing: uc(s1, "p1", upgradev1alpha1.UpgradePhaseUpgrading), Picked: p1, Spec: newer, Commenced: true}, SyncNone},
		{"new version after the attempt ended: update", SyncInput{Existing: uc(s1, "p1", upgradev1alpha1.UpgradePhaseUpgraded), Picked: p1, Spec: newer, Commenced: true}, SyncUpdate},
		{"another policy ID, same spec: re-annotate", SyncInput{Existing: uc(s1, "p0", upgradev1alpha1.UpgradePhasePending), Picked: p1, Spec: s1}, SyncUpdate},
		{"no policy, no UpgradeConfig: nothing", SyncInput{}, SyncNone},
		{"policy removed before commencement: cancel", SyncInput{Existing: uc(s1, "p1", upgradev1alpha1.UpgradePhasePending)}, SyncCancel},
		{"policy cancelled in OCM before commencement: cancel", SyncInput{Existing: uc(s1, "p1", upgradev1alpha1.UpgradePhasePending),
			Policies: []Policy{{ID: "p1", State: StateCancelled}}}, SyncCancel},
		{"policy removed after commencement: record", SyncInput{Existing: uc(s1, "p1", upgradev1alpha1.UpgradePhaseUpgrading), Commenced: true}, SyncRecordRemoved},
		{"removal recorded already", SyncInput{Existing: uc(s1, "p1", upgradev1alpha1.UpgradePhaseUpgrading, PolicyRemovedAnnotation), Commenced: true}, SyncNone},
		{"policy back in pending before commencement: cancel (MUO ignores pending policies)", SyncInput{Existing: uc(s1, "p1", upgradev1alpha1.UpgradePhasePending),
			Policies: []Policy{{ID: "p1", State: StatePending}}}, SyncCancel},
		{"rescheduled while Upgrading but not commenced: update", SyncInput{Existing: uc(s1, "p1", upgradev1alpha1.UpgradePhaseUpgrading), Picked: p1, Spec: later}, SyncUpdate},
		{"rescheduled after commencement: the spec is left alone", SyncInput{Existing: uc(s1, "p1", upgradev1alpha1.UpgradePhaseUpgrading), Picked: p1, Spec: later, Commenced: true}, SyncNone},
		{"drain timeout changed after commencement: the spec is left alone", SyncInput{Existing: uc(s1, "p1", upgradev1alpha1.UpgradePhaseUpgrading), Picked: p1, Commenced: true,
			Spec: func() *upgradev1alpha1.UpgradeConfigSpec { o := *s1; o.PDBForceDrainTimeout = 5; return &o }()}, SyncNone},
		{"user's cancel with the policy still there: kept", SyncInput{Existing: func() *upgradev1alpha1.UpgradeConfig {
			o := uc(s1, "p1", upgradev1alpha1.UpgradePhaseCancelled)
			o.Spec.Cancel = true
			return o
		}(), Picked: p1, Spec: s1}, SyncNone},
		{"user's cancel, policy rescheduled: OCM's fields follow, the cancel stays", SyncInput{Existing: func() *upgradev1alpha1.UpgradeConfig {
			o := uc(s1, "p1", upgradev1alpha1.UpgradePhaseCancelled)
			o.Spec.Cancel = true
			return o
		}(), Picked: p1, Spec: later}, SyncUpdate},
		{"syncer's own cancel, policy back: withdrawn", SyncInput{Existing: func() *upgradev1alpha1.UpgradeConfig {
			o := uc(s1, "p1", upgradev1alpha1.UpgradePhaseCancelled, CancelledBySyncAnnotation)
			o.Spec.Cancel = true
			return o
		}(), Picked: p1, Spec: s1}, SyncUpdate},
		{"policy completed by our notification: nothing", SyncInput{Existing: uc(s1, "p1", upgradev1alpha1.UpgradePhaseUpgrading), Commenced: true,
			Policies: []Policy{{ID: "p1", State: StateCompleted}}}, SyncNone},
		{"attempt ended, policy gone: nothing (never deleted)", SyncInput{Existing: uc(s1, "p1", upgradev1alpha1.UpgradePhaseUpgraded)}, SyncNone},
		{"cancelled already: nothing", SyncInput{Existing: func() *upgradev1alpha1.UpgradeConfig {
			o := uc(s1, "p1", upgradev1alpha1.UpgradePhasePending)
			o.Spec.Cancel = true
			return o
		}()}, SyncNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DecideSync(tc.in)
			if got.Action != tc.want {
				t.Fatalf("DecideSync = %s (%s), want %s", got.Action, got.Reason, tc.want)
			}
			if got.Action == SyncUpdate {
				_, ours := tc.in.Existing.Annotations[CancelledBySyncAnnotation]
				wantCancel := tc.in.Existing.Spec.Cancel && !ours
				if got.Spec.Desired != tc.in.Spec.Desired || got.Spec.UpgradeAt != tc.in.Spec.UpgradeAt || got.Spec.Cancel != wantCancel {
					t.Fatalf("update spec %+v, want cancel %v", got.Spec, wantCancel)
				}
				if got.Spec.Paused != tc.in.Existing.Spec.Paused {
					t.Fatal("the user's own fields were overwritten")
				}
			}
		})
	}
}

func TestSyncRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		failures int
		base     time.Duration
		want     time.Duration
	}{
		{1, time.Minute, time.Minute},
		{2, time.Minute, 2 * time.Minute},
		{3, time.Minute, 4 * time.Minute},
		{6, time.Minute, 32 * time.Minute},
		{7, time.Minute, time.Hour},
		{1000, time.Minute, time.Hour},
		{3, time.Second, 4 * time.Second},
	} {
		if got := SyncRetryAfter(tc.failures, tc.base); got != tc.want {
			t.Errorf("SyncRetryAfter(%d, %v) = %v, want %v", tc.failures, tc.base, got, tc.want)
		}
	}
}
