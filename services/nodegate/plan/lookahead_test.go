package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/alerts"
)

// lookaheadRound: maxUnavailable 1, the rule's lookahead as given, the round
// started; then every Job completes until w00 is released (the MCO idle).
func lookaheadRound(t *testing.T, lookahead int32, mutate func(*world)) *world {
	w := readyRound(t, 3, func(w *world) {
		w.rules[0].Spec.Lookahead = lookahead
		if mutate != nil {
			mutate(w)
		}
	})
	for i := 0; i < 20 && w.rec("w00").Phase != nodegatev1alpha1.NodeReleased; i++ {
		w.completeAll()
		w.reconcile()
	}
	if w.rec("w00").Phase != nodegatev1alpha1.NodeReleased {
		t.Fatalf("setup: w00 %s", w.rec("w00").Phase)
	}
	return w
}

// doneHooks: every pre-update hook of the node succeeded.
func doneHooks(r *nodegatev1alpha1.NodeRecord) bool {
	n := 0
	for _, h := range r.Hooks {
		if h.Stage == nodegatev1alpha1.StagePre {
			if h.Phase != nodegatev1alpha1.HookSucceeded {
				return false
			}
			n++
		}
	}
	return n > 0
}

// finishW00 lets the MCO update w00 and its post-update hook run, until its
// record completes; it returns the Jobs created for w01 meanwhile and the
// pass that completed w00 (which may release the next node: a completed
// node holds no slot).
func finishW00(t *testing.T, w *world) (int, Result) {
	w01 := 0
	var last Result
	for i := 0; i < 20 && w.rec("w00").Phase != nodegatev1alpha1.NodeCompleted; i++ {
		w.mco()
		w.completeAll()
		w.now = w.now.Add(time.Second)
		last = w.reconcile()
		for _, a := range actionsOf(last, CreateJob) {
			if envOf(a.Job, EnvNodeName) == "w01" {
				w01++
			}
		}
	}
	if w.rec("w00").Phase != nodegatev1alpha1.NodeCompleted {
		t.Fatalf("w00 %s", w.rec("w00").Phase)
	}
	return w01, last
}

func TestLookahead(t *testing.T) {
	t.Run("0 (the default): the next node's hooks wait for its turn", func(t *testing.T) {
		w := lookaheadRound(t, 0, nil)
		if ph := w.rec("w01").Phase; ph != nodegatev1alpha1.NodePending {
			t.Fatalf("w01 %s while w00 updates, want Pending", ph)
		}
	})
	t.Run("1: the next node's hooks run while w00 updates, and it is released once w00 is out, no Job between", func(t *testing.T) {
		w := lookaheadRound(t, 1, nil)
		for i := 0; i < 10 && !doneHooks(w.rec("w01")); i++ {
			w.completeAll()
			w.reconcile()
		}
		if !doneHooks(w.rec("w01")) || w.rec("w02").Phase != nodegatev1alpha1.NodePending {
			t.Fatalf("w01 %+v, w02 %s: want w01's hooks done ahead and w02 pending", w.rec("w01"), w.rec("w02").Phase)
		}
		if w.released("w01") {
			t.Fatal("w01 released while w00 is")
		}
		n, r := finishW00(t, w)
		if n != 0 {
			t.Fatalf("%d Jobs for w01 while w00 finished: its hooks were done", n)
		}
		if w.rec("w01").Phase != nodegatev1alpha1.NodeReleased || len(releaseActions(r)) != 1 {
			t.Fatalf("w01 %s, actions %+v: want it released in the pass that completed w00", w.rec("w01").Phase, r.Actions)
		}
		if got := w.rec("w01").Hooks[0].Attempts; got != 1 {
			t.Fatalf("w01's hook ran %d times", got)
		}
	})
	t.Run("a node waiting for its release slot holds no other node's hooks", func(t *testing.T) {
		// maxUnavailable 1, lookahead 2: the second and third nodes run
		// their hooks while the first updates. When it is done, the second
		// takes the slot and the third waits for the next; the fourth's
		// hooks must start at once, not when the third is released (else
		// the lookahead refills in bursts and runs dry).
		w := readyRound(t, 4, func(w *world) { w.rules[0].Spec.Lookahead = 2 })
		o := w.run.Status.PlannedOrder
		for i := 0; i < 20 && !(w.rec(o[0]).Phase == nodegatev1alpha1.NodeReleased && doneHooks(w.rec(o[1])) && doneHooks(w.rec(o[2]))); i++ {
			w.completeAll()
			w.reconcile()
		}
		if w.rec(o[0]).Phase != nodegatev1alpha1.NodeReleased || !doneHooks(w.rec(o[2])) || w.rec(o[3]).Phase != nodegatev1alpha1.NodePending {
			t.Fatalf("setup: %s %s, %s %+v, %s %s", o[0], w.rec(o[0]).Phase, o[2], w.rec(o[2]), o[3], w.rec(o[3]).Phase)
		}
		for i := 0; i < 20 && w.rec(o[0]).Phase != nodegatev1alpha1.NodeCompleted; i++ {
			w.mco()
			w.completeAll()
			w.now = w.now.Add(time.Second)
			w.reconcile()
		}
		if w.rec(o[1]).Phase != nodegatev1alpha1.NodeReleased || w.rec(o[2]).Phase != nodegatev1alpha1.NodePreHooks {
			t.Fatalf("%s %s, %s %s: want the first released and the second waiting for its slot", o[1], w.rec(o[1]).Phase, o[2], w.rec(o[2]).Phase)
		}
		if w.rec(o[3]).Phase != nodegatev1alpha1.NodePreHooks {
			t.Fatalf("%s %s: want its hooks started while %s waits for its slot", o[3], w.rec(o[3]).Phase, o[2])
		}
		c := w.cond(CondProgressing)
		if c == nil || !strings.Contains(c.Message, o[2]+" waits to be released") || strings.Contains(c.Message, "no new node starts") {
			t.Fatalf("Progressing %+v: want it to say %s waits for its slot, and not that no node starts", c, o[2])
		}
	})
	t.Run("a node whose hooks finish first is released first; the one ahead of it takes the next slot", func(t *testing.T) {
		// maxUnavailable 1, lookahead 1: the first two nodes of the planned
		// order start their hooks in the same pass. The second one's Job
		// finishes first: a slow hook ahead of it does not hold the slot
		// (with many slots, one slow hook would hold them all).
		w := readyRound(t, 3, func(w *world) { w.rules[0].Spec.Lookahead = 1 })
		o := w.run.Status.PlannedOrder
		if w.rec(o[0]).Phase != nodegatev1alpha1.NodePreHooks || w.rec(o[1]).Phase != nodegatev1alpha1.NodePreHooks {
			t.Fatalf("setup: %s %s, %s %s: want both running their hooks", o[0], w.rec(o[0]).Phase, o[1], w.rec(o[1]).Phase)
		}
		// completeOf completes the running Jobs of one node.
		completeOf := func(node string) {
			for _, k := range w.runningJobs() {
				if envOf(w.jobs[k], EnvNodeName) == node {
					w.setJob(k, batchv1.JobComplete)
				}
			}
		}
		for i := 0; i < 10 && !doneHooks(w.rec(o[1])); i++ {
			completeOf(o[1])
			w.reconcile()
		}
		if !w.released(o[1]) || w.released(o[0]) || w.rec(o[1]).Phase != nodegatev1alpha1.NodeReleased {
			t.Fatalf("%s %s (released %v), %s %s (released %v): want the node whose hooks finished released, the other not",
				o[1], w.rec(o[1]).Phase, w.released(o[1]), o[0], w.rec(o[0]).Phase, w.released(o[0]))
		}
		for i := 0; i < 10 && !doneHooks(w.rec(o[0])); i++ {
			completeOf(o[0])
			w.reconcile()
		}
		if w.released(o[0]) {
			t.Fatalf("%s released while %s is: maxUnavailable 1", o[0], o[1])
		}
		for i := 0; i < 20 && w.rec(o[1]).Phase != nodegatev1alpha1.NodeCompleted; i++ {
			w.mco()
			w.completeAll()
			w.now = w.now.Add(time.Second)
			w.reconcile()
		}
		if w.rec(o[0]).Phase != nodegatev1alpha1.NodeReleased || w.rec(o[0]).Hooks[0].Attempts != 1 {
			t.Fatalf("%s %+v: want it released in the pass that completed %s, its hook not run again", o[0], w.rec(o[0]), o[1])
		}
		if !slices.Equal(w.run.Status.PlannedOrder, o) {
			t.Fatalf("planned order %v, was %v: it is the preview, not rewritten", w.run.Status.PlannedOrder, o)
		}
	})
	t.Run("the smallest lookahead of the run's rules applies", func(t *testing.T) {
		w := lookaheadRound(t, 2, func(w *world) {
			strict := w.rules[0]
			strict.Name, strict.Spec.JobName, strict.Spec.Lookahead = "strict", "strict", 0
			w.rules = append(w.rules, strict)
			w.run.Spec.MutexRules = append(w.run.Spec.MutexRules, nodegatev1alpha1.ObjectReference{Name: "strict"})
		})
		if ph := w.rec("w01").Phase; ph != nodegatev1alpha1.NodePending {
			t.Fatalf("w01 %s, want Pending: rule strict has lookahead 0", ph)
		}
	})
	t.Run("hooks older than maxHookAge run again before the release", func(t *testing.T) {
		w := lookaheadRound(t, 1, func(w *world) { w.rules[0].Spec.MaxHookAge = &metav1.Duration{Duration: 10 * time.Minute} })
		for i := 0; i < 10 && !doneHooks(w.rec("w01")); i++ {
			w.completeAll()
			w.reconcile()
		}
		w.now = w.now.Add(11 * time.Minute)
		rerun, r := finishW00(t, w)
		if w.rec("w01").Phase != nodegatev1alpha1.NodePreHooks || !hasEvent(r, "HooksExpired") || rerun != 1 {
			t.Fatalf("w01 %s, HooksExpired %v, %d Jobs for w01: want its hooks rerun", w.rec("w01").Phase, hasEvent(r, "HooksExpired"), rerun)
		}
		for i := 0; i < 10 && w.rec("w01").Phase != nodegatev1alpha1.NodeReleased; i++ {
			w.completeAll()
			w.reconcile()
		}
		if w.rec("w01").Phase != nodegatev1alpha1.NodeReleased || w.rec("w01").Hooks[0].Attempts != 2 {
			t.Fatalf("w01 %+v: want released after a second run of its hooks", w.rec("w01"))
		}
	})
	t.Run("with lookahead a node whose hooks ran ahead waits for the health gate to be released", func(t *testing.T) {
		w := lookaheadRound(t, 1, func(w *world) { w.run.Spec.HealthGate = &nodegatev1alpha1.HealthGate{} })
		for i := 0; i < 10 && !doneHooks(w.rec("w01")); i++ {
			w.completeAll()
			w.reconcile()
		}
		w.alerts = []alerts.Alert{{Labels: map[string]string{"alertname": "KubeNodeNotReady"}, State: alerts.StateFiring}}
		finishW00(t, w)
		for i := 0; i < 3; i++ {
			if r := w.reconcile(); len(actionsOf(r, LabelNode)) != 0 || len(actionsOf(r, CreateJob)) != 0 {
				t.Fatalf("released or started while an alert fires: %+v", r.Actions)
			}
		}
		w.alerts = nil
		w.reconcile()
		if w.rec("w01").Phase != nodegatev1alpha1.NodeReleased {
			t.Fatalf("w01 %s once the alert resolved", w.rec("w01").Phase)
		}
	})
	t.Run("never more than maxUnavailable released, with lookahead 2 and maxUnavailable 2", func(t *testing.T) {
		w := readyRound(t, 8, func(w *world) {
			w.rules[0].Spec.Lookahead = 2
			w.run.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(2))
		})
		if got := countPhase(w, nodegatev1alpha1.NodePreHooks); got != 6 {
			t.Fatalf("%d nodes started, want 6 (2 slots, each with 2 nodes ahead)", got)
		}
		for i := 0; i < 10; i++ {
			w.completeAll()
			w.reconcile()
		}
		if got := countPhase(w, nodegatev1alpha1.NodeReleased); got != 2 {
			t.Fatalf("%d released, want 2", got)
		}
	})
}
