package main

import (
	"strings"
	"testing"
	"time"
)

// TestPendingSummary: each slow change is matched with the most writes
// pending while it waited; fast changes are left out.
func TestPendingSummary(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	s := &pendingSampler{}
	for i, v := range []float64{0, 480, 300, 20, 0, 0, 0, 0} {
		s.points = append(s.points, pendingPoint{at(500 * i), v})
	}
	got := s.summary([]sample{
		{at(400), 3 * time.Second},          // 480 pending at 500 ms
		{at(1900), 1500 * time.Millisecond}, // 0 at 2000 and 2500, 0 at 3000
		{at(900), 1200 * time.Millisecond},  // 300 at 1000, 20 at 1500, 0 at 2000
		{at(0), 900 * time.Millisecond},     // fast: not counted
		{at(10000), 5 * time.Second},        // after the last sample: not sampled
	}, time.Second)
	for _, want := range []string{"at most 480 at any time", "each of the 3 changes", "min 0, p50 300, max 480", "none at all for 1"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary %q lacks %q", got, want)
		}
	}
}
