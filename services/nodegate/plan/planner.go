package plan

import (
	"fmt"
	"sort"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/requeue"
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
	ReasonOutsideWindow      = gating.ReasonOutsideWindow // read by the upgrade-scheduler
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
	ReasonServiceAccount     = "ServiceAccountNotAllowed"
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
	p.res.ActionsFirst = p.actionsFirst()
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
	// poolOf is each node's pool by the user's pool selectors (membership),
	// set by validate: computed once a pass, it walks every node.
	poolOf map[string]string
	pools  map[string]*mcfgv1.MachineConfigPool
	nodes  map[string]*corev1.Node
	jobs   map[string]*batchv1.Job

	// waitReason/waitMessage say why no new node starts (empty: none).
	waitReason, waitMessage string
	// slotWait says which node, its hooks done, waits for a release slot,
	// and what fills them (empty: none). It holds no new start: with
	// lookahead, nodes whose hooks ran queue for slots by design, and a
	// start held until the queue is empty would refill it in one burst
	// of Jobs that the next wave of finished nodes then waits for.
	slotWait string
	// gatesClosed: a gate on starting nodes is closed (a pause, the update
	// hold, no window, alerts). With lookahead it holds releases too.
	gatesClosed bool
	// heldAgain are the nodes released ahead of their turn that this pass
	// takes back (ahead.go): their release marks are void from now on.
	heldAgain map[string]bool
	// heldByGates are those of them taken back because a gate closed.
	heldByGates []string
	// aborted: a hook with failurePolicy Abort failed (in this pass, or
	// before it with the spec unchanged since).
	aborted               bool
	blockReason, blockMsg string
	degraded              []string
	// held are the nodes that carry the release label without having been
	// released in this round: node-gate removes the label and holds them.
	held []string
	// unheld are the nodes that must be held and are not while their pool
	// runs (findUnheld).
	unheld []string
	// members are the gated nodes by source pool.
	members map[string][]string
	// unsettledNodes and clusterOccupied: see unsettled and
	// occupiedByCluster (nil until first asked for, after members is set).
	unsettledNodes, clusterOccupied map[string]bool
	releaseMarked                   []string
	// recIndex maps a node to its record's index in st.Nodes (record).
	recIndex      map[string]int
	recIndexLen   int
	recIndexStale bool

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
	for _, j := range in.Jobs {
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

// actionsFirst: every action of the pass is a hook Job or a hold label, and
// the pass records no pool original (see Result.ActionsFirst). With a
// canary, or while the run is deleted, the status is written first.
func (p *planner) actionsFirst() bool {
	if !p.holdsInGatePool() || p.run.DeletionTimestamp != nil || len(p.res.Actions) == 0 {
		return false
	}
	for _, a := range p.res.Actions {
		if a.Kind != CreateJob && !(a.Label == HoldLabel && (a.Kind == LabelNode || a.Kind == UnlabelNode)) {
			return false
		}
	}
	return equality.Semantic.DeepEqual(p.in.Run.Status.Pools, p.st.Pools)
}

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

// plan decides the pass and derives the run's phase once, from what the
// pass found (derivePhase); the Completed Event follows the phase.
func (p *planner) plan() {
	f := p.decide()
	prev := p.in.Run.Status.Phase
	p.st.Phase = derivePhase(prev, p.st.RunID != "", f)
	if p.st.Phase == nodegatev1alpha1.RunCompleted && prev != nodegatev1alpha1.RunCompleted {
		sum, _ := summarize(p.st.Nodes)
		p.event(OnRun, "", corev1.EventTypeNormal, ReasonCompleted, "every gated node is updated (%d passed the gate, %d skipped); pools, selectors and labels are restored; each node's passage (hooks, Jobs, times) is in node-gate's log", sum.Succeeded, sum.Skipped)
	}
}

// decide takes the pass's decisions (actions, records, wait reasons) and
// returns the facts the phase is derived from.
func (p *planner) decide() facts {
	if p.run.DeletionTimestamp != nil {
		if p.restore() {
			p.res.Finalized = true
		}
		return facts{deleting: true}
	}
	if !p.validate() {
		// Nothing changes while blocked: a run that has not started changed
		// nothing, and one that has keeps its pools paused (unpausing them
		// would let the update through ungated). Deleting the run restores.
		p.event(OnRun, "", corev1.EventTypeWarning, p.blockReason, "%s", p.blockMsg)
		return facts{blocked: true}
	}

	members := map[string][]string{} // source pool -> nodes
	for _, n := range p.in.Nodes {
		src := p.poolOf[n.Name]
		if v := n.Labels[ReleaseLabel]; v != "" && p.isSource(v) {
			src = v
		}
		if v := n.Labels[HoldLabel]; v != "" && p.isSource(v) {
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

	if p.in.Run.Status.Phase == nodegatev1alpha1.RunAborted && p.run.Generation <= p.st.PausedGeneration {
		// A spec change after an abort resumes the round where it stopped
		// (resumeIfChanged retries the failed hook); completed nodes stay
		// done. Until then the run stays restored.
		p.restore()
		p.aborted = true
		return facts{aborted: true}
	}

	active := p.roundActive()
	if !active && len(pending) > 0 && p.newTargets() {
		p.startRound()
		active = true
	}
	// The update hold keeps the run armed after ClusterVersion completed too:
	// a pool whose target the cache shows rendered for an older release (its
	// object behind ClusterVersion's, as caches of different kinds lag apart
	// after a broken watch) is about to show the new one, and restoring now
	// would hand every node to the MCO ungated.
	armed := active || cvUpdating || hold || len(pending) > 0 && p.newTargets()
	if !armed {
		restored := p.restore()
		if len(pending) > 0 {
			// Nodes behind their pool's target that this run already
			// gated in its last round (the rebootless return to the
			// source pool, which the MCO does on its own).
			p.waitReason, p.waitMessage = ReasonNothingToDo, "no update is pending beyond the last completed round"
		}
		return facts{restored: restored}
	}
	p.arm()
	if !active {
		// No round is active, so no node is released: every release label
		// left over (a removal of the last round lost to a restart) must go
		// now, and the gate pools stay paused, before the pools render the
		// new release. Otherwise the MCO moves such a node in the gate pool
		// to the new target without this round's pre-update hooks.
		p.unlabelStrays()
		if p.holdsInGatePool() {
			// Every node is parked in the gate pool before the pools
			// render the update (while the update hold is on).
			p.setUpGates()
			mustBeHeld := p.holdNodes(false, hold)
			p.driveSources(false, hold, mustBeHeld)
			p.pauseGatePools()
		} else {
			p.holdGates(true)
		}
		p.waitReason, p.waitMessage = ReasonControlPlane, cvMsg
		switch {
		case hold:
			p.waitMessage = holdMsg
		case p.st.RunID != "" && len(p.st.Nodes) > 0:
			p.waitMessage = cvMsg + roundPassedWhileUpdating
		}
		return facts{armed: true, controlPlane: true}
	}
	if !p.setUpGates() {
		p.waitReason, p.waitMessage = ReasonWaitingForGatePool, "waiting for the gate pools to exist and render their configuration"
	}
	p.syncRecords(members)
	p.resumeIfChanged()
	p.gates(cvUpdating, hold, holdMsg)
	if p.holdsInGatePool() {
		p.findUnheld(hold)
	}
	p.advance()
	p.reportHeldAgain()
	open := p.hasOpenRecords()
	switch {
	case !p.holdsInGatePool():
		p.holdGates(hold)
	case open || len(pending) > 0 && p.newTargets():
		mustBeHeld := p.holdNodes(true, hold)
		p.driveSources(true, hold, mustBeHeld)
		p.pauseGatePools()
	case cvUpdating:
		mustBeHeld := p.holdNodes(false, hold)
		p.driveSources(false, hold, mustBeHeld)
		p.pauseGatePools()
	}
	if !open && len(pending) > 0 && p.newTargets() {
		// The pools rendered newer content during the round. Restoring
		// now would let the MCO give it to the nodes that passed the
		// gate, without hooks: they are held (the source pools paused
		// until they are), and the next pass gates it in a new round.
		p.wake(time.Second)
		return facts{armed: true, newRound: true}
	}
	if !open && cvUpdating {
		// Every gated node passed while the control plane still updates
		// (holdUntil Rendered). The update may render new content for the
		// pools before it completes: they stay paused until it does, so that
		// such content is gated too, and are restored then.
		p.waitReason, p.waitMessage = ReasonControlPlane, cvMsg+roundPassedWhileUpdating
		return facts{armed: true, controlPlane: true}
	}
	if !open {
		return facts{armed: true, restored: p.restore()}
	}
	if p.aborted {
		p.restore()
	}
	return facts{
		armed:     true,
		roundOpen: true,
		aborted:   p.aborted,
		paused:    p.st.PausedGeneration != 0 || p.run.Spec.Paused,
		waiting:   p.waitReason != "" && len(p.inFlight()) == 0,
	}
}

const roundPassedWhileUpdating = "; every gated node has passed the gate, and the pools are restored once it completes"
