package plan

import (
	"fmt"
	"sort"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// poolSelector is a pool's node selector to match nodes with. As in the
// MCO, a nil or empty selector (or an invalid one) selects nothing. A pass
// converts each pool's selector once: converting validates every label,
// which costs more than matching.
func poolSelector(sel *metav1.LabelSelector) labels.Selector {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return labels.Nothing()
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return labels.Nothing()
	}
	return s
}

// selects: a pool's node selector selects the node (one-off; a pass matching
// many nodes converts the selector once).
func selects(sel *metav1.LabelSelector, nodeLabels labels.Labels) bool {
	return poolSelector(sel).Matches(nodeLabels)
}

func isCustom(pool string) bool {
	return pool != MasterPool && pool != WorkerPool && pool != "arbiter"
}

// primaryPool applies the MCO's membership rule to the pools that select a
// node: more than one custom pool is an error (the MCO skips the node),
// master wins over everything, a custom pool wins over worker.
func primaryPool(selecting []string) (string, error) {
	var custom []string
	master, worker := false, false
	for _, p := range selecting {
		switch {
		case p == MasterPool:
			master = true
		case p == WorkerPool:
			worker = true
		case isCustom(p):
			custom = append(custom, p)
		}
	}
	switch {
	case master:
		return MasterPool, nil
	case len(custom) > 1:
		sort.Strings(custom)
		return "", fmt.Errorf("matches custom pools %s", strings.Join(custom, ", "))
	case len(custom) == 1:
		return custom[0], nil
	case worker:
		return WorkerPool, nil
	}
	return "", nil
}

// userPoolSelectors are the pools as the user made them: without node-gate's gate
// pools (and without the canary, whose selector node-gate replaces), with
// the originals of the selectors node-gate changed.
func (p *planner) userPoolSelectors() map[string]*metav1.LabelSelector {
	out := map[string]*metav1.LabelSelector{}
	for i := range p.in.Pools {
		pool := &p.in.Pools[i]
		if pool.Labels[GatePoolLabel] != "" || (p.canary != "" && pool.Name == p.canary) {
			continue
		}
		sel := pool.Spec.NodeSelector
		if rec := p.poolRecord(pool.Name); rec != nil && rec.OriginalNodeSelector != nil {
			sel = rec.OriginalNodeSelector
		}
		out[pool.Name] = sel
	}
	return out
}

// membership returns, for every node, the user pool the MCO puts it in
// without node-gate's changes, and the nodes the MCO cannot place.
func (p *planner) membership() (map[string]string, map[string]error) {
	user := p.userPoolSelectors()
	sels := make(map[string]labels.Selector, len(user))
	names := make([]string, 0, len(user))
	for n, sel := range user {
		names = append(names, n)
		sels[n] = poolSelector(sel)
	}
	sort.Strings(names)
	member := map[string]string{}
	errs := map[string]error{}
	for _, n := range p.in.Nodes {
		lbls := membershipView(n.Labels)
		var selecting []string
		for _, name := range names {
			if sels[name].Matches(lbls) {
				selecting = append(selecting, name)
			}
		}
		pool, err := primaryPool(selecting)
		if err != nil {
			errs[n.Name] = err
			continue
		}
		member[n.Name] = pool
	}
	return member, errs
}

// MembershipLabels are a node's labels as pool membership reads them:
// without node-gate's hold and release labels.
func MembershipLabels(in map[string]string) map[string]string { return withoutGateLabels(in) }

// membershipView is a node's labels as pool membership reads them (without
// node-gate's hold and release labels), read in place: a selector matches
// every node on every pass, and a copy of each held node's labels for it
// was a tenth of node-gate's CPU during a 500-worker rollout.
type membershipView map[string]string

func isGateLabel(key string) bool { return key == ReleaseLabel || key == HoldLabel }

func (l membershipView) Has(key string) bool {
	_, ok := l.Lookup(key)
	return ok
}

func (l membershipView) Get(key string) string {
	v, _ := l.Lookup(key)
	return v
}

func (l membershipView) Lookup(key string) (string, bool) {
	if isGateLabel(key) {
		return "", false
	}
	v, ok := l[key]
	return v, ok
}

func withoutGateLabels(in map[string]string) map[string]string {
	_, released := in[ReleaseLabel]
	_, held := in[HoldLabel]
	if !released && !held {
		return in
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		if k != ReleaseLabel && k != HoldLabel {
			out[k] = v
		}
	}
	return out
}

// gatePoolName is the gate pool of a source pool.
func (p *planner) gatePoolName(source string) string {
	if p.canary != "" {
		return p.canary
	}
	return source + GatePoolSuffix
}

// releaseSelector selects the nodes released from source. A canary pool
// serves every source of the run, so it selects any released node.
func (p *planner) releaseSelector(source string) *metav1.LabelSelector {
	if p.canary != "" {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: ReleaseLabel, Operator: metav1.LabelSelectorOpExists}}}
	}
	return &metav1.LabelSelector{MatchLabels: map[string]string{ReleaseLabel: source}}
}

// holdSelector selects the nodes held from source: a gate pool's node
// selector when the run has no canary.
func holdSelector(source string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{HoldLabel: source}}
}

// gateLabel is the label that puts a node in the run's gate pool: held
// there, or released into the canary.
func (p *planner) gateLabel() string {
	if p.holdsInGatePool() {
		return HoldLabel
	}
	return ReleaseLabel
}

// sourceSelector is a custom source pool's node selector during the run: the
// original plus "label does not exist" for the label that puts a node in
// the gate pool, so that such a node never matches two custom pools. worker
// needs no change: a custom pool wins over worker.
func sourceSelector(orig *metav1.LabelSelector, label string) *metav1.LabelSelector {
	out := orig.DeepCopy()
	if out == nil {
		out = &metav1.LabelSelector{}
	}
	for _, r := range out.MatchExpressions {
		if r.Key == label && r.Operator == metav1.LabelSelectorOpDoesNotExist {
			return out
		}
	}
	out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{Key: label, Operator: metav1.LabelSelectorOpDoesNotExist})
	return out
}

// newGatePool is the gate pool node-gate creates for source: the source's
// MachineConfig selector, selecting the nodes held from source, paused for
// good (pauseGatePools), so that the MCO moves none of its nodes: they are
// the ones not released.
func (p *planner) newGatePool(source *mcfgv1.MachineConfigPool) *mcfgv1.MachineConfigPool {
	return &mcfgv1.MachineConfigPool{
		TypeMeta: metav1.TypeMeta{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfigPool"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   p.gatePoolName(source.Name),
			Labels: map[string]string{GatePoolLabel: source.Name, RunLabel: p.runKey},
		},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: source.Spec.MachineConfigSelector.DeepCopy(),
			NodeSelector:          holdSelector(source.Name),
			Paused:                true,
		},
	}
}

func sameSelector(a, b *metav1.LabelSelector) bool {
	empty := func(s *metav1.LabelSelector) bool {
		return s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0)
	}
	if empty(a) || empty(b) {
		return empty(a) == empty(b)
	}
	return equality.Semantic.DeepEqual(a, b)
}

func nodeByName(nodes []*corev1.Node) map[string]*corev1.Node {
	out := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		out[n.Name] = n
	}
	return out
}

// PoolMembers lists, sorted, the nodes the MCO places in each of the named
// pools, by its membership rule (a custom pool wins over worker, master over
// everything, a node matching two custom pools belongs to none). It is what
// a MutexTarget reports in status.nodes. node-gate's labels are ignored, so
// a node it holds in a gate pool (or released into a canary) still counts in
// its source pool.
func PoolMembers(pools []mcfgv1.MachineConfigPool, nodes []*corev1.Node, names []string) []string {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	sels := make([]labels.Selector, len(pools))
	for j := range pools {
		sels[j] = poolSelector(pools[j].Spec.NodeSelector)
	}
	var out []string
	for i := range nodes {
		lbls := membershipView(nodes[i].Labels)
		var selecting []string
		for j := range pools {
			if pools[j].Labels[GatePoolLabel] != "" {
				continue
			}
			if sels[j].Matches(lbls) {
				selecting = append(selecting, pools[j].Name)
			}
		}
		if p, err := primaryPool(selecting); err == nil && want[p] {
			out = append(out, nodes[i].Name)
		}
	}
	sort.Strings(out)
	return out
}
