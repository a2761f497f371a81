package plan

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestMembershipViewHidesGateLabels: a pool's selector reads a node's
// labels as if node-gate's hold and release labels were not there, in
// place, as the copy withoutGateLabels makes them.
func TestMembershipViewHidesGateLabels(t *testing.T) {
	node := map[string]string{workerRole: "", HoldLabel: "worker", ReleaseLabel: "infra", "zone": "a"}
	view := membershipView(node)
	for _, k := range []string{HoldLabel, ReleaseLabel} {
		if view.Has(k) || view.Get(k) != "" {
			t.Errorf("%s visible through the view", k)
		}
		if _, ok := view.Lookup(k); ok {
			t.Errorf("%s found by Lookup", k)
		}
	}
	if !view.Has(workerRole) || view.Get("zone") != "a" {
		t.Errorf("a node's own labels hidden: %v", view)
	}
	for _, sel := range []*metav1.LabelSelector{
		{MatchLabels: map[string]string{"zone": "a"}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: HoldLabel, Operator: metav1.LabelSelectorOpDoesNotExist}}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: ReleaseLabel, Operator: metav1.LabelSelectorOpExists}}},
		{MatchLabels: map[string]string{HoldLabel: "worker"}},
	} {
		if got, want := selects(sel, view), selects(sel, labels.Set(withoutGateLabels(node))); got != want {
			t.Errorf("selector %v: view %v, copy %v", sel, got, want)
		}
	}
	if len(node) != 4 {
		t.Errorf("the node's labels changed: %v", node)
	}
}
