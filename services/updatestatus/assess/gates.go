package assess

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
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
// What a run holds is read from its own record of what it changed (its
// status.pools: the original `paused` value it recorded before pausing a
// pool, the gate pools it created), never guessed from names or labels: a
// pool the administrator had paused before the run keeps oc's wording, since
// the run will give it back paused.

// refNodeGate is where a gated update's reader learns what a run does.
const refNodeGate = "https://github.com/upshift-io/upshift/blob/main/docs/operations/node-gate.md"

// Condition types of a MutexRunConfig that the report quotes.
const (
	condPaused      = "Paused"
	condDegraded    = "Degraded"
	condProgressing = "Progressing"
	condBlocked     = "Blocked"
)

// nodeGateRunsResource names MutexRunConfigs in insights' resource references.
const nodeGateRunsResource = "mutexrunconfigs"

// gating is what the snapshot's node-gate runs hold.
type gating struct {
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

// gateRun is one run that holds pools.
type gateRun struct {
	key       string // namespace/name
	namespace string
	name      string
	done      int // nodes completed or skipped in this round
	total     int
	// paused is the run's Paused condition when it is True: a failed hook or
	// spec.paused stopped it, and the update waits for a person.
	paused *gatePause
	// waiting is the reason and message of a run that waits (a window, the
	// health gate, the control plane) rather than releases.
	waiting string
	pools   []string // the source pools it gates, by name
}

type gatePause struct{ reason, message string }

// gatedNode is a node a run holds, with what it waits for.
type gatedNode struct {
	run *gateRun
	rec *nodegatev1alpha1.NodeRecord
}

// newGating reads the runs. Runs are looked at in namespace/name order, so
// that the (refused) case of two runs claiming one pool reads the same on
// every recomputation.
func newGating(runs []nodegatev1alpha1.MutexRunConfig) gating {
	g := gating{pools: map[string]*gateRun{}, sourceOf: map[string]string{}, nodes: map[string]gatedNode{}, recorded: map[string]bool{}}
	sorted := make([]*nodegatev1alpha1.MutexRunConfig, len(runs))
	for i := range runs {
		sorted[i] = &runs[i]
	}
	sort.Slice(sorted, func(i, j int) bool {
		return sorted[i].Namespace+"/"+sorted[i].Name < sorted[j].Namespace+"/"+sorted[j].Name
	})
	for _, run := range sorted {
		st := &run.Status
		r := &gateRun{key: run.Namespace + "/" + run.Name, namespace: run.Namespace, name: run.Name}
		for _, p := range st.Pools {
			held := false
			if pausedByRun(p.OriginalPaused) {
				g.claim(p.Name, r)
				r.pools = append(r.pools, p.Name)
				held = true
			}
			if p.GatePool != "" && (p.GatePoolCreated || pausedByRun(p.OriginalGatePaused)) {
				g.claim(p.GatePool, r)
				held = true
			}
			if p.GatePool != "" && p.GatePoolCreated {
				g.sourceOf[p.GatePool] = p.Name
			}
			if held && !slices.Contains(r.pools, p.Name) {
				r.pools = append(r.pools, p.Name)
			}
		}
		if len(r.pools) == 0 {
			continue // the run holds nothing (not started, or restored)
		}
		g.runs = append(g.runs, r)
		// As the run's own progress column: skipped nodes needed no gate.
		r.total = int(st.Summary.Total - st.Summary.Skipped)
		r.done = int(st.Summary.Succeeded)
		if c := meta.FindStatusCondition(st.Conditions, condPaused); c != nil && c.Status == metav1.ConditionTrue {
			r.paused = &gatePause{reason: c.Reason, message: c.Message}
			// A failed hook is named by the Degraded condition.
			if d := meta.FindStatusCondition(st.Conditions, condDegraded); d != nil && d.Status == metav1.ConditionTrue {
				r.paused.message = d.Message
			}
		}
		switch st.Phase {
		case nodegatev1alpha1.RunWaiting:
			if c := meta.FindStatusCondition(st.Conditions, condProgressing); c != nil {
				r.waiting = joinNonEmpty(": ", c.Reason, c.Message)
			}
		case nodegatev1alpha1.RunBlocked:
			if c := meta.FindStatusCondition(st.Conditions, condBlocked); c != nil {
				r.waiting = joinNonEmpty(": ", c.Reason, c.Message)
			}
		}
		for i := range st.Nodes {
			rec := &st.Nodes[i]
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

// pausedByRun: the run recorded the pool's original `paused` as false before
// pausing it, so the pause is the run's until it gives the value back.
func pausedByRun(original *bool) bool { return original != nil && !*original }

func (g gating) claim(pool string, r *gateRun) {
	if _, taken := g.pools[pool]; !taken {
		g.pools[pool] = r
	}
}

// heldBy is the run that holds pool, or nil.
func (g gating) heldBy(pool string) *gateRun { return g.pools[pool] }

// displayPool is the pool a pool's nodes are reported in: a gate pool's
// source, else the pool itself. A gate pool whose source no longer exists is
// reported as itself.
func (g gating) displayPool(pool string, exists func(string) bool) string {
	if src, ok := g.sourceOf[pool]; ok && exists(src) {
		return src
	}
	return pool
}

// ref is the run as an insight's resource reference.
func (r *gateRun) ref() updatev1alpha1.ResourceRef {
	return updatev1alpha1.ResourceRef{Group: nodegatev1alpha1.GroupVersion.Group, Resource: nodeGateRunsResource,
		Namespace: r.namespace, Name: r.name}
}

// progress is "<done> of <total> nodes done".
func (r *gateRun) progress() string {
	return fmt.Sprintf("%d of %d nodes done", r.done, r.total)
}

// nodeMessage says what a run holds a node (not updated, not updating) of
// pool for; empty when no run holds it.
func (g gating) nodeMessage(node, pool string) string {
	if n, ok := g.nodes[node]; ok {
		return n.run.nodeMessage(n.rec)
	}
	if r := g.heldBy(pool); r != nil && !g.recorded[node] {
		return r.nodeMessage(nil)
	}
	return ""
}

// nodeMessage says what a held node waits for. rec is nil for a node of a
// held pool that the run has no record of yet (it is added on its next pass).
func (r *gateRun) nodeMessage(rec *nodegatev1alpha1.NodeRecord) string {
	prefix := fmt.Sprintf("Gated by node-gate run %s", r.key)
	if r.paused != nil {
		return fmt.Sprintf("%s, which is paused (%s): %s", prefix, r.paused.reason, r.paused.message)
	}
	if rec == nil {
		if r.waiting != "" {
			return fmt.Sprintf("%s: waiting: %s", prefix, r.waiting)
		}
		return prefix + ": not yet planned"
	}
	switch rec.Phase {
	case nodegatev1alpha1.NodePreHooks:
		if h := currentHook(rec); h != nil {
			return fmt.Sprintf("%s: pre-update hook %s of rule %s %s", prefix, h.Name, h.Rule, strings.ToLower(string(h.Phase)))
		}
		return prefix + ": running pre-update hooks"
	case nodegatev1alpha1.NodeReleased:
		return prefix + ": released, waiting for the machine-config operator"
	case nodegatev1alpha1.NodeFailed:
		return fmt.Sprintf("%s: a hook failed: %s", prefix, rec.LastError)
	}
	if r.waiting != "" {
		return fmt.Sprintf("%s: waiting: %s", prefix, r.waiting)
	}
	return fmt.Sprintf("%s: waiting for its turn (%s)", prefix, r.progress())
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

// gateHealth is one insight per run that holds pools. A paused run stalls
// the update until someone acts on the run, and says so (a Warning); a run
// that gates as designed is an Info that the update goes at the gate's pace.
// Neither ever advises unpausing a pool: that would let the MCO update nodes
// past their hooks.
func gateHealth(g gating, started time.Time) []updatev1alpha1.HealthInsight {
	var out []updatev1alpha1.HealthInsight
	for _, r := range g.runs {
		res := []updatev1alpha1.ResourceRef{r.ref()}
		for _, p := range r.pools {
			res = append(res, poolRef(p).ResourceRef)
		}
		pools := "'" + strings.Join(r.pools, "', '") + "'"
		if r.paused != nil {
			out = append(out, newHealth(makeUID("nodegate", r.namespace, r.name, "paused"), time.Time{},
				updatev1alpha1.ScopeTypeWorkerPool, res, updatev1alpha1.WarningImpactLevel, updatev1alpha1.UpdateStalledImpactType,
				fmt.Sprintf("node-gate run %s is paused (%s): nodes of %s wait for it", r.key, r.paused.reason, pools),
				fmt.Sprintf("The run stopped releasing nodes: %s. %s so far. Find the cause in the run's status and Events "+
					"(kubectl -n %s describe mutexrunconfig %s) and in the failed hook's Job; the run resumes, with the hook's "+
					"retries given back, on any change of its spec (set and clear spec.paused). Do not unpause the pools: "+
					"the run paused them so that no node updates before its hooks have run.",
					r.paused.message, capitalize(r.progress()), r.namespace, r.name),
				refNodeGate))
			continue
		}
		summary := fmt.Sprintf("Pools %s are gated by node-gate run %s", pools, r.key)
		if r.total > 0 {
			summary += ": " + r.progress()
		}
		if r.waiting != "" {
			summary += "; waiting: " + r.waiting
		}
		out = append(out, newHealth(makeUID("nodegate", r.namespace, r.name, "gating"), started,
			updatev1alpha1.ScopeTypeWorkerPool, res, updatev1alpha1.InfoImpactLevel, updatev1alpha1.UpdateSpeedImpactType,
			summary,
			"node-gate releases the nodes of these pools to the machine-config operator one slot at a time, each after "+
				"its pre-update hooks, so the pools are paused by the run, not by an administrator, and their nodes are "+
				"updated at the run's pace. The run gives every pool its original state back when its last node is done.",
			refNodeGate))
	}
	return out
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
