package plan

import (
	"strings"
	"testing"
	"time"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// MUO's worker step waits for the pool "worker" alone: an infra pool still
// updating is reported, never waited for; the worker pool still updating is.
func TestWorkerStepWaitsForPoolWorker(t *testing.T) {
	w := newWorld(t)
	w.uc.Spec.CapacityReservation = false
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	w.settle()
	w.cvo()
	w.snap.Pools = append(w.snap.Pools, pool("infra", 2, 0, "rendered-infra-2"))
	w.snap.Pools[1] = pool("worker", 3, 1, "rendered-worker-2")
	w.settle()
	if w.uc.Status.CurrentStep != string(StepWorkerNodesUpgraded) {
		t.Fatalf("at %s while pool worker updates", w.uc.Status.CurrentStep)
	}
	c := w.stepCondition(StepWorkerNodesUpgraded)
	// Pools by name, without counts: a count would rewrite the status on
	// every node's step.
	if !strings.HasSuffix(c.Message, "worker pools updating: worker; other pools updating, not waited for (as MUO): infra") ||
		strings.Contains(c.Message, "/3") {
		t.Fatalf("message %q", c.Message)
	}
	w.snap.Pools[1] = pool("worker", 3, 3, "rendered-worker-2")
	w.settle()
	if c := w.stepCondition(StepWorkerNodesUpgraded); c.Status != "True" || !strings.Contains(c.Message, "not waited for (as MUO): infra") {
		t.Fatalf("worker done, infra updating: %+v", c)
	}
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgraded {
		t.Fatalf("phase %s", w.phase())
	}
}
