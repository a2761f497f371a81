package main

import (
	"strings"
	"testing"
	"time"
)

// TestWaitSummary: each slow change is matched with what was sampled while
// it waited; fast changes and changes after the last scrape are left out.
func TestWaitSummary(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	probe := &writeProbe{}
	for i, ms := range []int{10, 20, 900, 15, 10, 10, 10, 10} {
		probe.writes = append(probe.writes, probeWrite{at(500*i + 100), time.Duration(ms) * time.Millisecond})
	}
	s := &waitSampler{probe: probe}
	// Recomputations: one of 100 ms by 500 ms; one of 2 s ending at 2500;
	// two of 100 ms by 3000.
	recomputed := []struct{ n, secs float64 }{{0, 0}, {1, 0.1}, {1, 0.1}, {1, 0.1}, {1, 0.1}, {2, 2.1}, {4, 2.3}, {4, 2.3}}
	for i, v := range []float64{0, 480, 300, 20, 0, 0, 0, 0} {
		s.points = append(s.points, waitPoint{at(500 * i), v, recomputed[i].n, recomputed[i].secs})
	}
	w := s.summary([]sample{
		{at(400), 3 * time.Second},          // 480 pending at 500 ms; ended: 1 (2500) + 2 (3000); longest 2 s; probe 900 ms
		{at(1900), 1500 * time.Millisecond}, // 0 at 2000 and 2500, 0 at 3000; ended 1 + 2; longest 2 s; probe 10 ms
		{at(900), 1200 * time.Millisecond},  // 300 at 1000, 20 at 1500, 0 at 2000; none ended, the 2 s one right after; probe 900 ms
		{at(0), 900 * time.Millisecond},     // fast: not counted
		{at(10000), 5 * time.Second},        // after the last scrape: not sampled
	}, time.Second, at(0), at(4000))
	for line, wants := range map[string][]string{
		w.pendingLine():   {"at most 480 at any time", "each of the 3 changes slower than 1s", "min 0, p50 300, max 480", "none at all for 1"},
		w.recomputeLine(): {"ended: min 0, p50 3, max 3", "around it: p50 2s, max 2s"},
		w.probeLine():     {"p50 10ms", "max 900ms", "while each change slower than 1s waited: p50 900ms, max 900ms"},
	} {
		for _, want := range wants {
			if !strings.Contains(line, want) {
				t.Errorf("line %q lacks %q", line, want)
			}
		}
	}

	// The window of the third change: no recomputation ended in it, and
	// the 2 s one that ended at the next scrape (the one that planned its
	// write) is the longest around it; the 100 ms one before it is not.
	d, ok := s.during(at(900), at(2100))
	if !ok || d.recomputations != 0 || d.longest != 2*time.Second || d.pending != 300 {
		t.Errorf("during(900 ms, 2100 ms) = %+v, %v; want no recomputation ended, the longest 2s, 300 pending", d, ok)
	}
}
