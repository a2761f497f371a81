package main

import (
	"testing"
	"time"
)

// TestAddedSplit sorts paired reactions by whether the released node's
// hook Job was still running when the reference answered.
func TestAddedSplit(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	g := &gateObserver{
		// Three Dones, answered by the reference 30 ms later.
		done:    map[string]time.Time{"d1": at(0), "d2": at(1000), "d3": at(2000)},
		refSeen: map[string]time.Time{"d1": at(30), "d2": at(1030), "d3": at(2030)},
		// r1 is released 50 ms after the reference (hooks ready long
		// before); r2 400 ms after it, its hooks ready (node-gate's own
		// tail); r3 900 ms after it, its hook Job Complete 800 ms after the
		// reference (the Job pipeline's).
		released:    map[string]time.Time{"r1": at(80), "r2": at(1430), "r3": at(2930)},
		jobComplete: map[string]time.Time{"r1": at(-5000), "r2": at(900), "r3": at(2830)},
	}
	s := g.addedSplit()
	if s.n != 3 || s.overTarget != 2 || s.hookLate != 1 || s.hookLateOver != 1 {
		t.Errorf("n %d, over %d, hook late %d (%d over); want 3, 2, 1 (1)", s.n, s.overTarget, s.hookLate, s.hookLateOver)
	}
	if s.own[2] != 400*time.Millisecond {
		t.Errorf("own max = %s, want 400ms (r2; r3 waited for its hook)", s.own[2])
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
	want := releaseTimes{node: "b", at: 0, added: 250 * time.Millisecond, send: 200 * time.Millisecond, serve: 120 * time.Millisecond, deliver: -20 * time.Millisecond}
	if got[0] != want {
		t.Errorf("got %+v, want %+v", got[0], want)
	}
}

// TestHopWrites counts node-gate's writes from each Done seen to its
// release patch, the patch included, and names the others by kind.
func TestHopWrites(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	writes := []gateWrite{
		{at(-10), "update mutexrunconfigs/status"}, // before the first Done
		{at(20), "patch nodes"},                    // the first release
		{at(1005), "update mutexrunconfigs/status"},
		{at(1010), "create jobs"},
		{at(1040), "patch nodes"}, // the second release
		{at(1500), "patch nodes"}, // after it
	}
	split := []releaseTimes{{doneSeen: at(0), patched: at(20)}, {doneSeen: at(1000), patched: at(1040)}}
	counts, extra := hopWrites(split, writes)
	if len(counts) != 2 || counts[0] != 1 || counts[1] != 3 {
		t.Errorf("counts %v, want [1 3]", counts)
	}
	if len(extra) != 2 || extra["update mutexrunconfigs/status"] != 1 || extra["create jobs"] != 1 {
		t.Errorf("extra %v, want one status update and one Job create", extra)
	}
}
