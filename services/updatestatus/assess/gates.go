package assess

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/gating"
)

// Gating by node-gate.
//
// A node-gate run pauses the pools it gates and releases their nodes one by
// one, after each node's pre-update hooks, through a gate pool it creates.
// Read as oc reads pools, that is an administrator's pause that stalls the
// update, and the gate pool is one more unfinished pool; oc's advice would be
// to unpause, which lets the MCO update nodes past their hooks. So a pool
// that a run paused, and the nodes it holds there, are reported as gated by
// that run, and a gate pool's nodes are reported in the pool they come from.
//
// What a run holds is read by libs/gating, from the run's own record of what
// it changed; a pool the administrator had paused before the run keeps oc's
// wording, since the run will give it back paused.

// refNodeGate is where a gated update's reader learns what a run does.
const refNodeGate = "https://github.com/upshift-io/upshift/blob/main/docs/operations/node-gate.md"

// nodeGateRunsResource names MutexRunConfigs in insights' resource references.
const nodeGateRunsResource = "mutexrunconfigs"

// gateSet is what the snapshot's node-gate runs hold.
type gateSet struct {
	// pools maps a pool the run paused, or a gate pool it created, to the run.
	pools map[string]*gateRun
	// sourceOf maps a gate pool a run created to the pool its nodes come from.
	sourceOf map[string]string
	// nodes maps a node the run has not yet let update to its record.
	nodes map[string]gatedNode
	// recorded are all nodes the runs have a record of, in any phase.
	recorded map[string]bool
	// runs are the runs that hold anything, by namespace and name.
	runs []*gateRun
}

// gateRun is one run that holds pools (libs/gating reads it).
type gateRun struct {
	gating.Run
	key string // namespace/name
}

// gatedNode is a node a run holds, with what it waits for.
type gatedNode struct {
	run *gateRun
	rec *nodegatev1alpha1.NodeRecord
}

// newGating reads the runs. Runs are looked at in namespace/name order, so
// that the (refused) case of two runs claiming one pool reads the same on
// every recomputation.
func newGating(runs []nodegatev1alpha1.MutexRunConfig) gateSet {
	g := gateSet{pools: map[string]*gateRun{}, sourceOf: map[string]string{}, nodes: map[string]gatedNode{}, recorded: map[string]bool{}}
	sorted := make([]*nodegatev1alpha1.MutexRunConfig, len(runs))
	for i := range runs {
		sorted[i] = &runs[i]
	}
	sort.Slice(sorted, func(i, j int) bool {
		return sorted[i].Namespace+"/"+sorted[i].Name < sorted[j].Namespace+"/"+sorted[j].Name
	})
	for _, run := range sorted {
		r := &gateRun{Run: gating.Read(run)}
		r.key = r.Key()
		if !r.Holds() {
			continue // the run holds nothing (not started, or restored)
		}
		g.runs = append(g.runs, r)
		for _, p := range r.PausedPools {
			g.claim(p, r)
		}
		for gate, source := range r.GatePools {
			g.claim(gate, r)
			g.sourceOf[gate] = source
		}
		for i := range run.Status.Nodes {
			rec := &run.Status.Nodes[i]
			g.recorded[rec.Name] = true
			switch rec.Phase {
			case nodegatev1alpha1.NodePending, nodegatev1alpha1.NodePreHooks, nodegatev1alpha1.NodeReleased, nodegatev1alpha1.NodeFailed:
				if _, taken := g.nodes[rec.Name]; !taken {
					g.nodes[rec.Name] = gatedNode{run: r, rec: rec}
				}
			}
		}
	}
	return g
}

func (g gateSet) claim(pool string, r *gateRun) {
	if _, taken := g.pools[pool]; !taken {
		g.pools[pool] = r
	}
}

// heldBy is the run that holds pool, or nil.
func (g gateSet) heldBy(pool string) *gateRun { return g.pools[pool] }

// displayPool is the pool a pool's nodes are reported in: a gate pool's
// source, else the pool itself. A gate pool is known by the run that records
// it or, while the runs' cache lags the pools' (after an API server restart
// each lists again on its own), by its own label (gating.GatePoolSource). A
// gate pool whose source no longer exists is reported as itself.
func (g gateSet) displayPool(pool metav1.Object, exists map[string]bool) string {
	if src, ok := gating.GatePoolSource(g.sourceOf, pool); ok && exists[src] {
		return src
	}
	return pool.GetName()
}

// ref is the run as an insight's resource reference.
func (r *gateRun) ref() updatev1alpha1.ResourceRef {
	return updatev1alpha1.ResourceRef{Group: nodegatev1alpha1.GroupVersion.Group, Resource: nodeGateRunsResource,
		Namespace: r.Namespace, Name: r.Name}
}

// progress is "<done> of <total> nodes done".
func (r *gateRun) progress() string {
	return fmt.Sprintf("%d of %d nodes done", r.Done, r.Total)
}

// nodeMessage says what a run holds a node (not updated, not updating) of
// pool for; empty when no run holds it.
func (g gateSet) nodeMessage(node *corev1.Node, pool string) string {
	if n, ok := g.nodes[node.Name]; ok {
		return n.run.nodeMessage(n.rec, node)
	}
	if r := g.heldBy(pool); r != nil && !g.recorded[node.Name] {
		return r.nodeMessage(nil, node)
	}
	return ""
}

// nodeMessage says what a held node waits for. rec is nil for a node of a
// held pool that the run has no record of yet (it is added on its next pass).
//
// While the run waits, its nodes say for what by the reason alone: the
// message, in the run's health insight, changes as the control plane
// progresses, and every change would rewrite the insight of every node
// the run holds.
func (r *gateRun) nodeMessage(rec *nodegatev1alpha1.NodeRecord, node *corev1.Node) string {
	prefix := fmt.Sprintf("Gated by node-gate run %s", r.key)
	if r.Stopped != nil {
		return fmt.Sprintf("%s, which is %s (%s): %s", prefix, stoppedAs(r.Stopped), r.Stopped.Reason, r.Stopped.Message)
	}
	waiting := r.WaitingReason
	if waiting == "" {
		waiting = r.Waiting
	}
	if rec == nil {
		if waiting != "" {
			return fmt.Sprintf("%s: waiting: %s", prefix, waiting)
		}
		return prefix + ": not yet planned"
	}
	phase := rec.Phase
	if r.ReleasedAhead(rec, node) {
		// The run's status, written after the release, does not say so
		// yet. Reporting the record would show the node waiting for a
		// hook it passed, then rewrite its insight once the status caught
		// up.
		phase = nodegatev1alpha1.NodeReleased
	}
	switch phase {
	case nodegatev1alpha1.NodePreHooks:
		if h := currentHook(rec); h != nil {
			return fmt.Sprintf("%s: pre-update hook %s of rule %s %s", prefix, h.Name, h.Rule, strings.ToLower(string(h.Phase)))
		}
		// Every pre-update hook ran (a rule's lookahead runs them before
		// the node's turn): it waits for a slot.
		return prefix + ": pre-update hooks done, waiting for its turn"
	case nodegatev1alpha1.NodeReleased:
		return prefix + ": released, waiting for the machine-config operator"
	case nodegatev1alpha1.NodeFailed:
		return fmt.Sprintf("%s: a hook failed: %s", prefix, rec.LastError)
	}
	if waiting != "" {
		return fmt.Sprintf("%s: waiting: %s", prefix, waiting)
	}
	// Not the run's progress: a message that changed with every node the
	// run completes would rewrite every waiting node's insight each time
	// (hundreds of writes per completed node on a large pool). The progress
	// is in the run's health insight, once.
	return prefix + ": waiting for its turn"
}

// currentHook is the pre-update hook a node is at: the running one, else the
// first failed or pending one.
func currentHook(rec *nodegatev1alpha1.NodeRecord) *nodegatev1alpha1.HookRecord {
	var first *nodegatev1alpha1.HookRecord
	for i := range rec.Hooks {
		h := &rec.Hooks[i]
		if h.Stage != nodegatev1alpha1.StagePre {
			continue
		}
		if h.Phase == nodegatev1alpha1.HookRunning {
			return h
		}
		if first == nil && (h.Phase == nodegatev1alpha1.HookPending || h.Phase == nodegatev1alpha1.HookFailed) {
			first = h
		}
	}
	return first
}

// gateStallAfter is how long a run that holds pools may go without moving
// (no node or hook of it starting or ending, no condition changing) before
// it is reported as stalled. Longer than a node's drain and reboot; for a
// run waiting for its own maintenance window only the time the window is
// open counts (gating.Run.Stalled). It only words a
// warning: the upgrade-scheduler, which acts on a stuck run, has its own
// bound.
const gateStallAfter = time.Hour

// gateHealth is one insight per run that holds pools. A paused run stalls
// the update until someone acts on the run, and says so (a Warning), as
// does a run that has not moved for gateStallAfter (node-gate down, a hook
// hung); a run that gates as designed is an Info that the update goes at
// the gate's pace. None ever advises unpausing a pool: that would let the
// MCO update nodes past their hooks.
func gateHealth(g gateSet, started, now time.Time, next *nextCheck) []updatev1alpha1.HealthInsight {
	var out []updatev1alpha1.HealthInsight
	for _, r := range g.runs {
		res := []updatev1alpha1.ResourceRef{r.ref()}
		for _, p := range r.Pools {
			res = append(res, poolRef(p).ResourceRef)
		}
		pools := "'" + strings.Join(r.Pools, "', '") + "'"
		stallsAt, stalls := r.StallsAt(gateStallAfter)
		if r.Stopped == nil && r.Stalled(now, gateStallAfter) {
			since := r.LastProgress.UTC().Format(time.RFC3339)
			out = append(out, newHealth(makeUID("nodegate", r.Namespace, r.Name, "stalled"), stallsAt,
				updatev1alpha1.ScopeTypeWorkerPool, res, updatev1alpha1.WarningImpactLevel, updatev1alpha1.UpdateStalledImpactType,
				fmt.Sprintf("node-gate run %s has not moved since %s: nodes of %s wait for it", r.key, since, pools),
				fmt.Sprintf("No node or hook of the run has started or ended, and none of its conditions has changed, for longer than %s. %s so far. ", gateStallAfter, capitalize(r.progress()))+
					fmt.Sprintf("Check that node-gate is running (its pods, the leader's Lease and its log) and whether a hook's Job hangs "+
						"(kubectl -n %s describe mutexrunconfig %s names the node and hook it waits for; a hook without a timeout waits for its Job as long as it runs). ", r.Namespace, r.Name)+
					"If a hook is meant to run this long, this warning ends when it does. Do not unpause the pools: the run paused them so that no node updates before its hooks have run.",
				refNodeGate))
			continue
		}
		if stalls && r.Stopped == nil {
			// Stalled compares with ">": the warning is due one instant after the bound.
			next.at(stallsAt.Add(time.Nanosecond))
		}
		if r.Stopped != nil {
			act := "Find the cause in the run's status and Events (kubectl -n %[1]s describe mutexrunconfig %[2]s) and in the failed " +
				"hook's Job; the run resumes, with the hook's retries given back, on any change of its spec (set and clear spec.paused)."
			if r.Stopped.Blocked {
				act = "Fix what the run's Blocked condition names (kubectl -n %[1]s describe mutexrunconfig %[2]s): its rule, its " +
					"target or its pools; the run goes on by itself once its configuration is valid."
			}
			out = append(out, newHealth(makeUID("nodegate", r.Namespace, r.Name, "paused"), time.Time{},
				updatev1alpha1.ScopeTypeWorkerPool, res, updatev1alpha1.WarningImpactLevel, updatev1alpha1.UpdateStalledImpactType,
				fmt.Sprintf("node-gate run %s is %s (%s): nodes of %s wait for it", r.key, stoppedAs(r.Stopped), r.Stopped.Reason, pools),
				fmt.Sprintf("The run stopped releasing nodes: %s. %s so far. ", r.Stopped.Message, capitalize(r.progress()))+
					fmt.Sprintf(act, r.Namespace, r.Name)+
					" Do not unpause the pools: the run paused them so that no node updates before its hooks have run.",
				refNodeGate))
			continue
		}
		summary := fmt.Sprintf("Pools %s are gated by node-gate run %s", pools, r.key)
		if r.Total > 0 {
			summary += ": " + r.progress()
		}
		// The run's pace so far carried over the nodes left; it moves only
		// when a node completes, as the progress does.
		var finish *metav1.Time
		if !r.ExpectedFinish.IsZero() {
			summary += ", expected to finish at " + r.ExpectedFinish.UTC().Format(time.RFC3339)
			finish = &metav1.Time{Time: r.ExpectedFinish}
		}
		if r.Waiting != "" {
			summary += "; waiting: " + r.Waiting
		}
		h := newHealth(makeUID("nodegate", r.Namespace, r.Name, "gating"), started,
			updatev1alpha1.ScopeTypeWorkerPool, res, updatev1alpha1.InfoImpactLevel, updatev1alpha1.UpdateSpeedImpactType,
			summary,
			"node-gate releases the nodes of these pools to the machine-config operator one slot at a time, each after "+
				"its pre-update hooks, so the pools are paused by the run, not by an administrator, and their nodes are "+
				"updated at the run's pace. The run gives every pool its original state back when its last node is done.",
			refNodeGate)
		h.Remediation.EstimatedFinish = finish
		out = append(out, h)
	}
	return out
}

// stoppedAs is how a stopped run is said to be: paused, or blocked by a
// refusal of its configuration.
func stoppedAs(s *gating.Stop) string {
	if s.Blocked {
		return "blocked"
	}
	return "paused"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
