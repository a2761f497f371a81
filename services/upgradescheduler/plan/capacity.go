package plan

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	nodeutil "github.com/upshift-io/upshift/libs/nodes"
	"github.com/upshift-io/upshift/libs/window"
)

// Capacity reservation labels and names, as MUO's (so that MUO's leftovers
// are recognised and cleaned up too).
const (
	MachineAPINamespace = "openshift-machine-api"
	// SurgeLabel marks temporary MachineSets, their Machines and templates.
	SurgeLabel = "upgrade.managed.openshift.io"
	// PoolLabel selects the worker MachineSets to copy.
	PoolLabel = "hive.openshift.io/machine-pool"
	// MachineSetLabel ties Machines to their MachineSet.
	MachineSetLabel = "machine.openshift.io/cluster-api-machineset"
	// SurgeSuffix names a copy after its source.
	SurgeSuffix = "-upgrade"
)

// Capacity outcomes (status.capacityReservation.outcome).
const (
	CapacityReady    = "Ready"
	CapacityTimedOut = "TimedOut"
	CapacitySkipped  = "Skipped"
	CapacityRemoved  = "Removed"
)

func (p *planner) schedule() (window.Schedule, error) {
	return window.FromAPI(p.spec.MaintenanceWindows)
}

// sourceMachineSets are the worker MachineSets (pool label worker, or a pool
// matching scale.extraMachinePools), sorted by name; never a temporary one.
func (p *planner) sourceMachineSets() []machinev1beta1.MachineSet {
	var out []machinev1beta1.MachineSet
	for _, ms := range p.in.Snapshot.MachineSets {
		if ms.Namespace != MachineAPINamespace || ms.Labels[SurgeLabel] == "true" || ms.DeletionTimestamp != nil {
			continue
		}
		pool := ms.Labels[PoolLabel]
		match := pool == "worker"
		for _, g := range p.cfg.ExtraMachinePools {
			if ok, _ := path.Match(g, pool); ok && pool != "" {
				match = true
			}
		}
		if match {
			out = append(out, ms)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// surgeMachineSets are the temporary MachineSets present, sorted by name.
func (p *planner) surgeMachineSets() []machinev1beta1.MachineSet {
	var out []machinev1beta1.MachineSet
	for _, ms := range p.in.Snapshot.MachineSets {
		if ms.Namespace == MachineAPINamespace && ms.Labels[SurgeLabel] == "true" {
			out = append(out, ms)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SurgeMachineSet is the temporary copy of a worker MachineSet: one replica,
// labelled so that its Machines are its own and recognisably temporary.
func SurgeMachineSet(src machinev1beta1.MachineSet) *machinev1beta1.MachineSet {
	name := src.Name + SurgeSuffix
	ms := &machinev1beta1.MachineSet{
		TypeMeta: metav1.TypeMeta{APIVersion: machinev1beta1.GroupVersion.String(), Kind: "MachineSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: src.Namespace,
			Labels: map[string]string{SurgeLabel: "true"},
		},
		Spec: *src.Spec.DeepCopy(),
	}
	one := int32(1)
	ms.Spec.Replicas = &one
	if ms.Spec.Selector.MatchLabels == nil {
		ms.Spec.Selector.MatchLabels = map[string]string{}
	}
	if ms.Spec.Template.Labels == nil {
		ms.Spec.Template.Labels = map[string]string{}
	}
	for _, l := range []map[string]string{ms.Spec.Selector.MatchLabels, ms.Spec.Template.Labels} {
		l[SurgeLabel] = "true"
		l[MachineSetLabel] = name
	}
	return ms
}

func (p *planner) capacityStatus() *upgradev1alpha1.CapacityReservationStatus {
	if p.st.CapacityReservation == nil {
		p.st.CapacityReservation = &upgradev1alpha1.CapacityReservationStatus{}
	}
	return p.st.CapacityReservation
}

func addName(list []string, name string) []string {
	for _, n := range list {
		if n == name {
			return list
		}
	}
	return append(list, name)
}

func hasName(list []string, name string) bool {
	for _, n := range list {
		if n == name {
			return true
		}
	}
	return false
}

// reserveCapacity creates one temporary MachineSet per worker MachineSet and
// waits until each has a Ready node, or until scale.timeOut has passed since
// the first was created (or since the upgrade started, when they were
// requested ahead of it: capacityAhead), after which the upgrade continues
// without it.
func (p *planner) reserveCapacity() result {
	if !p.spec.CapacityReservation {
		return result{done: true, message: "capacity reservation not requested"}
	}
	cr := p.capacityStatus()
	switch cr.Outcome {
	case CapacityReady, CapacityTimedOut, CapacitySkipped:
		return result{done: true, message: "capacity reservation " + strings.ToLower(cr.Outcome)}
	}
	present, create, sources := p.requestCopies(cr)
	if sources == 0 && len(cr.MachineSets) == 0 {
		cr.Outcome = CapacitySkipped
		msg := "no worker MachineSet (label " + PoolLabel + "=worker) in " + MachineAPINamespace + ": continuing without extra capacity"
		return result{done: true, message: msg, failure: msg, events: []Event{{Warning: true, Reason: "CapacityReservationSkipped", Message: msg}}}
	}
	if create != nil {
		return result{message: "creating temporary MachineSet " + create.MachineSet.Name, action: create}
	}
	if cr.StartTime == nil {
		t := p.nowT
		cr.StartTime = &t
	}
	waiting, lost, note := p.copiesWaiting(cr, present)
	if len(waiting) == 0 {
		cr.Outcome = CapacityReady
		return result{done: true, message: fmt.Sprintf("%d temporary machines ready%s", len(cr.MachineSets)-len(lost), note)}
	}
	from := cr.StartTime.Time
	if h := p.history(); h.StartTime != nil && h.StartTime.After(from) {
		from = h.StartTime.Time
	}
	due := from.Add(p.cfg.ScaleTimeOut)
	if !p.now.Before(due) {
		cr.Outcome = CapacityTimedOut
		msg := fmt.Sprintf("temporary capacity not ready %s after it was requested (%s): continuing the upgrade without it%s", p.cfg.ScaleTimeOut, strings.Join(waiting, ", "), note)
		return result{done: true, message: msg, failure: msg, events: []Event{{Warning: true, Reason: "CapacityReservationTimedOut", Message: msg}}}
	}
	return result{message: "waiting for temporary machines: " + strings.Join(waiting, ", ") + note, wakeAt: due}
}

// requestCopies records the temporary MachineSets present and returns the
// creation of the first one missing, if any, with the copies present by name
// and how many worker MachineSets there are to copy. A copy seen once is
// recorded and never created again, even if someone deletes it; one not yet
// seen is created by name, so a repeat meets AlreadyExists.
func (p *planner) requestCopies(cr *upgradev1alpha1.CapacityReservationStatus) (map[string]*machinev1beta1.MachineSet, *Action, int) {
	present := map[string]*machinev1beta1.MachineSet{}
	for _, ms := range p.surgeMachineSets() {
		present[ms.Name] = &ms
	}
	sources := p.sourceMachineSets()
	for _, src := range sources {
		if name := src.Name + SurgeSuffix; present[name] != nil {
			cr.MachineSets = addName(cr.MachineSets, name)
		}
	}
	for _, src := range sources {
		name := src.Name + SurgeSuffix
		if present[name] == nil && !hasName(cr.MachineSets, name) {
			if cr.StartTime == nil {
				t := p.nowT
				cr.StartTime = &t
			}
			return present, &Action{Kind: CreateMachineSet, MachineSet: SurgeMachineSet(src)}, len(sources)
		}
	}
	return present, nil, len(sources)
}

// copiesWaiting sorts the recorded copies that are not ready: waiting, present
// without a Ready node, and lost, deleted by someone else; note names the
// lost ones for a message.
func (p *planner) copiesWaiting(cr *upgradev1alpha1.CapacityReservationStatus, present map[string]*machinev1beta1.MachineSet) (waiting, lost []string, note string) {
	for _, name := range cr.MachineSets {
		switch ms := present[name]; {
		case ms == nil:
			lost = append(lost, name)
		case !p.surgeReady(ms):
			waiting = append(waiting, name)
		}
	}
	if len(lost) > 0 {
		note = "; deleted by someone else and not recreated: " + strings.Join(lost, ", ")
	}
	return waiting, lost, note
}

// capacityAhead keeps the temporary capacity in step with the scheduled
// start while the attempt waits for it. From scale.leadTime before the start
// the copies are requested, so that their machines provision while nothing
// else happens and the upgrade does not wait for them in its window; the
// ComputeCapacityReserved step then finds them (and waits only for what is
// not ready yet). Earlier than that no temporary machine should exist: copies
// left from an earlier schedule (the upgrade moved later, a window missed)
// are deleted, so that extra machines never wait days for a start, unless a
// node-gate run holds a worker pool (their removal never races a hold). It
// returns what it is doing, for the Progressing condition ("" for nothing).
func (p *planner) capacityAhead(start time.Time) string {
	if !p.spec.CapacityReservation || p.action != nil {
		return ""
	}
	from := start.Add(-p.cfg.ScaleLeadTime)
	if p.cfg.ScaleLeadTime > 0 && !p.now.Before(from) {
		cr := p.capacityStatus()
		if cr.Outcome != "" {
			return ""
		}
		present, create, _ := p.requestCopies(cr)
		if create != nil {
			create.Step = StepComputeCapacityReserved
			p.action = create
			if len(cr.MachineSets) == 0 {
				p.event(false, "CapacityRequestedAhead", "requesting temporary capacity %s ahead of the start at %s (scale.leadTime)",
					p.cfg.ScaleLeadTime, start.UTC().Format(time.RFC3339))
			}
			return "temporary capacity requested ahead of it: creating MachineSet " + create.MachineSet.Name
		}
		if waiting, _, note := p.copiesWaiting(cr, present); len(waiting) > 0 {
			return "temporary capacity requested ahead of it: waiting for " + strings.Join(waiting, ", ") + note
		}
		return "temporary capacity ready ahead of it"
	}
	if p.cfg.ScaleLeadTime > 0 {
		p.wake(from)
	}
	if len(p.surgeMachineSets()) == 0 {
		// Requested again, or found missing again, when the start comes near.
		p.st.CapacityReservation = nil
		return ""
	}
	if runs := p.runsKeepingCapacity(); len(runs) > 0 {
		return "temporary capacity from an earlier schedule kept while node-gate holds worker pools: run " + strings.Join(runs, ", run ")
	}
	if r, busy := p.deleteSurge(); busy {
		r.action.Step = StepComputeCapacityReserved
		p.action = r.action
		p.event(false, "CapacityCleanup", "%s: the start (%s) is further away than scale.leadTime (%s)",
			r.message, start.UTC().Format(time.RFC3339), p.cfg.ScaleLeadTime)
		return "temporary capacity from an earlier schedule: " + r.message
	}
	return "temporary capacity from an earlier schedule going"
}

// surgeReady: every replica ready, and each Machine's Node Ready. A Machine
// still provisioning has no nodeRef yet: that is "not ready", never a crash.
func (p *planner) surgeReady(ms *machinev1beta1.MachineSet) bool {
	if ms.DeletionTimestamp != nil || ms.Status.Replicas < 1 || ms.Status.ReadyReplicas != ms.Status.Replicas {
		return false
	}
	nodes := map[string]*corev1.Node{}
	for i := range p.in.Snapshot.Nodes {
		nodes[p.in.Snapshot.Nodes[i].Name] = &p.in.Snapshot.Nodes[i]
	}
	found := 0
	for _, m := range p.in.Snapshot.Machines {
		if m.Labels[MachineSetLabel] != ms.Name {
			continue
		}
		found++
		if m.Status.NodeRef == nil {
			return false
		}
		n := nodes[m.Status.NodeRef.Name]
		if n == nil || !nodeutil.Ready(n) {
			return false
		}
	}
	return found > 0
}

// removeCapacity deletes the temporary MachineSets, one per plan, and waits
// until their Machines are gone (the machine API drains their nodes).
//
// The temporary nodes are workers like any other: a node-gate run gates
// them too (its hooks run on them). They go only once no run holds a worker
// pool, stopped or not, so that their removal never races a hold: a node
// deleted under a run's pre- or post-update hook would have the hook act on
// a node that is going away.
func (p *planner) removeCapacity() result {
	if runs := p.runsKeepingCapacity(); len(runs) > 0 && len(p.surgeMachineSets()) > 0 {
		return result{message: "temporary capacity kept while node-gate holds worker pools: run " + strings.Join(runs, ", run ")}
	}
	if r, busy := p.deleteSurge(); busy {
		return r
	}
	var machines []string
	for _, m := range p.in.Snapshot.Machines {
		if m.Namespace == MachineAPINamespace && m.Labels[SurgeLabel] == "true" {
			machines = append(machines, m.Name)
		}
	}
	if len(machines) > 0 {
		return result{message: "waiting for temporary machines to go: " + joinLimited(sorted(machines), 20)}
	}
	if cr := p.st.CapacityReservation; cr != nil && len(cr.MachineSets) > 0 {
		cr.Outcome = CapacityRemoved
		return result{done: true, message: "temporary capacity removed"}
	}
	return result{done: true, message: "no temporary capacity to remove"}
}

// runsKeepingCapacity names the node-gate runs that hold a worker pool,
// stopped or not, sorted: while there are any, no temporary machine is
// removed, so that a removal never races a hold.
func (p *planner) runsKeepingCapacity() []string {
	holding, stopped, _ := p.gateHolds()
	var names []string
	for _, r := range append(holding, stopped...) {
		names = append(names, r.Key())
	}
	return sorted(names)
}

// deleteSurge issues the deletion of the first temporary MachineSet not
// already being deleted; busy is false when there is none.
func (p *planner) deleteSurge() (result, bool) {
	for _, ms := range p.surgeMachineSets() {
		if ms.DeletionTimestamp != nil {
			continue
		}
		del := &machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Name: ms.Name, Namespace: ms.Namespace}}
		return result{message: "deleting temporary MachineSet " + ms.Name, action: &Action{Kind: DeleteMachineSet, MachineSet: del}}, true
	}
	return result{}, false
}

// cleanupTerminal removes what the attempt left behind once it has ended,
// whichever way it ended.
func (p *planner) cleanupTerminal() {
	if r, busy := p.deleteSurge(); busy {
		r.action.Step = StepComputeCapacityRemoved
		p.action = r.action
		p.event(false, "CapacityCleanup", "%s after the upgrade ended (%s)", r.message, p.history().Phase)
		return
	}
	if cr := p.st.CapacityReservation; cr != nil && len(cr.MachineSets) > 0 && len(p.surgeMachineSets()) == 0 {
		cr.Outcome = CapacityRemoved
	}
}

// cleanupOnDelete runs when the UpgradeConfig is being deleted: remove the
// temporary capacity, then the finalizer.
func (p *planner) cleanupOnDelete() {
	if r, busy := p.deleteSurge(); busy {
		r.action.Step = StepComputeCapacityRemoved
		p.action = r.action
		return
	}
	if len(p.surgeMachineSets()) > 0 {
		// Still going; the deletion is in flight.
		return
	}
	if p.in.Integrations.Silences && p.liveLeases() > 0 {
		// The reconciler expires them (nothing is wanted now) and clears
		// status.silences; the finalizer goes in the plan after that.
		return
	}
	for _, f := range p.uc.Finalizers {
		if f == Finalizer {
			p.action = &Action{Kind: RemoveFinalizer}
			return
		}
	}
}
