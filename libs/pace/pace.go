// Package pace spaces a controller's whole-cluster passes.
//
// A controller that reads every Node and re-plans the whole cluster on each
// change it is woken for costs in proportion to the cluster times the rate
// of changes, and during a rollout some Node changes almost all the time.
// Run back to back, such passes take the CPU the API server and the nodes'
// own updates need: on the project's two-core machine the update-status
// controller's unpaced passes made a 5,000-node update 30 % longer, and in a
// whole 500-worker upgrade a pass per Node change made the update-status
// controller and the mcp-tracker a fifth of the CPU that Upshift added.
//
// A Pacer holds a pass back until the later of two times: as long after the
// last pass ended as that pass took (so passing takes at most about half of
// the wall time, however large the cluster), and min after the last pass
// began (so that on a small cluster, where a pass takes milliseconds, a
// burst of changes is one pass rather than one each). Changes that arrive
// meanwhile are not lost: the work queue coalesces them into the pass that
// follows the wait, which reads the cache as it is then.
//
// Only a controller whose passes have no side effect that must follow each
// change should be paced: a report (a status, metrics) may be up to min
// late; a gate that releases a node on a change must not.
package pace

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Pacer spaces the passes of one reconciler that runs one pass at a time
// (one work item, or MaxConcurrentReconciles 1); it has no lock.
type Pacer struct {
	clock clock.Clock
	min   time.Duration
	// started is when the pass under way began; notBefore is when the next
	// one may.
	started, notBefore time.Time
}

// New returns a Pacer on clk (wall time: it paces real work, whatever clock
// the decisions use) whose passes begin at least min apart.
func New(clk clock.Clock, min time.Duration) *Pacer {
	return &Pacer{clock: clk, min: min}
}

// Begin returns when a pass may start, false if ctx ended first.
func (p *Pacer) Begin(ctx context.Context) bool {
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

// End records that the pass begun last has ended.
func (p *Pacer) End() {
	now := p.clock.Now()
	p.notBefore = now.Add(now.Sub(p.started))
	if floor := p.started.Add(p.min); floor.After(p.notBefore) {
		p.notBefore = floor
	}
}
