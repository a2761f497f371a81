package plan

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/drain"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/mcostate"
	libnodes "github.com/upshift-io/upshift/libs/nodes"
)

// This file is MUO's NodeKeeper: while the upgrade is under way, a worker
// node whose drain stays blocked past nodeDrain.timeOut has its pods forced
// off (libs/drain), with MUO's classes and order: pods no
// PodDisruptionBudget selects after nodeDrain.timeOut, the ones a PDB
// selects after the UpgradeConfig's PDBForceDrainTimeout plus
// nodeDrain.expectedNodeDrainTime; each deleted with grace period 0, then
// its finalizers removed. A drain still blocked when nothing is left to force
// or wait for has timed out (upgradeoperator_node_drain_timeout).
//
// A node a node-gate run released with drainRemediation set is the run's:
// the scheduler records who owns it and leaves it alone.

// DrainStepTimeout is the time a forced step is given before the next. MUO
// takes every step of a timeout in one pass and looks again a minute later.
const DrainStepTimeout = time.Minute

// DrainOwnerRun is the owner of a drain a node-gate run forces.
func DrainOwnerRun(r gating.Run) string { return "MutexRunConfig " + r.Key() }

// DrainAction is one forced step on a pod of a worker node.
type DrainAction struct {
	drain.Action
	Node string
}

// Drains is the drain decision of a plan, carried out after the status (with
// the drains' records) is written: a step is recorded before it is taken.
type Drains struct {
	Actions []DrainAction
	// Events are about nodes (a drain blocked, completed after forcing).
	Events []events.Event
}

// drainPolicy is MUO's NodeKeeper configuration as libs/drain takes it.
func (p *planner) drainPolicy() drain.Policy {
	return drain.Policy{
		Timeout:      p.cfg.NodeDrainTimeOut,
		PDBTimeout:   time.Duration(p.spec.PDBForceDrainTimeout)*time.Minute + p.cfg.ExpectedNodeDrainTime,
		StepTimeout:  DrainStepTimeout,
		SkipGraceful: true,
		ObserveOnly:  p.cfg.DisableDrainStrategies,
		Expected:     p.cfg.ExpectedNodeDrainTime,
		Ignored:      p.cfg.IgnoredNamespacePatterns,
		Owner:        upgradev1alpha1.DrainOwnerScheduler,
		EventAction:  "Upgrade",
	}
}

// decideDrains keeps status.drains for the attempt under way: MUO's
// NodeKeeper acts only while the upgrade is Upgrading, and so do these
// records; an attempt that ended has none.
func (p *planner) decideDrains() {
	if p.history().Phase != upgradev1alpha1.UpgradePhaseUpgrading || !p.commenced() {
		p.st.Drains = nil
		return
	}
	policy := p.drainPolicy()
	prev := map[string]upgradev1alpha1.NodeDrain{}
	for _, d := range p.st.Drains {
		prev[d.Node] = d
	}
	var next []upgradev1alpha1.NodeDrain
	var needPods []string
	for _, n := range p.nodesByName() {
		if libnodes.ControlPlane(n) {
			// MUO's NodeKeeper ignores the masters; the control plane's
			// drains are the machine-config operator's alone.
			continue
		}
		e, had := prev[n.Name]
		draining := mcostate.Draining(n.Annotations)
		open := had && e.Record != nil && e.Record.CompletionTime == nil
		if !draining && !open {
			if had && keepDrain(e) {
				next = append(next, e)
			}
			continue
		}
		if run, ok := gating.DrainOwner(p.in.Snapshot.NodeGateRuns, n.Name); ok && draining {
			owner := DrainOwnerRun(run)
			if c := cordonClock(n); c.start != nil && !(had && e.Owner == owner) && p.youngDrain(*c.start, policy) {
				// Listed, as the scheduler's own, once it has lasted.
				continue
			}
			next = append(next, upgradev1alpha1.NodeDrain{Node: n.Name, Owner: owner})
			continue
		}
		in := drain.Input{Now: p.now, Node: n, PDBs: p.in.Snapshot.PDBs, Policy: policy, Related: p.uc}
		if e.Owner == upgradev1alpha1.DrainOwnerScheduler {
			in.Prev = e.Record
		}
		clock := drainClock{}
		if draining && !recordedOpen(in.Prev, n) {
			if clock = cordonClock(n); !clock.cordoned {
				// MUO's clock starts with the cordon, and the drain
				// controller cordons before it evicts: nothing to time yet.
				if had && keepDrain(e) {
					next = append(next, e)
				}
				continue
			}
			if clock.start != nil {
				in.Prev = &commonv1alpha1.DrainRecord{Request: n.Annotations[mcostate.DesiredDrain], StartTime: *clock.start}
			}
		}
		// The pods are read only once a timeout may have passed: before, the
		// record needs the clock alone, and a read per plan of every
		// draining node would cost the apiserver for nothing.
		if draining && p.podsDue(in.Prev, n, policy) {
			pods, read := p.in.Snapshot.DrainPods[n.Name]
			if !read {
				needPods = append(needPods, n.Name)
				continue
			}
			in.Pods = pods
		}
		d := drain.Decide(in)
		ne := upgradev1alpha1.NodeDrain{Node: n.Name, Owner: upgradev1alpha1.DrainOwnerScheduler, Record: d.Record}
		if in.Prev != nil && d.Record != nil && in.Prev.Request == d.Record.Request {
			// The same drain: what was found of it stays.
			ne.TimedOutTime, ne.ForcedGuardedPods = e.TimedOutTime, e.ForcedGuardedPods
		}
		if d.TimedOut && ne.TimedOutTime == nil {
			t := p.nowT
			ne.TimedOutTime = &t
			p.event(true, "NodeDrainTimedOut", "the drain of node %s is still blocked %s after it started, with nothing left to force: %s",
				n.Name, p.now.Sub(d.Record.StartTime.Time).Round(time.Second), blockingPods(d.Record))
		}
		for _, a := range d.Actions {
			p.drainOut.Actions = append(p.drainOut.Actions, DrainAction{Action: a, Node: n.Name})
			if firstStepOnGuarded(in.Prev, d.Record, a) {
				ne.ForcedGuardedPods++
			}
		}
		p.drainOut.Events = append(p.drainOut.Events, d.Events...)
		if d.RequeueAfter > 0 {
			p.wake(p.now.Add(d.RequeueAfter))
		}
		if in.Pods != nil && d.Recheck > 0 {
			p.wake(p.now.Add(d.Recheck))
		}
		if clock.start != nil && len(d.Actions) == 0 && clockOnly(ne, *clock.start) && p.youngDrain(*clock.start, policy) {
			// Its record is the Node's cordon time alone: the next plan
			// reads it there again, and a drain that ends before
			// recordAfter costs no status write.
			if had && keepDrain(e) {
				next = append(next, e)
			}
			continue
		}
		if d.Record != nil && (d.Record.CompletionTime == nil || keepDrain(ne)) {
			next = append(next, ne)
		}
	}
	if len(needPods) > 0 {
		p.needsDrainPods = needPods
	}
	p.st.Drains = next
}

// A drain's clock is MUO's: it starts when the node is cordoned, at the
// time kube-controller-manager stamps on the cordon's taint
// (node.kubernetes.io/unschedulable). That time is on the Node, so a young
// drain needs no record: the scheduler reads the clock there on every plan,
// and a restart finds it again. Its record is written once the drain holds
// more than its clock (pods read, a step taken, a timeout) or has lasted
// recordAfter: from then on the record's clock is the drain's, and a cordon
// flap (uncordoned and cordoned again, which stamps a new time) does not
// reset it. Before, a flap restarts the clock, as it does for MUO, by less
// than recordAfter. Most drains end well within it: on a 500-worker update at
// the bench's time scale that is about 600 status writes (each entry added,
// then removed) saved.
//
// A cordon taint without a time (added by hand) starts the clock when the
// scheduler first sees it, recorded at once, as the drains of nodes without
// the taint's time always were.

// drainClock is where a drain's clock comes from.
type drainClock struct {
	// cordoned: the node is cordoned (spec.unschedulable and the cordon's
	// taint), MUO's condition for timing a drain.
	cordoned bool
	// start is the cordon taint's time; nil when it has none.
	start *metav1.Time
}

// cordonClock reads n's drain clock.
func cordonClock(n *corev1.Node) drainClock {
	if !cordoned(n) {
		return drainClock{}
	}
	return drainClock{cordoned: true, start: noScheduleTaint(n, corev1.TaintNodeUnschedulable).TimeAdded}
}

// recordedOpen: rec is the written record of n's drain request under way.
func recordedOpen(rec *commonv1alpha1.DrainRecord, n *corev1.Node) bool {
	return rec != nil && rec.CompletionTime == nil && rec.Request == n.Annotations[mcostate.DesiredDrain]
}

// recordAfter is how long a drain goes unrecorded while its record is its
// clock alone: a tenth of its first timeout (4.5 minutes with MUO's
// defaults), the most a cordon flap can delay it.
func recordAfter(policy drain.Policy) time.Duration { return policy.FirstTimeout() / 10 }

// youngDrain: a drain timed from start is younger than recordAfter; the
// plan then wakes when it no longer is, to record it.
func (p *planner) youngDrain(start metav1.Time, policy drain.Policy) bool {
	due := start.Add(recordAfter(policy))
	if !p.now.Before(due) {
		return false
	}
	p.wake(due)
	return true
}

// clockOnly: the open drain ne, timed from the cordon at start, holds
// nothing the Node cannot give back.
func clockOnly(ne upgradev1alpha1.NodeDrain, start metav1.Time) bool {
	r := ne.Record
	return r != nil && r.CompletionTime == nil && r.StartTime.Equal(&start) && len(r.BlockingPods) == 0 && r.ForcedPods == 0 &&
		ne.TimedOutTime == nil && ne.ForcedGuardedPods == 0
}

// podsDue: the drain of n (rec, nil when new) has been blocked for at least
// the shorter of its timeouts, so that a pod may be forced or a class judged.
func (p *planner) podsDue(rec *commonv1alpha1.DrainRecord, n *corev1.Node, policy drain.Policy) bool {
	return recordedOpen(rec, n) && !p.now.Before(rec.StartTime.Add(policy.FirstTimeout()))
}

// firstStepOnGuarded: a is the first step on a pod a PodDisruptionBudget
// selects (rec is the record after the decision, prev the one before).
func firstStepOnGuarded(prev, rec *commonv1alpha1.DrainRecord, a drain.Action) bool {
	guarded := false
	for _, b := range rec.BlockingPods {
		if b.UID == a.UID && len(b.PDBs) > 0 {
			guarded = true
		}
	}
	if !guarded || prev == nil {
		return guarded
	}
	for _, b := range prev.BlockingPods {
		if b.UID == a.UID && b.Step != "" {
			return false
		}
	}
	return true
}

// guardedPodsForced: this attempt forced a pod a PodDisruptionBudget selects
// off a worker node.
func (p *planner) guardedPodsForced() bool {
	for _, d := range p.st.Drains {
		if d.ForcedGuardedPods > 0 {
			return true
		}
	}
	return false
}

// drainNotice rides on the worker step: the first time the attempt forces
// off a pod a PodDisruptionBudget guards, MUO tells the customer that the
// node drain grace period may be delaying the upgrade, with its delayed
// state. As MUO, that state goes out at most once per version, whatever
// delayed the upgrade: a delayed notice already sent before commencement
// stands for this one too.
func drainNotice(step func(*planner) result) func(*planner) result {
	return func(p *planner) result {
		r := step(p)
		if r.done || r.action != nil || !p.guardedPodsForced() || p.recorded(EventDelayed) || !p.due(EventDelayed) {
			return r
		}
		return result{message: "sending the " + EventDelayed + " notification: a pod a PodDisruptionBudget guards was forced off a worker node",
			action: p.notifyAction(EventDelayed)}
	}
}

// keepDrain: a finished drain stays listed when something happened to it
// (pods were forced, it timed out), until the attempt ends.
func keepDrain(d upgradev1alpha1.NodeDrain) bool {
	return d.Record != nil && (d.Record.ForcedPods > 0 || d.TimedOutTime != nil)
}

// blockingPods names the pods a drain waits for.
func blockingPods(rec *commonv1alpha1.DrainRecord) string {
	if rec == nil || len(rec.BlockingPods) == 0 {
		return "no pod the scheduler may force is left (pods of ignored namespaces, DaemonSet or static pods, or the machine-config daemon itself)"
	}
	var names []string
	for _, b := range rec.BlockingPods {
		names = append(names, b.Namespace+"/"+b.Name)
	}
	return fmt.Sprintf("pods %s", joinLimited(names, 20))
}
