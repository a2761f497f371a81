package plan

// This file holds the gated nodes in the gate pool (a run without a
// canary): every node that may not update now carries HoldLabel, which puts
// it in the gate pool node-gate keeps paused; the source pool runs unpaused
// with the run's limit as its maxUnavailable only while every such node is
// held as the cache shows it. Releasing a node is removing its label: it is
// back in its source pool, which the MCO updates, and it stays there.

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/gating"
)

// holdsInGatePool: the run parks its nodes in paused gate pools (no canary).
func (p *planner) holdsInGatePool() bool { return p.canary == "" }

// mustHold says whether node n of source pool s must be in the gate pool
// now. Without an active round, every node is held while the update hold is
// on (the pools are about to render the update: parking them now keeps the
// labels off the update's path), and none otherwise. In a round, every node
// is held except those the MCO may update: released in this round for the
// pool's current target, or already on it. A released node whose hooks ran
// for an older target is held again, also when the MCO has started it: its
// MCD finishes the update it started in the paused gate pool, where the MCO
// cannot hand it the new target mid-update, past its hooks (in its running
// source pool it could: the MCO retargets a node that is still updating).
func (p *planner) mustHold(n *corev1.Node, s string, active, hold bool) bool {
	if !active {
		return hold
	}
	if r := p.record(n.Name); r != nil && (releasedPhase(r) || p.releasedUnrecorded(r)) {
		return p.retargeted(r)
	}
	return !p.atSourceTarget(n, s)
}

// releaseMark is ReleasedAnnotation's value for a release in this round for
// target.
func (p *planner) releaseMark(target string) string { return gating.ReleaseMark(p.st.RunID, target) }

// releasedUnrecorded: node-gate released r's node in a pass whose status
// write was lost (a restart between the label patch and the status write).
// The record still says Pending or PreHooks, but the node is out of the gate
// pool and carries this round's release mark for the target its hooks ran
// for (the pool's target when the record never got that far). It is not a
// stray: its hooks ran, and its record continues from the release.
func (p *planner) releasedUnrecorded(r *nodegatev1alpha1.NodeRecord) bool {
	if !p.holdsInGatePool() || (r.Phase != nodegatev1alpha1.NodePending && r.Phase != nodegatev1alpha1.NodePreHooks) {
		return false
	}
	if p.heldAgain[r.Name] {
		// Taken back in this pass: the node still shows the release
		// until the hold (which clears the mark) is applied.
		return false
	}
	target := r.HooksTarget
	if target == "" {
		target = p.updateTarget(r.Pool)
	}
	return gating.MarkedReleased(p.nodes[r.Name], p.st.RunID, target)
}

// holdNodes labels every node that must be held and removes the label from
// every other gated node, and returns the nodes that must be held (the
// decision driveSources runs the pools on, taken once). A node of this
// round not yet released that is not held while its source pool runs was
// released by someone else (unless it just joined): it is held again,
// reported, and counted against maxUnavailable until the cache shows it
// held.
func (p *planner) holdNodes(active, hold bool) (mustBeHeld map[string]bool) {
	mustBeHeld = map[string]bool{}
	for _, s := range p.sources {
		for _, name := range p.members[s] {
			n := p.nodes[name]
			want, have := p.mustHold(n, s, active, hold), n.Labels[HoldLabel]
			mustBeHeld[name] = want
			switch {
			case want && have != s:
				if !p.gateReady(s) {
					// Labelled before its gate pool selects it, a node of
					// a custom pool would fall into worker, which runs.
					continue
				}
				p.act(Action{Kind: LabelNode, Label: HoldLabel, Node: name, Pool: s})
				if slices.Contains(p.unheld, name) && p.recordedBefore(name) {
					p.event(OnNode, name, corev1.EventTypeWarning, "StrayRelease", "node %s is not held while pool %s runs and its turn has not come (its %s label was removed by someone else, or node-gate's release of it was not recorded): holding it again", name, s, HoldLabel)
				}
			case !want && have != "":
				a := Action{Kind: UnlabelNode, Label: HoldLabel, Node: name, Pool: s}
				if r := p.record(name); r != nil && releasedPhase(r) && r.HooksTarget != "" {
					a.ReleaseMark = p.releaseMark(r.HooksTarget)
				}
				p.act(a)
			}
		}
	}
	return mustBeHeld
}

// findUnheld lists the nodes of an active round that must be held and are
// not while their source pool runs (the cache shows it unpaused): released
// by someone else, or joined unheld. The MCO may start them at any moment,
// so they count against maxUnavailable until the cache shows them held.
// It decides before advance releases anyone (holdNodes decides after).
func (p *planner) findUnheld(hold bool) {
	for _, s := range p.sources {
		if p.pools[s].Spec.Paused {
			continue
		}
		for _, name := range p.members[s] {
			n := p.nodes[name]
			if r := p.record(name); r != nil && !terminal(r.Phase) && !releasedPhase(r) && settled(n) &&
				n.Labels[HoldLabel] == "" && p.mustHold(n, s, true, hold) {
				p.unheld = append(p.unheld, name)
			}
		}
	}
}

// heldInCache: every node of s that must be held carries the hold label
// as the cache shows it, and none is (re)labelled in this pass.
func (p *planner) heldInCache(s string, mustBeHeld map[string]bool) bool {
	for _, name := range p.members[s] {
		if mustBeHeld[name] && p.nodes[name].Labels[HoldLabel] != s {
			return false
		}
	}
	for _, a := range p.res.Actions {
		if a.Kind == LabelNode && a.Label == HoldLabel && a.Pool == s {
			return false
		}
	}
	return true
}

// driveSources runs each source pool (unpaused, maxUnavailable the run's
// limit) while a round is active, the update hold is off and every node
// that must be held is, and pauses it otherwise. The originals are recorded
// by arm and setUpGates before anything changes. mustBeHeld is holdNodes'
// decision of this pass.
func (p *planner) driveSources(active, hold bool, mustBeHeld map[string]bool) {
	for _, s := range p.sources {
		src := p.pools[s]
		run := active && !hold && p.heldInCache(s, mustBeHeld)
		if paused, _ := p.willBe(src); paused == run {
			p.act(Action{Kind: SetPoolPaused, Pool: s, Paused: !run})
		}
		if !active {
			continue
		}
		// The MCO's own bound: never more of the pool's nodes updating
		// than the run allows, whatever node-gate's releases.
		rec := p.ensurePoolRecord(s)
		if rec.OriginalMaxUnavailable == nil {
			var orig *intstr.IntOrString
			if mu := src.Spec.MaxUnavailable; mu != nil {
				orig = ptr.To(*mu)
			}
			rec.OriginalMaxUnavailable = &nodegatev1alpha1.RecordedMaxUnavailable{Value: orig}
		}
		want := intstr.FromInt32(int32(p.maxUnavailable()))
		if !sameIntOrString(p.willBeMaxUnavailable(src), &want) {
			p.act(Action{Kind: SetPoolMaxUnavailable, Pool: s, MaxUnavailable: ptr.To(want)})
		}
	}
}

// pauseGatePools keeps every gate pool node-gate created paused: the nodes
// in it are the ones not released.
func (p *planner) pauseGatePools() {
	for _, s := range p.sources {
		gate := p.pools[p.gatePoolName(s)]
		if gate == nil || gate.Labels[GatePoolLabel] != s {
			continue
		}
		if paused, _ := p.willBe(gate); !paused {
			p.act(Action{Kind: SetPoolPaused, Pool: gate.Name, Paused: true})
		}
	}
}

// gateReady: the gate pool of s exists as node-gate made it (paused,
// selecting the nodes held from s) as the cache shows it, so a node
// labelled now moves into it and nowhere else.
func (p *planner) gateReady(s string) bool {
	gate := p.pools[p.gatePoolName(s)]
	return gate != nil && gate.Labels[GatePoolLabel] == s && gate.Spec.Paused && sameSelector(gate.Spec.NodeSelector, holdSelector(s))
}

// recordedBefore: the node had a record in the status this pass started
// from (it did not just join the round).
func (p *planner) recordedBefore(name string) bool {
	for _, r := range p.in.Run.Status.Nodes {
		if r.Name == name {
			return true
		}
	}
	return false
}
