package nsg

import (
	"math/rand"
	"testing"
	"time"
)

const (
	want = "/subscriptions/s/resourceGroups/aro-x/providers/Microsoft.Network/networkSecurityGroups/x-nsg"
	evil = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/other"
)

var (
	t0     = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	policy = Policy{Mode: Remediate, MaxPerHour: 3, TugOfWar: 10 * time.Minute, SuppressFor: time.Hour}
)

func TestDecide(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	until := at(60)
	for _, tc := range []struct {
		name     string
		obs      Observation
		rec      Record
		now      time.Time
		policy   Policy
		want     Action
		wantRems int
	}{
		{"associated: nothing", Observation{want, want}, Record{}, at(0), policy, None, 0},
		{"IDs compare case-insensitively", Observation{want, "/SUBSCRIPTIONS/s/resourcegroups/ARO-X/providers/microsoft.network/networksecuritygroups/X-NSG"}, Record{}, at(0), policy, None, 0},
		{"detached: re-associate", Observation{want, ""}, Record{}, at(0), policy, Reassociate, 1},
		{"swapped: re-associate", Observation{want, evil}, Record{}, at(0), policy, Reassociate, 1},
		{"observe mode only reports", Observation{want, evil}, Record{}, at(0), Policy{Mode: Observe}, Report, 0},
		{"drift soon after a re-association is a tug-of-war", Observation{want, evil}, Record{Remediations: []time.Time{at(0)}}, at(5), policy, Suppress, 1},
		{"drift soon after a failed re-association is retried, and counted", Observation{want, evil}, Record{Remediations: []time.Time{at(0)}, LastFailed: true}, at(5), policy, Reassociate, 2},
		{"failed attempts spend the budget", Observation{want, evil}, Record{Remediations: []time.Time{at(0), at(1), at(2)}, LastFailed: true}, at(3), policy, Suppress, 3},
		{"drift after the window is remediated again", Observation{want, evil}, Record{Remediations: []time.Time{at(0)}}, at(15), policy, Reassociate, 2},
		{"budget spent", Observation{want, evil}, Record{Remediations: []time.Time{at(0), at(15), at(30)}}, at(45), policy, Suppress, 3},
		{"budget frees after the hour", Observation{want, evil}, Record{Remediations: []time.Time{at(0), at(15), at(30)}}, at(61), policy, Reassociate, 3},
		{"suppressed: hands off", Observation{want, evil}, Record{SuppressedUntil: &until, SuppressedWhy: "x"}, at(30), policy, None, 0},
		{"suppression ends", Observation{want, evil}, Record{SuppressedUntil: &until, SuppressedWhy: "x"}, at(60), policy, Reassociate, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.obs, tc.rec, tc.now, tc.policy)
			if d.Action != tc.want {
				t.Fatalf("action %s (%s), want %s", d.Action, d.Message, tc.want)
			}
			if len(d.Record.Remediations) != tc.wantRems {
				t.Errorf("record keeps %d remediations, want %d", len(d.Record.Remediations), tc.wantRems)
			}
			if d.Action == Suppress && (d.Record.SuppressedUntil == nil || d.Record.SuppressedWhy == "" || d.Record.SuppressedKind == "") {
				t.Errorf("suppression not recorded: %+v", d.Record)
			}
			if d.Action != None && d.Message == "" {
				t.Error("no message for an action")
			}
		})
	}
}

// TestGuardRailsProperty plays a random adversary that detaches the group at
// random times against the decider, storing each decision's record as the
// reconciler does, and checks the guard rails hold at every step.
func TestGuardRailsProperty(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewSource(seed))
		p := Policy{Mode: Remediate, MaxPerHour: 1 + rng.Intn(4),
			TugOfWar: time.Duration(rng.Intn(20)) * time.Minute, SuppressFor: time.Duration(1+rng.Intn(90)) * time.Minute}
		var rec Record
		var done []time.Time // every re-association attempted
		lastFailed := false  // whether the latest attempt's PUT failed
		attached := want
		now := t0
		for step := 0; step < 200; step++ {
			now = now.Add(time.Duration(1+rng.Intn(10)) * time.Minute)
			if rng.Intn(3) == 0 {
				attached = evil
			}
			d := Decide(Observation{want, attached}, rec, now, p)
			rec = d.Record
			switch d.Action {
			case Reassociate:
				// Inside the window only a failed repair may be retried:
				// a repair that took and was undone is a tug-of-war.
				if n := len(done); n > 0 && now.Sub(done[n-1]) < p.TugOfWar && !lastFailed {
					t.Fatalf("seed %d: re-associated %s after the previous one, inside the %s tug-of-war window", seed, now.Sub(done[n-1]), p.TugOfWar)
				}
				done = append(done, now)
				// One PUT in four fails (403, 409): it counts, and the
				// subnet stays drifted; the reconciler records so.
				lastFailed = rng.Intn(4) == 0
				if lastFailed {
					rec.LastFailed = true
				} else {
					attached = want
				}
			case None:
				if attached != want && (rec.SuppressedUntil == nil || !now.Before(*rec.SuppressedUntil)) {
					t.Fatalf("seed %d: drift left alone without a suppression", seed)
				}
			}
			if n := countSince(done, now.Add(-time.Hour)); n > p.MaxPerHour {
				t.Fatalf("seed %d: %d re-association attempts in an hour, budget %d", seed, n, p.MaxPerHour)
			}
		}
	}
}
