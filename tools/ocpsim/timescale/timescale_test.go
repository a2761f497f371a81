package timescale

import (
	"testing"
	"time"
)

func TestWall(t *testing.T) {
	cases := []struct {
		factor float64
		in     time.Duration
		want   time.Duration
	}{
		{1, time.Second, time.Second},
		{0, time.Second, time.Second},
		{600, 10 * time.Minute, time.Second},
		{600, time.Millisecond, 5 * time.Millisecond},
		{600, 0, 0},
		{120, 90 * time.Minute, 45 * time.Second},
	}
	for _, c := range cases {
		if got := New(c.factor).Wall(c.in); got != c.want {
			t.Errorf("Wall(%v) at %vx = %v, want %v", c.in, c.factor, got, c.want)
		}
	}
	if got := New(60).Simulated(time.Second); got != time.Minute {
		t.Errorf("Simulated = %v", got)
	}
}

func TestParse(t *testing.T) {
	good := map[string]float64{"600": 600, "600x": 600, "90m:45s": 120, " 2.5 ": 2.5}
	for in, want := range good {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-3", "abc", "90m:", "1h:0s"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) succeeded", in)
		}
	}
}
