package plan

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/mcostate"
)

// workersDraining brings a world to its worker phase with worker-0's drain
// requested at w.now: a pod a PDB guards, a pod with a finalizer and a pod
// of an ignored namespace on it. MUO's production timeouts: nodeDrain
// 45 minutes, expected drain 8, PDBForceDrainTimeout 60 (so 68 for the
// guarded pod).
func workersDraining(t *testing.T, integrations Integrations) *world {
	w := newWorld(t)
	w.integrations = integrations
	w.cfg = mustConfig(t, "nodeDrain:\n  timeOut: 45\n  expectedNodeDrainTime: 8\n  ignoredNamespacePatterns:\n  - ^openshift-logging$\n")
	w.uc.Spec.CapacityReservation = false
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	w.settle()
	w.cvo()
	w.snap.Pools[1] = pool("worker", 3, 0, "rendered-worker-2")
	w.snap.Nodes[0].Labels = map[string]string{"node-role.kubernetes.io/master": ""}
	for i := range w.snap.Nodes {
		w.snap.Nodes[i].Annotations[mcostate.DesiredDrain] = "drain-rendered-worker-2"
		w.snap.Nodes[i].Annotations[mcostate.LastAppliedDrain] = "uncordon-rendered-worker-1"
		if w.snap.Nodes[i].Name != "worker-0" && w.snap.Nodes[i].Name != "master-0" {
			w.snap.Nodes[i].Annotations[mcostate.LastAppliedDrain] = "drain-rendered-worker-2"
		}
	}
	running := func(ns, name string, lbls map[string]string, finalizers ...string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("u-" + name), Labels: lbls, Finalizers: finalizers},
			Spec: corev1.PodSpec{NodeName: "worker-0"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	w.pods = map[string][]corev1.Pod{"worker-0": {
		running("db", "db-0", map[string]string{"app": "db"}),
		running("web", "web-0", nil, "example.com/hold"),
		running("openshift-logging", "collector-0", nil),
	}}
	guard := pdb("db", "db", 0, 1)
	guard.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	w.snap.PDBs = []policyv1.PodDisruptionBudget{guard}
	w.settle()
	if w.uc.Status.CurrentStep != string(StepWorkerNodesUpgraded) {
		t.Fatalf("waiting in %s, want %s", w.uc.Status.CurrentStep, StepWorkerNodesUpgraded)
	}
	return w
}

func drainOf(w *world, node string) *upgradev1alpha1.NodeDrain {
	for i := range w.uc.Status.Drains {
		if w.uc.Status.Drains[i].Node == node {
			return &w.uc.Status.Drains[i]
		}
	}
	return nil
}

// MUO's NodeKeeper, step by step: nothing before nodeDrain.timeOut (and no
// pod read), the pod without a PDB at 45 minutes (grace 0, then its
// finalizers a minute later), the guarded pod at 60+8, never the pod of an
// ignored namespace; the drain times out 8 minutes after the last timeout
// and the record keeps it after the drain ends, until the attempt does.
func TestDrainsForcedAsMUO(t *testing.T) {
	w := workersDraining(t, Integrations{})
	if len(w.uc.Status.Drains) != 1 || drainOf(w, "worker-0") == nil || drainOf(w, "worker-0").Owner != upgradev1alpha1.DrainOwnerScheduler {
		t.Fatalf("drains %+v, want worker-0's only (masters are the MCO's, the others are not draining)", w.uc.Status.Drains)
	}
	if w.podReads != 0 || len(w.forced) != 0 {
		t.Fatalf("before the timeout: %d pod reads, forced %v", w.podReads, w.forced)
	}
	if got := w.last.RequeueAfter; got != 45*time.Minute {
		t.Fatalf("wakes after %v, want the timeout", got)
	}

	w.now = t0.Add(45 * time.Minute)
	w.settle()
	if want := []string{"ForceDelete web/web-0"}; !slices.Equal(w.forced, want) {
		t.Fatalf("at 45 minutes forced %v, want %v", w.forced, want)
	}
	w.now = w.now.Add(DrainStepTimeout)
	w.settle()
	if want := []string{"ForceDelete web/web-0", "RemoveFinalizers web/web-0"}; !slices.Equal(w.forced, want) {
		t.Fatalf("a minute later forced %v, want %v", w.forced, want)
	}
	w.now = t0.Add(67 * time.Minute)
	w.settle()
	if len(w.forced) != 2 || drainOf(w, "worker-0").TimedOutTime != nil {
		t.Fatalf("before 68 minutes: forced %v, drain %+v", w.forced, drainOf(w, "worker-0"))
	}
	w.now = t0.Add(68 * time.Minute)
	w.settle()
	if w.forced[2] != "ForceDelete db/db-0" || len(w.forced) != 3 {
		t.Fatalf("at 68 minutes forced %v", w.forced)
	}
	w.now = t0.Add(76 * time.Minute)
	w.settle()
	d := drainOf(w, "worker-0")
	if d.TimedOutTime == nil || !d.TimedOutTime.Time.Equal(w.now) || w.eventCount("NodeDrainTimedOut") != 1 {
		t.Fatalf("at 68+8 minutes: %+v, %d events", d, w.eventCount("NodeDrainTimedOut"))
	}
	if len(d.Record.BlockingPods) != 0 || d.Record.ForcedPods != 2 {
		t.Fatalf("the ignored namespace's pod is not the scheduler's: %+v", d.Record)
	}

	// The person deals with the logging pod; the MCO acknowledges the drain.
	w.snap.Nodes[1].Annotations[mcostate.LastAppliedDrain] = "drain-rendered-worker-2"
	w.settle()
	d = drainOf(w, "worker-0")
	if d == nil || d.Record.CompletionTime == nil || d.TimedOutTime == nil {
		t.Fatalf("a finished drain that was forced stays listed: %+v", w.uc.Status.Drains)
	}
	w.mco()
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgraded || len(w.uc.Status.Drains) != 0 {
		t.Fatalf("phase %s, drains %+v", w.phase(), w.uc.Status.Drains)
	}
}

// A node a node-gate run released with drainRemediation is the run's: the
// scheduler names the owner and never reads or forces its pods.
func TestDrainOwnedByNodeGateRun(t *testing.T) {
	w := workersDraining(t, Integrations{})
	w.snap.NodeGateRuns = []gating.Run{{Namespace: "db", Name: "workers", Drains: []string{"worker-0"}}}
	w.now = t0.Add(2 * time.Hour)
	w.settle()
	d := drainOf(w, "worker-0")
	if d == nil || d.Owner != "MutexRunConfig db/workers" || d.Record != nil || w.podReads != 0 || len(w.forced) != 0 {
		t.Fatalf("drain %+v, %d pod reads, forced %v", d, w.podReads, w.forced)
	}
}

// nodeDrain.disableDrainStrategies (HyperShift management clusters): nothing
// is forced; the drain times out at nodeDrain.timeOut.
func TestDrainStrategiesDisabled(t *testing.T) {
	w := workersDraining(t, Integrations{})
	w.cfg = mustConfig(t, "nodeDrain:\n  timeOut: 45\n  disableDrainStrategies: true\n")
	w.now = t0.Add(45 * time.Minute)
	w.settle()
	d := drainOf(w, "worker-0")
	if len(w.forced) != 0 || d == nil || d.TimedOutTime == nil {
		t.Fatalf("forced %v, drain %+v", w.forced, d)
	}
}

// MUO tells the customer, once per version, when the first pod a
// PodDisruptionBudget guards is forced off: its delayed state, with its text.
// Forcing the pod without a budget tells nothing.
func TestDrainDelayedNotice(t *testing.T) {
	w := workersDraining(t, Integrations{Notifications: true})
	sent := func() []string {
		var out []string
		for _, n := range w.notices {
			if n.Event == EventDelayed {
				out = append(out, n.PolicyState+": "+n.Description)
			}
		}
		return out
	}
	w.now = t0.Add(45 * time.Minute)
	w.settle()
	w.now = t0.Add(46 * time.Minute)
	w.settle()
	if len(w.forced) != 2 || len(sent()) != 0 {
		t.Fatalf("forced %v, notices %v: only a guarded pod tells", w.forced, sent())
	}
	w.now = t0.Add(68 * time.Minute)
	w.settle()
	want := []string{"delayed: Node drain grace period might be impacting cluster upgrade. Please refer to the article for further details https://access.redhat.com/solutions/7075425"}
	if !slices.Equal(sent(), want) || drainOf(w, "worker-0").ForcedGuardedPods != 1 {
		t.Fatalf("notices %v, want %v; drain %+v", sent(), want, drainOf(w, "worker-0"))
	}
	// A second node's guarded pod: the notice went out already.
	w.snap.Nodes[3].Annotations[mcostate.LastAppliedDrain] = "uncordon-rendered-worker-1"
	w.pods["worker-1"] = []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "db-1", UID: "u-db-1", Labels: map[string]string{"app": "db"}},
		Spec: corev1.PodSpec{NodeName: "worker-1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}}
	w.settle()
	w.now = t0.Add(3 * time.Hour)
	w.settle()
	if !slices.Contains(w.forced, "ForceDelete db/db-1") || len(sent()) != 1 {
		t.Fatalf("forced %v, notices %v", w.forced, sent())
	}
}
