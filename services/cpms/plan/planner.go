package plan

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/nodes"
	"github.com/upshift-io/upshift/libs/requeue"
)

// IndexState is the derived state of one index.
type IndexState string

const (
	// Stable: one live machine, up to date and ready; nothing deleting.
	Stable IndexState = "Stable"
	// ReplacementRequested: the index needs a new machine (its machine is
	// outdated, or deleted, or missing) and none exists yet.
	ReplacementRequested IndexState = "ReplacementRequested"
	// WaitingForDeletion: OnDelete, the machine is outdated and the
	// controller waits for a person to delete it.
	WaitingForDeletion IndexState = "WaitingForDeletion"
	// ReplacementProvisioning: an up-to-date replacement exists and is not
	// ready yet.
	ReplacementProvisioning IndexState = "ReplacementProvisioning"
	// ReplacementReady: the replacement is ready; the old machine (or a
	// surplus one) is still there and not yet being deleted.
	ReplacementReady IndexState = "ReplacementReady"
	// OldDeleting: the old machine is being deleted (typically held by the
	// etcd operator's hook until the new member has taken over).
	OldDeleting IndexState = "OldDeleting"
	// Blocked: the index needs work the controller will not do now; Reason
	// says why.
	Blocked IndexState = "Blocked"
)

// IndexStates lists every state, for metrics that reset gauges.
var IndexStates = []IndexState{Stable, ReplacementRequested, WaitingForDeletion, ReplacementProvisioning, ReplacementReady, OldDeleting, Blocked}

// IndexReport is one index as this pass sees it.
type IndexReport struct {
	Index int
	State IndexState
	// Reason is why the index waits or is blocked; empty when moving.
	Reason string
	// FailureDomain is where the index belongs ("<none>" without).
	FailureDomain string
	// Machines in the index, oldest first.
	Machines []string
	// Replacement is the up-to-date live machine while the index is being
	// replaced.
	Replacement string
	// Diff summarises how the index's outdated machine differs from the template.
	Diff string
	// DeletingSince is the deletion time of the index's oldest deleting
	// machine; HeldByEtcdHook is true while that machine still carries the
	// etcd quorum hook.
	DeletingSince  *time.Time
	HeldByEtcdHook bool
}

// Condition reasons.
const (
	ReasonAllReplicasAvailable = "AllReplicasAvailable"
	ReasonUnavailableReplicas  = "UnavailableReplicas"

	ReasonAsExpected            = "AsExpected"
	ReasonContinuousErrors      = "ContinuousErrors"
	ReasonNoReadyMachines       = "NoReadyMachines"
	ReasonInvalidSpec           = "InvalidSpec"
	ReasonInvalidStrategy       = "InvalidStrategy"
	ReasonUnindexableMachines   = "UnindexableMachines"
	ReasonExcessIndexes         = "ExcessIndexes"
	ReasonUnmanagedNodes        = "UnmanagedNodes"
	ReasonMachinesAlreadyOwned  = "MachinesAlreadyOwned"
	ReasonExcessUpdatedReplicas = "ExcessUpdatedReplicas"
	ReasonFailedReplacement     = "FailedReplacement"
	ReasonReplacementTimedOut   = "ReplacementTimedOut"

	ReasonAllReplicasUpdated     = "AllReplicasUpdated"
	ReasonNeedsUpdateReplicas    = "NeedsUpdateReplicas"
	ReasonExcessReplicas         = "ExcessReplicas"
	ReasonOperatorDegraded       = "OperatorDegraded"
	ReasonPaused                 = "Paused"
	ReasonInactive               = "Inactive"
	ReasonWaitingForUserDeletion = "WaitingForUserDeletion"
	// Pre-flight reasons: each stops a new replacement from starting.
	ReasonMachineDeleting       = "MachineDeleting"
	ReasonReplacementInProgress = "ReplacementInProgress"
	ReasonNodesNotReady         = "NodesNotReady"
	ReasonEtcdDegraded          = "EtcdDegraded"
	ReasonKubeAPIServerDegraded = "KubeAPIServerDegraded"
	ReasonSurgeLimit            = "SurgeLimit"
	// ReasonClusterUpdating and ReasonMastersUpdating hold a rollout while
	// the cluster updates: the CVO and the MCO restart and reboot the
	// control plane then, and a replacement on top of that would take a
	// second etcd member away at the same time.
	ReasonClusterUpdating = "ClusterUpdating"
	ReasonMastersUpdating = "MastersUpdating"
)

// haltOrder is the order halting problems are reported in Degraded's reason.
var haltOrder = []string{ReasonInvalidSpec, ReasonInvalidStrategy, ReasonNoReadyMachines, ReasonUnindexableMachines, ReasonExcessIndexes, ReasonUnmanagedNodes, ReasonMachinesAlreadyOwned}

// healthBlockers are the pre-flight reasons that mean something is wrong
// (as opposed to the rollout's own previous step still finishing).
var healthBlockers = map[string]bool{ReasonEtcdHookMissing: true, ReasonNodesNotReady: true, ReasonEtcdDegraded: true, ReasonKubeAPIServerDegraded: true, ReasonUnavailableReplicas: true, ReasonFailedReplacement: true, ReasonReplacementTimedOut: true}

// updateHolds are the pre-flight reasons of a cluster update under way:
// nothing is wrong, the rollout waits for it.
var updateHolds = map[string]bool{ReasonClusterUpdating: true, ReasonMastersUpdating: true}

type planner struct {
	in      Input
	o       *observation
	out     Output
	budget  Budget
	reports map[int]*IndexReport
	// failure per index: the failed or timed-out replacement and its reason.
	failure map[int]*machine
	failWhy map[int]string
	// progressBlock is the pre-flight verdict for the next index in line.
	progressBlock []blocker
	// requeue collects the times at which time alone changes the answer.
	requeue requeue.Soonest
	// mode is this pass's Mode; modeHold, when set, is the reason it holds
	// every action (modeHoldMsg says more).
	mode                  Mode
	modeHold, modeHoldMsg string
}

type blocker struct{ reason, message string }

// Plan decides one pass. See the package documentation.
func Plan(in Input) Output {
	p := &planner{in: in, o: observe(in), reports: map[int]*IndexReport{}, failure: map[int]*machine{}, failWhy: map[int]string{}}
	b, err := ParseBudget(in.CPMS.Annotations[RemediationAnnotation])
	if err != nil {
		p.out.Events = append(p.out.Events, events.Warning(in.CPMS, "InvalidAnnotation", actionReconcile, fmt.Sprintf("annotation %s does not parse (%v); the remediation budget starts afresh", RemediationAnnotation, err)))
	}
	p.budget = b
	p.decideMode()
	p.checkCluster()
	p.derive()
	if p.mayMutate() {
		p.decide()
	}
	p.status()
	for _, g := range p.o.groups {
		p.out.Indexes = append(p.out.Indexes, *p.reports[g.index])
	}
	for u := range p.o.unknown {
		p.out.Warnings = append(p.out.Warnings, fmt.Sprintf("providerSpec field %q is unknown to the %s provider type and not compared", u, p.o.platform.Type()))
	}
	sort.Strings(p.out.Warnings)
	p.out.RequeueAfter = p.requeue.After(in.Now)
	p.out.Mode = p.mode
	p.out.StatusOwned = !in.CPMSOperator.Running
	return p.out
}

func (p *planner) active() bool {
	return p.in.CPMS.Spec.State == machinev1.ControlPlaneMachineSetStateActive
}

func (p *planner) paused() bool {
	return p.in.CPMS.Annotations[PausedAnnotation] == "true"
}

func (p *planner) mayMutate() bool {
	return p.active() && !p.paused() && len(p.o.halt) == 0 && p.in.CPMS.DeletionTimestamp == nil && p.modeHold == ""
}

func (p *planner) wakeAt(t time.Time) { p.requeue.At(t) }

// checkCluster finds the problems that stop every mutation.
func (p *planner) checkCluster() {
	o := p.o
	if len(o.groups) > o.replicas {
		var idx []string
		for _, g := range o.groups {
			idx = append(idx, strconv.Itoa(g.index))
		}
		o.addHalt(ReasonExcessIndexes, fmt.Sprintf("machines use %d indexes (%s) but replicas is %d", len(o.groups), strings.Join(idx, ", "), o.replicas))
	}
	managed := map[string]bool{}
	providerIDs := map[string]bool{}
	for _, m := range o.machines {
		if m.obj.Status.NodeRef != nil {
			managed[m.obj.Status.NodeRef.Name] = true
		}
		if m.obj.Spec.ProviderID != nil && *m.obj.Spec.ProviderID != "" {
			providerIDs[*m.obj.Spec.ProviderID] = true
		}
	}
	var unmanaged []string
	for _, n := range o.cpNodes {
		// A Node that matches a machine's providerID is managed even before
		// the nodelink controller has set nodeRef.
		if !managed[n.Name] && !(n.Spec.ProviderID != "" && providerIDs[n.Spec.ProviderID]) {
			unmanaged = append(unmanaged, n.Name)
		}
	}
	if len(unmanaged) > 0 {
		o.addHalt(ReasonUnmanagedNodes, "control-plane nodes "+strings.Join(unmanaged, ", ")+" belong to no machine of the set")
	}
	ready := 0
	for _, m := range o.machines {
		if m.ready {
			ready++
		}
	}
	if ready == 0 && len(o.halt[ReasonInvalidSpec]) == 0 {
		o.addHalt(ReasonNoReadyMachines, "no control-plane machine is ready")
	}
	if p.active() {
		var owned []string
		for _, m := range o.machines {
			if ref := metav1.GetControllerOf(m.obj); ref != nil && ref.UID != p.in.CPMS.UID {
				owned = append(owned, fmt.Sprintf("%s (by %s %s)", m.name, ref.Kind, ref.Name))
			}
		}
		if len(owned) > 0 {
			o.addHalt(ReasonMachinesAlreadyOwned, "machines "+strings.Join(owned, ", ")+" are controlled by another owner")
		}
	}
}

// derive computes every index's state from its machines alone.
func (p *planner) derive() {
	cfg := p.in.Config
	now := p.in.Now
	for _, g := range p.o.groups {
		r := &IndexReport{Index: g.index, FailureDomain: g.fd.String()}
		p.reports[g.index] = r
		for _, m := range g.machines {
			r.Machines = append(r.Machines, m.name)
			if !m.graceEnds.IsZero() {
				p.wakeAt(m.graceEnds)
			}
		}
		for _, m := range g.deleting() {
			t := m.obj.DeletionTimestamp.Time
			r.DeletingSince = &t
			r.HeldByEtcdHook = m.hasHook
			break
		}
		if out := g.outdated(); len(out) > 0 {
			r.Diff = out[0].diff.Summary(3)
		}
		upd, out, del := g.updated(), g.outdated(), g.deleting()
		if pm := g.pending(); pm != nil {
			// The deadline is for machines that never came up. One that is
			// Running with a NotReady Node may host an etcd member: it is
			// not a failed replacement to delete, it is a node problem the
			// pre-flight and Available report.
			neverRan := pm.phase != machinev1beta1.PhaseRunning
			switch {
			case pm.failed:
				p.failure[g.index], p.failWhy[g.index] = pm, ReasonFailedReplacement
			case neverRan && cfg.ProgressDeadline > 0 && !now.Before(pm.created.Add(cfg.ProgressDeadline)):
				p.failure[g.index], p.failWhy[g.index] = pm, ReasonReplacementTimedOut
			case neverRan && cfg.ProgressDeadline > 0:
				p.wakeAt(pm.created.Add(cfg.ProgressDeadline))
			}
		}
		switch {
		case p.failure[g.index] != nil:
			f := p.failure[g.index]
			r.State, r.Replacement = Blocked, f.name
			if p.failWhy[g.index] == ReasonFailedReplacement {
				r.Reason = fmt.Sprintf("replacement %s failed: %s", f.name, f.errMsg)
			} else {
				r.Reason = fmt.Sprintf("replacement %s not ready %s after its creation (phase %q)", f.name, cfg.ProgressDeadline, f.phase)
			}
		case len(g.live()) == 0:
			r.State = ReplacementRequested
		case len(g.live()) == 1 && len(upd) == 1 && upd[0].phase == machinev1beta1.PhaseRunning && !upd[0].ready:
			// The index's own machine lost its Node: nothing to replace,
			// something to look at.
			r.State, r.Reason = Blocked, fmt.Sprintf("machine %s is Running but its Node is not Ready", upd[0].name)
		case g.pending() != nil:
			r.State, r.Replacement = ReplacementProvisioning, g.pending().name
		case len(upd) > 0 && (len(out) > 0 || len(upd) > 1):
			r.State, r.Replacement = ReplacementReady, upd[len(upd)-1].name
		case len(upd) > 0 && len(del) > 0:
			r.State, r.Replacement = OldDeleting, upd[0].name
		case len(out) > 0 && p.o.strategy == machinev1.OnDelete && p.mode == ModeReplace:
			r.State, r.Reason = WaitingForDeletion, fmt.Sprintf("delete machine %s to replace it", out[0].name)
		case len(out) > 0:
			r.State = ReplacementRequested
		default:
			r.State = Stable
		}
	}
}

// decide picks at most one action: adopt, then remediate, then restore a
// missing index, then finish a replacement by deleting what it replaced,
// then start the next replacement. Availability before progress.
func (p *planner) decide() {
	o := p.o
	if p.mode == ModeOrchestrate {
		// The operator adopts, restores lost indexes and creates every
		// replacement; what is left here is when to start the next one.
		p.startNext()
		return
	}
	var adopt []MachineRef
	for _, m := range o.machines {
		if metav1.GetControllerOf(m.obj) == nil {
			adopt = append(adopt, m.ref())
		}
	}
	if len(adopt) > 0 {
		names := make([]string, len(adopt))
		for i, a := range adopt {
			names[i] = a.Name
		}
		p.out.Action = &Action{Kind: Adopt, Index: -1, Adopt: adopt, Event: events.Normal(p.in.CPMS, "Adopted", string(Adopt), "Adopted machines "+strings.Join(names, ", "))}
		return
	}
	for _, g := range o.groups {
		if p.failure[g.index] != nil && p.remediate(g) {
			return
		}
	}
	// Empty indexes first: filling one never puts a second index in flight.
	for _, g := range o.groups {
		if len(g.machines) == 0 && p.restore(g) {
			return
		}
	}
	for _, g := range o.groups {
		if len(g.machines) > 0 && g.lost() && p.restore(g) {
			return
		}
	}
	if o.strategy == machinev1.RollingUpdate {
		for _, g := range o.groups {
			if p.deleteReplaced(g) {
				return
			}
		}
		p.startNext()
	}
}

func (p *planner) deletingElsewhere(index int) *machine {
	for _, m := range p.o.machines {
		if m.deleting && m.index != index {
			return m
		}
	}
	return nil
}

// remediate deletes a failed or timed-out replacement so that it can be
// tried again, within the budget.
func (p *planner) remediate(g *group) bool {
	f := p.failure[g.index]
	r := p.reports[g.index]
	rem := p.in.Config.Remediation
	e := p.budget.entry(g.index, g.specHash)
	target := f.ref()
	if e.Machine == f.name {
		// A previous pass counted this retry and was interrupted before the
		// delete: finish it without counting again.
		p.out.Action = &Action{Kind: Remediate, Index: g.index, Target: &target, Annotation: p.budget.String(),
			Event: p.machineEvent(true, "Remediated", Remediate, p.machineObject(target), fmt.Sprintf("Deleted failed replacement %s in index %d (retry %d of %d): %s", f.name, g.index, e.Retries, rem.MaxRetries, r.Reason))}
		return true
	}
	switch {
	case !rem.Enabled:
		r.Reason += "; delete it to retry (remediation is off)"
		return false
	case e.Retries >= rem.MaxRetries:
		r.Reason += fmt.Sprintf("; remediation retries exhausted (%d of %d)", e.Retries, rem.MaxRetries)
		return false
	case len(g.machines) < 2:
		r.Reason += "; not remediated: it is the index's only machine"
		return false
	}
	if d := p.deletingElsewhere(g.index); d != nil {
		r.Reason += fmt.Sprintf("; remediation waits for machine %s to be removed", d.name)
		return false
	}
	next := Budget{}
	for k, v := range p.budget {
		i, err := strconv.Atoi(k)
		if g2, ok := p.o.byIndex[i]; err == nil && ok && g2.specHash == v.Spec && p.reports[i].State != Stable {
			next[k] = v
		}
	}
	e = BudgetEntry{Spec: g.specHash, Retries: e.Retries + 1, Machine: f.name, At: p.in.Now.UTC()}
	next[strconv.Itoa(g.index)] = e
	p.out.Action = &Action{Kind: Remediate, Index: g.index, Target: &target, Annotation: next.String(),
		Event: p.machineEvent(true, "Remediated", Remediate, p.machineObject(target), fmt.Sprintf("Deleted failed replacement %s in index %d (retry %d of %d): %s", f.name, g.index, e.Retries, rem.MaxRetries, r.Reason))}
	return true
}

// restore creates a machine for an index that has lost its machine: none
// left, or only deleting or failed ones. Health does not gate it — the index is already lost, and its replacement is what
// brings the cluster back — but the surge ceiling and the retry period do.
func (p *planner) restore(g *group) bool {
	r := p.reports[g.index]
	e := p.budget.entry(g.index, g.specHash)
	if p.retryWait(g) {
		return false
	}
	if n := len(p.o.machines); n >= p.o.replicas+1 {
		r.Reason = fmt.Sprintf("surge limit: %d machines exist, at most %d allowed", n, p.o.replicas+1)
		return false
	}
	if len(g.machines) > 0 {
		// Its deleting machine stays until the replacement has taken over:
		// the index will hold two machines, so no other index may.
		for _, o := range p.o.groups {
			if o != g && len(o.machines) > 1 {
				r.Reason = fmt.Sprintf("waits for index %d, which is being replaced", o.index)
				return false
			}
		}
	}
	m := p.newMachine(g, e.Retries)
	why := "index has no machine"
	if del := g.deleting(); len(del) > 0 {
		why = "machine " + del[0].name + " is being deleted"
	}
	p.out.Action = &Action{Kind: CreateMachine, Index: g.index, Machine: m,
		Event: p.machineEvent(false, "Created", CreateMachine, m, fmt.Sprintf("Created machine %s in index %d (%s): %s", m.Name, g.index, g.fd, why))}
	return true
}

// retryWait holds an index's next replacement for the retry period after a
// remediation.
func (p *planner) retryWait(g *group) bool {
	e := p.budget.entry(g.index, g.specHash)
	if e.Retries == 0 || p.in.Config.Remediation.RetryPeriod <= 0 {
		return false
	}
	at := e.At.Add(p.in.Config.Remediation.RetryPeriod)
	if !p.in.Now.Before(at) {
		return false
	}
	p.reports[g.index].Reason = fmt.Sprintf("retry %d waits until %s", e.Retries, at.UTC().Format(time.RFC3339))
	p.wakeAt(at)
	return true
}

// deleteReplaced finishes an index's replacement: once a keeper (see
// group.keeper) stands in the index, the machines it may stand in for go,
// one removal at a time in the whole set. A failed outdated machine next to
// a live one goes too, at any time: it serves nothing.
func (p *planner) deleteReplaced(g *group) bool {
	r := p.reports[g.index]
	live := g.live()
	if len(live) < 2 {
		return false
	}
	var victim *machine
	keeper, keeperUpToDate := g.keeper()
	var cands []*machine
	for _, m := range live {
		if keeper != nil && m != keeper && (keeperUpToDate || !m.upToDate) {
			cands = append(cands, m)
		}
	}
	if len(cands) > 0 {
		sort.SliceStable(cands, func(i, j int) bool {
			if cands[i].upToDate != cands[j].upToDate {
				return !cands[i].upToDate
			}
			return !cands[i].ready && cands[j].ready
		})
		victim = cands[0]
	} else {
		for _, m := range g.outdated() {
			if m.failed {
				victim = m
				break
			}
		}
	}
	if victim == nil {
		for _, m := range g.updated() {
			if m.ready && !m.hasHook {
				r.Reason = fmt.Sprintf("waits for the etcd operator to put its %s hook on %s", EtcdHookName, m.name)
			}
		}
		return false
	}
	if d := p.deletingElsewhere(-1); d != nil && !victim.failed {
		r.Reason = fmt.Sprintf("waits for machine %s to be removed before deleting %s", d.name, victim.name)
		return false
	}
	why := fmt.Sprintf("replaced by %s", keeper.nameOr())
	if !victim.upToDate {
		why += "; it differs from the template: " + victim.diff.Summary(3)
	}
	if keeper == nil {
		why = "it failed (" + victim.errMsg + ") and is outdated"
	}
	t := victim.ref()
	p.out.Action = &Action{Kind: DeleteMachine, Index: g.index, Target: &t,
		Event: p.machineEvent(false, "Deleted", DeleteMachine, p.machineObject(t), fmt.Sprintf("Deleted machine %s in index %d: %s", victim.name, g.index, why))}
	return true
}

func (m *machine) nameOr() string {
	if m == nil {
		return "<none>"
	}
	return m.name
}

// startNext starts replacing the lowest outdated index that has no
// replacement yet, after the pre-flight checks. Every failed check is a
// reason; all are reported.
func (p *planner) startNext() {
	var next *group
	for _, g := range p.o.groups {
		if p.failure[g.index] == nil && len(g.updated()) == 0 && len(g.outdated()) > 0 {
			next = g
			break
		}
	}
	if next == nil {
		return
	}
	if p.retryWait(next) {
		return
	}
	bs := p.preflight(next)
	if len(bs) == 0 && p.mode == ModeOrchestrate {
		p.deleteOutdated(next)
		return
	}
	if len(bs) == 0 {
		m := p.newMachine(next, p.budget.entry(next.index, next.specHash).Retries)
		old := next.outdated()[0]
		p.out.Action = &Action{Kind: CreateMachine, Index: next.index, Machine: m,
			Event: p.machineEvent(false, "Created", CreateMachine, m, fmt.Sprintf("Created machine %s in index %d (%s) to replace %s: %s", m.Name, next.index, next.fd, old.name, old.diff.Summary(3)))}
		return
	}
	p.progressBlock = bs
	r := p.reports[next.index]
	var msgs []string
	health := false
	for _, b := range bs {
		msgs = append(msgs, b.message)
		health = health || healthBlockers[b.reason]
	}
	r.Reason = strings.Join(msgs, "; ")
	if health {
		r.State = Blocked
	}
}

func (p *planner) preflight(next *group) []blocker {
	o := p.o
	var bs []blocker
	var deleting, inFlight, unavailable, notReady []string
	for _, m := range o.machines {
		if m.deleting {
			deleting = append(deleting, m.name)
		}
	}
	for _, g := range o.groups {
		if g != next && (len(g.machines) > 1 || g.pending() != nil || g.lost()) {
			inFlight = append(inFlight, strconv.Itoa(g.index))
		}
		if !g.anyReady() {
			unavailable = append(unavailable, strconv.Itoa(g.index))
		}
		if f := p.failure[g.index]; f != nil {
			bs = append(bs, blocker{p.failWhy[g.index], fmt.Sprintf("index %d: replacement %s is not progressing", g.index, f.name)})
		}
	}
	for _, n := range o.cpNodes {
		if !nodes.Ready(n) {
			notReady = append(notReady, n.Name)
		}
	}
	if len(deleting) > 0 {
		bs = append(bs, blocker{ReasonMachineDeleting, "machines being deleted: " + strings.Join(deleting, ", ")})
	}
	if len(inFlight) > 0 {
		bs = append(bs, blocker{ReasonReplacementInProgress, "indexes being replaced: " + strings.Join(inFlight, ", ")})
	}
	if len(unavailable) > 0 {
		bs = append(bs, blocker{ReasonUnavailableReplicas, "indexes without a ready machine: " + strings.Join(unavailable, ", ")})
	}
	if len(notReady) > 0 {
		bs = append(bs, blocker{ReasonNodesNotReady, "control-plane nodes not Ready: " + strings.Join(notReady, ", ")})
	}
	if d, msg := operatorDegraded(p.in.ClusterOperators, "etcd"); d {
		bs = append(bs, blocker{ReasonEtcdDegraded, "clusteroperator/etcd is Degraded: " + msg})
	}
	if d, msg := operatorDegraded(p.in.ClusterOperators, "kube-apiserver"); d {
		bs = append(bs, blocker{ReasonKubeAPIServerDegraded, "clusteroperator/kube-apiserver is Degraded: " + msg})
	}
	if updating, msg := clusterUpdating(p.in.ClusterVersion); updating {
		bs = append(bs, blocker{ReasonClusterUpdating, msg})
	}
	if names := mcoUpdating(o.cpNodes); len(names) > 0 {
		bs = append(bs, blocker{ReasonMastersUpdating, "the machine-config operator is updating control-plane nodes " + strings.Join(names, ", ") +
			"; the next replacement starts when they are done"})
	}
	if p.mode == ModeOrchestrate {
		// The machine goes before its replacement exists: only the etcd
		// operator's hook keeps its member until the new one votes.
		for _, m := range next.live() {
			if !m.hasHook {
				bs = append(bs, blocker{ReasonEtcdHookMissing, fmt.Sprintf("machine %s does not carry the etcd operator's %s hook, which keeps its etcd member until the replacement's votes", m.name, EtcdHookName)})
			}
		}
		if n := len(next.live()); n > 1 {
			bs = append(bs, blocker{ReasonReplacementInProgress, fmt.Sprintf("index %d has %d live machines", next.index, n)})
		}
	}
	if n := len(o.machines); n >= o.replicas+1 {
		bs = append(bs, blocker{ReasonSurgeLimit, fmt.Sprintf("%d machines exist, at most %d allowed", n, o.replicas+1)})
	}
	return bs
}

// deleteOutdated starts an index's replacement in Orchestrate mode: its
// outdated machine is deleted, the etcd hook keeps it until the replacement
// the operator creates has taken over its member.
func (p *planner) deleteOutdated(g *group) {
	old := g.outdated()[0]
	t := old.ref()
	p.out.Action = &Action{Kind: DeleteMachine, Index: g.index, Target: &t,
		Event: p.machineEvent(false, "Deleted", DeleteMachine, p.machineObject(t), fmt.Sprintf("Deleted outdated machine %s in index %d (%s) for the control-plane-machine-set operator to replace: %s", old.name, g.index, g.fd, old.diff.Summary(3)))}
}

// clusterUpdating: ClusterVersion is Progressing, a cluster update is under
// way. A replacement in flight finishes; the next waits for the update.
func clusterUpdating(cv *configv1.ClusterVersion) (bool, string) {
	if cv == nil {
		return false, ""
	}
	for _, c := range cv.Status.Conditions {
		if c.Type == configv1.OperatorProgressing && c.Status == configv1.ConditionTrue {
			msg := "a cluster update is in progress (ClusterVersion Progressing"
			if c.Message != "" {
				msg += ": " + c.Message
			}
			return true, msg + "); the next replacement starts when it completes"
		}
	}
	return false, ""
}

// mcoUpdating names the control-plane nodes the machine-config daemon is
// moving to a new config (libs/mcostate.Moving).
func mcoUpdating(cpNodes []*corev1.Node) []string {
	var out []string
	for _, n := range cpNodes {
		if mcostate.Moving(n.Annotations) {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}
