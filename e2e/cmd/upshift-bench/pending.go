package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// The slow insights of an update are told apart by what the controller had
// in hand while they waited. A change that waited while hundreds of insight
// writes were pending waited for the API server to take them (or for the
// client's rate limit); one that waited with none pending waited for a
// recomputation to plan its write.

// pendingEvery is how often the sampler scrapes the controller's metrics:
// often enough to see a wave's queue of writes rise and fall (a few
// seconds), rarely enough not to load the machine measured.
const pendingEvery = 500 * time.Millisecond

// pendingPoint is one scrape of upshift_update_status_pending_writes.
type pendingPoint struct {
	at       time.Time
	insights float64
}

// pendingSampler records the controller's pending insight writes while an
// update runs.
type pendingSampler struct {
	mu     sync.Mutex
	points []pendingPoint
}

// run scrapes e until ctx ends.
func (s *pendingSampler) run(ctx context.Context, e endpoint) {
	t := time.NewTicker(pendingEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v, err := pendingInsightWrites(e)
		if err != nil {
			continue // one scrape lost; the next tick tries again
		}
		s.mu.Lock()
		s.points = append(s.points, pendingPoint{time.Now(), v})
		s.mu.Unlock()
	}
}

// most is the largest count sampled in [from, to], and whether one was.
func (s *pendingSampler) most(from, to time.Time) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := sort.Search(len(s.points), func(i int) bool { return !s.points[i].at.Before(from) })
	best, found := 0.0, false
	for ; i < len(s.points) && !s.points[i].at.After(to); i++ {
		best, found = max(best, s.points[i].insights), true
	}
	return best, found
}

// peak is the largest count sampled.
func (s *pendingSampler) peak() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	best := 0.0
	for _, p := range s.points {
		best = max(best, p.insights)
	}
	return best
}

// summary says, for the changes slower than slow, how many writes were
// pending while each waited, next to the most pending at any time.
func (s *pendingSampler) summary(samples []sample, slow time.Duration) string {
	var during []float64
	for _, x := range samples {
		if x.d <= slow {
			continue
		}
		if v, ok := s.most(x.at, x.at.Add(x.d)); ok {
			during = append(during, v)
		}
	}
	peak := s.peak()
	if len(during) == 0 {
		return fmt.Sprintf("at most %.0f at any time; no change slower than %s was sampled", peak, slow)
	}
	sort.Float64s(during)
	none := sort.SearchFloat64s(during, 1)
	return fmt.Sprintf("at most %.0f at any time; while each of the %d changes slower than %s waited, the most pending was: min %.0f, p50 %.0f, max %.0f (none at all for %d)",
		peak, len(during), slow, during[0], during[len(during)/2], during[len(during)-1], none)
}

// pendingInsightWrites reads upshift_update_status_pending_writes for node
// insights.
func pendingInsightWrites(e endpoint) (float64, error) {
	lines, err := metrics(e)
	if err != nil {
		return 0, err
	}
	for _, line := range lines {
		if strings.HasPrefix(line, `upshift_update_status_pending_writes{kind="nodeprogressinsight"}`) {
			return sampleValue(line)
		}
	}
	return 0, fmt.Errorf("no upshift_update_status_pending_writes for nodeprogressinsight")
}
