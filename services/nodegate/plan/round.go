package plan

// This file keeps the round: which nodes are gated in it, their records and
// their planned order, and when a new round starts.

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
)

// roundActive: a round started and some node has not passed the gate.
func (p *planner) roundActive() bool {
	return p.st.RunID != "" && p.hasOpenRecords()
}

func (p *planner) hasOpenRecords() bool {
	for _, r := range p.st.Nodes {
		if !terminal(r.Phase) {
			return true
		}
	}
	return false
}

func terminal(ph nodegatev1alpha1.NodePhase) bool {
	return ph == nodegatev1alpha1.NodeCompleted || ph == nodegatev1alpha1.NodeSkipped
}

// upToDate: the node runs its source pool's target (or the canary's, whose
// content is the same).
func (p *planner) upToDate(n *corev1.Node, source string) bool {
	cur := n.Annotations[mcostate.CurrentConfig]
	if cur == "" {
		return false
	}
	if pool := p.pools[source]; pool != nil && cur == pool.Spec.Configuration.Name {
		return true
	}
	if gate := p.pools[p.canary]; gate != nil && cur == gate.Spec.Configuration.Name {
		return true
	}
	return false
}

// atSourceTarget: the node runs its source pool's own target. A node on the
// gate pool's target that this round did not release got there without this
// round's hooks (a gate pool that moved a leftover node): it is not skipped,
// it is gated (its hooks run) like the others.
func (p *planner) atSourceTarget(n *corev1.Node, source string) bool {
	pool := p.pools[source]
	cur := n.Annotations[mcostate.CurrentConfig]
	return pool != nil && cur != "" && cur == pool.Spec.Configuration.Name
}

func (p *planner) pendingNodes(members map[string][]string) []string {
	var out []string
	for _, s := range p.sources {
		for _, n := range members[s] {
			if !p.upToDate(p.nodes[n], s) {
				out = append(out, n)
			}
		}
	}
	return out
}

// newTargets: some gated pool targets a config other than the one the last
// round gated it to.
func (p *planner) newTargets() bool {
	for _, s := range p.sources {
		rec := p.poolRecord(s)
		if rec == nil || rec.TargetConfig != p.pools[s].Spec.Configuration.Name {
			return true
		}
	}
	return false
}

func (p *planner) startRound() {
	var parts []string
	for _, s := range p.sources {
		t := p.pools[s].Spec.Configuration.Name
		parts = append(parts, s+"="+t)
		p.ensurePoolRecord(s).TargetConfig = t
	}
	p.st.RunID = shortHash(append([]string{string(p.run.UID)}, parts...)...)
	// A node that passed the last round and is given this round's target
	// already got it before node-gate held it: the MCO acted on the render
	// first (a pool runs during a round). Say so; it is not gated again.
	for _, r := range p.st.Nodes {
		n := p.nodes[r.Name]
		if r.Phase != nodegatev1alpha1.NodeCompleted || n == nil || p.pools[r.Pool] == nil {
			continue
		}
		if t := p.pools[r.Pool].Spec.Configuration.Name; n.Annotations[mcostate.DesiredConfig] == t {
			p.event(OnNode, r.Name, corev1.EventTypeWarning, "UpdatedPastHooks", "node %s was given %s, rendered while its pool ran for node-gate's last round, before node-gate could hold it: it updates without this round's hooks", r.Name, t)
		}
	}
	p.st.Nodes = nil
	p.recIndexStale = true
	p.st.PlannedOrder = nil
	p.st.PausedGeneration = 0
	p.event(OnRun, "", corev1.EventTypeNormal, "RoundStarted", "gating the update of pools %s (run %s)", strings.Join(parts, ", "), p.st.RunID)
}

// sortNodes sorts nodes as the MCO picks candidates (see
// mcostate.UpdateOrderKey), reading each node's key once.
func (p *planner) sortNodes(names []string) {
	keys := make([]mcostate.UpdateOrderKey, len(names))
	for i, name := range names {
		keys[i] = mcostate.UpdateOrderKeyOf(p.nodes[name])
	}
	slices.SortFunc(keys, mcostate.CompareUpdateOrder)
	for i := range keys {
		names[i] = keys[i].Name
	}
}

func (p *planner) record(name string) *nodegatev1alpha1.NodeRecord {
	// An index by name, built again when the records were added to,
	// replaced or reordered since: a pass looks records up for every node
	// of the pool, several times.
	if i, ok := p.recIndex[name]; ok && i < len(p.st.Nodes) && p.st.Nodes[i].Name == name {
		return &p.st.Nodes[i]
	}
	if p.recIndex == nil || p.recIndexLen != len(p.st.Nodes) || p.recIndexStale {
		p.recIndex = make(map[string]int, len(p.st.Nodes))
		for i := range p.st.Nodes {
			p.recIndex[p.st.Nodes[i].Name] = i
		}
		p.recIndexLen, p.recIndexStale = len(p.st.Nodes), false
		if i, ok := p.recIndex[name]; ok {
			return &p.st.Nodes[i]
		}
	}
	return nil
}

// syncRecords gives every gated node a record (nodes added mid-run
// included) and closes records of nodes that went away.
func (p *planner) syncRecords(members map[string][]string) {
	var fresh []string
	recorded := make(map[string]bool, len(p.st.Nodes))
	for _, r := range p.st.Nodes {
		recorded[r.Name] = true
	}
	for _, s := range p.sources {
		// Only the nodes without a record are sorted (once the round
		// started, most passes find none): the records keep their order.
		var names []string
		for _, n := range members[s] {
			if !recorded[n] {
				names = append(names, n)
			}
		}
		p.sortNodes(names)
		for _, n := range names {
			rec := nodegatev1alpha1.NodeRecord{Name: n, Pool: s, Phase: nodegatev1alpha1.NodePending}
			if p.atSourceTarget(p.nodes[n], s) && p.nodes[n].Labels[ReleaseLabel] == "" {
				rec.Phase = nodegatev1alpha1.NodeSkipped
				rec.LastError = "already runs the target configuration"
			} else {
				fresh = append(fresh, n)
			}
			p.st.Nodes = append(p.st.Nodes, rec)
		}
	}
	p.st.PlannedOrder = append(p.st.PlannedOrder, fresh...)
	inPool := map[string]string{}
	for s, names := range members {
		for _, n := range names {
			inPool[n] = s
		}
	}
	for i := range p.st.Nodes {
		r := &p.st.Nodes[i]
		if terminal(r.Phase) {
			continue
		}
		n, ok := p.nodes[r.Name]
		switch {
		case !ok:
			r.Phase = nodegatev1alpha1.NodeSkipped
			r.LastError = "the node was removed from the cluster"
			p.event(OnRun, "", corev1.EventTypeWarning, "NodeRemoved", "node %s left the cluster during the run", r.Name)
		case r.Phase == nodegatev1alpha1.NodePending && p.releasedUnrecorded(r):
			// Released by a pass whose status was lost: its hooks ran (their
			// Jobs are found again by name) and the MCO may be updating it.
			p.admit(r)
		case r.Phase == nodegatev1alpha1.NodePending && inPool[r.Name] != r.Pool:
			r.Phase = nodegatev1alpha1.NodeSkipped
			r.LastError = "the node left pool " + r.Pool
		case r.Phase == nodegatev1alpha1.NodePending && p.atSourceTarget(n, r.Pool) && n.Labels[ReleaseLabel] == "":
			// On its target since its record was made, without passing
			// the gate: the MCO moved it before node-gate held it, or
			// someone released it.
			r.Phase = nodegatev1alpha1.NodeSkipped
			r.LastError = "updated without its hooks: it reached the target configuration before node-gate released it"
			p.event(OnNode, r.Name, corev1.EventTypeWarning, "UpdatedPastHooks", "node %s reached %s without passing the gate: the machine-config operator updated it before node-gate held it, or someone released it", r.Name, p.pools[r.Pool].Spec.Configuration.Name)
		}
	}
}

// resumeIfChanged: a spec change after a failure paused the run resumes it;
// failed hooks get their retries again.
func (p *planner) resumeIfChanged() {
	if p.st.PausedGeneration == 0 || p.run.Generation <= p.st.PausedGeneration {
		return
	}
	p.st.PausedGeneration = 0
	for i := range p.st.Nodes {
		r := &p.st.Nodes[i]
		if r.Phase != nodegatev1alpha1.NodeFailed {
			continue
		}
		r.Phase = nodegatev1alpha1.NodePreHooks
		for j := range r.Hooks {
			h := &r.Hooks[j]
			if h.Phase == nodegatev1alpha1.HookFailed {
				h.Phase = nodegatev1alpha1.HookPending
				h.AttemptsBefore = h.Attempts
				if h.Stage == nodegatev1alpha1.StagePost {
					r.Phase = nodegatev1alpha1.NodePostHooks
				}
			}
		}
	}
	p.event(OnRun, "", corev1.EventTypeNormal, "Resumed", "the spec changed: resuming the run")
}

func (p *planner) hookRecords() []nodegatev1alpha1.HookRecord {
	var out []nodegatev1alpha1.HookRecord
	for _, stage := range []nodegatev1alpha1.HookStage{nodegatev1alpha1.StagePre, nodegatev1alpha1.StagePost} {
		for _, rule := range p.rules {
			for _, h := range hooksOf(rule, stage) {
				out = append(out, nodegatev1alpha1.HookRecord{Rule: h.key, Name: h.spec.Name, Stage: stage, Phase: nodegatev1alpha1.HookPending})
			}
		}
	}
	return out
}

func (p *planner) findHook(rec nodegatev1alpha1.HookRecord) (hook, bool) {
	for _, rule := range p.rules {
		for _, h := range hooksOf(rule, rec.Stage) {
			if h.key == rec.Rule && h.spec.Name == rec.Name {
				return h, true
			}
		}
	}
	return hook{}, false
}
