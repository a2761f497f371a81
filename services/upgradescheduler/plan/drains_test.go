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
	// The drain controller cordoned worker-0 as it asked for the drain:
	// kube-controller-manager stamped the cordon's taint, MUO's clock.
	cordonAt(nodeNamed(w, "worker-0"), w.now)
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

// cordonAt cordons n as the drain controller and kube-controller-manager
// do: spec.unschedulable, and the cordon's taint stamped at.
func cordonAt(n *corev1.Node, at time.Time) {
	cordon(n)
	stamp := metav1.NewTime(at)
	n.Spec.Taints[len(n.Spec.Taints)-1].TimeAdded = &stamp
}

func uncordon(n *corev1.Node) {
	n.Spec.Unschedulable = false
	n.Spec.Taints = nil
}

func nodeNamed(w *world, name string) *corev1.Node {
	for i := range w.snap.Nodes {
		if w.snap.Nodes[i].Name == name {
			return &w.snap.Nodes[i]
		}
	}
	w.t.Fatalf("no node %s", name)
	return nil
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
	if len(w.uc.Status.Drains) != 0 {
		t.Fatalf("drains %+v: a young drain's record is its cordon time, on the Node", w.uc.Status.Drains)
	}
	if got := w.last.RequeueAfter; got != 4*time.Minute+30*time.Second {
		t.Fatalf("wakes after %v, want a tenth of the 45-minute timeout, to record the drain", got)
	}
	w.now = t0.Add(4*time.Minute + 30*time.Second)
	w.settle()
	d := drainOf(w, "worker-0")
	if len(w.uc.Status.Drains) != 1 || d == nil || d.Owner != upgradev1alpha1.DrainOwnerScheduler || !d.Record.StartTime.Time.Equal(t0) {
		t.Fatalf("drains %+v, want worker-0's only, timed from its cordon (masters are the MCO's, the others are not draining)", w.uc.Status.Drains)
	}
	if w.podReads != 0 || len(w.forced) != 0 {
		t.Fatalf("before the timeout: %d pod reads, forced %v", w.podReads, w.forced)
	}
	if got := w.last.RequeueAfter; got != 45*time.Minute-4*time.Minute-30*time.Second {
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
	d = drainOf(w, "worker-0")
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
	w.settle()
	if d := drainOf(w, "worker-0"); d != nil {
		t.Fatalf("a young drain is listed: %+v", d)
	}
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
	cordonAt(nodeNamed(w, "worker-1"), w.now)
	w.pods["worker-1"] = []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "db-1", UID: "u-db-1", Labels: map[string]string{"app": "db"}},
		Spec: corev1.PodSpec{NodeName: "worker-1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}}
	w.settle()
	w.now = t0.Add(3 * time.Hour)
	w.settle()
	if !slices.Contains(w.forced, "ForceDelete db/db-1") || len(sent()) != 1 {
		t.Fatalf("forced %v, notices %v", w.forced, sent())
	}
}

// A drain's clock is the node's cordon (MUO's): a young drain is not
// written, since the next plan (or the next leader) reads the clock on the
// Node again; a cordon flap restarts it only until the drain is recorded, a
// tenth of its first timeout in; a node the drain controller has not
// cordoned is not timed at all; a cordon taint without a time is timed from
// when it is first seen, recorded at once.
func TestDrainClockIsTheCordon(t *testing.T) {
	recorded := func(w *world) *time.Time {
		t.Helper()
		d := drainOf(w, "worker-0")
		if d == nil {
			return nil
		}
		return &d.Record.StartTime.Time
	}

	t.Run("a drain that ends young is never written", func(t *testing.T) {
		w := workersDraining(t, Integrations{})
		w.now = t0.Add(4 * time.Minute)
		w.settle()
		if recorded(w) != nil {
			t.Fatalf("drains %+v at 4 minutes", w.uc.Status.Drains)
		}
		nodeNamed(w, "worker-0").Annotations[mcostate.LastAppliedDrain] = "drain-rendered-worker-2"
		uncordon(nodeNamed(w, "worker-0"))
		w.settle()
		if len(w.uc.Status.Drains) != 0 || w.podReads != 0 {
			t.Fatalf("drains %+v, %d pod reads", w.uc.Status.Drains, w.podReads)
		}
	})

	t.Run("a flap restarts the clock until it is recorded", func(t *testing.T) {
		w := workersDraining(t, Integrations{})
		w.now = t0.Add(2 * time.Minute)
		uncordon(nodeNamed(w, "worker-0"))
		cordonAt(nodeNamed(w, "worker-0"), w.now)
		w.settle()
		w.now = t0.Add(5 * time.Minute)
		w.settle()
		if recorded(w) != nil {
			t.Fatalf("recorded at 5 minutes, 3 after the second cordon: %+v", w.uc.Status.Drains)
		}
		w.now = t0.Add(6*time.Minute + 30*time.Second)
		w.settle()
		if got := recorded(w); got == nil || !got.Equal(t0.Add(2*time.Minute)) {
			t.Fatalf("recorded %v, want the second cordon's time", got)
		}
		// Recorded: another flap no longer moves the clock.
		w.now = t0.Add(10 * time.Minute)
		uncordon(nodeNamed(w, "worker-0"))
		w.settle()
		cordonAt(nodeNamed(w, "worker-0"), w.now)
		w.settle()
		w.now = t0.Add(47 * time.Minute)
		w.settle()
		if got := recorded(w); got == nil || !got.Equal(t0.Add(2*time.Minute)) || !slices.Equal(w.forced, []string{"ForceDelete web/web-0"}) {
			t.Fatalf("recorded %v, forced %v: want the clock of the second cordon and the pod without a budget forced 45 minutes after it", got, w.forced)
		}
	})

	t.Run("not cordoned: not timed", func(t *testing.T) {
		w := workersDraining(t, Integrations{})
		uncordon(nodeNamed(w, "worker-0"))
		w.now = t0.Add(2 * time.Hour)
		w.settle()
		if len(w.uc.Status.Drains) != 0 || w.podReads != 0 || len(w.forced) != 0 {
			t.Fatalf("drains %+v, %d pod reads, forced %v", w.uc.Status.Drains, w.podReads, w.forced)
		}
	})

	t.Run("a cordon taint without a time is timed from its first sight", func(t *testing.T) {
		w := workersDraining(t, Integrations{})
		uncordon(nodeNamed(w, "worker-0"))
		w.settle()
		w.now = t0.Add(time.Minute)
		cordon(nodeNamed(w, "worker-0"))
		w.settle()
		if got := recorded(w); got == nil || !got.Equal(w.now) {
			t.Fatalf("recorded %v, want %v at once", got, w.now)
		}
	})
}
