package hysteresis

import (
	"math/rand"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	T = metav1.ConditionTrue
	F = metav1.ConditionFalse
	U = metav1.ConditionUnknown
)

func TestSequences(t *testing.T) {
	th := Thresholds{Failures: 3, Successes: 2}
	for _, tc := range []struct {
		name    string
		start   metav1.ConditionStatus
		results string // p = passed, f = failed
		want    []metav1.ConditionStatus
	}{
		{"a success from unknown is True at once", "", "p", []metav1.ConditionStatus{T}},
		{"failures from unknown need the whole streak", "", "fff", []metav1.ConditionStatus{U, U, F}},
		{"two failures never flip True", T, "ffpff", []metav1.ConditionStatus{T, T, T, T, T}},
		{"the third failure in a row flips False", T, "fff", []metav1.ConditionStatus{T, T, F}},
		{"one success after False is not enough", F, "pf", []metav1.ConditionStatus{F, F}},
		{"two successes in a row flip True", F, "pp", []metav1.ConditionStatus{F, T}},
		{"an interrupted recovery starts again", F, "pfpp", []metav1.ConditionStatus{F, F, F, T}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := State{Status: tc.start}
			for i, r := range tc.results {
				s = Next(s, r == 'p', th)
				if s.Status != tc.want[i] {
					t.Fatalf("after %q: status %s, want %s", tc.results[:i+1], s.Status, tc.want[i])
				}
			}
		})
	}
}

// TestStreakProperty checks, over random result series and thresholds, that
// the status only becomes False right after failureThreshold failures in a row
// and only turns True from False right after successThreshold successes.
func TestStreakProperty(t *testing.T) {
	for seed := int64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		th := Thresholds{Failures: 1 + rng.Int31n(5), Successes: 1 + rng.Int31n(5)}
		s := State{}
		var history []bool
		for i := 0; i < 60; i++ {
			passed := rng.Intn(3) > 0
			prev := s.Status
			s = Next(s, passed, th)
			history = append(history, passed)
			if s.Status == F && prev != F && !tail(history, int(th.Failures), false) {
				t.Fatalf("seed %d: False without %d failures in a row: %v", seed, th.Failures, history)
			}
			if s.Status == T && prev == F && !tail(history, int(th.Successes), true) {
				t.Fatalf("seed %d: False→True without %d successes in a row: %v", seed, th.Successes, history)
			}
			if (s.Status != prev) && prev != "" && prev != U && s.Status == U {
				t.Fatalf("seed %d: went back to Unknown", seed)
			}
		}
	}
}

func tail(h []bool, n int, v bool) bool {
	if len(h) < n {
		return false
	}
	for _, x := range h[len(h)-n:] {
		if x != v {
			return false
		}
	}
	return true
}
