package mco

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/upshift-io/upshift/libs/mcostate"
)

func conditionTrue(n *corev1.Node, t corev1.NodeConditionType) (bool, bool) {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue, true
		}
	}
	return false, false
}

// IsReady reports the node's Ready condition.
func IsReady(n *corev1.Node) bool { ok, _ := conditionTrue(n, corev1.NodeReady); return ok }

// IsDone is the MCO's "done": current == desired (non-empty) and state Done.
func IsDone(n *corev1.Node) bool {
	a := n.Annotations
	cur, des := a[CurrentConfigAnnotation], a[DesiredConfigAnnotation]
	return cur != "" && cur == des && a[StateAnnotation] == StateDone
}

// IsFailing is the MCO's "MCD failing": not on the desired config and state
// Degraded or Unreconcilable.
func IsFailing(n *corev1.Node) bool {
	a := n.Annotations
	if a[CurrentConfigAnnotation] == a[DesiredConfigAnnotation] {
		return false
	}
	s := a[StateAnnotation]
	return s == StateDegraded || s == StateUnreconcilable
}

// IsDegraded reports an MCD state of Degraded or Unreconcilable.
func IsDegraded(n *corev1.Node) bool {
	s := n.Annotations[StateAnnotation]
	return s == StateDegraded || s == StateUnreconcilable
}

// UnavailableReason returns why the MCO counts the node unavailable, or "".
func UnavailableReason(n *corev1.Node) string {
	if !IsReady(n) {
		return "Not ready"
	}
	if ok, found := conditionTrue(n, corev1.NodeDiskPressure); found && ok {
		return "Disk pressure"
	}
	if ok, found := conditionTrue(n, corev1.NodeNetworkUnavailable); found && ok {
		return "Network unavailable"
	}
	if n.Spec.Unschedulable {
		return "Node is marked unschedulable"
	}
	if IsDone(n) || IsFailing(n) {
		return ""
	}
	return "Machine Config Daemon is processing the node"
}

// IsUnavailable is the MCO's unavailable-machine test.
func IsUnavailable(n *corev1.Node) bool { return UnavailableReason(n) != "" }

// IsUpdated reports that the node is done on the pool's target config.
func IsUpdated(n *corev1.Node, target string) bool {
	return IsDone(n) && n.Annotations[CurrentConfigAnnotation] == target
}

// MaxUnavailable is the pool's maxUnavailable resolved against its size, as
// the MCO resolves it (libs/mcostate).
func MaxUnavailable(pool *mcfgv1.MachineConfigPool, nodes int) int {
	return mcostate.MaxUnavailable(pool, nodes)
}

// Candidates returns the nodes the node controller targets now: nodes not yet
// targeted at target, Ready and schedulable, ordered by zone (nodes without a
// zone last) then creation time (oldest first), at most the free capacity.
func Candidates(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node) []*corev1.Node {
	target := pool.Spec.Configuration.Name
	if target == "" || pool.Spec.Paused {
		return nil
	}
	maxU := MaxUnavailable(pool, len(nodes))
	unavailable, failing := 0, 0
	var cands []*corev1.Node
	for _, n := range nodes {
		if IsUnavailable(n) {
			unavailable++
		}
		if n.Annotations[DesiredConfigAnnotation] == target {
			if IsFailing(n) {
				failing++
			}
			continue
		}
		if !IsReady(n) || n.Spec.Unschedulable {
			continue
		}
		cands = append(cands, n)
	}
	capacity := maxU - unavailable - failing
	if capacity <= 0 {
		return nil
	}
	mcostate.SortForUpdate(cands)
	if len(cands) > capacity {
		cands = cands[:capacity]
	}
	return cands
}

// IsCustomPool reports a pool other than master, worker and arbiter.
func IsCustomPool(name string) bool {
	return name != "master" && name != "worker" && name != "arbiter"
}

// PoolFor returns the name of the node's primary pool, "" if it belongs to
// none, or an error if it matches more than one custom pool (MCO's
// GetPrimaryPoolForNode).
func PoolFor(n *corev1.Node, pools []*mcfgv1.MachineConfigPool) (string, error) {
	var custom []string
	master, worker := false, false
	for _, p := range pools {
		if p.Spec.NodeSelector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		switch {
		case p.Name == "master":
			master = true
		case p.Name == "worker":
			worker = true
		case IsCustomPool(p.Name):
			custom = append(custom, p.Name)
		}
	}
	switch {
	case len(custom) > 1:
		sort.Strings(custom)
		return "", fmt.Errorf("node %s belongs to %d custom roles (%s), cannot proceed with this Node", n.Name, len(custom), strings.Join(custom, ", "))
	case master:
		return "master", nil
	case len(custom) == 1:
		return custom[0], nil
	case worker:
		return "worker", nil
	}
	return "", nil
}

// NodesByPool groups nodes by primary pool; nodes in no pool or in conflict
// are left out.
func NodesByPool(nodes []*corev1.Node, pools []*mcfgv1.MachineConfigPool) map[string][]*corev1.Node {
	out := map[string][]*corev1.Node{}
	for _, n := range nodes {
		if p, err := PoolFor(n, pools); err == nil && p != "" {
			out[p] = append(out[p], n)
		}
	}
	return out
}

// PoolsOfNodes is the pools a node event concerns, as the MCO's node
// controller finds them: each given node's pool (the node before and after an
// update, which differ when its labels move it), in order, once. A node whose
// pool cannot be told (several custom pools match) concerns every pool, so
// that each reports the error in its status.
func PoolsOfNodes(pools []*mcfgv1.MachineConfigPool, nodes ...*corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		name, err := PoolFor(n, pools)
		if err != nil {
			out = out[:0]
			for _, p := range pools {
				out = append(out, p.Name)
			}
			return out
		}
		if name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// SelectorChanged tells whether a pool update can move nodes between pools
// without any node changing: its node selector changed.
func SelectorChanged(old, cur *mcfgv1.MachineConfigPool) bool {
	return !equality.Semantic.DeepEqual(old.Spec.NodeSelector, cur.Spec.NodeSelector)
}
