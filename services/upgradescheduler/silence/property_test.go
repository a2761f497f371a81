package silence

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// fakeAM is Alertmanager's silence store as its API behaves (states from the
// clock, update in place only with equal matchers and start while live,
// otherwise a new ID and the old one expired), for the property test of the
// pure core; the client is tested against the real server in client_test.go.
type fakeAM struct {
	now    time.Time
	byID   map[string]*Silence
	nextID int
}

func (f *fakeAM) state(s *Silence) State {
	switch {
	case !f.now.Before(s.EndsAt):
		return StateExpired
	case f.now.Before(s.StartsAt):
		return StatePending
	default:
		return StateActive
	}
}

func (f *fakeAM) list(uid string) []Silence {
	var out []Silence
	for _, id := range slices.Sorted(maps.Keys(f.byID)) {
		s := *f.byID[id]
		s.State = f.state(&s)
		if slices.Contains(s.Matchers, Matcher{Name: LabelOwner, Value: uid}) {
			out = append(out, s)
		}
	}
	return out
}

func (f *fakeAM) post(id string, s Silence) string {
	// Alertmanager rejects a silence that ends before it starts or is
	// already over; the core must never ask for one.
	if !s.EndsAt.After(s.StartsAt) || !s.EndsAt.After(f.now) {
		panic(fmt.Sprintf("invalid silence posted: %+v at %s", s, f.now))
	}
	if old, ok := f.byID[id]; ok {
		if f.state(old) != StateExpired && slices.Equal(old.Matchers, s.Matchers) && old.StartsAt.Equal(s.StartsAt) && s.EndsAt.After(f.now) {
			old.EndsAt, old.Comment = s.EndsAt, s.Comment
			return id
		}
		f.expire(id)
	}
	f.nextID++
	s.ID = fmt.Sprintf("s%03d", f.nextID)
	if s.StartsAt.Before(f.now) {
		s.StartsAt = f.now
	}
	f.byID[s.ID] = &s
	return s.ID
}

func (f *fakeAM) expire(id string) {
	if s, ok := f.byID[id]; ok && f.state(s) != StateExpired {
		s.EndsAt = f.now
	}
}

func (f *fakeAM) live(uid string) map[string][]string {
	out := map[string][]string{}
	for _, s := range f.list(uid) {
		if s.live() {
			out[s.Lease()] = append(out[s.Lease()], s.ID)
		}
	}
	return out
}

var errLost = errors.New("lost")

// TestLeaseProperties runs random upgrades: reconciles whose calls fail
// before or after reaching Alertmanager, scheduler restarts that lose the
// recorded IDs or bring back an older status, time jumps past a lease's
// end, version changes, criticals lists reconfigured, and a terminal phase at a random point (completed,
// failed or cancelled all want no lease). After every single call:
//   - never two live silences for one lease (version and purpose), unless a
//     stale reconcile ran since the last full one;
//   - no live silence reaches past its phase's window end.
//
// A reconcile may also decide from a stale list (another replica's, during a
// leader hand-over) and create a duplicate; the next reconcile that runs to
// the end removes it.
//
// After a reconcile that ran to the end:
//   - every wanted lease whose window is still open is live, with at least
//     half a TTL left (or up to its window's end), and silences what the
//     configuration says;
//   - after a terminal phase, nothing of ours is live.
func TestLeaseProperties(t *testing.T) {
	const ttl = 30 * time.Minute
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 7))
		am := &fakeAM{now: t0, byID: map[string]*Silence{}}
		in := baseInput()
		in.TTL = ttl
		version := "4.16.2"
		var recorded, olderRecorded map[Purpose]string
		// raced is set after a reconcile decided from a stale list (two
		// replicas during a leader hand-over): duplicates may exist until
		// the next reconcile that runs to the end.
		var stale []Silence
		raced := false
		// Phases: 0 control plane, 1 workers, 2 terminal.
		phase, phaseStart := 0, am.now
		wanted := func() []Want {
			switch phase {
			case 0:
				end := ControlPlaneWindow(phaseStart, 90*time.Minute)
				return []Want{{ControlPlane, end}, {ControlPlaneCriticals, end}}
			case 1:
				return []Want{{Workers, WorkerWindow(phaseStart, []Pool{{Remaining: 6, MaxUnavailable: 2}}, 45*time.Minute, 8*time.Minute)}}
			}
			return nil
		}
		check := func(step int, what string) {
			ends := map[string]time.Time{}
			for _, w := range wanted() {
				ends[leaseKey(version, w.Purpose)] = w.End
			}
			for key, ids := range am.live(owner.UID) {
				if len(ids) > 1 && !raced {
					t.Fatalf("seed %d step %d (%s): %d live silences for %s: %v", seed, step, what, len(ids), key, ids)
				}
				if end, ok := ends[key]; ok && am.byID[ids[0]].EndsAt.After(end) {
					t.Fatalf("seed %d step %d (%s): %s ends %s, past its window %s", seed, step, what, key, am.byID[ids[0]].EndsAt, end)
				}
			}
		}
		for step := range 80 {
			switch r := rng.IntN(20); {
			case r < 3: // time passes, sometimes past a whole lease
				am.now = am.now.Add(time.Duration(rng.IntN(40)) * time.Minute)
			case r == 3: // restart: status lost, or an older status read back
				if rng.IntN(2) == 0 {
					recorded = nil
				} else {
					recorded = olderRecorded
				}
			case r == 4 && phase < 2: // next phase, or straight to a terminal one
				phase++
				if rng.IntN(4) == 0 {
					phase = 2
				}
				phaseStart = am.now
			case r == 6: // the criticals list is reconfigured
				in.Criticals = [][]string{nil, {"ClusterOperatorDown"}, {"ClusterOperatorDown", "KubeletDown"}}[rng.IntN(3)]
			case r == 5 && phase < 2 && rng.IntN(4) == 0: // the target version changes
				version = fmt.Sprintf("4.16.%d", 3+rng.IntN(5))
				phase, phaseStart = 0, am.now
			default: // a reconcile, whose calls may be lost
				in.Version, in.Now, in.Wanted, in.Recorded = version, am.now, wanted(), recorded
				in.Existing = am.list(owner.UID)
				staleRun := stale != nil && rng.IntN(8) == 0
				if staleRun {
					in.Existing, raced = stale, true
				}
				stale = in.Existing
				p := Decide(in)
				record := make(map[Purpose]string)
				for k, v := range p.Record {
					record[k] = v
				}
				var err error
				for _, a := range p.Actions {
					// A call fails before reaching Alertmanager, or
					// reaches it and its answer is lost.
					switch rng.IntN(10) {
					case 0:
						err = errLost
					case 1:
						apply(am, a)
						err = errLost
					default:
						if id := apply(am, a); id != "" {
							record[a.Purpose] = id
						}
					}
					check(step, "after "+string(a.Kind))
					if err != nil {
						break
					}
				}
				// The status write itself may be lost too.
				if err == nil && rng.IntN(5) > 0 {
					olderRecorded, recorded = recorded, record
				}
				if err != nil || staleRun {
					continue
				}
				raced = false
				live := am.live(owner.UID)
				for key, ids := range live {
					if len(ids) > 1 {
						t.Fatalf("seed %d step %d: %d live silences for %s after a full reconcile: %v", seed, step, len(ids), key, ids)
					}
				}
				for _, w := range in.Wanted {
					if w.Purpose == ControlPlaneCriticals && len(in.Criticals) == 0 || !am.now.Before(w.End) {
						continue
					}
					ids := live[leaseKey(version, w.Purpose)]
					if len(ids) != 1 {
						t.Fatalf("seed %d step %d: phase %d wants %s, live %v", seed, step, phase, w.Purpose, ids)
					}
					if !slices.Equal(am.byID[ids[0]].Matchers, matchers(in, w.Purpose)) {
						t.Fatalf("seed %d step %d: %s silences %v, the configuration says %v", seed, step, w.Purpose, am.byID[ids[0]].Matchers, matchers(in, w.Purpose))
					}
					left := am.byID[ids[0]].EndsAt.Sub(am.now)
					if left < ttl/2 && am.byID[ids[0]].EndsAt.Before(w.End) {
						t.Fatalf("seed %d step %d: %s has %s left after a reconcile", seed, step, w.Purpose, left)
					}
				}
				if phase == 2 && len(live) > 0 {
					t.Fatalf("seed %d step %d: terminal phase, live silences remain: %v", seed, step, live)
				}
			}
		}
	}
}

// apply is Client.Apply's per-action step against the fake.
func apply(am *fakeAM, a Action) string {
	switch a.Kind {
	case Expire:
		am.expire(a.ID)
		return ""
	default:
		return am.post(a.ID, a.Silence)
	}
}
