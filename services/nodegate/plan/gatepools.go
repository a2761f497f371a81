package plan

// This file drives the pools: the gated (source) pools paused, the gate
// pools created and paused or unpaused, stray release labels removed.

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

// arm records every gated pool's original paused value and, with a canary,
// pauses it (without one, driveSources decides).
func (p *planner) arm() {
	for _, s := range p.sources {
		pool := p.pools[s]
		rec := p.ensurePoolRecord(s)
		if rec.OriginalPaused == nil {
			rec.OriginalPaused = ptr.To(pool.Spec.Paused)
		}
		if p.holdsInGatePool() {
			continue
		}
		if !pool.Spec.Paused {
			p.act(Action{Kind: SetPoolPaused, Pool: s, Paused: true})
			p.event(OnPool, s, corev1.EventTypeNormal, "PoolPaused", "paused pool %s so that its nodes update only through node-gate", s)
		}
	}
}

// unlabelStrays removes the release label of a gated pool from every node
// that carries one while no round is active (so none is released).
func (p *planner) unlabelStrays() {
	for _, n := range p.in.Nodes {
		if v := n.Labels[ReleaseLabel]; v != "" && p.isSource(v) {
			p.act(Action{Kind: UnlabelNode, Label: ReleaseLabel, Node: n.Name, Pool: v})
			if r := p.record(n.Name); r != nil && terminal(r.Phase) && p.removalInGrace(r) {
				// A node that passed the gate in this round while the
				// control plane updates: its removal is on its way.
				continue
			}
			p.held = append(p.held, n.Name)
			p.event(OnNode, n.Name, corev1.EventTypeWarning, "StrayReleaseLabel", "node %s carries %s while no round is active: removing the label so that the gate pool cannot move it", n.Name, ReleaseLabel)
		}
	}
}

// releasedPhase: the node is released in this round (it may carry the label).
func releasedPhase(r *nodegatev1alpha1.NodeRecord) bool {
	switch r.Phase {
	case nodegatev1alpha1.NodeReleased, nodegatev1alpha1.NodeUpdated, nodegatev1alpha1.NodePostHooks:
		return true
	case nodegatev1alpha1.NodeFailed:
		return r.ReleasedTime != nil
	}
	return false
}

// holdGates keeps each gate pool node-gate owns paused unless a node is
// Released into it (waiting for the MCO) and no node sits in it that was not
// released in this round. A paused gate pool moves nobody: a label left over
// from the last round, or a removal not yet seen, cannot let the MCO give a
// node the new target without its pre-update hooks, even when the pools
// render a new release before node-gate sees it. While the control plane
// updates (hold), every gate pool stays paused too: the pools may render the
// next release at any moment, and a node released for this round's target
// must not get that one, whose round has not run its pre-update hooks. A
// node the MCO already started finishes (a pause stops new targets only);
// one not started waits for the control plane.
func (p *planner) holdGates(hold bool) {
	done := map[string]bool{}
	for _, s := range p.sources {
		name := p.gatePoolName(s)
		gate := p.pools[name]
		if gate == nil || done[name] {
			continue
		}
		done[name] = true
		rec := p.poolRecord(s)
		if p.canary != "" && (rec == nil || rec.OriginalGatePaused == nil) {
			continue // not taken over: nothing recorded to restore
		}
		if p.canary == "" && gate.Labels[GatePoolLabel] != s {
			continue
		}
		run := false
		for i := 0; i < len(p.st.Nodes) && !hold; i++ {
			r := &p.st.Nodes[i]
			if r.Phase == nodegatev1alpha1.NodeReleased && p.gatePoolName(r.Pool) == name {
				run = true
			}
		}
		for _, n := range p.in.Nodes {
			v := n.Labels[ReleaseLabel]
			if v == "" || !p.isSource(v) || p.gatePoolName(v) != name {
				continue
			}
			// Nor while a node in it has hooks that ran for an older
			// target: it finishes what the MCO started, then is held again.
			if r := p.record(n.Name); r == nil || !releasedPhase(r) || p.retargeted(r) {
				run = false
			}
		}
		if paused, _ := p.willBe(gate); paused == run {
			p.act(Action{Kind: SetPoolPaused, Pool: name, Paused: !run})
		}
	}
}

// setUpGates creates the gate pools (or takes over the canary) and keeps
// custom source pools from selecting the nodes in them. It reports whether
// every gate pool exists (with a canary: with a rendered target).
func (p *planner) setUpGates() bool {
	ready := true
	for _, s := range p.sources {
		src := p.pools[s]
		rec := p.ensurePoolRecord(s)
		rec.GatePool = p.gatePoolName(s)
		gate := p.pools[rec.GatePool]
		if isCustom(s) && (p.canary != "" || gate != nil) {
			// Once the gate pool exists (a node labelled before would
			// match no custom pool and fall into worker).
			if rec.OriginalNodeSelector == nil {
				rec.OriginalNodeSelector = src.Spec.NodeSelector.DeepCopy()
				if rec.OriginalNodeSelector == nil {
					rec.OriginalNodeSelector = &metav1.LabelSelector{}
				}
			}
			want := sourceSelector(rec.OriginalNodeSelector, p.gateLabel())
			if !sameSelector(src.Spec.NodeSelector, want) {
				p.act(Action{Kind: SetPoolSelector, Pool: s, NodeSelector: want})
			}
		}
		if p.canary != "" {
			if rec.OriginalGateNodeSelector == nil {
				rec.OriginalGateNodeSelector = gate.Spec.NodeSelector.DeepCopy()
				if rec.OriginalGateNodeSelector == nil {
					rec.OriginalGateNodeSelector = &metav1.LabelSelector{}
				}
				rec.OriginalGatePaused = ptr.To(gate.Spec.Paused)
			}
			if want := p.releaseSelector(s); !sameSelector(gate.Spec.NodeSelector, want) {
				p.act(Action{Kind: SetPoolSelector, Pool: gate.Name, NodeSelector: want})
			}
		} else if gate == nil {
			rec.GatePoolCreated = true
			p.act(Action{Kind: CreatePool, Pool: rec.GatePool, NewPool: p.newGatePool(src)})
			p.event(OnPool, rec.GatePool, corev1.EventTypeNormal, "GatePoolCreated", "created gate pool %s for %s", rec.GatePool, s)
			ready = false
			continue
		} else {
			rec.GatePoolCreated = true
			// A gate pool of an earlier version of node-gate, which
			// released nodes into it, selects the held nodes from now on.
			if want := holdSelector(s); !sameSelector(gate.Spec.NodeSelector, want) {
				p.act(Action{Kind: SetPoolSelector, Pool: gate.Name, NodeSelector: want})
			}
		}
		if p.canary != "" && gate.Spec.Configuration.Name == "" {
			ready = false
		}
	}
	return ready
}
