package plan

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// BenchmarkPlan500Workers is one pass mid-round on 500 workers with
// maxUnavailable 10%: a quarter of the nodes passed, fifty in flight.
func BenchmarkPlan500Workers(b *testing.B) { benchmarkMidRound(b, 0) }

// BenchmarkPlan500WorkersLookahead1 is the same pass with lookahead 1 and
// the hook Jobs of the nodes waiting for a slot complete: fifty nodes
// released, fifty more with their hooks done asking for a slot.
func BenchmarkPlan500WorkersLookahead1(b *testing.B) { benchmarkMidRound(b, 1) }

func benchmarkMidRound(b *testing.B, lookahead int32) {
	w := readyRound(b, 500, func(w *world) {
		mu := intstr.FromString("10%")
		w.run.Spec.MaxUnavailable = &mu
		w.rules[0].Spec.Lookahead = lookahead
	})
	for i := 0; i < 40 && countPhase(w, "Completed") < 125; i++ {
		w.completeAll()
		w.mco()
		w.now = w.now.Add(time.Minute)
		w.reconcile()
	}
	w.completeAll()
	in := w.input()
	b.ReportAllocs()
	for b.Loop() {
		Plan(in)
	}
}
