// Package timescale turns simulated OpenShift durations ("a node reboot takes
// four minutes") into wall-clock durations, by one factor for the whole
// simulator: with a factor of 600, ten simulated minutes pass in one second.
package timescale

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Scale divides simulated durations by Factor. The zero value means real time.
type Scale struct {
	// Factor is how many simulated seconds pass per wall second; <= 0 means 1.
	Factor float64
	// Min is the smallest wall duration returned for a non-zero simulated one,
	// so that very large factors do not degenerate into busy loops.
	Min time.Duration
}

// New returns a Scale with the given factor and a 5 ms floor.
func New(factor float64) Scale { return Scale{Factor: factor, Min: 5 * time.Millisecond} }

// Wall converts a simulated duration into the wall duration to wait.
func (s Scale) Wall(simulated time.Duration) time.Duration {
	if simulated <= 0 {
		return 0
	}
	f := s.Factor
	if f <= 0 {
		f = 1
	}
	d := time.Duration(float64(simulated) / f)
	if d < s.Min {
		d = s.Min
	}
	return d
}

// Simulated converts an elapsed wall duration back into simulated time.
func (s Scale) Simulated(wall time.Duration) time.Duration {
	f := s.Factor
	if f <= 0 {
		f = 1
	}
	return time.Duration(float64(wall) * f)
}

// Parse reads a factor written as "600", "600x" or as a ratio of durations
// "90m:45s" (90 simulated minutes in 45 wall seconds).
func Parse(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if sim, wall, ok := strings.Cut(s, ":"); ok {
		a, err1 := time.ParseDuration(sim)
		b, err2 := time.ParseDuration(wall)
		if err1 != nil || err2 != nil || a <= 0 || b <= 0 {
			return 0, fmt.Errorf("%q is not a time scale: want SIMULATED:WALL durations such as 90m:45s", s)
		}
		return float64(a) / float64(b), nil
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "x"), 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("%q is not a time scale: want a positive factor such as 600 or a ratio such as 90m:45s", s)
	}
	return f, nil
}

// ConflictRetry is how soon a simulated operator retries a write that lost a
// conflict with another one: at once, in wall time, whatever the scale.
const ConflictRetry = 50 * time.Millisecond
