// Package track is the mcp-tracker's pure core: from the MachineConfigPools,
// the Nodes' MCO annotations, what it remembered from its previous pass and
// the time, it derives every pool's update (start, completion, nodes by
// state, slowest and stuck nodes) and the Events a person wants to see. It
// does no I/O; the reconciler feeds it from informer caches and writes what
// it returns.
package track

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/requeue"
	"github.com/upshift-io/upshift/libs/truncate"
)

// Pool is what the tracker reads of a MachineConfigPool.
type Pool struct {
	Name string
	// Target is spec.configuration.name: the rendered config the MCO moves
	// the pool's nodes to.
	Target string
	// Selector is the pool's node selector; nil (or empty) selects nothing,
	// as in the MCO.
	Selector labels.Selector
	// Updated and Degraded are the pool's conditions being True.
	Updated  bool
	Degraded bool
	// DegradedMessage is the Degraded condition's message.
	DegradedMessage string
	// GateOf is the source pool when this is one of node-gate's gate
	// pools: a transient pool its run creates to let the MCO update the
	// nodes it releases one at a time. A gate pool is not a pool of its
	// own: its nodes are counted in the source pool (see member).
	GateOf string
}

// Node is what the tracker reads of a Node.
type Node struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	Ready       bool
	// Unschedulable is spec.unschedulable: the MCO never targets a cordoned
	// node, so a pending node cordoned by someone else holds its pool.
	Unschedulable bool
}

// NodeMemory is what the tracker remembers of a node between passes.
type NodeMemory struct {
	Pool   string
	Target string
	Phase  mcostate.Phase
	// Cordoned is whether the node was unschedulable while pending.
	Cordoned bool
	// Since is when the node entered Phase (for Target, in Pool), or, for a
	// pending node, when it was last cordoned or uncordoned.
	Since time.Time
	// TargetedAt is when the node was first seen told to move to Target;
	// zero when it never was while watched.
	TargetedAt time.Time
	// Stuck is set once the NodeStuck Event was emitted for this phase.
	Stuck bool
}

// PoolRecord is what the tracker remembers of a pool's latest update. Its
// times are the ones status.pools shows.
type PoolRecord struct {
	Name     string
	Target   string
	Start    *time.Time
	Complete *time.Time
	Removed  *time.Time
	// SawChange is set when the tracker saw the pool's target change to
	// Target, so that a pool completing without a node ever seen moving (an
	// empty pool) gets both times, while a pool found already updated does
	// not get invented ones.
	SawChange bool
	// Observed: the tracker watched the pool before the update to Target
	// began, so the start it sees is the real one.
	Observed bool
	// Settled: the update to Target is over (completed, or found complete
	// without knowing when).
	Settled bool
	// Degraded is whether the pool was degraded at the last pass (an Event is
	// emitted when it becomes so).
	Degraded bool
	// LastDuration is how long the pool's most recent completed update took
	// (this one once complete, else an earlier one); zero when none was
	// timed. It outlives the record of the update it timed, and a restart
	// through status.pools, so that a running update can be compared with
	// the previous one.
	LastDuration time.Duration
}

// State is everything the tracker carries from one pass to the next.
type State struct {
	Pools map[string]PoolRecord
	Nodes map[string]NodeMemory
}

// Input is one pass's input.
type Input struct {
	Pools []Pool
	Nodes []Node
	Prev  State
	Now   time.Time
	// StuckAfter is how long a node may stay in one in-progress phase before
	// it counts as stuck; 0 turns stuck detection off.
	StuckAfter time.Duration
	// RemovedRetention is how long a deleted pool stays listed.
	RemovedRetention time.Duration
}

// PoolStatus is one pool's figures after a pass.
type PoolStatus struct {
	upgradev1alpha1.PoolUpdate
	// Degraded: a member node is degraded or the pool reports Degraded.
	Degraded bool
	// Settled: the update to TargetConfig is over.
	Settled bool
	// DegradedDetail names the first degraded node and its reason, or the
	// pool's Degraded message.
	DegradedDetail string
}

// NodeDuration is one node update that finished in this pass.
type NodeDuration struct {
	Pool     string
	Duration time.Duration
}

// Event is an Event to record on the UpgradeConfig.
type Event struct {
	// Pool is the pool the Event is about.
	Pool    string
	Warning bool
	Reason  string
	Message string
}

// Event reasons.
const (
	ReasonPoolStarted   = "PoolUpdateStarted"
	ReasonPoolCompleted = "PoolUpdateCompleted"
	ReasonPoolDegraded  = "PoolDegraded"
	ReasonPoolRemoved   = "PoolRemoved"
	ReasonNodeStuck     = "NodeStuck"
)

// Output is one pass's result.
type Output struct {
	State State
	// Pools are sorted by name; deleted pools within their retention are
	// included (with RemovedTime).
	Pools []PoolStatus
	// NodeDurations are the node updates that completed in this pass.
	NodeDurations []NodeDuration
	Events        []Event
	// Recheck is when a pass is due even without any change (a node about to
	// count as stuck, a deleted pool to forget); zero when none is.
	Recheck time.Duration
	// Unassigned names the nodes that match no pool or several custom pools.
	Unassigned []string
}

// member is a node as counted in a pool: in its own pool, or, when it sits
// in node-gate's gate pool, in the gate's source pool, moving to the gate
// pool's target (the same content under the gate's rendered name).
type member struct {
	Node
	// target is the rendered config the MCO moves the node to.
	target string
	// gate is the gate pool the node sits in, if any. The node has one more
	// MCO move to make (back into its pool) after it is done there, so it
	// keeps its pool from completing, and a node done in the gate is counted
	// as pending.
	gate string
	// gateDegraded and gateMessage are the gate pool's Degraded condition.
	gateDegraded bool
	gateMessage  string
}

// Track runs one pass.
func Track(in Input) Output {
	now := in.Now
	members := map[string][]member{}
	var unassigned []string
	pools := slices.Clone(in.Pools)
	slices.SortFunc(pools, func(a, b Pool) int { return cmp.Compare(a.Name, b.Name) })
	byName := map[string]*Pool{}
	for i := range pools {
		byName[pools[i].Name] = &pools[i]
	}
	// A gate pool whose source is gone is tracked as a pool of its own.
	folded := func(p *Pool) bool { return p.GateOf != "" && byName[p.GateOf] != nil && byName[p.GateOf].GateOf == "" }
	for _, n := range in.Nodes {
		name := PoolOf(n.Labels, pools)
		if name == "" {
			unassigned = append(unassigned, n.Name)
			continue
		}
		p := byName[name]
		m := member{Node: n, target: p.Target}
		if folded(p) {
			name = p.GateOf
			m.gate, m.gateDegraded, m.gateMessage = p.Name, p.Degraded, p.DegradedMessage
		}
		members[name] = append(members[name], m)
	}
	slices.Sort(unassigned)

	out := Output{State: State{Pools: map[string]PoolRecord{}, Nodes: map[string]NodeMemory{}}, Unassigned: unassigned}
	var recheck requeue.Soonest
	present := map[string]bool{}
	for _, p := range pools {
		present[p.Name] = true
		if folded(&p) {
			// Counted in its source; a record made before the run named
			// it (the run is read from another informer) is dropped.
			continue
		}
		nodes := members[p.Name]
		slices.SortFunc(nodes, func(a, b member) int { return cmp.Compare(a.Name, b.Name) })
		st := PoolStatus{PoolUpdate: upgradev1alpha1.PoolUpdate{Name: p.Name, TargetConfig: p.Target, MachineCount: int32(len(nodes))}}

		var (
			targeted, started, allDone = "", "", true
			slowest                    *NodeMemory
			slowestName                string
			slowestReason              string
			firstDegraded              string
			startedGate                string
			gateDegraded               string
		)
		for _, n := range nodes {
			phase := mcostate.PhaseOf(mcostate.NodeInfo{Annotations: n.Annotations, Ready: n.Ready}, n.target)
			cordoned := phase == mcostate.PhasePending && n.Unschedulable
			prev, seen := in.Prev.Nodes[n.Name]
			mem := prev
			if !seen || prev.Pool != p.Name || prev.Target != n.target {
				mem = NodeMemory{Pool: p.Name, Target: n.target, Phase: phase, Cordoned: cordoned, Since: now}
				if seen && phase != mcostate.PhasePending && phase != mcostate.PhaseDone {
					// Seen before, not moving to this target then: it was
					// targeted since the last pass. A node first seen
					// already moving (a new node, or after a restart) has
					// no known start, and no duration is made up for it.
					mem.TargetedAt = now
				}
			} else if prev.Phase != phase {
				mem.Phase, mem.Since, mem.Stuck = phase, now, false
				if prev.Phase == mcostate.PhasePending && phase != mcostate.PhaseDone {
					mem.TargetedAt = now
				}
				if phase == mcostate.PhaseDone && !mem.TargetedAt.IsZero() {
					out.NodeDurations = append(out.NodeDurations, NodeDuration{Pool: p.Name, Duration: now.Sub(mem.TargetedAt)})
				}
			} else if prev.Cordoned != cordoned {
				mem.Since, mem.Stuck = now, false
			}
			mem.Cordoned = cordoned
			if n.Annotations[mcostate.DesiredConfig] == n.target && n.target != "" {
				if targeted == "" {
					targeted = n.Name
				}
				// The start is a node told to move to the target from
				// another config, or one seen pending for it at the last
				// pass. A node that merely runs the target already (one
				// that joined the pool, or any node of a pool whose record
				// came back from the status) moved nothing.
				moved := n.Annotations[mcostate.CurrentConfig] != n.target ||
					(seen && prev.Pool == p.Name && prev.Target == n.target && prev.Phase == mcostate.PhasePending)
				if moved && started == "" {
					started, startedGate = n.Name, n.gate
				}
			}
			counted := phase
			if n.gate != "" {
				allDone = false
				if phase == mcostate.PhaseDone {
					counted = mcostate.PhasePending
				}
				if n.gateDegraded && gateDegraded == "" {
					gateDegraded = "gate pool " + n.gate + ": " + orNone(n.gateMessage)
				}
			}
			if phase != mcostate.PhaseDone {
				allDone = false
			}
			countPhase(&st.Nodes, counted)
			reason := n.Annotations[mcostate.Reason]
			if phase == mcostate.PhaseDegraded && firstDegraded == "" {
				firstDegraded = "node " + n.Name + ": " + orNone(reason)
			}
			// A pending node cordoned by someone else while its pool wants
			// to update is never targeted: it can be stuck too.
			blocked := cordoned && !p.Updated
			if (phase.InProgress() || blocked) && in.StuckAfter > 0 {
				due := mem.Since.Add(in.StuckAfter)
				if !now.Before(due) {
					st.StuckNodes++
					if !mem.Stuck {
						mem.Stuck = true
						what, why := string(phase), orNone(reason)
						if blocked {
							what, why = "pending and cordoned", "the MCO does not update a cordoned node; uncordon it"
						}
						out.Events = append(out.Events, Event{Pool: p.Name, Warning: true, Reason: ReasonNodeStuck, Message: fmt.Sprintf(
							"node %s of pool %s has been %s for %s (since %s): %s",
							n.Name, p.Name, what, now.Sub(mem.Since).Round(time.Second), mem.Since.UTC().Format(time.RFC3339), why)})
					}
				} else {
					recheck.At(due)
				}
			}
			if phase.InProgress() {
				if slowest == nil || mem.Since.Before(slowest.Since) {
					m := mem
					slowest, slowestName, slowestReason = &m, n.Name, reason
				}
			}
			out.State.Nodes[n.Name] = mem
		}
		if slowest != nil {
			st.SlowestNode = &upgradev1alpha1.SlowestNode{Name: slowestName, State: string(slowest.Phase), Since: metaTime(slowest.Since), Reason: truncate.String(slowestReason, slowestReasonLimit)}
		}
		complete := allDone && p.Updated

		prev, known := in.Prev.Pools[p.Name]
		rec := prev
		if !known || prev.Target != p.Target || prev.Removed != nil {
			sawChange := known && prev.Target != p.Target
			// Observed: watched before any node moved, so the start about
			// to be seen is the real one. A pool first seen mid-update gets
			// no start (and so no completion time): unknown, not invented.
			rec = PoolRecord{Name: p.Name, Target: p.Target, SawChange: sawChange, Observed: sawChange || targeted == ""}
			if known {
				rec.LastDuration = prev.LastDuration
			}
		}
		if !rec.Settled {
			if rec.Start == nil && started != "" && rec.Observed && !(complete && !rec.SawChange) {
				t := now
				rec.Start = &t
				how := "was told to move to it"
				if startedGate != "" {
					how = "was released by node-gate into its gate pool " + startedGate + " and told to move"
				}
				out.Events = append(out.Events, Event{Pool: p.Name, Reason: ReasonPoolStarted, Message: fmt.Sprintf(
					"pool %s started updating to %s: node %s %s", p.Name, p.Target, started, how)})
			}
			if complete {
				rec.Settled = true
				if rec.Start == nil && rec.SawChange {
					// No node to move (an empty pool): it started and
					// completed at once.
					t := now
					rec.Start = &t
					out.Events = append(out.Events, Event{Pool: p.Name, Reason: ReasonPoolStarted, Message: fmt.Sprintf(
						"pool %s started updating to %s: it has no node to move", p.Name, p.Target)})
				}
				if rec.Start != nil {
					t := now
					rec.Complete = &t
					// Whole seconds, as the status keeps the two times.
					rec.LastDuration = metaTime(now).Sub(metaTime(*rec.Start).Time)
					out.Events = append(out.Events, Event{Pool: p.Name, Reason: ReasonPoolCompleted, Message: fmt.Sprintf(
						"pool %s completed its update to %s in %s (%d nodes)", p.Name, p.Target, now.Sub(*rec.Start).Round(time.Second), len(nodes))})
				}
			}
		}
		st.Degraded = st.Nodes.Degraded > 0 || p.Degraded || gateDegraded != ""
		switch {
		case firstDegraded != "":
			st.DegradedDetail = firstDegraded
		case p.Degraded:
			st.DegradedDetail = orNone(p.DegradedMessage)
		case gateDegraded != "":
			st.DegradedDetail = gateDegraded
		}
		if st.Degraded && !rec.Degraded {
			out.Events = append(out.Events, Event{Pool: p.Name, Warning: true, Reason: ReasonPoolDegraded, Message: fmt.Sprintf(
				"pool %s is degraded updating to %s: %s", p.Name, p.Target, st.DegradedDetail)})
		}
		rec.Degraded = st.Degraded
		st.Settled = rec.Settled
		st.StartTime, st.CompleteTime = metaTimePtr(rec.Start), metaTimePtr(rec.Complete)
		st.LastUpdateDurationSeconds = int64(rec.LastDuration / time.Second)
		out.State.Pools[p.Name] = rec
		out.Pools = append(out.Pools, st)
	}

	// Pools gone: keep them listed for RemovedRetention.
	for _, name := range slices.Sorted(maps.Keys(in.Prev.Pools)) {
		if present[name] {
			continue
		}
		rec := in.Prev.Pools[name]
		if rec.Removed == nil {
			t := now
			rec.Removed = &t
			if rec.Start != nil && !rec.Settled {
				out.Events = append(out.Events, Event{Pool: name, Warning: true, Reason: ReasonPoolRemoved, Message: fmt.Sprintf(
					"pool %s was deleted while updating to %s", name, rec.Target)})
			}
		}
		forget := rec.Removed.Add(in.RemovedRetention)
		if !now.Before(forget) {
			continue
		}
		recheck.At(forget)
		rec.Degraded = false
		out.State.Pools[name] = rec
		out.Pools = append(out.Pools, PoolStatus{Settled: rec.Settled, PoolUpdate: upgradev1alpha1.PoolUpdate{
			Name: name, TargetConfig: rec.Target,
			StartTime: metaTimePtr(rec.Start), CompleteTime: metaTimePtr(rec.Complete), RemovedTime: metaTimePtr(rec.Removed),
			LastUpdateDurationSeconds: int64(rec.LastDuration / time.Second),
		}})
	}
	slices.SortFunc(out.Pools, func(a, b PoolStatus) int { return cmp.Compare(a.Name, b.Name) })
	out.Recheck = recheck.After(now)
	return out
}

// PoolOf names the pool a node with these labels belongs to, by the MCO's
// rules: of the pools whose selector matches, a custom pool (any but master,
// worker and arbiter) wins over worker, master wins over everything, and a
// node matching two custom pools belongs to none ("").
func PoolOf(nodeLabels map[string]string, pools []Pool) string {
	set := labels.Set(nodeLabels)
	var custom []string
	matched := map[string]bool{}
	for _, p := range pools {
		if p.Selector == nil || p.Selector.Empty() || !p.Selector.Matches(set) {
			continue
		}
		matched[p.Name] = true
		switch p.Name {
		case "master", "worker", "arbiter":
		default:
			custom = append(custom, p.Name)
		}
	}
	switch {
	case matched["master"]:
		return "master"
	case len(custom) > 1:
		return ""
	case len(custom) == 1:
		return custom[0]
	case matched["arbiter"]:
		return "arbiter"
	case matched["worker"]:
		return "worker"
	}
	return ""
}

func countPhase(c *upgradev1alpha1.PoolNodeCounts, p mcostate.Phase) {
	switch p {
	case mcostate.PhasePending:
		c.Pending++
	case mcostate.PhaseDraining:
		c.Draining++
	case mcostate.PhaseUpdating:
		c.Updating++
	case mcostate.PhaseRebooting:
		c.Rebooting++
	case mcostate.PhaseDone:
		c.Done++
	case mcostate.PhaseDegraded:
		c.Degraded++
	}
}

// Count returns the count of phase p in c.
func Count(c upgradev1alpha1.PoolNodeCounts, p mcostate.Phase) int32 {
	switch p {
	case mcostate.PhasePending:
		return c.Pending
	case mcostate.PhaseDraining:
		return c.Draining
	case mcostate.PhaseUpdating:
		return c.Updating
	case mcostate.PhaseRebooting:
		return c.Rebooting
	case mcostate.PhaseDone:
		return c.Done
	case mcostate.PhaseDegraded:
		return c.Degraded
	}
	return 0
}

func orNone(reason string) string {
	if reason == "" {
		return "the MCO gives no reason"
	}
	return reason
}

// slowestReasonLimit is status.pools[].slowestNode.reason's MaxLength.
const slowestReasonLimit = 1024

// metaTime is t as the API stores it: whole seconds, so that what the
// tracker computes compares equal to what it reads back.
func metaTime(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }

func metaTimePtr(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	m := metaTime(*t)
	return &m
}
