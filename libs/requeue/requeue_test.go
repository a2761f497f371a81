package requeue

import (
	"testing"
	"time"
)

func TestSoonest(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var s Soonest
	if s.After(now) != 0 || !s.Time().IsZero() {
		t.Fatal("empty Soonest asks for a requeue")
	}
	s.At(time.Time{})
	s.In(now, 0)
	s.In(now, -time.Second)
	if s.After(now) != 0 {
		t.Fatal("zero time or non-positive wait recorded")
	}
	s.In(now, time.Hour)
	s.At(now.Add(10 * time.Minute))
	s.In(now, 30*time.Minute)
	if got := s.After(now); got != 10*time.Minute {
		t.Fatalf("After = %s, want 10m", got)
	}
	if got := s.After(now.Add(time.Hour)); got != Minimum {
		t.Fatalf("a passed time: After = %s, want %s", got, Minimum)
	}
}

func TestMin(t *testing.T) {
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0}, {[]time.Duration{0, 0}, 0}, {[]time.Duration{0, 5, 3, -1}, 3}, {[]time.Duration{7}, 7},
	} {
		if got := Min(tc.in...); got != tc.want {
			t.Errorf("Min(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
