package track

import (
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/upshift-io/upshift/libs/mcostate"
)

var t0 = time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)

const (
	roleWorker = "node-role.kubernetes.io/worker"
	roleMaster = "node-role.kubernetes.io/master"
	roleInfra  = "node-role.kubernetes.io/infra"
)

func pool(name, target, roleLabel string, updated bool) Pool {
	return Pool{Name: name, Target: target, Selector: labels.SelectorFromSet(labels.Set{roleLabel: ""}), Updated: updated}
}

// node builds a node with the MCO annotations; roles are label keys.
func node(name string, roles []string, current, desired, state string, extra ...string) Node {
	l := map[string]string{}
	for _, r := range roles {
		l[r] = ""
	}
	a := map[string]string{mcostate.CurrentConfig: current, mcostate.DesiredConfig: desired, mcostate.State: state}
	for i := 0; i+1 < len(extra); i += 2 {
		a[extra[i]] = extra[i+1]
	}
	return Node{Name: name, Labels: l, Annotations: a, Ready: true}
}

func workers(ns ...Node) []Node { return ns }

// run feeds one pass with the previous state and returns its output.
func run(prev State, at time.Duration, pools []Pool, nodes []Node) Output {
	return Track(Input{Pools: pools, Nodes: nodes, Prev: prev, Now: t0.Add(at), StuckAfter: time.Hour, RemovedRetention: 24 * time.Hour})
}

func find(out Output, pool string) *PoolStatus {
	for i := range out.Pools {
		if out.Pools[i].Name == pool {
			return &out.Pools[i]
		}
	}
	return nil
}

func reasons(evs []Event) []string {
	var r []string
	for _, e := range evs {
		r = append(r, e.Reason)
	}
	return r
}
