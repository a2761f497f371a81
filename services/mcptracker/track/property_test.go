package track

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/upshift-io/upshift/libs/mcostate"
)

// TestProperties drives random clusters (pools appearing and going, targets
// moving, nodes stepping through the MCO's states in random order, joining
// and leaving pools) and checks after every pass what must hold whatever
// happened:
//   - every node is counted once, in the pool PoolOf names, and the counts
//     add up to machineCount;
//   - a pool's start is never after its completion, and completion is set
//     only in a pass where every member is Done on the target and the pool is
//     Updated;
//   - Started and Completed are emitted at most once per pool and target,
//     Completed never before Started;
//   - the slowest node has the earliest since among the in-progress nodes,
//     stuck nodes are in progress and past the threshold;
//   - node durations are not negative; the pass is deterministic.
func TestProperties(t *testing.T) {
	exercised := map[string]int{}
	for seed := uint64(0); seed < 300; seed++ {
		checkRun(t, seed, exercised)
	}
	// The walk must reach the interesting cases, or the test proves little.
	for _, k := range []string{ReasonPoolStarted, ReasonPoolCompleted, ReasonPoolDegraded, ReasonNodeStuck, ReasonPoolRemoved, "nodeDuration", "unassigned", "cordonedStuck"} {
		if exercised[k] == 0 {
			t.Errorf("the random walk never produced %s", k)
		}
	}
	t.Logf("exercised: %v", exercised)
}

func checkRun(t *testing.T, seed uint64, exercised map[string]int) {
	r := rand.New(rand.NewPCG(seed, 7))
	roles := []string{roleMaster, roleWorker, roleInfra, "gpu"}
	poolNames := map[string]string{roleMaster: "master", roleWorker: "worker", roleInfra: "infra", "gpu": "gpu"}
	targets := map[string]int{}
	present := map[string]bool{"master": true, "worker": true}
	nodes := map[string]*Node{}
	for i := range 6 {
		n := node(fmt.Sprintf("n%d", i), []string{roles[r.IntN(2)]}, "", "", "Done")
		nodes[n.Name] = &n
	}
	cfg := func(pool string) string { return fmt.Sprintf("rendered-%s-%d", pool, targets[pool]) }
	for _, n := range nodes {
		p := poolNames[firstRole(n.Labels)]
		n.Annotations[mcostate.CurrentConfig], n.Annotations[mcostate.DesiredConfig] = cfg(p), cfg(p)
	}
	state := State{}
	now := t0
	type key struct{ pool, target string }
	started, completed := map[key]bool{}, map[key]bool{}
	for step := range 80 {
		now = now.Add(time.Duration(r.IntN(40)) * time.Minute)
		switch x := r.IntN(20); {
		case x == 0: // a pool's target moves
			p := []string{"master", "worker", "infra", "gpu"}[r.IntN(4)]
			targets[p]++
		case x == 1: // a custom pool appears or goes
			p := []string{"infra", "gpu"}[r.IntN(2)]
			present[p] = !present[p]
		case x == 2: // a node gains or loses a role
			n := nodes[fmt.Sprintf("n%d", r.IntN(6))]
			role := roles[1+r.IntN(3)]
			if _, ok := n.Labels[role]; ok {
				delete(n.Labels, role)
			} else {
				n.Labels[role] = ""
			}
		default: // a node steps
			n := nodes[fmt.Sprintf("n%d", r.IntN(6))]
			stepNode(r, n, targets)
		}
		var pools []Pool
		for role, name := range poolNames {
			if present[name] {
				pools = append(pools, pool(name, cfg(name), role, r.IntN(3) > 0))
			}
		}
		var ns []Node
		for _, n := range nodes {
			ns = append(ns, *n)
		}
		in := Input{Pools: pools, Nodes: ns, Prev: state, Now: now, StuckAfter: 50 * time.Minute, RemovedRetention: 3 * time.Hour}
		out := Track(in)
		if again := Track(in); !reflect.DeepEqual(out, again) {
			t.Fatalf("seed %d step %d: not deterministic", seed, step)
		}
		exercised["unassigned"] += len(out.Unassigned)
		for _, d := range out.NodeDurations {
			exercised["nodeDuration"]++
			if d.Duration < 0 {
				t.Fatalf("seed %d step %d: negative duration %v", seed, step, d)
			}
		}
		byName := map[string]Pool{}
		for _, p := range pools {
			byName[p.Name] = p
		}
		members := map[string][]Node{}
		for _, n := range ns {
			if p := PoolOf(n.Labels, pools); p != "" {
				members[p] = append(members[p], n)
			}
		}
		for _, e := range out.Events {
			exercised[e.Reason]++
			if strings.Contains(e.Message, "pending and cordoned") {
				exercised["cordonedStuck"]++
			}
			k := key{e.Pool, byName[e.Pool].Target}
			switch e.Reason {
			case ReasonPoolStarted:
				if started[k] {
					t.Fatalf("seed %d step %d: started twice: %v", seed, step, k)
				}
				started[k] = true
			case ReasonPoolCompleted:
				if completed[k] || !started[k] {
					t.Fatalf("seed %d step %d: completed twice or before started: %v", seed, step, k)
				}
				completed[k] = true
			}
		}
		for _, ps := range out.Pools {
			if ps.RemovedTime != nil {
				// A pool re-created later starts a new record.
				for k := range started {
					if k.pool == ps.Name {
						delete(started, k)
						delete(completed, k)
					}
				}
				if present[ps.Name] {
					t.Fatalf("seed %d step %d: present pool %s marked removed", seed, step, ps.Name)
				}
				continue
			}
			p := byName[ps.Name]
			mem := members[ps.Name]
			c := ps.Nodes
			if int(ps.MachineCount) != len(mem) || c.Pending+c.Draining+c.Updating+c.Rebooting+c.Done+c.Degraded != ps.MachineCount {
				t.Fatalf("seed %d step %d: pool %s counts %+v machineCount %d members %d", seed, step, ps.Name, c, ps.MachineCount, len(mem))
			}
			if ps.StartTime != nil && ps.CompleteTime != nil && ps.CompleteTime.Before(ps.StartTime) {
				t.Fatalf("seed %d step %d: pool %s completes before it starts", seed, step, ps.Name)
			}
			if prev := state.Pools[ps.Name]; ps.CompleteTime != nil && (prev.Complete == nil || prev.Target != p.Target || prev.Removed != nil) {
				// Set in this pass: every member Done on target, pool Updated.
				if !p.Updated || c.Done != ps.MachineCount {
					t.Fatalf("seed %d step %d: pool %s completed with %+v updated=%v", seed, step, ps.Name, c, p.Updated)
				}
			}
			var inProgress, blocked int32
			for _, n := range mem {
				m := out.State.Nodes[n.Name]
				if m.Phase == mcostate.PhasePending && n.Unschedulable && !p.Updated {
					blocked++
				}
				if m.Phase.InProgress() {
					inProgress++
					if ps.SlowestNode == nil || m.Since.Truncate(time.Second).Before(ps.SlowestNode.Since.Time) {
						t.Fatalf("seed %d step %d: pool %s slowest %+v but %s since %v", seed, step, ps.Name, ps.SlowestNode, n.Name, m.Since)
					}
				}
			}
			if ps.StuckNodes > inProgress+blocked {
				t.Fatalf("seed %d step %d: pool %s stuck %d > in progress %d + cordoned pending %d", seed, step, ps.Name, ps.StuckNodes, inProgress, blocked)
			}
		}
		state = out.State
	}
}

func firstRole(l map[string]string) string {
	for _, r := range []string{roleMaster, roleWorker, roleInfra, "gpu"} {
		if _, ok := l[r]; ok {
			return r
		}
	}
	return roleWorker
}

// stepNode moves a node one MCO step towards its pool's target (or, rarely,
// degrades it, or recovers it).
func stepNode(r *rand.Rand, n *Node, targets map[string]int) {
	a := n.Annotations
	p := map[string]string{roleMaster: "master", roleWorker: "worker", roleInfra: "infra", "gpu": "gpu"}[firstRole(n.Labels)]
	target := fmt.Sprintf("rendered-%s-%d", p, targets[p])
	switch {
	case r.IntN(15) == 0:
		n.Unschedulable = !n.Unschedulable
	case r.IntN(12) == 0:
		a[mcostate.State], a[mcostate.Reason] = mcostate.StateDegraded, "failed to drain node"
	case a[mcostate.DesiredConfig] != target:
		a[mcostate.DesiredConfig] = target
	case a[mcostate.State] != mcostate.StateWorking && a[mcostate.CurrentConfig] != target:
		a[mcostate.State], a[mcostate.Reason] = mcostate.StateWorking, ""
	case a[mcostate.DesiredDrain] != "drain-"+target && a[mcostate.CurrentConfig] != target:
		a[mcostate.DesiredDrain] = "drain-" + target
	case a[mcostate.LastAppliedDrain] != "drain-"+target && a[mcostate.CurrentConfig] != target:
		a[mcostate.LastAppliedDrain] = "drain-" + target
	case n.Ready && a[mcostate.CurrentConfig] != target && r.IntN(2) == 0:
		n.Ready = false
	default:
		n.Ready = true
		a[mcostate.CurrentConfig], a[mcostate.State], a[mcostate.DesiredDrain], a[mcostate.LastAppliedDrain] = target, mcostate.StateDone, "uncordon-"+target, "uncordon-"+target
	}
}
