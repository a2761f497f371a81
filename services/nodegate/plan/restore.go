package plan

// This file gives back everything a run changed.

import (
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// restore puts back everything the run changed, from the recorded originals,
// and reports whether nothing is left to restore.
func (p *planner) restore() bool {
	done := true
	// The source pools whose gate pool still has labelled nodes in it.
	inGate := map[string]bool{}
	for _, n := range p.in.Nodes {
		for _, label := range []string{ReleaseLabel, HoldLabel} {
			v := n.Labels[label]
			if v == "" || p.poolRecord(v) == nil {
				continue
			}
			inGate[v] = true
			p.act(Action{Kind: UnlabelNode, Label: label, Node: n.Name, Pool: v})
			done = false
		}
	}
	for i := range p.st.Pools {
		rec := &p.st.Pools[i]
		src := p.pools[rec.Name]
		if src != nil && rec.OriginalNodeSelector != nil {
			want := rec.OriginalNodeSelector
			if _, sel := p.willBe(src); !sameSelector(sel, want) {
				p.act(Action{Kind: SetPoolSelector, Pool: rec.Name, NodeSelector: want.DeepCopy()})
				done = false
			}
		}
		if src != nil && rec.OriginalPaused != nil {
			if paused, _ := p.willBe(src); paused != *rec.OriginalPaused {
				p.act(Action{Kind: SetPoolPaused, Pool: rec.Name, Paused: *rec.OriginalPaused})
				p.event(OnPool, rec.Name, corev1.EventTypeNormal, "PoolRestored", "restored pool %s to paused=%v", rec.Name, *rec.OriginalPaused)
				done = false
			}
		}
		if src != nil && rec.OriginalMaxUnavailable != nil {
			if want := rec.OriginalMaxUnavailable.Value; !sameIntOrString(p.willBeMaxUnavailable(src), want) {
				p.act(Action{Kind: SetPoolMaxUnavailable, Pool: rec.Name, MaxUnavailable: want})
				done = false
			}
		}
		gate := p.pools[rec.GatePool]
		if gate != nil && rec.OriginalGateNodeSelector != nil {
			gatePaused, gateSel := p.willBe(gate)
			if !sameSelector(gateSel, rec.OriginalGateNodeSelector) {
				p.act(Action{Kind: SetPoolSelector, Pool: gate.Name, NodeSelector: rec.OriginalGateNodeSelector.DeepCopy()})
				done = false
			}
			if rec.OriginalGatePaused != nil && gatePaused != *rec.OriginalGatePaused {
				p.act(Action{Kind: SetPoolPaused, Pool: gate.Name, Paused: *rec.OriginalGatePaused})
				done = false
			}
		}
		if gate != nil && rec.GatePoolCreated && gate.Labels[GatePoolLabel] == rec.Name {
			done = false
			// Paused until it is gone: a node still labelled must not be
			// moved by a render that comes first.
			if paused, _ := p.willBe(gate); !paused {
				p.act(Action{Kind: SetPoolPaused, Pool: gate.Name, Paused: true})
			}
			// Delete the gate pool once no node is in it: a pool deleted
			// under its nodes leaves them without a target (and a node of
			// a custom pool in worker, whose pool runs).
			if !inGate[rec.Name] {
				p.act(Action{Kind: DeletePool, Pool: gate.Name})
			}
		}
	}
	if done {
		for i := range p.st.Pools {
			rec := &p.st.Pools[i]
			rec.OriginalPaused, rec.OriginalNodeSelector = nil, nil
			rec.OriginalGateNodeSelector, rec.OriginalGatePaused = nil, nil
			rec.OriginalMaxUnavailable = nil
			rec.GatePoolCreated = false
		}
	}
	return done
}

// willBe is a pool's paused value and node selector once the actions this
// pass already decided are performed. restore compares the originals with
// that, not with the cache: a pass that arms (pauses a pool a user had
// unpaused, or whose pause was lost to a restart) and then finishes the
// round must not clear the originals while its own pause is on the way, or
// the pool stays paused for good.
func (p *planner) willBe(pool *mcfgv1.MachineConfigPool) (bool, *metav1.LabelSelector) {
	paused, sel := pool.Spec.Paused, pool.Spec.NodeSelector
	for _, a := range p.res.Actions {
		if a.Pool != pool.Name {
			continue
		}
		switch a.Kind {
		case SetPoolPaused:
			paused = a.Paused
		case SetPoolSelector:
			sel = a.NodeSelector
		}
	}
	return paused, sel
}

// willBeMaxUnavailable is a pool's maxUnavailable once the actions this pass
// already decided are performed.
func (p *planner) willBeMaxUnavailable(pool *mcfgv1.MachineConfigPool) *intstr.IntOrString {
	mu := pool.Spec.MaxUnavailable
	for _, a := range p.res.Actions {
		if a.Pool == pool.Name && a.Kind == SetPoolMaxUnavailable {
			mu = a.MaxUnavailable
		}
	}
	return mu
}

func sameIntOrString(a, b *intstr.IntOrString) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.String() == b.String()
}
