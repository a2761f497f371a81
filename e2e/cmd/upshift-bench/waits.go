package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// The slow insights of an update are told apart by what happened while they
// waited, sampled from outside the controller:
//
//   - the insight writes the controller had pending: hundreds mean the
//     change waited for the API server to take them (or for the client's
//     rate limit);
//   - the recomputations that ended meanwhile and how long they took: a
//     change waits for the one under way, the pacing after it, and its own;
//   - the slowest small write the bench itself made meanwhile: the API
//     server's own latency at that moment, which every insight write has
//     under it.

// sampleEvery is how often the sampler scrapes the controller's metrics:
// often enough to see a wave's queue of writes rise and fall (a few
// seconds), rarely enough not to load the machine measured.
const sampleEvery = 500 * time.Millisecond

// waitPoint is one scrape of the controller's metrics.
type waitPoint struct {
	at time.Time
	// insights is upshift_update_status_pending_writes for node insights.
	insights float64
	// recomputations and recomputeSeconds are the count and sum of
	// upshift_update_status_reconcile_duration_seconds.
	recomputations, recomputeSeconds float64
}

// waitSampler records the controller's pending insight writes and
// recomputations while an update runs; probe is the bench's write probe.
type waitSampler struct {
	probe *writeProbe

	mu     sync.Mutex
	points []waitPoint
}

// run scrapes e until ctx ends.
func (s *waitSampler) run(ctx context.Context, e endpoint) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p, err := scrapeWaitPoint(e)
		if err != nil {
			continue // one scrape lost; the next tick tries again
		}
		s.mu.Lock()
		s.points = append(s.points, p)
		s.mu.Unlock()
	}
}

// during is what was sampled while a change waited.
type during struct {
	// pending is the most insight writes pending at a scrape.
	pending float64
	// recomputations is how many ended between the first scrape and the
	// last.
	recomputations float64
	// longest is the longest mean recomputation of a scrape interval
	// around the window: those that ended in it, the one the change came
	// in, and the one after it (which holds the recomputation that planned
	// its write). The pacer keeps a recomputation about alone in an
	// interval, unless a lost or slow scrape stretched it: a lower bound.
	longest time.Duration
	// slowestProbe is the slowest probe write that started in the window.
	slowestProbe time.Duration
}

// during is what was sampled in [from, to]; ok is false if no scrape fell
// in it.
func (s *waitSampler) during(from, to time.Time) (d during, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := sort.Search(len(s.points), func(i int) bool { return !s.points[i].at.Before(from) })
	first := i
	for ; i < len(s.points) && !s.points[i].at.After(to); i++ {
		d.pending, ok = max(d.pending, s.points[i].insights), true
		if n, mean := s.interval(i); n > 0 {
			if i > first {
				d.recomputations += n
			}
			d.longest = max(d.longest, mean)
		}
	}
	if _, mean := s.interval(i); ok {
		d.longest = max(d.longest, mean)
	}
	for _, w := range s.probe.between(from, to) {
		d.slowestProbe = max(d.slowestProbe, w.d)
	}
	return d, ok
}

// interval is the recomputations that ended between scrape i-1 and scrape
// i, and their mean duration; none for the first scrape or past the last.
func (s *waitSampler) interval(i int) (float64, time.Duration) {
	if i == 0 || i >= len(s.points) {
		return 0, 0
	}
	p, prev := s.points[i], s.points[i-1]
	n := p.recomputations - prev.recomputations
	if n <= 0 {
		return 0, 0
	}
	return n, time.Duration((p.recomputeSeconds - prev.recomputeSeconds) / n * float64(time.Second))
}

// peakPending is the most insight writes pending at any scrape.
func (s *waitSampler) peakPending() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	best := 0.0
	for _, p := range s.points {
		best = max(best, p.insights)
	}
	return best
}

// waitSummary is, for the changes slower than a threshold, what happened
// while each waited.
type waitSummary struct {
	threshold      time.Duration
	slow           int
	pending        []float64
	recomputations []float64
	longest        []time.Duration
	probe          []time.Duration
	peak           float64
	probes         [3]time.Duration
}

// summary covers the changes slower than slow, and the probe's writes
// between from and to (the update).
func (s *waitSampler) summary(samples []sample, slow time.Duration, from, to time.Time) waitSummary {
	w := waitSummary{threshold: slow, peak: s.peakPending(), probes: probePercentiles(s.probe.between(from, to))}
	for _, x := range samples {
		if x.d <= slow {
			continue
		}
		d, ok := s.during(x.at, x.at.Add(x.d))
		if !ok {
			continue
		}
		w.slow++
		w.pending = append(w.pending, d.pending)
		w.recomputations = append(w.recomputations, d.recomputations)
		w.longest = append(w.longest, d.longest)
		w.probe = append(w.probe, d.slowestProbe)
	}
	sort.Float64s(w.pending)
	sort.Float64s(w.recomputations)
	slices.Sort(w.longest)
	slices.Sort(w.probe)
	return w
}

// The summary's report lines, each without its label.

func (w waitSummary) pendingLine() string {
	if w.slow == 0 {
		return fmt.Sprintf("at most %.0f at any time; no change slower than %s was sampled", w.peak, w.threshold)
	}
	none := sort.SearchFloat64s(w.pending, 1)
	return fmt.Sprintf("at most %.0f at any time; while each of the %d changes slower than %s waited, the most pending was: min %.0f, p50 %.0f, max %.0f (none at all for %d)",
		w.peak, w.slow, w.threshold, w.pending[0], mid(w.pending), w.pending[len(w.pending)-1], none)
}

func (w waitSummary) recomputeLine() string {
	if w.slow == 0 {
		return fmt.Sprintf("no change slower than %s was sampled", w.threshold)
	}
	return fmt.Sprintf("while each change slower than %s waited, recomputations ended: min %.0f, p50 %.0f, max %.0f; the longest mean of a scrape interval around it: p50 %s, max %s",
		w.threshold, w.recomputations[0], mid(w.recomputations), w.recomputations[len(w.recomputations)-1],
		mid(w.longest).Round(time.Millisecond), w.longest[len(w.longest)-1].Round(time.Millisecond))
}

func (w waitSummary) probeLine() string {
	all := fmt.Sprintf("p50 %s, p99 %s, max %s", w.probes[0].Round(time.Millisecond), w.probes[1].Round(time.Millisecond), w.probes[2].Round(time.Millisecond))
	if w.slow == 0 {
		return all
	}
	return fmt.Sprintf("%s; the slowest while each change slower than %s waited: p50 %s, max %s", all, w.threshold,
		mid(w.probe).Round(time.Millisecond), w.probe[len(w.probe)-1].Round(time.Millisecond))
}

func mid[T any](sorted []T) T { return sorted[len(sorted)/2] }

// scrapeWaitPoint reads the pending insight writes and the recomputation
// count and sum (the bench's totals read them too).
func scrapeWaitPoint(e endpoint) (waitPoint, error) {
	p := waitPoint{at: time.Now()}
	ms, err := e.metrics()
	if err != nil {
		return p, err
	}
	var pending, count, sum bool
	p.insights, pending = ms.Value("upshift_update_status_pending_writes", map[string]string{"kind": "nodeprogressinsight"})
	p.recomputations, count = ms.Value("upshift_update_status_reconcile_duration_seconds_count", nil)
	p.recomputeSeconds, sum = ms.Value("upshift_update_status_reconcile_duration_seconds_sum", nil)
	if !pending || !count || !sum {
		return p, fmt.Errorf("the controller's metrics lack pending writes or recomputations")
	}
	return p, nil
}
