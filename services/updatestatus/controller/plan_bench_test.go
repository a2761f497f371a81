package controller

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// BenchmarkPlanNodes5000 is the per-recomputation comparison of 5,000
// published insights with the desired ones, 50 of them changed: what every
// node event on a large cluster pays.
func BenchmarkPlanNodes5000(b *testing.B) {
	const nodes, changed = 5000, 50
	published := make(map[string]*updatev1alpha1.NodeProgressInsight, nodes)
	desired := make([]updatev1alpha1.NodeStatusInsight, 0, nodes)
	owners := make(map[string]metav1.OwnerReference, nodes)
	for i := range nodes {
		name := fmt.Sprintf("worker-%04d", i)
		in := nodeInsight(name, "worker", "Pending", false)
		in.Conditions[0].LastTransitionTime = metav1.NewTime(t0)
		in.Conditions[1].LastTransitionTime = metav1.NewTime(t0)
		published[name] = pubNode(*in.DeepCopy())
		if i < changed {
			in.Conditions[0].Reason = "Updating"
		}
		desired = append(desired, in)
		owners[name] = metav1.OwnerReference{Name: name}
	}
	b.ReportAllocs()
	for b.Loop() {
		if w := planNodes(published, desired, ownerIn(owners)); len(w) != changed {
			b.Fatalf("%d writes, want %d", len(w), changed)
		}
	}
}
