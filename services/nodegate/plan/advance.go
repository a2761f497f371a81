package plan

// This file moves nodes through their phases, within maxUnavailable.

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
)

func (p *planner) inFlight() []string {
	var out []string
	for _, r := range p.st.Nodes {
		switch r.Phase {
		case nodegatev1alpha1.NodePreHooks, nodegatev1alpha1.NodeReleased, nodegatev1alpha1.NodeUpdated,
			nodegatev1alpha1.NodePostHooks, nodegatev1alpha1.NodeFailed:
			out = append(out, r.Name)
		}
	}
	return out
}

func (p *planner) gatedTotal() int {
	n := 0
	for _, r := range p.st.Nodes {
		if r.Phase != nodegatev1alpha1.NodeSkipped || r.StartTime != nil {
			n++
		}
	}
	return n
}

func (p *planner) maxUnavailableValue() intstr.IntOrString {
	if mu := p.run.Spec.MaxUnavailable; mu != nil {
		return *mu
	}
	return intstr.FromInt32(1)
}

// maxUnavailable is spec.maxUnavailable as a node count: a percentage of
// the gated nodes rounded down, never below 1 (as the MCO does for pools).
func (p *planner) maxUnavailable() int {
	mu := p.maxUnavailableValue()
	n, err := intstr.GetScaledValueFromIntOrPercent(&mu, p.gatedTotal(), false)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// strayGrace is how long a finished node may keep the release label (its
// removal not yet in the cache) before the run reports it as held.
const strayGrace = time.Minute

// removalInGrace: the finished record r completed less than strayGrace ago,
// so the removal of its label may still be on its way (not a stray yet); the
// run is woken when the grace ends.
func (p *planner) removalInGrace(r *nodegatev1alpha1.NodeRecord) bool {
	if r.CompletionTime == nil || !p.in.Now.Before(r.CompletionTime.Add(strayGrace)) {
		return false
	}
	p.wake(r.CompletionTime.Add(strayGrace).Sub(p.in.Now))
	return true
}

// advance moves every in-flight node on, then starts new ones while slots
// and gates allow.
func (p *planner) advance() {
	order := map[string]int{}
	for i, n := range p.st.PlannedOrder {
		order[n] = i
	}
	sort.SliceStable(p.st.Nodes, func(i, j int) bool {
		oi, iok := order[p.st.Nodes[i].Name]
		oj, jok := order[p.st.Nodes[j].Name]
		if iok != jok {
			return iok
		}
		return oi < oj
	})
	p.recIndexStale = true
	// A node that still carries the release label while its record in this
	// round has not started is a stray: typically a node of the previous
	// round whose label removal was lost (a restart between the status write
	// and the action) when a new rendered target started this round, so its
	// record restarted as Pending. In the gate pool the MCO would give it
	// this round's target without this round's pre-update hooks. It is held:
	// the label is removed (again, every pass) so that it returns to its
	// paused source pool at the configuration it runs, it counts against
	// maxUnavailable while it carries the label, and it starts (with its
	// pre-update hooks) only once the label is gone. Holding is simpler and
	// safer than finishing the old round for it: its old record is gone,
	// and whatever put the label there, the new round's hooks must run
	// before the node moves.
	strays := 0
	for i := range p.st.Nodes {
		r := &p.st.Nodes[i]
		if n := p.nodes[r.Name]; r.Phase == nodegatev1alpha1.NodePending && n != nil && n.Labels[ReleaseLabel] != "" {
			// Without a canary, only an earlier version of node-gate set
			// the label: the gate pool no longer selects it, the removal
			// is all there is to do.
			strays++
			p.held = append(p.held, r.Name)
			p.act(Action{Kind: UnlabelNode, Label: ReleaseLabel, Node: r.Name, Pool: n.Labels[ReleaseLabel]})
			p.event(OnNode, r.Name, corev1.EventTypeWarning, "StrayReleaseLabel", "node %s carries %s but has not started this round (run %s): removing the label; it is gated once the label is gone", r.Name, ReleaseLabel, p.st.RunID)
		}
	}
	// In-flight nodes move on, those past their pre-update hooks first: a
	// node that finishes frees its slot in this pass for one whose hooks
	// are done, wherever the two stand in the planned order (with
	// lookahead a later node's hooks may finish first, and it is released
	// first). The nodes in their hooks are taken as they were before any
	// step: a node taken back to its hooks by its step is not stepped twice.
	var inHooks []*nodegatev1alpha1.NodeRecord
	for i := range p.st.Nodes {
		r := &p.st.Nodes[i]
		if r.Phase == nodegatev1alpha1.NodePreHooks {
			inHooks = append(inHooks, r)
			continue
		}
		if r.Phase != nodegatev1alpha1.NodePending && !terminal(r.Phase) {
			p.step(r)
			continue
		}
		// A node that passed (or left the run) in an earlier pass must not
		// stay in the gate pool: the removal may have been lost to a restart.
		if n := p.nodes[r.Name]; terminal(r.Phase) && n != nil && n.Labels[ReleaseLabel] == r.Pool {
			p.act(Action{Kind: UnlabelNode, Label: ReleaseLabel, Node: r.Name, Pool: r.Pool})
			// The removal of the pass that finished it is normally seen
			// within seconds; a label still there after strayGrace was
			// refused or put back, and holds releases: say so.
			if !p.removalInGrace(r) {
				p.held = append(p.held, r.Name)
			}
		}
	}
	for _, r := range inHooks {
		p.step(r)
	}
	if p.waitReason != "" || p.aborted {
		return
	}
	budget := p.inFlightBudget()
	for i := range p.st.Nodes {
		r := &p.st.Nodes[i]
		if r.Phase != nodegatev1alpha1.NodePending {
			continue
		}
		if n := p.nodes[r.Name]; n != nil && n.Labels[ReleaseLabel] != "" {
			continue // a stray, held above
		}
		if p.st.PausedGeneration != 0 || p.aborted {
			return
		}
		// Starting a node runs its pre-update hooks; its release checks
		// occupied again. A node whose record finished and whose label
		// removal is on its way does not hold the start.
		busy := maps.Clone(p.unsettled())
		for _, n := range p.inFlight() {
			busy[n] = true
		}
		for _, n := range p.held {
			busy[n] = true
		}
		for _, n := range p.unheld {
			busy[n] = true
		}
		// With lookahead, that many more nodes per release slot run their
		// pre-update hooks ahead of their turn (and are released ahead:
		// releaseBudget); the nodes updating stay within maxUnavailable.
		if len(busy) >= budget {
			if len(p.inFlight()) == 0 && p.waitReason == "" {
				// Nothing of this round moves on: say what holds it.
				p.waitReason, p.waitMessage = ReasonNodesUnavailable, "nodes count against maxUnavailable: "+strings.Join(sortedSet(busy), ", ")
				if strays > 0 {
					p.waitReason = ReasonStrayReleaseLabel
					p.waitMessage = "nodes carry the release label without being released in this round (removing it): " + strings.Join(sortedSet(busy), ", ")
				}
			}
			return
		}
		r.StartTime = ptr.To(p.now)
		r.Hooks = nil
		p.admit(r)
		p.step(r)
	}
}

// step moves one node as far as it can go now.
func (p *planner) step(r *nodegatev1alpha1.NodeRecord) {
	for guard := 0; guard < 64; guard++ {
		before := r.Phase
		switch r.Phase {
		case nodegatev1alpha1.NodePreHooks:
			done := p.runHooks(r, nodegatev1alpha1.StagePre)
			if p.retargeted(r) && !p.hookInFlight(r, nodegatev1alpha1.StagePre) {
				// Its pool rendered new content while the hooks ran: every
				// hook runs again for it, those not started yet included
				// (runHooks starts none for the old content). A hook in
				// flight finishes first: two attempts never overlap.
				p.rehold(r)
				continue
			}
			if !done {
				return
			}
			if p.releasedUnrecorded(r) {
				// Released already, by a pass whose status was lost: no
				// gate or slot decides it again.
				r.Phase = nodegatev1alpha1.NodeReleased
				r.ReleasedTime = ptr.To(p.now)
				p.event(OnNode, r.Name, corev1.EventTypeNormal, "ReleaseRecovered", "node %s was released for %s by a pass whose status was not written (node-gate restarted): its record continues from the release", r.Name, r.HooksTarget)
				continue
			}
			if p.run.Spec.Paused || p.st.PausedGeneration != 0 || p.aborted {
				return
			}
			if p.lookahead() > 0 && p.gatesClosed {
				// Hooks may run ahead of a node's turn; its release still
				// waits for the window, the health gate and the update hold.
				return
			}
			if p.updateTarget(r.Pool) == "" || (!p.holdsInGatePool() && p.pools[p.gatePoolName(r.Pool)].Spec.Configuration.Name == "") {
				return
			}
			if busy := p.occupied(r.Name); len(busy) >= p.releaseBudget() {
				if p.slotWait == "" {
					against := "maxUnavailable"
					if p.releasesAhead() {
						against = fmt.Sprintf("maxUnavailable and the lookahead (%d released or updating at most)", p.releaseBudget())
					}
					p.slotWait = fmt.Sprintf("node %s waits to be released: nodes count against %s: %s", r.Name, against, strings.Join(sortedSet(busy), ", "))
				}
				// A node whose record is finished (or a stray) may still
				// carry the label, its removal not yet seen or lost to a
				// restart, or still be updating: the MCO counts it. Hold
				// this one until it is gone, so that never more than
				// releaseBudget nodes are released at once.
				return
			}
			if p.hooksExpired(r) {
				p.event(OnNode, r.Name, corev1.EventTypeNormal, "HooksExpired", "node %s's pre-update hooks finished more than %s ago, while it waited for its turn: they run again before it is released", r.Name, p.maxHookAge())
				p.admit(r)
				continue
			}
			p.release(r)
		case nodegatev1alpha1.NodeReleased:
			n := p.nodes[r.Name]
			target := p.updateTarget(r.Pool)
			if !mcostate.UpdatedTo(n, target) {
				if p.retargeted(r) && settled(n) {
					// The pool rendered new content after the hooks ran
					// and the MCO has not started the node: hold it again.
					p.rehold(r)
					continue
				}
				if p.takeBackAhead(r, n) {
					continue
				}
				if !p.holdsInGatePool() && n.Labels[ReleaseLabel] != r.Pool {
					// Released in this pass, or someone removed the label:
					// (re)label; the node is ours until the MCO updated it.
					// (Without a canary holdNodes removes its hold label.)
					p.act(Action{Kind: LabelNode, Label: ReleaseLabel, Node: r.Name, Pool: r.Pool})
				}
				if mcostate.Failing(n.Annotations) {
					p.degraded = append(p.degraded, fmt.Sprintf("node %s: %s", r.Name, n.Annotations[mcostate.Reason]))
				}
				return
			}
			// Updated. A node released while it already ran the gate
			// pool's target (it was in the gate pool in an earlier round)
			// gets here in the pass that released it, unlabelled: it needs
			// no label for an update it has, and a label added now would
			// outlive its record (the removal below reads the cache).
			r.Phase = nodegatev1alpha1.NodeUpdated
			r.UpdatedTime = ptr.To(p.now)
			if p.retargeted(r) {
				// The MCO took the new render before node-gate saw it: say
				// so, the one case a pause of the gate pool cannot close.
				p.event(OnNode, r.Name, corev1.EventTypeWarning, "UpdatedPastHooks", "node %s was updated to %s, rendered after its pre-update hooks ran for %s: the machine-config operator started it before node-gate saw the new render", r.Name, target, r.HooksTarget)
			}
		case nodegatev1alpha1.NodeUpdated:
			r.Phase = nodegatev1alpha1.NodePostHooks
		case nodegatev1alpha1.NodePostHooks:
			if !p.runHooks(r, nodegatev1alpha1.StagePost) {
				return
			}
			if !mcostate.UpdatedTo(p.nodes[r.Name], p.updateTarget(r.Pool)) {
				// The pool rendered a new target meanwhile: the node is to
				// be updated (rebooted) again. It goes back to its
				// pre-update hooks (held again unless the MCO started it;
				// with a canary it keeps the label, and holdGates keeps the
				// canary paused meanwhile, so that it does not leave it
				// mid-update), then is released again, and its post-update
				// hooks run after.
				p.admit(r)
				p.event(OnNode, r.Name, corev1.EventTypeWarning, "GateRetargeted", "node %s no longer runs its pool's target: its hooks run again before it is updated again", r.Name)
				continue
			}
			if p.nodes[r.Name].Labels[ReleaseLabel] != "" {
				p.act(Action{Kind: UnlabelNode, Label: ReleaseLabel, Node: r.Name, Pool: r.Pool})
			}
			r.Phase = nodegatev1alpha1.NodeCompleted
			r.CompletionTime = ptr.To(p.now)
			// Its passage, hooks and times included, goes to the log, since
			// its record in the status is compacted.
			p.res.Passages = append(p.res.Passages, Passage{Node: r.Name, Note: passage(r, p.st.RunID)})
		default:
			return
		}
		if r.Phase == before {
			return
		}
	}
}

// occupied lists the nodes other than except that are, or may at once be,
// unavailable as the MCO counts them: those that carry a canary's release
// label as the cache shows them (a removal this pass decided is not
// counted as done: it may be lost), those this pass labels, those not held
// while they must be and their pool runs (findUnheld), those released
// in this round (a label added in an earlier pass may not be in the cache
// yet), and every gated node the MCD has not finished (desiredConfig !=
// currentConfig, or a state other than Done), labelled or not: a node whose
// label is gone may still be updating.
func (p *planner) occupied(except string) map[string]bool {
	seen := maps.Clone(p.occupiedByCluster())
	delete(seen, except)
	add := func(n string) {
		if n != except {
			seen[n] = true
		}
	}
	for _, a := range p.res.Actions {
		if a.Kind == LabelNode && a.Label == ReleaseLabel {
			add(a.Node)
		}
	}
	for i := range p.st.Nodes {
		if r := &p.st.Nodes[i]; releasedPhase(r) {
			add(r.Name)
		}
	}
	// releasedUnrecorded needs a node out of the gate pool with a release
	// mark (releaseMarked, read with occupiedByCluster above): only those
	// are looked at, not every record.
	for _, name := range p.releaseMarked {
		if r := p.record(name); r != nil && p.releasedUnrecorded(r) {
			add(name)
		}
	}
	// Nodes released by someone else while their pool runs: the MCO may
	// start them before they are held again.
	for _, n := range p.unheld {
		add(n)
	}
	return seen
}

// occupiedByCluster is the part of occupied that the cluster as the cache
// shows it decides, and no decision of the pass changes: the nodes that
// carry a source's release label and the unsettled ones (and, in
// releaseMarked, the nodes out of the gate pool with a release mark, for
// releasedUnrecorded). occupied runs for every node waiting for a slot, so
// this is computed once a pass (with 500 workers and a hundred nodes
// waiting, walking every node each time was a third of node-gate's CPU).
// Callers copy it before adding to it.
func (p *planner) occupiedByCluster() map[string]bool {
	if p.clusterOccupied == nil {
		out := maps.Clone(p.unsettled())
		for _, n := range p.in.Nodes {
			if v := n.Labels[ReleaseLabel]; v != "" && p.isSource(v) {
				out[n.Name] = true
			}
			if n.Labels[HoldLabel] == "" && n.Annotations[ReleasedAnnotation] != "" {
				p.releaseMarked = append(p.releaseMarked, n.Name)
			}
		}
		p.clusterOccupied = out
	}
	return p.clusterOccupied
}

// unsettled lists the gated nodes the MCD has not finished: desiredConfig
// != currentConfig, or a state other than Done. It reads only the pass's
// input, so it is computed once (after the members are known); callers
// copy it before adding to it.
func (p *planner) unsettled() map[string]bool {
	if p.unsettledNodes == nil {
		out := map[string]bool{}
		for _, names := range p.members {
			for _, n := range names {
				if !settled(p.nodes[n]) {
					out[n] = true
				}
			}
		}
		p.unsettledNodes = out
	}
	return p.unsettledNodes
}

// settled: the machine-config daemon is not working on the node (it runs
// its desired config and reports Done, or no state yet), so the MCO has not
// started it.
func settled(n *corev1.Node) bool {
	a := n.Annotations
	return a[mcostate.DesiredConfig] == a[mcostate.CurrentConfig] && (a[mcostate.State] == "" || a[mcostate.State] == mcostate.StateDone)
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// release hands the node to the MCO; the Released step labels it.
func (p *planner) release(r *nodegatev1alpha1.NodeRecord) {
	n := p.nodes[r.Name]
	r.Phase = nodegatev1alpha1.NodeReleased
	r.ReleasedTime = ptr.To(p.now)
	msg := fmt.Sprintf("released node %s into pool %s for the machine-config operator", r.Name, p.gatePoolName(r.Pool))
	if p.holdsInGatePool() {
		msg = fmt.Sprintf("released node %s back into pool %s for the machine-config operator", r.Name, r.Pool)
	}
	if n.Spec.Unschedulable {
		msg += "; the node is cordoned, and the machine-config operator does not update a cordoned node"
		r.LastError = "node is cordoned: the machine-config operator will not start its update until it is uncordoned"
	}
	if n.Spec.Unschedulable {
		p.event(OnNode, r.Name, corev1.EventTypeWarning, "ReleasedWhileCordoned", "%s", msg)
	}
}

// passage says how a node passed the gate: each hook with its Job, attempts
// and duration, and how long it waited for its release, for the MCO and in
// all. Told once, when the node completes.
func passage(r *nodegatev1alpha1.NodeRecord, runID string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "node %s passed the gate (pool %s, round %s)", r.Name, r.Pool, runID)
	since := func(from, to *metav1.Time) string {
		if from == nil || to == nil {
			return "?"
		}
		return to.Sub(from.Time).Round(time.Second).String()
	}
	for _, h := range r.Hooks {
		fmt.Fprintf(&b, "; %s hook %s/%s: %s (Job %s, %d attempt(s), %s)", h.Stage, h.Rule, h.Name, h.Phase, h.JobName, h.Attempts, since(h.StartTime, h.CompletionTime))
	}
	fmt.Fprintf(&b, "; released after %s, updated by the MCO in %s, completed after %s", since(r.StartTime, r.ReleasedTime), since(r.ReleasedTime, r.UpdatedTime), since(r.StartTime, r.CompletionTime))
	return b.String()
}
