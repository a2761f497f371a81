package silence

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	t0    = time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	owner = Owner{Namespace: "openshift-managed-upgrade-operator", Name: "managed-upgrade-config", UID: "uid-1"}
)

func baseInput() Input {
	return Input{
		Owner:     owner,
		Version:   "4.16.2",
		CreatedBy: "managed-upgrade-operator",
		Criticals: []string{"ClusterOperatorDown", "ClusterOperatorDegraded"},
		Now:       t0,
		TTL:       30 * time.Minute,
	}
}

// ours is a live silence of ours for purpose p, as Alertmanager lists it.
func ours(id string, p Purpose, version string, ends time.Time) Silence {
	in := baseInput()
	in.Version = version
	return Silence{ID: id, Matchers: matchers(in, p), StartsAt: t0.Add(-time.Hour), EndsAt: ends, State: StateActive,
		CreatedBy: in.CreatedBy, Comment: comment(in, p)}
}

func kinds(p Plan) []string {
	var out []string
	for _, a := range p.Actions {
		out = append(out, string(a.Kind)+" "+string(a.Purpose)+" "+a.ID)
	}
	return out
}

func TestDecide(t *testing.T) {
	cpEnd := t0.Add(90 * time.Minute)
	cases := []struct {
		name       string
		mod        func(*Input)
		wantKinds  []string
		wantRecord map[Purpose]string
	}{
		{
			name:      "control-plane phase starts: both control-plane leases created, TTL long",
			mod:       func(in *Input) { in.Wanted = []Want{{ControlPlane, cpEnd}, {ControlPlaneCriticals, cpEnd}} },
			wantKinds: []string{"Create control-plane ", "Create control-plane-criticals "},
		},
		{
			name: "no criticals configured: no critical-alert silence (as MUO)",
			mod: func(in *Input) {
				in.Criticals = nil
				in.Wanted = []Want{{ControlPlane, cpEnd}, {ControlPlaneCriticals, cpEnd}}
			},
			wantKinds: []string{"Create control-plane "},
		},
		{
			name: "existing lease with more than half its TTL left: nothing to do",
			mod: func(in *Input) {
				in.Wanted = []Want{{ControlPlane, cpEnd}}
				in.Existing = []Silence{ours("a", ControlPlane, "4.16.2", t0.Add(16*time.Minute))}
				in.Recorded = map[Purpose]string{ControlPlane: "a"}
			},
			wantRecord: map[Purpose]string{ControlPlane: "a"},
		},
		{
			name: "less than half left: extended, same ID",
			mod: func(in *Input) {
				in.Wanted = []Want{{ControlPlane, cpEnd}}
				in.Existing = []Silence{ours("a", ControlPlane, "4.16.2", t0.Add(14*time.Minute))}
				in.Recorded = map[Purpose]string{ControlPlane: "a"}
			},
			wantKinds:  []string{"Extend control-plane a"},
			wantRecord: map[Purpose]string{ControlPlane: "a"},
		},
		{
			name: "restart with the status write lost: the listed silence is re-adopted, not duplicated",
			mod: func(in *Input) {
				in.Wanted = []Want{{ControlPlane, cpEnd}}
				in.Existing = []Silence{ours("a", ControlPlane, "4.16.2", t0.Add(20*time.Minute))}
			},
			wantRecord: map[Purpose]string{ControlPlane: "a"},
		},
		{
			name: "two live silences for one purpose: the recorded one kept, the other expired first",
			mod: func(in *Input) {
				in.Wanted = []Want{{ControlPlane, cpEnd}}
				in.Existing = []Silence{
					ours("a", ControlPlane, "4.16.2", t0.Add(25*time.Minute)),
					ours("b", ControlPlane, "4.16.2", t0.Add(20*time.Minute)),
				}
				in.Recorded = map[Purpose]string{ControlPlane: "b"}
			},
			wantKinds:  []string{"Expire control-plane a"},
			wantRecord: map[Purpose]string{ControlPlane: "b"},
		},
		{
			name: "two live, none recorded: the one reaching furthest kept",
			mod: func(in *Input) {
				in.Wanted = []Want{{ControlPlane, cpEnd}}
				in.Existing = []Silence{
					ours("a", ControlPlane, "4.16.2", t0.Add(20*time.Minute)),
					ours("b", ControlPlane, "4.16.2", t0.Add(25*time.Minute)),
				}
			},
			wantKinds:  []string{"Expire control-plane a"},
			wantRecord: map[Purpose]string{ControlPlane: "b"},
		},
		{
			name: "recorded silence expired (lapsed while the scheduler was down): a new lease",
			mod: func(in *Input) {
				in.Wanted = []Want{{ControlPlane, cpEnd}}
				s := ours("a", ControlPlane, "4.16.2", t0.Add(-time.Minute))
				s.State = StateExpired
				in.Existing = []Silence{s}
				in.Recorded = map[Purpose]string{ControlPlane: "a"}
			},
			wantKinds: []string{"Create control-plane "},
		},
		{
			name: "workers phase: control-plane leases expired, worker lease created",
			mod: func(in *Input) {
				in.Wanted = []Want{{Workers, t0.Add(3 * time.Hour)}}
				in.Existing = []Silence{
					ours("a", ControlPlane, "4.16.2", t0.Add(20*time.Minute)),
					ours("c", ControlPlaneCriticals, "4.16.2", t0.Add(20*time.Minute)),
				}
				in.Recorded = map[Purpose]string{ControlPlane: "a", ControlPlaneCriticals: "c"}
			},
			wantKinds: []string{"Expire control-plane a", "Expire control-plane-criticals c", "Create workers "},
		},
		{
			name: "terminal phase (completed, failed, cancelled): everything live expired, nothing recorded",
			mod: func(in *Input) {
				in.Existing = []Silence{
					ours("w", Workers, "4.16.2", t0.Add(20*time.Minute)),
					ours("x", Workers, "4.16.2", t0.Add(10*time.Minute)),
				}
				in.Recorded = map[Purpose]string{Workers: "w"}
			},
			wantKinds: []string{"Expire workers w", "Expire workers x"},
		},
		{
			name: "terminal phase, already expired silences: nothing to do",
			mod: func(in *Input) {
				s := ours("w", Workers, "4.16.2", t0.Add(-time.Minute))
				s.State = StateExpired
				in.Existing = []Silence{s}
			},
		},
		{
			name: "target version changed: the old version's lease expired, a new one created",
			mod: func(in *Input) {
				in.Wanted = []Want{{ControlPlane, cpEnd}}
				in.Existing = []Silence{ours("old", ControlPlane, "4.16.1", t0.Add(20*time.Minute))}
				in.Recorded = map[Purpose]string{ControlPlane: "old"}
			},
			wantKinds: []string{"Expire control-plane old", "Create control-plane "},
		},
		{
			name: "window passed: the lease is neither extended nor re-created",
			mod: func(in *Input) {
				in.Wanted = []Want{{ControlPlane, t0.Add(5 * time.Minute)}, {ControlPlaneCriticals, t0}}
				in.Existing = []Silence{ours("a", ControlPlane, "4.16.2", t0.Add(5*time.Minute))}
			},
			wantRecord: map[Purpose]string{ControlPlane: "a"},
		},
		{
			name: "criticals list changed during the phase: replaced under its ID (one call, no gap, no duplicate)",
			mod: func(in *Input) {
				in.Wanted = []Want{{ControlPlaneCriticals, cpEnd}}
				in.Existing = []Silence{ours("c", ControlPlaneCriticals, "4.16.2", t0.Add(25*time.Minute))}
				in.Criticals = []string{"ClusterOperatorDown"}
				in.Recorded = map[Purpose]string{ControlPlaneCriticals: "c"}
			},
			wantKinds:  []string{"Replace control-plane-criticals c"},
			wantRecord: map[Purpose]string{ControlPlaneCriticals: "c"},
		},
		{
			name: "criticals list emptied during the phase: the critical-alert silence expired",
			mod: func(in *Input) {
				in.Wanted = []Want{{ControlPlane, cpEnd}, {ControlPlaneCriticals, cpEnd}}
				in.Existing = []Silence{
					ours("a", ControlPlane, "4.16.2", t0.Add(25*time.Minute)),
					ours("c", ControlPlaneCriticals, "4.16.2", t0.Add(25*time.Minute)),
				}
				in.Criticals = nil
			},
			wantKinds:  []string{"Expire control-plane-criticals c"},
			wantRecord: map[Purpose]string{ControlPlane: "a"},
		},
		{
			name: "a silence without our lease marker is never touched",
			mod: func(in *Input) {
				in.Existing = []Silence{{ID: "human", State: StateActive, EndsAt: t0.Add(time.Hour),
					Matchers: []Matcher{{Name: LabelOwner, Value: owner.UID}, {Name: "alertname", Value: "X", IsEqual: true}}}}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput()
			tc.mod(&in)
			p := Decide(in)
			if diff := cmp.Diff(tc.wantKinds, kinds(p)); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			want := tc.wantRecord
			if want == nil {
				want = map[Purpose]string{}
			}
			if diff := cmp.Diff(want, p.Record); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecideCreatesMUOMatchersScopedByNamespace(t *testing.T) {
	in := baseInput()
	in.Criticals = []string{"ClusterOperatorDown", "Kube.Down"}
	cpEnd := t0.Add(10 * time.Minute)
	in.Wanted = []Want{{ControlPlane, cpEnd}, {ControlPlaneCriticals, cpEnd}, {Workers, t0.Add(time.Hour)}}
	p := Decide(in)
	if len(p.Actions) != 3 {
		t.Fatalf("want 3 creates, got %v", kinds(p))
	}
	ns := Matcher{Name: "namespace", Value: `(^openshift.*|^kube.*|^redhat.*|^default$)`, IsRegex: true, IsEqual: true}
	want := map[Purpose][]Matcher{
		ControlPlane: {{Name: "severity", Value: "(warning|info)", IsRegex: true, IsEqual: true}, ns,
			{Name: LabelOwner, Value: "uid-1"}, {Name: LabelLease, Value: "4.16.2/control-plane"}},
		ControlPlaneCriticals: {{Name: "alertname", Value: `(ClusterOperatorDown|Kube\.Down)`, IsRegex: true, IsEqual: true}, ns,
			{Name: LabelOwner, Value: "uid-1"}, {Name: LabelLease, Value: "4.16.2/control-plane-criticals"}},
		Workers: {{Name: "severity", Value: "(warning|info)", IsRegex: true, IsEqual: true}, ns,
			{Name: LabelOwner, Value: "uid-1"}, {Name: LabelLease, Value: "4.16.2/workers"}},
	}
	wantComment := map[Purpose]string{
		ControlPlane:          "Silence for OSD control plane upgrade to version 4.16.2",
		ControlPlaneCriticals: "Silence for critical alerts during OSD control plane upgrade to version 4.16.2",
		Workers:               "Silence for OSD worker node upgrade to version 4.16.2",
	}
	for _, a := range p.Actions {
		if diff := cmp.Diff(want[a.Purpose], a.Silence.Matchers); diff != "" {
			t.Errorf("%s matchers (-want +got):\n%s", a.Purpose, diff)
		}
		if !strings.HasPrefix(a.Silence.Comment, wantComment[a.Purpose]) {
			t.Errorf("%s comment %q does not start with MUO's %q", a.Purpose, a.Silence.Comment, wantComment[a.Purpose])
		}
		if a.Silence.CreatedBy != "managed-upgrade-operator" || !a.Silence.StartsAt.Equal(t0) {
			t.Errorf("%s createdBy %q startsAt %s", a.Purpose, a.Silence.CreatedBy, a.Silence.StartsAt)
		}
		// The lease is the TTL, capped by the window.
		wantEnd := map[Purpose]time.Time{ControlPlane: cpEnd, ControlPlaneCriticals: cpEnd, Workers: t0.Add(30 * time.Minute)}[a.Purpose]
		if !a.Silence.EndsAt.Equal(wantEnd) {
			t.Errorf("%s ends %s, want %s", a.Purpose, a.Silence.EndsAt, wantEnd)
		}
	}
}

func TestDecideExtendKeepsMatchersAndStart(t *testing.T) {
	in := baseInput()
	in.Wanted = []Want{{Workers, t0.Add(20 * time.Minute)}}
	s := ours("w", Workers, "4.16.2", t0.Add(5*time.Minute))
	in.Existing = []Silence{s}
	p := Decide(in)
	if len(p.Actions) != 1 || p.Actions[0].Kind != Extend {
		t.Fatalf("want one Extend, got %v", kinds(p))
	}
	got := p.Actions[0].Silence
	// Alertmanager updates in place only with equal matchers and start.
	if !slices.Equal(got.Matchers, s.Matchers) || !got.StartsAt.Equal(s.StartsAt) {
		t.Errorf("extend changed matchers or start: %+v", got)
	}
	// Capped by the window, not now+TTL.
	if !got.EndsAt.Equal(t0.Add(20 * time.Minute)) {
		t.Errorf("extended to %s, want the window end %s", got.EndsAt, t0.Add(20*time.Minute))
	}
}

func TestWorkerWindow(t *testing.T) {
	per, expected := 45*time.Minute, 8*time.Minute
	cases := []struct {
		name   string
		pools  []Pool
		rounds int
	}{
		{"MUO's example, 10 nodes one at a time", []Pool{{Remaining: 10, MaxUnavailable: 1}}, 10},
		{"10 nodes, maxUnavailable 3: 4 rounds", []Pool{{Remaining: 10, MaxUnavailable: 3}}, 4},
		{"pools in parallel: the slowest pool", []Pool{{Remaining: 6, MaxUnavailable: 2}, {Remaining: 2, MaxUnavailable: 1}}, 3},
		{"maxUnavailable 0 counts as 1", []Pool{{Remaining: 2, MaxUnavailable: 0}}, 2},
		{"nothing left", []Pool{{Remaining: 0, MaxUnavailable: 1}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := WorkerWindow(t0, tc.pools, per, expected)
			if want := t0.Add(time.Duration(tc.rounds) * 53 * time.Minute); !got.Equal(want) {
				t.Errorf("window ends %s, want %s (%d rounds of 53m)", got, want, tc.rounds)
			}
		})
	}
	if got := ControlPlaneWindow(t0, 90*time.Minute); !got.Equal(t0.Add(90 * time.Minute)) {
		t.Errorf("control-plane window %s", got)
	}
}
