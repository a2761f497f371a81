package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/upshift-io/upshift/libs/gating"
)

// node-gate's holds.
//
// A node-gate run holds the workers on purpose: it pauses their pools and
// releases one node at a time, after its hooks, in its own maintenance
// windows. The worker deadline (MUO's worker window, sized as if nothing
// held the nodes) and the worker silence, sized the same way, would fire or
// lapse in the middle of a gated rollout that is going as designed. So,
// while a run holds worker pools and is not stopped, the worker deadline is
// deferred and the silence's window runs from now; a run that is stopped (a
// failed hook, spec.paused, a refusal of its configuration) is no reason
// to wait, so the deadline then runs
// as usual and the step's message names the run. So is a run that has not
// moved for longer than the stall bound (node-gate down, a hook hung
// without a timeout): it holds, but as nobody designed. After a run finishes the
// deadline runs again from that moment, so the last pass the run leaves to
// the MCO gets its own allowance rather than an allowance long spent.

// ReasonNoProgress is the stop reason of a run that has stalled.
const ReasonNoProgress = "NoProgress"

// gateHolds are the runs holding worker pools as designed and those
// stopped or stalled, and when a run last finished (zero: none known).
func (p *planner) gateHolds() (holding, stopped []gating.Run, finished time.Time) {
	bound := p.stallBound()
	for _, r := range p.in.Snapshot.NodeGateRuns {
		if r.Finished.After(finished) {
			finished = r.Finished
		}
		if !slices.ContainsFunc(r.Pools, func(pool string) bool { return pool != "master" }) {
			continue
		}
		switch stallsAt, stalls := r.StallsAt(bound); {
		case r.Stopped != nil:
		case r.Stalled(p.now, bound):
			r.Stopped = &gating.Stop{Reason: ReasonNoProgress, Message: fmt.Sprintf("nothing has moved since %s, longer than %s",
				r.LastProgress.UTC().Format(time.RFC3339), bound)}
		case stalls:
			p.wake(stallsAt.Add(time.Second))
		}
		if r.Stopped != nil {
			stopped = append(stopped, r)
		} else {
			holding = append(holding, r)
		}
	}
	return holding, stopped, finished
}

// stallBound is how long a run holding the workers may go without moving
// before it counts as stalled: the longer of the worker deadline and MUO's
// worker window for every worker. Generous on purpose: a hook may take
// long, and a legitimate hold must never fire the deadline.
func (p *planner) stallBound() time.Duration {
	if p.cfg == nil {
		return p.dl.Workers.After
	}
	return max(p.dl.Workers.After, p.workersAllowance())
}

// gateNote is what the worker step's message says of node-gate's holds;
// empty when no run holds the workers.
func (p *planner) gateNote() string {
	holding, stopped, _ := p.gateHolds()
	var parts []string
	for _, r := range holding {
		// Not the run's progress: see workersUpgraded.
		part := "gated by node-gate run " + r.Key()
		if r.Waiting != "" {
			part += " (waiting: " + r.Waiting + ")"
		}
		parts = append(parts, part)
	}
	for _, r := range stopped {
		parts = append(parts, fmt.Sprintf("node-gate run %s is stopped (%s: %s), so the worker deadline runs", r.Key(), r.Stopped.Reason, r.Stopped.Message))
	}
	return strings.Join(parts, "; ")
}
