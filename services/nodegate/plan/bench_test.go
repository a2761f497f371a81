package plan

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// BenchmarkPlan500Workers is one pass mid-round on 500 workers with
// maxUnavailable 10%: a quarter of the nodes passed, fifty in flight.
func BenchmarkPlan500Workers(b *testing.B) {
	w := readyRound(b, 500, func(w *world) {
		mu := intstr.FromString("10%")
		w.run.Spec.MaxUnavailable = &mu
	})
	for i := 0; i < 40 && countPhase(w, "Completed") < 125; i++ {
		w.completeAll()
		w.mco()
		w.now = w.now.Add(time.Minute)
		w.reconcile()
	}
	in := w.input()
	b.ReportAllocs()
	for b.Loop() {
		Plan(in)
	}
}
