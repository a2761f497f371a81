package controller

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// A recomputation reads every Node and insight, so its cost grows with the
// cluster, and during a rollout some Node changes almost all the time. Once
// the writes went to the background, nothing held the next recomputation
// back: on a 5,000-node cluster they ran back to back, and on a small
// machine that took the CPU the API server and the nodes' own updates need
// (the bench's update took 30 % longer).
//
// So the pacer holds a recomputation back until as long has passed since the
// last one ended as the last one took: recomputing takes at most about half
// of the wall time. Changes that arrive meanwhile are not lost; they are
// coalesced by the work queue into the recomputation that follows the wait.
// On a small cluster a recomputation takes milliseconds and so does the
// wait.

// pacer spaces the recomputations. Reconcile runs one at a time, so it needs
// no lock.
type pacer struct {
	clock clock.Clock
	// started is when the recomputation under way began; notBefore is when
	// the next one may.
	started, notBefore time.Time
}

// begin returns when a recomputation may start, false if ctx ended first.
func (p *pacer) begin(ctx context.Context) bool {
	if d := p.notBefore.Sub(p.clock.Now()); d > 0 {
		t := p.clock.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C():
		case <-ctx.Done():
			return false
		}
	}
	p.started = p.clock.Now()
	return true
}

// end records that the recomputation begun last has ended.
func (p *pacer) end() {
	now := p.clock.Now()
	p.notBefore = now.Add(now.Sub(p.started))
}
