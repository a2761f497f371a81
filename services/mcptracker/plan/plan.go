// Package plan is the mcp-tracker's decision for one pass. From the
// MachineConfigPools, the Nodes, the UpgradeConfigs, what the tracker
// remembered from its previous pass and when it last wrote each
// UpgradeConfig, it returns what package track derived (the figures the
// metrics show), the tracker's part of every UpgradeConfig status that is to
// be written now, the Events and when to run again. It does no I/O: the
// reconciler reads its inputs from informer caches and carries out what it
// returns.
package plan

import (
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	upgradeac "github.com/upshift-io/upshift/api/upgrade/v1alpha1/applyconfiguration/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/nodes"
	"github.com/upshift-io/upshift/libs/requeue"
	"github.com/upshift-io/upshift/services/mcptracker/track"
)

// EventAction is the action of every Event the tracker records: it reports
// what it saw while tracking, not something it did.
const EventAction = "Track"

// Input is one pass's input.
type Input struct {
	Pools          []mcfgv1.MachineConfigPool
	Nodes          []corev1.Node
	UpgradeConfigs []upgradev1alpha1.UpgradeConfig
	// NodeGateRuns are node-gate's runs (none when node-gate is not
	// installed): the gate pools they created are counted in their source
	// pools.
	NodeGateRuns []gating.Run

	// Prev is what the previous pass remembered; nil before the first pass,
	// when the pools' times come back from the status a previous process
	// wrote (after a restart).
	Prev *track.State
	Now  time.Time
	// StuckAfter and RemovedRetention are package track's settings (a
	// StuckAfter of 0 turns stuck nodes off).
	StuckAfter       time.Duration
	RemovedRetention time.Duration

	// LastWrite is when each UpgradeConfig was last written by the tracker.
	LastWrite map[types.NamespacedName]time.Time
	// MinWriteInterval bounds the writes to one UpgradeConfig: a change
	// within it waits for its end, and is written together with whatever
	// else changed meanwhile.
	MinWriteInterval time.Duration
}

// Write is one status write: the tracker's fields of one UpgradeConfig.
type Write struct {
	Key    types.NamespacedName
	Status *upgradeac.UpgradeConfigApplyConfiguration
}

// Output is one pass's decision.
type Output struct {
	// Track is package track's result: the state to remember for the next
	// pass (Track.State) and the figures the metrics export.
	Track track.Output
	// Writes are the status writes to make now.
	Writes []Write
	// Events are to be recorded once the writes are made.
	Events []events.Event
	// LastWrite is Input.LastWrite without the UpgradeConfigs that are
	// gone; the reconciler adds the writes it made.
	LastWrite map[types.NamespacedName]time.Time
	// Requeue is when to run again although nothing changed (a node about
	// to count as stuck, a deleted pool to forget, a write held back).
	Requeue time.Duration
}

// Plan decides one pass.
func Plan(in Input) Output {
	prev := in.Prev
	if prev == nil {
		seed := track.Seed(nil)
		for _, uc := range in.UpgradeConfigs {
			if len(uc.Status.Pools) > 0 {
				seed = track.Seed(uc.Status.Pools)
				break
			}
		}
		prev = &seed
	}
	tin := track.Input{Prev: *prev, Now: in.Now, StuckAfter: in.StuckAfter, RemovedRetention: in.RemovedRetention}
	gates := gating.GatePools(in.NodeGateRuns)
	for i := range in.Pools {
		tp := poolOf(&in.Pools[i])
		tp.GateOf, _ = gating.GatePoolSource(gates, &in.Pools[i])
		tin.Pools = append(tin.Pools, tp)
	}
	for i := range in.Nodes {
		tin.Nodes = append(tin.Nodes, nodeOf(&in.Nodes[i]))
	}
	out := Output{Track: track.Track(tin), LastWrite: map[types.NamespacedName]time.Time{}}
	out.Events = eventsOf(out.Track.Events, in.UpgradeConfigs, in.Pools)

	var soonest requeue.Soonest
	soonest.In(in.Now, out.Track.Recheck)
	for i := range in.UpgradeConfigs {
		uc := &in.UpgradeConfigs[i]
		key := types.NamespacedName{Namespace: uc.Namespace, Name: uc.Name}
		last, written := in.LastWrite[key]
		if written {
			out.LastWrite[key] = last
		}
		if uc.DeletionTimestamp != nil {
			continue
		}
		want := desiredStatus(uc, out.Track.Pools, in.Now)
		if equality.Semantic.DeepEqual(want, liveStatus(uc)) {
			continue
		}
		if due := last.Add(in.MinWriteInterval); written && due.After(in.Now) {
			// Coalesce: the state at the end of the interval is written then.
			soonest.At(due)
			continue
		}
		out.Writes = append(out.Writes, Write{Key: key, Status: applyConfiguration(uc, want)})
	}
	out.Requeue = soonest.After(in.Now)
	return out
}

// eventsOf puts track's Events on every UpgradeConfig, or, when there is
// none, on the pool they are about.
func eventsOf(evs []track.Event, ucs []upgradev1alpha1.UpgradeConfig, pools []mcfgv1.MachineConfigPool) []events.Event {
	var out []events.Event
	for _, e := range evs {
		if len(ucs) == 0 {
			for i := range pools {
				if pools[i].Name == e.Pool {
					out = append(out, event(&pools[i], e))
				}
			}
			continue
		}
		for i := range ucs {
			out = append(out, event(&ucs[i], e))
		}
	}
	return out
}

func event(regarding runtime.Object, e track.Event) events.Event {
	if e.Warning {
		return events.Warning(regarding, e.Reason, EventAction, e.Message)
	}
	return events.Normal(regarding, e.Reason, EventAction, e.Message)
}

// poolOf is what track reads of a MachineConfigPool.
func poolOf(p *mcfgv1.MachineConfigPool) track.Pool {
	out := track.Pool{Name: p.Name, Target: p.Spec.Configuration.Name}
	if p.Spec.NodeSelector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector); err == nil {
			out.Selector = sel
		}
	}
	if out.Selector == nil {
		out.Selector = labels.Nothing()
	}
	for _, c := range p.Status.Conditions {
		switch c.Type {
		case mcfgv1.MachineConfigPoolUpdated:
			out.Updated = c.Status == corev1.ConditionTrue
		case mcfgv1.MachineConfigPoolDegraded:
			out.Degraded = c.Status == corev1.ConditionTrue
			out.DegradedMessage = c.Message
		}
	}
	return out
}

// nodeOf is what track reads of a Node.
func nodeOf(n *corev1.Node) track.Node {
	return track.Node{Name: n.Name, Labels: n.Labels, Annotations: n.Annotations, Ready: nodes.Ready(n), Unschedulable: n.Spec.Unschedulable}
}
