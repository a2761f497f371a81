package assess

import (
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Vectors from oc's TestEstimateCompletion.
func TestEstimateTimeToComplete(t *testing.T) {
	m := time.Minute
	tests := []struct {
		name                                       string
		baseline, toLastProgress, updatingFor, est time.Duration
		completion                                 float64
	}{
		{"0% after 30m", time.Hour, 30 * m, 30 * m, 36 * m, 0},
		{"0% after 31m, progress at 30m", time.Hour, 30 * m, 31 * m, 35 * m, 0},
		{"20% after 30m", time.Hour, 30 * m, 30 * m, 69 * m, 0.2},
		{"20% after 35m, progress at 30m", time.Hour, 30 * m, 35 * m, 63 * m, 0.2},
		{"75% after 30m", time.Hour, 30 * m, 30 * m, 50 * m, 0.75},
		{"99% after 20m", time.Hour, 20 * m, 20 * m, 4*m + 50*time.Second, 0.99},
		{"5% after 10m, progress at 4m: no projection under 5m", 80 * m, 4 * m, 10 * m, 84 * m, 0.05},
		{"100%", time.Hour, 30 * m, 30 * m, 0, 1},
		{"overrun is shrunk", time.Hour, 0, 90 * m, -25 * m, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := estimateTimeToComplete(tc.baseline, tc.toLastProgress, tc.updatingFor, tc.completion)
			if got != tc.est {
				t.Errorf("estimate = %v, want %v", got, tc.est)
			}
		})
	}
}

func TestBaselineDuration(t *testing.T) {
	at := func(min int) metav1.Time { return metav1.NewTime(time.Date(2025, 1, 1, 0, min, 0, 0, time.UTC)) }
	ptr := func(t metav1.Time) *metav1.Time { return &t }
	current := configv1.UpdateHistory{State: configv1.PartialUpdate, StartedTime: at(200)}
	install := configv1.UpdateHistory{State: configv1.CompletedUpdate, StartedTime: at(0), CompletionTime: ptr(at(30))}
	done := func(start, end int) configv1.UpdateHistory {
		return configv1.UpdateHistory{State: configv1.CompletedUpdate, StartedTime: at(start), CompletionTime: ptr(at(end))}
	}
	partial := configv1.UpdateHistory{State: configv1.PartialUpdate, StartedTime: at(100)}
	tests := []struct {
		name    string
		entries []configv1.UpdateHistory
		want    time.Duration
	}{
		{"fresh install", []configv1.UpdateHistory{current}, time.Hour},
		{"first update: installation is skipped", []configv1.UpdateHistory{current, install}, time.Hour},
		{"newest completed update", []configv1.UpdateHistory{current, done(150, 197), done(100, 110), install}, 47 * time.Minute},
		{"partial entries are skipped", []configv1.UpdateHistory{current, partial, done(100, 125), install}, 25 * time.Minute},
		{"no completed update", []configv1.UpdateHistory{current, partial, install}, time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := baselineDuration(tc.entries); got != tc.want {
				t.Errorf("baseline = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTimewiseCompletionIsMonotonicAndBounded(t *testing.T) {
	prev := timewiseCompletion(0.01)
	for x := 0.02; x < 1; x += 0.01 {
		got := timewiseCompletion(x)
		if got < prev-0.02 { // the fitted pieces meet roughly, not exactly
			t.Errorf("f(%.2f)=%.4f dropped below f(previous)=%.4f", x, got, prev)
		}
		prev = got
	}
	if f := timewiseCompletion(0.97); f < 0.6 || f > 0.75 {
		t.Errorf("f(0.97) = %.3f, want about two thirds", f)
	}
}
