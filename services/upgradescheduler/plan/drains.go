package plan

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

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
	nodes := p.nodesByName()
	for i := range nodes {
		n := &nodes[i]
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
			next = append(next, upgradev1alpha1.NodeDrain{Node: n.Name, Owner: DrainOwnerRun(run)})
			continue
		}
		in := drain.Input{Now: p.now, Node: n, PDBs: p.in.Snapshot.PDBs, Policy: policy, Related: p.uc}
		if e.Owner == upgradev1alpha1.DrainOwnerScheduler {
			in.Prev = e.Record
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
		if d.Record != nil && (d.Record.CompletionTime == nil || keepDrain(ne)) {
			next = append(next, ne)
		}
	}
	if len(needPods) > 0 {
		p.needsDrainPods = needPods
	}
	p.st.Drains = next
}

// podsDue: the drain of n (rec, nil when new) has been blocked for at least
// the shorter of its timeouts, so that a pod may be forced or a class judged.
func (p *planner) podsDue(rec *commonv1alpha1.DrainRecord, n *corev1.Node, policy drain.Policy) bool {
	if rec == nil || rec.CompletionTime != nil || rec.Request != n.Annotations[mcostate.DesiredDrain] {
		return false
	}
	return !p.now.Before(rec.StartTime.Add(policy.FirstTimeout()))
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
