package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/requeue"
	"github.com/upshift-io/upshift/libs/truncate"
	"github.com/upshift-io/upshift/libs/window"
)

// Condition types of a MutexRunConfig.
const (
	CondReady       = "Ready"
	CondProgressing = "Progressing"
	CondPaused      = "Paused"
	CondDegraded    = "Degraded"
	CondBlocked     = "Blocked"
)

// Reasons the run refuses to start (condition Blocked).
const (
	ReasonMissingRule        = "MissingRule"
	ReasonMissingTarget      = "MissingTarget"
	ReasonMissingPool        = "MissingPool"
	ReasonInvalidRule        = "InvalidRule"
	ReasonInvalidWindows     = "InvalidMaintenanceWindows"
	ReasonTwoCustomPools     = "NodeInTwoCustomPools"
	ReasonGateSelectsMasters = "GateSelectsMasters"
	ReasonPoolClaimed        = "PoolClaimedByAnotherRun"
	ReasonGatePoolNameTaken  = "GatePoolNameTaken"
	ReasonCanaryMismatch     = "CanaryConfigDiffers"
	ReasonPoolNameTooLong    = "PoolNameTooLong"
	ReasonControlPlane       = "ControlPlaneUpdating"
	ReasonNotRendered        = "PoolsNotRendered"
	ReasonOutsideWindow      = "OutsideMaintenanceWindow"
	ReasonAlertsFiring       = "AlertsFiring"
	ReasonAlertsUnavailable  = "AlertsUnavailable"
	ReasonSpecPaused         = "SpecPaused"
	ReasonHookFailed         = "HookFailed"
	ReasonNodeDegraded       = "NodeDegraded"
	ReasonAsExpected         = "AsExpected"
	ReasonNothingToDo        = "NothingToDo"
	ReasonNodesUpdating      = "NodesUpdating"
	ReasonRestoring          = "Restoring"
	ReasonCompleted          = "Completed"
	ReasonAborted            = "Aborted"
	ReasonWaitingForGatePool = "WaitingForGatePool"
	ReasonJobNamespace       = "JobNamespaceNotAllowed"
	ReasonPoolNotGated       = "PoolNotGated"
	ReasonStrayReleaseLabel  = "StrayReleaseLabel"
	ReasonNodesUnavailable   = "NodesUnavailable"
)

// Plan decides the run's next step. See the package documentation.
func Plan(in Input) Result {
	p := newPlanner(in)
	p.plan()
	p.finishStatus()
	p.res.Status = *p.st
	if p.requeue > 0 {
		p.res.RequeueAfter = p.requeue
	}
	return p.res
}

type planner struct {
	in     Input
	run    *nodegatev1alpha1.MutexRunConfig
	st     *nodegatev1alpha1.MutexRunConfigStatus
	now    metav1.Time
	canary string
	runKey string

	rules   []*nodegatev1alpha1.MutexRule
	sources []string
	pools   map[string]*mcfgv1.MachineConfigPool
	nodes   map[string]*corev1.Node
	jobs    map[string]*batchv1.Job

	// waitReason/waitMessage say why no new node starts (empty: none).
	waitReason, waitMessage string
	// gatesClosed: a gate on starting nodes is closed (a pause, the update
	// hold, no window, alerts). With lookahead it holds releases too.
	gatesClosed           bool
	blockReason, blockMsg string
	degraded              []string
	// held are the nodes that carry the release label without having been
	// released in this round: node-gate removes the label and holds them.
	held []string
	// members are the gated nodes by source pool.
	members map[string][]string

	res     Result
	requeue time.Duration
}

// RunKey identifies a run on the objects node-gate labels (a label value).
func RunKey(namespace, name string) string { return shortHash(namespace, name) }

func newPlanner(in Input) *planner {
	p := &planner{
		in:    in,
		run:   in.Run,
		st:    in.Run.Status.DeepCopy(),
		now:   metav1.NewTime(in.Now),
		pools: map[string]*mcfgv1.MachineConfigPool{},
		nodes: nodeByName(in.Nodes),
		jobs:  map[string]*batchv1.Job{},
	}
	p.st.ObservedGeneration = in.Run.Generation
	p.runKey = RunKey(in.Run.Namespace, in.Run.Name)
	if in.Run.Spec.Canary != nil {
		p.canary = in.Run.Spec.Canary.Name
	}
	for i := range in.Pools {
		p.pools[in.Pools[i].Name] = &in.Pools[i]
	}
	for i := range in.Jobs {
		j := &in.Jobs[i]
		p.jobs[j.Namespace+"/"+j.Name] = j
	}
	return p
}

// event records an Event on the run, or on the node or pool it is about
// with the run as related object, so that `kubectl events --for` on either
// finds it.
func (p *planner) event(kind ObjectKind, name, typ, reason, format string, args ...any) {
	e := events.Event{Regarding: p.run, Warning: typ == corev1.EventTypeWarning, Reason: reason, Action: "Gate", Note: fmt.Sprintf(format, args...)}
	switch kind {
	case OnNode:
		if n := p.nodes[name]; n != nil {
			e.Regarding, e.Related = n, p.run
		}
	case OnPool:
		pool := p.pools[name]
		if pool == nil {
			pool = &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		}
		e.Regarding, e.Related = pool, p.run
	}
	p.res.Events = append(p.res.Events, e)
}

func (p *planner) act(a Action) { p.res.Actions = append(p.res.Actions, a) }

// conditionMessageLimit is the API's limit on a condition's message.
const conditionMessageLimit = 32768

func (p *planner) wake(after time.Duration) {
	// A time already passed looks again in a second, not at once.
	p.requeue = requeue.Min(p.requeue, max(after, time.Second))
}

func (p *planner) poolRecord(name string) *nodegatev1alpha1.PoolRecord {
	for i := range p.st.Pools {
		if p.st.Pools[i].Name == name {
			return &p.st.Pools[i]
		}
	}
	return nil
}

func (p *planner) ensurePoolRecord(name string) *nodegatev1alpha1.PoolRecord {
	if r := p.poolRecord(name); r != nil {
		return r
	}
	p.st.Pools = append(p.st.Pools, nodegatev1alpha1.PoolRecord{Name: name})
	sort.Slice(p.st.Pools, func(i, j int) bool { return p.st.Pools[i].Name < p.st.Pools[j].Name })
	return p.poolRecord(name)
}

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

func (p *planner) plan() {
	if p.run.DeletionTimestamp != nil {
		if p.restore() {
			p.res.Finalized = true
		}
		p.st.Phase = nodegatev1alpha1.RunRestoring
		return
	}
	if !p.validate() {
		// Nothing changes while blocked: a run that has not started changed
		// nothing, and one that has keeps its pools paused (unpausing them
		// would let the update through ungated). Deleting the run restores.
		p.st.Phase = nodegatev1alpha1.RunBlocked
		p.event(OnRun, "", corev1.EventTypeWarning, p.blockReason, "%s", p.blockMsg)
		return
	}
	if p.st.Phase == nodegatev1alpha1.RunBlocked {
		p.st.Phase = ""
		if p.st.RunID != "" && p.hasOpenRecords() {
			p.st.Phase = nodegatev1alpha1.RunProgressing
		}
	}

	member, _ := p.membership()
	members := map[string][]string{} // source pool -> nodes
	for _, n := range p.in.Nodes {
		src := member[n.Name]
		if v := n.Labels[ReleaseLabel]; v != "" && p.isSource(v) {
			src = v
		}
		if p.isSource(src) {
			members[src] = append(members[src], n.Name)
		}
	}

	p.members = members

	cvUpdating, cvMsg := controlPlaneUpdating(p.in.ClusterVersion)
	hold, holdMsg := p.updateHold(cvUpdating, cvMsg)
	pending := p.pendingNodes(members)

	if p.st.Phase == nodegatev1alpha1.RunAborted {
		if p.run.Generation <= p.st.PausedGeneration {
			p.restore()
			return
		}
		// A spec change after an abort resumes the round where it stopped
		// (resumeIfChanged retries the failed hook); completed nodes stay done.
		p.st.Phase = nodegatev1alpha1.RunProgressing
	}

	active := p.roundActive()
	if !active && len(pending) > 0 && p.newTargets() {
		p.startRound()
		active = true
	}
	armed := active || cvUpdating || len(pending) > 0 && p.newTargets()
	if !armed {
		switch {
		case !p.restore():
			p.st.Phase = nodegatev1alpha1.RunRestoring
		case p.st.Phase == nodegatev1alpha1.RunRestoring && p.st.RunID != "":
			p.st.Phase = nodegatev1alpha1.RunCompleted
			p.event(OnRun, "", corev1.EventTypeNormal, ReasonCompleted, "every gated node is updated; pools, selectors and labels are restored")
		case p.st.Phase != nodegatev1alpha1.RunCompleted:
			p.st.Phase = nodegatev1alpha1.RunIdle
		}
		if len(pending) > 0 {
			// Nodes behind their pool's target that this run already
			// gated in its last round (the rebootless return to the
			// source pool, which the MCO does on its own).
			p.waitReason, p.waitMessage = ReasonNothingToDo, "no update is pending beyond the last completed round"
		}
		return
	}
	p.arm()
	if !active {
		// No round is active, so no node is released: every release label
		// left over (a removal of the last round lost to a restart) must go
		// now, and the gate pools stay paused, before the pools render the
		// new release. Otherwise the MCO moves such a node in the gate pool
		// to the new target without this round's pre-update hooks.
		p.unlabelStrays()
		p.holdGates(true)
		p.st.Phase = nodegatev1alpha1.RunWaiting
		p.waitReason, p.waitMessage = ReasonControlPlane, cvMsg
		switch {
		case hold:
			p.waitMessage = holdMsg
		case p.st.RunID != "" && len(p.st.Nodes) > 0:
			p.waitMessage = cvMsg + roundPassedWhileUpdating
		}
		return
	}
	if !p.setUpGates() {
		p.st.Phase = nodegatev1alpha1.RunProgressing
		p.waitReason, p.waitMessage = ReasonWaitingForGatePool, "waiting for the gate pools to exist and render their configuration"
	}
	p.syncRecords(members)
	p.resumeIfChanged()
	p.gates(cvUpdating, hold, holdMsg)
	p.advance()
	p.holdGates(hold)
	if !p.hasOpenRecords() && len(pending) > 0 && p.newTargets() {
		// The pools rendered newer content during the round. Restoring
		// now would unpause the source pools and let the MCO give it to
		// the nodes that passed the gate, without hooks: stay armed; the
		// next pass gates it in a new round.
		p.st.Phase = nodegatev1alpha1.RunProgressing
		p.wake(time.Second)
		return
	}
	if !p.hasOpenRecords() && cvUpdating {
		// Every gated node passed while the control plane still updates
		// (holdUntil Rendered). The update may render new content for the
		// pools before it completes: they stay paused until it does, so that
		// such content is gated too, and are restored then.
		p.st.Phase = nodegatev1alpha1.RunWaiting
		p.waitReason, p.waitMessage = ReasonControlPlane, cvMsg+roundPassedWhileUpdating
		return
	}
	if !p.hasOpenRecords() {
		if p.restore() {
			p.st.Phase = nodegatev1alpha1.RunCompleted
			p.event(OnRun, "", corev1.EventTypeNormal, ReasonCompleted, "every gated node is updated; pools, selectors and labels are restored")
		} else {
			p.st.Phase = nodegatev1alpha1.RunRestoring
		}
		return
	}
	if p.st.Phase != nodegatev1alpha1.RunAborted {
		switch {
		case p.st.PausedGeneration != 0 || p.run.Spec.Paused:
			p.st.Phase = nodegatev1alpha1.RunPaused
		case p.waitReason != "" && len(p.inFlight()) == 0:
			p.st.Phase = nodegatev1alpha1.RunWaiting
		default:
			p.st.Phase = nodegatev1alpha1.RunProgressing
		}
	} else {
		p.restore()
	}
}

const roundPassedWhileUpdating = "; every gated node has passed the gate, and the pools are restored once it completes"

func (p *planner) isSource(pool string) bool {
	for _, s := range p.sources {
		if s == pool {
			return true
		}
	}
	return false
}

// validate resolves the run's references and checks that gating is safe.
func (p *planner) validate() bool {
	block := func(reason, format string, args ...any) bool {
		p.blockReason, p.blockMsg = reason, fmt.Sprintf(format, args...)
		return false
	}
	ns := p.run.Namespace
	ref := func(r nodegatev1alpha1.ObjectReference) string {
		if r.Namespace == "" {
			return ns + "/" + r.Name
		}
		return r.Namespace + "/" + r.Name
	}
	rules := map[string]*nodegatev1alpha1.MutexRule{}
	for i := range p.in.Rules {
		r := &p.in.Rules[i]
		rules[r.Namespace+"/"+r.Name] = r
	}
	p.rules = nil
	for _, r := range p.run.Spec.MutexRules {
		rule, ok := rules[ref(r)]
		if !ok {
			return block(ReasonMissingRule, "MutexRule %s does not exist", ref(r))
		}
		if reason, msg := ruleProblem(rule, p.in.JobNamespaces); reason != "" {
			return block(reason, "MutexRule %s: %s", ref(r), msg)
		}
		p.rules = append(p.rules, rule)
	}
	targets := map[string]*nodegatev1alpha1.MutexTarget{}
	for i := range p.in.Targets {
		t := &p.in.Targets[i]
		targets[t.Namespace+"/"+t.Name] = t
	}
	seen := map[string]bool{}
	p.sources = nil
	for _, r := range p.run.Spec.MutexTargets {
		t, ok := targets[ref(r)]
		if !ok {
			return block(ReasonMissingTarget, "MutexTarget %s does not exist", ref(r))
		}
		for _, pool := range t.Spec.MachineConfigPools {
			if !seen[pool] {
				seen[pool] = true
				p.sources = append(p.sources, pool)
			}
		}
	}
	sort.Strings(p.sources)
	if _, err := window.FromAPI(p.run.Spec.MaintenanceWindows); err != nil {
		return block(ReasonInvalidWindows, "spec.%v", err)
	}
	for _, s := range p.sources {
		if len(p.in.GatedPools) > 0 && !slices.Contains(p.in.GatedPools, s) {
			// node-gate may delete only the gate pools of these: a run that
			// made another could never be finalized.
			return block(ReasonPoolNotGated, "MachineConfigPool %s is not one of the pools node-gate may gate %v (the chart's gatedPools)", s, p.in.GatedPools)
		}
		pool, ok := p.pools[s]
		if !ok {
			return block(ReasonMissingPool, "MachineConfigPool %s does not exist", s)
		}
		if len(s) > 63-len(GatePoolSuffix) {
			return block(ReasonPoolNameTooLong, "MachineConfigPool name %s is longer than %d characters: it must fit in a label value with its gate suffix", s, 63-len(GatePoolSuffix))
		}
		if p.canary == s {
			return block(ReasonCanaryMismatch, "spec.canary.name %s is one of the gated pools", s)
		}
		gate := p.pools[p.gatePoolName(s)]
		if p.canary == "" && gate != nil && gate.Labels[GatePoolLabel] != s {
			return block(ReasonGatePoolNameTaken, "MachineConfigPool %s exists and was not created by node-gate for %s", gate.Name, s)
		}
		if p.canary != "" {
			if gate == nil {
				return block(ReasonMissingPool, "canary MachineConfigPool %s does not exist", p.canary)
			}
			if !sameSelector(gate.Spec.MachineConfigSelector, pool.Spec.MachineConfigSelector) {
				return block(ReasonCanaryMismatch, "canary pool %s selects other MachineConfigs than %s: a node moved into it would get another configuration (and reboot again on its way back)", p.canary, s)
			}
		}
	}
	for _, o := range p.in.OtherRuns {
		for _, pool := range o.Pools {
			if !p.isSource(pool) {
				continue
			}
			mine := p.run.CreationTimestamp.Time
			if o.Created.Before(mine) || (o.Created.Equal(mine) && o.Name < p.run.Namespace+"/"+p.run.Name) {
				return block(ReasonPoolClaimed, "MachineConfigPool %s is gated by MutexRunConfig %s, created first", pool, o.Name)
			}
		}
	}
	_, errs := p.membership()
	var two []string
	for n, err := range errs {
		if p.selectedBySource(p.nodes[n]) {
			two = append(two, fmt.Sprintf("%s %v", n, err))
		}
	}
	if len(two) > 0 {
		sort.Strings(two)
		return block(ReasonTwoCustomPools, "nodes the machine-config operator cannot place: %s", strings.Join(two, "; "))
	}
	if masters := p.mastersSelected(); len(masters) > 0 {
		return block(ReasonGateSelectsMasters, "control-plane nodes %s match a gated pool's node selector; node-gate does not gate control-plane nodes (compact cluster)", strings.Join(masters, ", "))
	}
	return true
}

// selectedBySource: a gated pool's (original) node selector selects the node.
func (p *planner) selectedBySource(n *corev1.Node) bool {
	for _, s := range p.sources {
		sel := p.pools[s].Spec.NodeSelector
		if rec := p.poolRecord(s); rec != nil && rec.OriginalNodeSelector != nil {
			sel = rec.OriginalNodeSelector
		}
		if selects(sel, withoutRelease(n.Labels)) {
			return true
		}
	}
	return false
}

// mastersSelected lists control-plane nodes a gated pool's selector (or the
// release label) would select.
func (p *planner) mastersSelected() []string {
	master := p.pools[MasterPool]
	if master == nil {
		return nil
	}
	sel := poolSelector(master.Spec.NodeSelector)
	var out []string
	for _, n := range p.in.Nodes {
		if !sel.Matches(labels.Set(withoutRelease(n.Labels))) {
			continue
		}
		if p.isSource(n.Labels[ReleaseLabel]) || p.selectedBySource(&n) {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}

// upToDate: the node runs its source pool's target (or the gate pool's,
// whose content is the same).
func (p *planner) upToDate(n *corev1.Node, source string) bool {
	cur := n.Annotations[mcostate.CurrentConfig]
	if cur == "" {
		return false
	}
	if pool := p.pools[source]; pool != nil && cur == pool.Spec.Configuration.Name {
		return true
	}
	if gate := p.pools[p.gatePoolName(source)]; gate != nil && cur == gate.Spec.Configuration.Name && p.gateIsOurs(gate) {
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

func (p *planner) gateIsOurs(gate *mcfgv1.MachineConfigPool) bool {
	return p.canary != "" || gate.Labels[GatePoolLabel] != ""
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
	p.st.Nodes = nil
	p.st.PlannedOrder = nil
	p.st.PausedGeneration = 0
	p.st.Phase = nodegatev1alpha1.RunProgressing
	p.event(OnRun, "", corev1.EventTypeNormal, "RoundStarted", "gating the update of pools %s (run %s)", strings.Join(parts, ", "), p.st.RunID)
}

// arm pauses every gated pool, recording its original paused value first.
func (p *planner) arm() {
	for _, s := range p.sources {
		pool := p.pools[s]
		rec := p.ensurePoolRecord(s)
		if rec.OriginalPaused == nil {
			rec.OriginalPaused = ptr.To(pool.Spec.Paused)
		}
		if !pool.Spec.Paused {
			p.act(Action{Kind: SetPoolPaused, Pool: s, Paused: true})
			p.event(OnPool, s, corev1.EventTypeNormal, "PoolPaused", "paused pool %s so that its nodes update only through node-gate", s)
		}
	}
}

// gateMaxUnavailable is the maxUnavailable of the gate pools node-gate creates.
const gateMaxUnavailable = "100%"

// unlabelStrays removes the release label of a gated pool from every node
// that carries one while no round is active (so none is released).
func (p *planner) unlabelStrays() {
	for _, n := range p.in.Nodes {
		if v := n.Labels[ReleaseLabel]; v != "" && p.isSource(v) {
			p.act(Action{Kind: UnlabelNode, Node: n.Name, Pool: v})
			if r := p.record(n.Name); r != nil && terminal(r.Phase) && r.CompletionTime != nil && p.in.Now.Before(r.CompletionTime.Add(strayGrace)) {
				// A node that passed the gate in this round while the
				// control plane updates: its removal is on its way.
				p.wake(r.CompletionTime.Add(strayGrace).Sub(p.in.Now))
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
// custom source pools from selecting released nodes. It reports whether
// every gate pool exists with a rendered target.
func (p *planner) setUpGates() bool {
	ready := true
	for _, s := range p.sources {
		src := p.pools[s]
		rec := p.ensurePoolRecord(s)
		rec.GatePool = p.gatePoolName(s)
		if isCustom(s) {
			if rec.OriginalNodeSelector == nil {
				rec.OriginalNodeSelector = src.Spec.NodeSelector.DeepCopy()
				if rec.OriginalNodeSelector == nil {
					rec.OriginalNodeSelector = &metav1.LabelSelector{}
				}
			}
			want := sourceSelector(rec.OriginalNodeSelector)
			if !sameSelector(src.Spec.NodeSelector, want) {
				p.act(Action{Kind: SetPoolSelector, Pool: s, NodeSelector: want})
			}
		}
		gate := p.pools[rec.GatePool]
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
			// Created with 100%: node-gate alone limits how many nodes it
			// releases. A lower value, set by someone since, would have
			// the MCO hold nodes node-gate released (and counts).
			if mu := gate.Spec.MaxUnavailable; mu == nil || mu.String() != gateMaxUnavailable {
				p.act(Action{Kind: SetPoolMaxUnavailable, Pool: gate.Name, MaxUnavailable: ptr.To(intstr.FromString(gateMaxUnavailable))})
			}
		}
		if gate.Spec.Configuration.Name == "" {
			ready = false
		}
	}
	return ready
}

// plannedOrder sorts nodes as the MCO picks candidates: by zone (nodes
// without one last), then oldest first, then by name.
func (p *planner) sortNodes(names []string) {
	zone := func(n string) string { return p.nodes[n].Labels[corev1.LabelTopologyZone] }
	sort.SliceStable(names, func(i, j int) bool {
		a, b := p.nodes[names[i]], p.nodes[names[j]]
		za, zb := zone(names[i]), zone(names[j])
		if (za == "") != (zb == "") {
			return za != ""
		}
		if za != zb {
			return za < zb
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

func (p *planner) record(name string) *nodegatev1alpha1.NodeRecord {
	for i := range p.st.Nodes {
		if p.st.Nodes[i].Name == name {
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
		names := append([]string(nil), members[s]...)
		p.sortNodes(names)
		for _, n := range names {
			if recorded[n] {
				continue
			}
			recorded[n] = true
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
		case r.Phase == nodegatev1alpha1.NodePending && inPool[r.Name] != r.Pool:
			r.Phase = nodegatev1alpha1.NodeSkipped
			r.LastError = "the node left pool " + r.Pool
		case r.Phase == nodegatev1alpha1.NodePending && p.atSourceTarget(n, r.Pool) && n.Labels[ReleaseLabel] == "":
			r.Phase = nodegatev1alpha1.NodeSkipped
			r.LastError = "already runs the target configuration"
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

// gates decides whether a new node may start, and says why not.
func (p *planner) gates(cvUpdating, hold bool, holdMsg string) {
	defer func() { p.gatesClosed = p.waitReason != "" }()
	if p.waitReason != "" {
		return
	}
	switch {
	case p.st.PausedGeneration != 0:
		p.waitReason, p.waitMessage = ReasonHookFailed, "a hook failed; change the spec (for example toggle spec.paused) to resume"
	case p.run.Spec.Paused:
		p.waitReason, p.waitMessage = ReasonSpecPaused, "spec.paused is true"
	case hold && cvUpdating:
		p.waitReason, p.waitMessage = ReasonControlPlane, holdMsg
	case hold:
		p.waitReason, p.waitMessage = ReasonNotRendered, holdMsg
	}
	if p.waitReason != "" {
		return
	}
	if sched, err := window.FromAPI(p.run.Spec.MaintenanceWindows); err == nil && len(sched) > 0 {
		if !sched.Open(p.in.Now) {
			p.waitReason = ReasonOutsideWindow
			p.waitMessage = "no maintenance window is open"
			if next, ok := sched.NextOpen(p.in.Now); ok {
				p.waitMessage += "; the next opens at " + next.UTC().Format(time.RFC3339)
				p.wake(next.Sub(p.in.Now))
			}
			return
		}
	}
	if g := p.run.Spec.HealthGate; g != nil {
		if p.in.AlertsErr != nil {
			p.waitReason, p.waitMessage = ReasonAlertsUnavailable, "cannot read alerts: "+p.in.AlertsErr.Error()
			return
		}
		if names := blockingAlerts(g, p.in.Alerts); len(names) > 0 {
			p.waitReason, p.waitMessage = ReasonAlertsFiring, "alerts active: "+strings.Join(names, ", ")
		}
	}
}

func blockingAlerts(g *nodegatev1alpha1.HealthGate, as []alerts.Alert) []string {
	set := map[string]bool{}
	in := func(list []string, s string) bool {
		for _, x := range list {
			if x == s {
				return true
			}
		}
		return false
	}
	for _, a := range as {
		if a.Suppressed || (a.State == alerts.StatePending && !g.IncludePending) {
			continue
		}
		name := a.Name()
		if in(g.IgnoredAlertNames, name) || (len(g.AlertNames) > 0 && !in(g.AlertNames, name)) {
			continue
		}
		set[name] = true
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

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
			strays++
			p.held = append(p.held, r.Name)
			p.act(Action{Kind: UnlabelNode, Node: r.Name, Pool: n.Labels[ReleaseLabel]})
			p.event(OnNode, r.Name, corev1.EventTypeWarning, "StrayReleaseLabel", "node %s carries %s but has not started this round (run %s): removing the label; it is gated once the label is gone", r.Name, ReleaseLabel, p.st.RunID)
		}
	}
	for i := range p.st.Nodes {
		r := &p.st.Nodes[i]
		if r.Phase != nodegatev1alpha1.NodePending && !terminal(r.Phase) {
			p.step(r)
			continue
		}
		// A node that passed (or left the run) in an earlier pass must not
		// stay in the gate pool: the removal may have been lost to a restart.
		if n := p.nodes[r.Name]; terminal(r.Phase) && n != nil && n.Labels[ReleaseLabel] == r.Pool {
			p.act(Action{Kind: UnlabelNode, Node: r.Name, Pool: r.Pool})
			// The removal of the pass that finished it is normally seen
			// within seconds; a label still there after strayGrace was
			// refused or put back, and holds releases: say so.
			if r.CompletionTime == nil || !p.in.Now.Before(r.CompletionTime.Add(strayGrace)) {
				p.held = append(p.held, r.Name)
			} else {
				p.wake(r.CompletionTime.Add(strayGrace).Sub(p.in.Now))
			}
		}
	}
	if p.waitReason != "" || p.st.Phase == nodegatev1alpha1.RunAborted {
		return
	}
	limit := p.maxUnavailable()
	for i := range p.st.Nodes {
		r := &p.st.Nodes[i]
		if r.Phase != nodegatev1alpha1.NodePending {
			continue
		}
		if n := p.nodes[r.Name]; n != nil && n.Labels[ReleaseLabel] != "" {
			continue // a stray, held above
		}
		if p.st.PausedGeneration != 0 || p.st.Phase == nodegatev1alpha1.RunAborted {
			return
		}
		// Starting a node runs its pre-update hooks; its release checks
		// occupied again. A node whose record finished and whose label
		// removal is on its way does not hold the start.
		busy := p.unsettled()
		for _, n := range p.inFlight() {
			busy[n] = true
		}
		for _, n := range p.held {
			busy[n] = true
		}
		// With lookahead, that many more nodes per release slot run their
		// pre-update hooks ahead of their turn; releases stay within
		// maxUnavailable.
		if len(busy) >= limit*(1+p.lookahead()) {
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
		p.event(OnNode, r.Name, corev1.EventTypeNormal, "GateStarted", "node-gate started gating node %s (pool %s, run %s)", r.Name, r.Pool, p.st.RunID)
		p.step(r)
	}
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

// step moves one node as far as it can go now.
func (p *planner) step(r *nodegatev1alpha1.NodeRecord) {
	for guard := 0; guard < 64; guard++ {
		before := r.Phase
		switch r.Phase {
		case nodegatev1alpha1.NodePreHooks:
			if !p.runHooks(r, nodegatev1alpha1.StagePre) {
				return
			}
			if p.retargeted(r) {
				// Its pool rendered new content while the hooks ran.
				p.rehold(r)
				continue
			}
			if p.run.Spec.Paused || p.st.PausedGeneration != 0 || p.st.Phase == nodegatev1alpha1.RunAborted {
				return
			}
			if p.lookahead() > 0 && p.gatesClosed {
				// Hooks may run ahead of a node's turn; its release still
				// waits for the window, the health gate and the update hold.
				return
			}
			gate := p.pools[p.gatePoolName(r.Pool)]
			if gate == nil || gate.Spec.Configuration.Name == "" {
				return
			}
			if busy := p.occupied(r.Name); len(busy) >= p.maxUnavailable() {
				if p.waitReason == "" {
					p.waitReason, p.waitMessage = ReasonNodesUnavailable, fmt.Sprintf("node %s waits to be released: nodes count against maxUnavailable: %s", r.Name, strings.Join(sortedSet(busy), ", "))
				}
				// A node whose record is finished (or a stray) may still
				// carry the label, its removal not yet seen or lost to a
				// restart, or still be updating: the MCO counts it. Hold
				// this one until it is gone, so that never more than
				// maxUnavailable nodes are released at once.
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
			gate := p.pools[p.gatePoolName(r.Pool)]
			if gate == nil || !mcostate.UpdatedTo(n, gate.Spec.Configuration.Name) {
				if p.retargeted(r) && settled(n) {
					// The pool rendered new content after the hooks ran
					// and the MCO has not started the node: hold it again.
					p.rehold(r)
					continue
				}
				if n.Labels[ReleaseLabel] != r.Pool {
					// Released in this pass, or someone removed the label:
					// (re)label; the node is ours until the MCO updated it.
					p.act(Action{Kind: LabelNode, Node: r.Name, Pool: r.Pool})
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
			p.event(OnNode, r.Name, corev1.EventTypeNormal, "NodeUpdated", "node %s runs %s, is Ready and schedulable", r.Name, gate.Spec.Configuration.Name)
			if p.retargeted(r) {
				// The MCO took the new render before node-gate saw it: say
				// so, the one case a pause of the gate pool cannot close.
				p.event(OnNode, r.Name, corev1.EventTypeWarning, "UpdatedPastHooks", "node %s was updated to %s, rendered after its pre-update hooks ran for %s: the machine-config operator started it before node-gate saw the new render", r.Name, gate.Spec.Configuration.Name, r.HooksTarget)
			}
		case nodegatev1alpha1.NodeUpdated:
			r.Phase = nodegatev1alpha1.NodePostHooks
		case nodegatev1alpha1.NodePostHooks:
			if !p.runHooks(r, nodegatev1alpha1.StagePost) {
				return
			}
			if gate := p.pools[p.gatePoolName(r.Pool)]; gate == nil || !mcostate.UpdatedTo(p.nodes[r.Name], gate.Spec.Configuration.Name) {
				// The gate pool rendered a new target meanwhile: the node
				// is to be updated (rebooted) again, and removing the label
				// now would take it out of the gate pool mid-update. It
				// goes back to its pre-update hooks (it keeps the label;
				// holdGates keeps the gate pool paused meanwhile), then is
				// released again, and its post-update hooks run after.
				p.admit(r)
				p.event(OnNode, r.Name, corev1.EventTypeWarning, "GateRetargeted", "node %s no longer runs its gate pool's target: its hooks run again before it is updated again", r.Name)
				continue
			}
			if p.nodes[r.Name].Labels[ReleaseLabel] != "" {
				p.act(Action{Kind: UnlabelNode, Node: r.Name, Pool: r.Pool})
			}
			r.Phase = nodegatev1alpha1.NodeCompleted
			r.CompletionTime = ptr.To(p.now)
			p.event(OnNode, r.Name, corev1.EventTypeNormal, "GateCompleted", "node %s passed the gate: updated and its post-update hooks are done", r.Name)
		default:
			return
		}
		if r.Phase == before {
			return
		}
	}
}

// occupied lists the nodes other than except that are, or may at once be,
// unavailable as the MCO counts them: those that carry the release label of
// a gated pool as the cache shows them (a removal this pass decided is not
// counted as done: it may be lost), those this pass labels, those released
// in this round (a label added in an earlier pass may not be in the cache
// yet), and every gated node the MCD has not finished (desiredConfig !=
// currentConfig, or a state other than Done), labelled or not: a node whose
// label is gone may still be updating.
func (p *planner) occupied(except string) map[string]bool {
	seen := map[string]bool{}
	add := func(n string) {
		if n != except {
			seen[n] = true
		}
	}
	for _, n := range p.in.Nodes {
		if v := n.Labels[ReleaseLabel]; v != "" && p.isSource(v) {
			add(n.Name)
		}
	}
	for _, a := range p.res.Actions {
		if a.Kind == LabelNode {
			add(a.Node)
		}
	}
	for i := range p.st.Nodes {
		if releasedPhase(&p.st.Nodes[i]) {
			add(p.st.Nodes[i].Name)
		}
	}
	for n := range p.unsettled() {
		add(n)
	}
	return seen
}

// unsettled lists the gated nodes the MCD has not finished: desiredConfig
// != currentConfig, or a state other than Done.
func (p *planner) unsettled() map[string]bool {
	out := map[string]bool{}
	for _, names := range p.members {
		for _, n := range names {
			if a := p.nodes[n].Annotations; a[mcostate.DesiredConfig] != a[mcostate.CurrentConfig] ||
				(a[mcostate.State] != "" && a[mcostate.State] != mcostate.StateDone) {
				out[n] = true
			}
		}
	}
	return out
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
	if n.Spec.Unschedulable {
		msg += "; the node is cordoned, and the machine-config operator does not update a cordoned node"
		r.LastError = "node is cordoned: the machine-config operator will not start its update until it is uncordoned"
	}
	p.event(OnNode, r.Name, corev1.EventTypeNormal, "NodeReleased", "%s", msg)
}

// runHooks drives the node's hooks of one stage, one at a time in order. It
// reports whether every hook of the stage is done (succeeded or ignored).
func (p *planner) runHooks(r *nodegatev1alpha1.NodeRecord, stage nodegatev1alpha1.HookStage) bool {
	for i := range r.Hooks {
		hr := &r.Hooks[i]
		if hr.Stage != stage || hr.Phase == nodegatev1alpha1.HookSucceeded || hr.Phase == nodegatev1alpha1.HookIgnored {
			continue
		}
		if hr.Phase == nodegatev1alpha1.HookFailed {
			return false
		}
		h, ok := p.findHook(*hr)
		if !ok {
			// The rule changed under the run: a hook that no longer exists
			// has nothing left to run.
			hr.Phase = nodegatev1alpha1.HookIgnored
			hr.LastError = "the hook was removed from its rule"
			continue
		}
		if hr.Phase == nodegatev1alpha1.HookPending {
			if p.st.Phase == nodegatev1alpha1.RunAborted || (p.st.PausedGeneration != 0) {
				return false
			}
			p.createAttempt(r, hr, h)
			return false
		}
		job := p.jobs[h.rule.Spec.JobNamespace+"/"+hr.JobName]
		state, why := stateOf(job)
		if state == jobRunning || state == jobMissing {
			if t := timeoutOf(h.spec); t > 0 && hr.StartTime != nil {
				left := hr.StartTime.Add(t).Sub(p.in.Now)
				if left > 0 {
					p.wake(left)
				} else {
					state, why = jobFailed, fmt.Sprintf("timed out after %s", t)
				}
			}
		}
		switch state {
		case jobMissing:
			// Not in the cache yet, or deleted: creating it again under the
			// same name is idempotent.
			p.act(Action{Kind: CreateJob, Job: p.buildJob(r, h, hr.Attempts)})
			return false
		case jobRunning:
			return false
		case jobComplete:
			hr.Phase = nodegatev1alpha1.HookSucceeded
			hr.CompletionTime = ptr.To(p.now)
			p.event(OnNode, r.Name, corev1.EventTypeNormal, "HookSucceeded", "hook %s/%s (%s) for node %s succeeded (Job %s)", hr.Rule, hr.Name, stage, r.Name, hr.JobName)
			continue
		case jobFailed:
			hr.LastError = why
			r.LastError = fmt.Sprintf("hook %s/%s attempt %d: %s", hr.Rule, hr.Name, hr.Attempts, why)
			if hr.Attempts-hr.AttemptsBefore <= h.spec.Retries {
				p.event(OnNode, r.Name, corev1.EventTypeWarning, "HookRetried", "hook %s/%s for node %s failed (%s); retrying", hr.Rule, hr.Name, r.Name, why)
				p.createAttempt(r, hr, h)
				return false
			}
			switch h.spec.FailurePolicy {
			case nodegatev1alpha1.FailureIgnore:
				hr.Phase = nodegatev1alpha1.HookIgnored
				hr.CompletionTime = ptr.To(p.now)
				p.event(OnNode, r.Name, corev1.EventTypeWarning, "HookFailedIgnored", "hook %s/%s for node %s failed (%s); its failurePolicy is Ignore", hr.Rule, hr.Name, r.Name, why)
				continue
			case nodegatev1alpha1.FailureAbort:
				hr.Phase = nodegatev1alpha1.HookFailed
				r.Phase = nodegatev1alpha1.NodeFailed
				p.st.Phase = nodegatev1alpha1.RunAborted
				p.st.PausedGeneration = p.run.Generation
				p.event(OnRun, "", corev1.EventTypeWarning, ReasonAborted, "hook %s/%s for node %s failed (%s); its failurePolicy is Abort: restoring the pools", hr.Rule, hr.Name, r.Name, why)
				return false
			default:
				hr.Phase = nodegatev1alpha1.HookFailed
				r.Phase = nodegatev1alpha1.NodeFailed
				p.st.PausedGeneration = p.run.Generation
				p.event(OnRun, "", corev1.EventTypeWarning, ReasonHookFailed, "hook %s/%s for node %s failed (%s): the run is paused; change the spec to resume", hr.Rule, hr.Name, r.Name, why)
				p.event(OnNode, r.Name, corev1.EventTypeWarning, ReasonHookFailed, "hook %s/%s failed: %s", hr.Rule, hr.Name, why)
				return false
			}
		}
	}
	return true
}

func (p *planner) createAttempt(r *nodegatev1alpha1.NodeRecord, hr *nodegatev1alpha1.HookRecord, h hook) {
	hr.Attempts++
	hr.Phase = nodegatev1alpha1.HookRunning
	hr.StartTime = ptr.To(p.now)
	job := p.buildJob(r, h, hr.Attempts)
	hr.JobName = job.Name
	p.act(Action{Kind: CreateJob, Job: job})
	p.event(OnNode, r.Name, corev1.EventTypeNormal, "HookStarted", "started hook %s/%s (%s) for node %s: Job %s/%s", hr.Rule, hr.Name, h.stage, r.Name, job.Namespace, job.Name)
	if t := timeoutOf(h.spec); t > 0 {
		p.wake(t)
	}
}

func (p *planner) buildJob(r *nodegatev1alpha1.NodeRecord, h hook, attempt int32) *batchv1.Job {
	target := p.updateTarget(r.Pool)
	owner := metav1.NewControllerRef(p.run, nodegatev1alpha1.GroupVersion.WithKind("MutexRunConfig"))
	return BuildJob(h.spec, h.rule, h.stage, JobParams{
		Node: r.Name, Pool: r.Pool, TargetConfig: target, TargetVersion: targetVersion(p.in.ClusterVersion),
		RunID: p.st.RunID, RunKey: p.runKey, Owner: owner, Attempt: attempt,
	})
}

// restore puts back everything the run changed, from the recorded originals,
// and reports whether nothing is left to restore.
func (p *planner) restore() bool {
	done := true
	released := map[string]bool{}
	for _, n := range p.in.Nodes {
		v := n.Labels[ReleaseLabel]
		if v == "" || p.poolRecord(v) == nil {
			continue
		}
		released[v] = true
		p.act(Action{Kind: UnlabelNode, Node: n.Name, Pool: v})
		done = false
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
			// Delete the gate pool once no node is released into it: a pool
			// deleted under its nodes leaves them without a target.
			if !released[rec.Name] {
				p.act(Action{Kind: DeletePool, Pool: gate.Name})
			}
		}
	}
	if done {
		for i := range p.st.Pools {
			rec := &p.st.Pools[i]
			rec.OriginalPaused, rec.OriginalNodeSelector = nil, nil
			rec.OriginalGateNodeSelector, rec.OriginalGatePaused = nil, nil
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

// finishStatus derives the summary, progress and conditions.
func (p *planner) finishStatus() {
	st := p.st
	var sum nodegatev1alpha1.Summary
	st.CurrentNodes = nil
	for _, r := range st.Nodes {
		sum.Total++
		switch r.Phase {
		case nodegatev1alpha1.NodePending:
			sum.Pending++
		case nodegatev1alpha1.NodeCompleted:
			sum.Succeeded++
		case nodegatev1alpha1.NodeSkipped:
			sum.Skipped++
		case nodegatev1alpha1.NodeFailed:
			sum.Failed++
			st.CurrentNodes = append(st.CurrentNodes, r.Name)
		default:
			sum.InProgress++
			st.CurrentNodes = append(st.CurrentNodes, r.Name)
		}
	}
	st.Summary = sum
	st.Progress = fmt.Sprintf("%d/%d", sum.Succeeded, sum.Total-sum.Skipped)

	// A hook that failed in this pass paused the run after the gates were
	// evaluated: say so, the CRD requires a reason on every condition.
	if p.waitReason == "" && (st.Phase == nodegatev1alpha1.RunPaused || st.Phase == nodegatev1alpha1.RunWaiting) {
		switch {
		case st.PausedGeneration != 0:
			p.waitReason, p.waitMessage = ReasonHookFailed, "a hook failed; change the spec (for example toggle spec.paused) to resume"
		case p.run.Spec.Paused:
			p.waitReason, p.waitMessage = ReasonSpecPaused, "spec.paused is true"
		default:
			p.waitReason = string(st.Phase)
		}
	}
	gen := p.run.Generation
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		// A message over the API's limit would have the whole status write
		// refused (a list of thousands of nodes can be).
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: truncate.String(msg, conditionMessageLimit),
			ObservedGeneration: gen, LastTransitionTime: p.now})
	}
	if p.blockReason != "" {
		set(CondBlocked, metav1.ConditionTrue, p.blockReason, p.blockMsg)
	} else {
		set(CondBlocked, metav1.ConditionFalse, ReasonAsExpected, "")
	}
	switch {
	case st.Phase == nodegatev1alpha1.RunPaused && st.PausedGeneration != 0:
		set(CondPaused, metav1.ConditionTrue, ReasonHookFailed, p.waitMessage)
	case p.run.Spec.Paused:
		set(CondPaused, metav1.ConditionTrue, ReasonSpecPaused, "spec.paused is true")
	default:
		set(CondPaused, metav1.ConditionFalse, ReasonAsExpected, "")
	}
	var failed []string
	for _, r := range st.Nodes {
		if r.Phase == nodegatev1alpha1.NodeFailed {
			failed = append(failed, fmt.Sprintf("node %s: %s", r.Name, r.LastError))
		}
	}
	var held []string
	for _, n := range p.held {
		held = append(held, fmt.Sprintf("node %s carries %s without being released in this round: node-gate removes the label and holds the node until it is gone (something that puts it back holds the run)", n, ReleaseLabel))
	}
	if bad := append(append(failed, p.degraded...), held...); len(bad) > 0 {
		reason := ReasonHookFailed
		switch {
		case len(failed) > 0:
		case len(p.degraded) > 0:
			reason = ReasonNodeDegraded
		default:
			reason = ReasonStrayReleaseLabel
		}
		set(CondDegraded, metav1.ConditionTrue, reason, strings.Join(bad, "; "))
	} else {
		set(CondDegraded, metav1.ConditionFalse, ReasonAsExpected, "")
	}
	switch st.Phase {
	case nodegatev1alpha1.RunProgressing, nodegatev1alpha1.RunRestoring:
		reason, msg := ReasonNodesUpdating, fmt.Sprintf("%s nodes passed the gate; in progress: %s", st.Progress, strings.Join(st.CurrentNodes, ", "))
		if st.Phase == nodegatev1alpha1.RunRestoring {
			reason, msg = ReasonRestoring, "restoring the pools, selectors and labels the run changed"
		}
		if p.waitReason != "" && st.Phase == nodegatev1alpha1.RunProgressing {
			msg += "; no new node starts: " + p.waitMessage
		}
		set(CondProgressing, metav1.ConditionTrue, reason, msg)
	case nodegatev1alpha1.RunWaiting, nodegatev1alpha1.RunPaused:
		set(CondProgressing, metav1.ConditionFalse, p.waitReason, p.waitMessage)
	default:
		set(CondProgressing, metav1.ConditionFalse, string(orDefault(st.Phase, nodegatev1alpha1.RunIdle)), "")
	}
	switch st.Phase {
	case nodegatev1alpha1.RunIdle, nodegatev1alpha1.RunCompleted, "":
		set(CondReady, metav1.ConditionTrue, string(orDefault(st.Phase, nodegatev1alpha1.RunIdle)), "no gated update is in progress")
	default:
		set(CondReady, metav1.ConditionFalse, string(st.Phase), "")
	}
	if st.Phase == "" {
		st.Phase = nodegatev1alpha1.RunIdle
	}
}

func orDefault(ph, def nodegatev1alpha1.RunPhase) nodegatev1alpha1.RunPhase {
	if ph == "" {
		return def
	}
	return ph
}
