package plan

// This file releases nodes ahead of their turn. With lookahead and the gate
// pool, a node whose pre-update hooks are done is released at once, up to
// lookahead × maxUnavailable nodes beyond those updating: it waits in its
// source pool, whose own maxUnavailable (the run's limit, driveSources)
// keeps the MCO from starting it until a slot frees. The MCO then starts it
// in the same pool sync that sees a node finish, as it would without a gate,
// instead of after node-gate's release and a later sync of its own, which
// on a loaded cluster took seconds per slot. A node released ahead that the
// MCO has not started is taken back while a gate is closed (a pause, no
// window, alerts, a failed hook), so that releases still wait for the gates,
// and when its hooks grow older than maxHookAge, so that they run again
// before it updates.

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

// releasesAhead: the run releases nodes ahead of their turn. Only with
// lookahead (a rule that needs strict exclusion sets 0, and every node
// then waits for its slot) and with the gate pool: a canary keeps its own
// maxUnavailable, which the run does not set.
func (p *planner) releasesAhead() bool { return p.lookahead() > 0 && p.holdsInGatePool() }

// inFlightBudget is how many nodes may be in flight (in their hooks,
// released or updating) when one more starts: maxUnavailable, and
// lookahead more per release slot.
func (p *planner) inFlightBudget() int { return p.maxUnavailable() * (1 + p.lookahead()) }

// releaseBudget is how many nodes may count as occupied (occupied) when one
// more is released: maxUnavailable, or, releasing ahead, the in-flight
// budget, as many as may run their hooks ahead too. The MCO's own bound
// keeps the nodes updating at once to maxUnavailable either way.
func (p *planner) releaseBudget() int {
	if !p.releasesAhead() {
		return p.maxUnavailable()
	}
	return p.inFlightBudget()
}

// takeBackAhead takes the released node r back when it was released ahead
// of its turn and the MCO has not started it (n settled, not on the
// target): while a gate is closed its hooks stay done and it is released
// again when the gates open; when its hooks are older than maxHookAge they
// run again. The hold that follows clears its release mark; until the
// cache shows it, heldAgain keeps the mark from reading as a release.
func (p *planner) takeBackAhead(r *nodegatev1alpha1.NodeRecord, n *corev1.Node) bool {
	if !p.releasesAhead() || !settled(n) {
		return false
	}
	// A failure pause closes the gates too; an abort restores everything.
	closed := p.gatesClosed
	expired := !closed && p.hooksExpired(r)
	if !closed && !expired {
		return false
	}
	if p.heldAgain == nil {
		p.heldAgain = map[string]bool{}
	}
	p.heldAgain[r.Name] = true
	if expired {
		p.event(OnNode, r.Name, corev1.EventTypeNormal, "HooksExpired", "node %s's pre-update hooks finished more than %s ago, while it waited in pool %s for the machine-config operator: it is held again and they run again", r.Name, p.maxHookAge(), r.Pool)
		p.admit(r)
		return true
	}
	r.Phase = nodegatev1alpha1.NodePreHooks
	r.ReleasedTime = nil
	p.heldByGates = append(p.heldByGates, r.Name)
	return true
}

// reportHeldAgain says once a pass which nodes released ahead were taken
// back because a gate closed (those whose hooks expired have their own
// Event).
func (p *planner) reportHeldAgain() {
	if len(p.heldByGates) == 0 {
		return
	}
	why := p.waitMessage
	if why == "" {
		why = "a hook failed"
	}
	p.event(OnRun, "", corev1.EventTypeNormal, "HeldAgain", "nodes released ahead of their turn that the machine-config operator had not started are held again until the gates open (%s): %s", why, strings.Join(p.heldByGates, ", "))
}
