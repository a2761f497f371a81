package ocm

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func TestPick(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policies []Policy
		want     string // policy ID, "" for none
		current  string // the policy the UpgradeConfig answers to
	}{
		{"none", nil, "", ""},
		{"one scheduled", []Policy{{ID: "a", Version: "4.16.2", NextRun: t0, State: StateScheduled}}, "a", ""},
		{"earliest next run wins", []Policy{
			{ID: "a", Version: "4.16.3", NextRun: t0.Add(time.Hour), State: StateScheduled},
			{ID: "b", Version: "4.16.2", NextRun: t0, State: StateScheduled},
		}, "b", ""},
		{"a completed policy earlier does not hide a scheduled one", []Policy{
			{ID: "auto", Version: "4.16.1", NextRun: t0.Add(-time.Hour), State: StateCompleted, ScheduleType: "automatic"},
			{ID: "manual", Version: "4.16.2", NextRun: t0, State: StateScheduled},
		}, "manual", ""},
		{"pending and cancelled are ignored", []Policy{
			{ID: "p", Version: "4.16.2", NextRun: t0, State: StatePending},
			{ID: "c", Version: "4.16.2", NextRun: t0, State: StateCancelled},
		}, "", ""},
		{"automatic policy without a version (cluster up to date) is ignored", []Policy{
			{ID: "auto", NextRun: t0, State: StateScheduled, ScheduleType: "automatic"},
		}, "", ""},
		{"started, delayed and failed are acted on", []Policy{
			{ID: "f", Version: "4.16.2", NextRun: t0.Add(2 * time.Hour), State: StateFailed},
			{ID: "d", Version: "4.16.2", NextRun: t0.Add(time.Hour), State: StateDelayed},
			{ID: "s", Version: "4.16.2", NextRun: t0.Add(3 * time.Hour), State: StateStarted},
		}, "d", ""},
		{"a stale failed policy does not hide a scheduled one", []Policy{
			{ID: "old", Version: "4.16.2", NextRun: t0.Add(-time.Hour), State: StateFailed},
			{ID: "new", Version: "4.16.2", NextRun: t0.Add(time.Hour), State: StateScheduled},
		}, "new", "old"},
		{"the policy the UpgradeConfig answers to is kept", []Policy{
			{ID: "other", Version: "4.16.3", NextRun: t0, State: StateScheduled},
			{ID: "mine", Version: "4.16.2", NextRun: t0.Add(time.Hour), State: StateStarted},
		}, "mine", "mine"},
		{"tie broken by ID, whatever the order", []Policy{
			{ID: "z", Version: "4.16.2", NextRun: t0, State: StateScheduled},
			{ID: "m", Version: "4.16.2", NextRun: t0, State: StateScheduled},
		}, "m", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Pick(tc.policies, tc.current)
			if !ok && tc.want != "" || ok && got.ID != tc.want {
				t.Fatalf("Pick = %q (%v), want %q", got.ID, ok, tc.want)
			}
			// Deterministic: the reversed list gives the same answer.
			rev := append([]Policy(nil), tc.policies...)
			for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
				rev[i], rev[j] = rev[j], rev[i]
			}
			if again, _ := Pick(rev, tc.current); again.ID != got.ID {
				t.Fatalf("order-dependent: %q then %q", got.ID, again.ID)
			}
		})
	}
}

func TestSpec(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster Cluster
		policy  Policy
		typ     upgradev1alpha1.UpgradeType
		want    upgradev1alpha1.UpgradeConfigSpec
		wantErr bool
	}{
		{
			name:    "stable OSD, drain grace in minutes",
			cluster: Cluster{ID: "c", ChannelGroup: "stable", NodeDrainGracePeriod: 60},
			policy:  Policy{ID: "p", Version: "4.16.2", NextRun: t0},
			typ:     upgradev1alpha1.OSD,
			want: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.16.2", Channel: "stable-4.16"},
				UpgradeAt: "2026-11-23T10:00:00Z", PDBForceDrainTimeout: 60, Type: upgradev1alpha1.OSD, CapacityReservation: true},
		},
		{
			name:    "no channel group (ARO) is stable",
			cluster: Cluster{ID: "c"},
			policy:  Policy{ID: "p", Version: "4.15.30", NextRun: t0.In(time.FixedZone("CET", 3600))},
			typ:     upgradev1alpha1.ARO,
			want: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.15.30", Channel: "stable-4.15"},
				UpgradeAt: "2026-11-23T10:00:00Z", Type: upgradev1alpha1.ARO, CapacityReservation: true},
		},
		{
			name:    "eus with an odd minor goes to the next even channel",
			cluster: Cluster{ID: "c", ChannelGroup: "eus", NodeDrainGracePeriod: 15},
			policy:  Policy{ID: "p", Version: "4.15.12", NextRun: t0},
			typ:     upgradev1alpha1.OSD,
			want: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.15.12", Channel: "eus-4.16"},
				UpgradeAt: "2026-11-23T10:00:00Z", PDBForceDrainTimeout: 15, Type: upgradev1alpha1.OSD, CapacityReservation: true},
		},
		{
			name:    "eus with an even minor keeps it",
			cluster: Cluster{ID: "c", ChannelGroup: "eus"},
			policy:  Policy{ID: "p", Version: "4.16.20", NextRun: t0},
			typ:     upgradev1alpha1.OSD,
			want: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.16.20", Channel: "eus-4.16"},
				UpgradeAt: "2026-11-23T10:00:00Z", Type: upgradev1alpha1.OSD, CapacityReservation: true},
		},
		{
			name:    "fast group, odd minor unchanged",
			cluster: Cluster{ID: "c", ChannelGroup: "fast"},
			policy:  Policy{ID: "p", Version: "4.17.3", NextRun: t0},
			typ:     upgradev1alpha1.OSD,
			want: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.17.3", Channel: "fast-4.17"},
				UpgradeAt: "2026-11-23T10:00:00Z", Type: upgradev1alpha1.OSD, CapacityReservation: true},
		},
		{name: "unparsable version", cluster: Cluster{ID: "c"}, policy: Policy{ID: "p", Version: "latest"}, wantErr: true},
		{name: "negative drain grace", cluster: Cluster{ID: "c", NodeDrainGracePeriod: -1}, policy: Policy{ID: "p", Version: "4.16.2"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Spec(tc.cluster, tc.policy, tc.typ)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr {
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Fatalf("spec (-want +got):\n%s", d)
				}
			}
		})
	}
}

func TestNextState(t *testing.T) {
	// MUO's allowed transitions (its notifier's validateStateTransition),
	// with the current state read as MUO reads it back from OCM: "delayed"
	// is a delay when its description mentions a retry, a skip otherwise.
	const (
		delay     = "Cluster upgrade to version 4.16.2 is experiencing a delay whilst it performs necessary pre-upgrade procedures. The upgrade will continue to retry. This is an informational notification and no action is required"
		scaleSkip = "Cluster upgrade to version 4.16.2 has skipped Scale-Up additional Worker Node step for compute capacity reservation. This is an informational notification and no action is required by you"
		skip      = "Cluster upgrade to version 4.16.2 has experienced an issue during capacity reservation efforts. This could be caused by cloud service provider quota limitations or temporary connectivity issues to/from the new worker node. The upgrade will continue without extra compute. This is an informational notification and no action is required by you"
	)
	type state struct{ value, description string }
	wanted := map[string]state{
		"StateStarted": {StateStarted, "started"}, "StateDelayed": {StateDelayed, delay},
		"StateScaleSkipped": {StateDelayed, scaleSkip}, "StateSkipped": {StateDelayed, skip},
		"StateCompleted": {StateCompleted, "completed"}, "StateFailed": {StateFailed, "failed"}, "StatePending": {StatePending, ""},
	}
	for _, tc := range []struct {
		current state
		wanted  string
		want    Write
	}{
		{state{StateScheduled, ""}, "StateStarted", Patch},
		{state{StateStarted, "started"}, "StateStarted", AlreadySet},
		{state{StateStarted, "started"}, "StateDelayed", Patch},
		{state{StateStarted, "started"}, "StateScaleSkipped", Patch},
		{state{StateStarted, "started"}, "StateSkipped", NotAllowed},
		{state{StateStarted, "started"}, "StateCompleted", Patch},
		{state{StateStarted, "started"}, "StateFailed", Patch},
		{state{StateDelayed, delay}, "StateDelayed", AlreadySet},
		{state{StateDelayed, delay}, "StateSkipped", Patch},
		{state{StateDelayed, delay}, "StateScaleSkipped", NotAllowed},
		{state{StateDelayed, delay}, "StateCompleted", Patch},
		{state{StateDelayed, delay}, "StateFailed", Patch},
		// A scale skip reads back as a skip: MUO then allows only the end.
		{state{StateDelayed, scaleSkip}, "StateScaleSkipped", AlreadySet},
		{state{StateDelayed, scaleSkip}, "StateSkipped", NotAllowed},
		{state{StateDelayed, scaleSkip}, "StateDelayed", NotAllowed},
		{state{StateDelayed, scaleSkip}, "StateCompleted", Patch},
		{state{StateDelayed, skip}, "StateFailed", Patch},
		{state{StateCompleted, "completed"}, "StateCompleted", AlreadySet},
		{state{StateScheduled, ""}, "StateCompleted", NotAllowed},
		{state{StateScheduled, ""}, "StateFailed", NotAllowed},
		{state{StatePending, ""}, "StateStarted", NotAllowed},
		{state{StateCompleted, "completed"}, "StateStarted", NotAllowed},
		{state{StateFailed, "failed"}, "StateCompleted", NotAllowed},
		{state{StateCancelled, ""}, "StateStarted", NotAllowed},
		{state{StateCompleted, "completed"}, "StateFailed", NotAllowed},
	} {
		w := wanted[tc.wanted]
		if got := NextState(tc.current.value, tc.current.description, tc.wanted, w.value, w.description); got != tc.want {
			t.Errorf("NextState(%s %q, %s) = %v, want %v", tc.current.value, tc.current.description, tc.wanted, got, tc.want)
		}
	}
}

func TestAccessToken(t *testing.T) {
	ps := func(s string) map[string][]byte { return map[string][]byte{".dockerconfigjson": []byte(s)} }
	for _, tc := range []struct {
		name    string
		data    map[string][]byte
		cluster string
		want    string
		wantErr bool
	}{
		{"cloud.openshift.com auth", ps(`{"auths":{"quay.io":{"auth":"cXVheQ=="},"cloud.openshift.com":{"auth":"Y2xvdWQ=","email":"x@y"}}}`), "c-1", "c-1:Y2xvdWQ=", false},
		{"no cloud.openshift.com entry", ps(`{"auths":{"quay.io":{"auth":"cXVheQ=="}}}`), "c-1", "", true},
		{"no key", map[string][]byte{}, "c-1", "", true},
		{"not JSON", ps(`nope`), "c-1", "", true},
		{"no cluster ID", ps(`{"auths":{"cloud.openshift.com":{"auth":"Y2xvdWQ="}}}`), "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AccessToken(tc.data, tc.cluster)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("AccessToken = %q, %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
