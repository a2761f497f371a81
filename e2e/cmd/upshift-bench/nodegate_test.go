package main

import (
	"reflect"
	"testing"
	"time"
)

// TestAddedSplit sorts paired reactions by whether the released node's
// hook Job was still running when the reference answered.
func TestAddedSplit(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	g := &gateObserver{
		// Four Dones, answered by the reference 30 ms later.
		done:    map[string]time.Time{"d1": at(0), "d2": at(1000), "d3": at(2000), "d4": at(3000)},
		refSeen: map[string]time.Time{"d1": at(30), "d2": at(1030), "d3": at(2030), "d4": at(3030)},
		// r1 is released 50 ms after the reference (hooks ready long
		// before); r2 400 ms after it, its hooks ready (node-gate's own
		// tail); r3 900 ms after it, its hook Job Complete 800 ms after the
		// reference (the Job pipeline's); r4 was released ahead, before d4
		// was Done: node-gate added nothing to its slot.
		released:    map[string]time.Time{"r1": at(80), "r2": at(1430), "r3": at(2930), "r4": at(2500)},
		jobComplete: map[string]time.Time{"r1": at(-5000), "r2": at(900), "r3": at(2830), "r4": at(2400)},
		// The MCO targets each after its release; the k-th targeted after
		// the first Done takes the k-th Done's slot (r4 after r3, though
		// released before it).
		moved: map[string]time.Time{"r1": at(100), "r2": at(1450), "r3": at(2950), "r4": at(3060)},
	}
	s := g.addedSplit()
	if s.n != 4 || s.overTarget != 2 || s.hookLate != 1 || s.hookLateOver != 1 {
		t.Errorf("n %d, over %d, hook late %d (%d over); want 4, 2, 1 (1)", s.n, s.overTarget, s.hookLate, s.hookLateOver)
	}
	if s.own[2] != 400*time.Millisecond {
		t.Errorf("own max = %s, want 400ms (r2; r3 waited for its hook)", s.own[2])
	}
	if got := g.addedReactions(); len(got) != 4 || got[3] != 0 {
		t.Errorf("added reactions %v: want four, the last (released ahead) 0", got)
	}
	if s.reference[0] != 30*time.Millisecond {
		t.Errorf("reference p50 = %s, want 30ms", s.reference[0])
	}
}

func TestSplitReleasesTakesTheLastPatchReceivedBeforeTheReleaseWasSeen(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	pairs := []releasePair{
		{done: nodeTime{node: "a", t: at(0)}, release: nodeTime{node: "b", t: at(300)}, ref: at(50)},
		{done: nodeTime{node: "c", t: at(1000)}, release: nodeTime{node: "d", t: at(1100)}, ref: at(1040)},
	}
	requests := map[string][]nodeRequest{
		// b: its hold, then its release (whose answer the API server logged
		// after the bench saw it), then a later patch.
		"b": {{received: at(-5000), answered: at(-4990)}, {received: at(200), answered: at(320)}, {received: at(400), answered: at(410)}},
	}
	got, missing := splitReleases(pairs, requests)
	if missing != 1 || len(got) != 1 {
		t.Fatalf("got %d split, %d missing; want 1, 1", len(got), missing)
	}
	want := releaseTimes{node: "b", at: 0, added: 250 * time.Millisecond, send: 200 * time.Millisecond, serve: 120 * time.Millisecond, deliver: -20 * time.Millisecond,
		doneSeen: at(0), patched: at(200)}
	if got[0] != want {
		t.Errorf("got %+v, want %+v", got[0], want)
	}
}

// TestHopWrites counts each hop's writes on the released node and the run
// status writes answered between the Done seen and the release patch.
func TestHopWrites(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	w := func(recv, answered int, resource, name string) gateWrite {
		return gateWrite{received: at(recv), answered: at(answered), resource: resource, name: name}
	}
	writes := []gateWrite{
		w(-10, 5, "mutexrunconfigs/status", "run"), // received before the first Done
		w(20, 30, "nodes", "a"),                    // the first release
		w(1005, 1020, "mutexrunconfigs/status", "run"),
		w(1010, 1015, "jobs", "hook-b"),
		w(1030, 1060, "mutexrunconfigs/status", "run"), // answered after the release was received
		w(1035, 1037, "nodes", "c"),                    // another node
		w(1040, 1050, "nodes", "b"),                    // the second release
		w(1500, 1510, "nodes", "b"),                    // after it
	}
	split := []releaseTimes{{node: "a", doneSeen: at(0), patched: at(20)}, {node: "b", doneSeen: at(1000), patched: at(1040)}}
	got := hopWrites(split, writes)
	if want := []hopCounts{{node: 1}, {node: 1, status: 1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("hopWrites = %+v, want %+v", got, want)
	}
}
