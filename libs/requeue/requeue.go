// Package requeue computes when a reconciler must run again because time
// alone changes its decision: a scheduled start, a deadline, a threshold
// that falls, a lease to renew. Everything else wakes a reconciler through
// its watches, so a pass with none of these asks for no requeue at all.
package requeue

import "time"

// Minimum is the shortest requeue: a time already passed still means "run
// again", never "never" (controller-runtime reads a zero RequeueAfter as no
// requeue).
const Minimum = time.Millisecond

// Soonest collects the times at which a decision changes and answers the
// wait until the earliest. The zero value has none.
type Soonest struct {
	at time.Time
}

// At records time t; a zero t is ignored.
func (s *Soonest) At(t time.Time) {
	if !t.IsZero() && (s.at.IsZero() || t.Before(s.at)) {
		s.at = t
	}
}

// In records the time d after now; d <= 0 is ignored (nothing to wait for).
func (s *Soonest) In(now time.Time, d time.Duration) {
	if d > 0 {
		s.At(now.Add(d))
	}
}

// Time is the earliest time recorded; zero when there is none.
func (s Soonest) Time() time.Time { return s.at }

// After is the wait from now until the earliest time recorded, at least
// Minimum; 0 (no requeue) when none was recorded.
func (s Soonest) After(now time.Time) time.Duration {
	if s.at.IsZero() {
		return 0
	}
	return max(s.at.Sub(now), Minimum)
}

// Min is the shortest of the waits that are set (> 0); 0 when none is.
func Min(waits ...time.Duration) time.Duration {
	var out time.Duration
	for _, d := range waits {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}
