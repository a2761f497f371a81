package plan

import (
	"maps"
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
	"github.com/upshift-io/upshift/libs/mcostate"
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

// updating are the gated nodes the MCO has started and not finished
// (desiredConfig != currentConfig).
func updating(w *world) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(w.nodes)) {
		if a := w.nodes[name].Annotations; w.isGated(w.nodes[name]) && a[mcostate.DesiredConfig] != a[mcostate.CurrentConfig] {
			out = append(out, name)
		}
	}
	return out
}

func TestLookahead(t *testing.T) {
	t.Run("0 (the default): the next node's hooks wait for its turn", func(t *testing.T) {
		w := lookaheadRound(t, 0, nil)
		if ph := w.rec("w01").Phase; ph != nodegatev1alpha1.NodePending {
			t.Fatalf("w01 %s while w00 updates, want Pending", ph)
		}
	})
	t.Run("1: the next node's hooks run while w00 updates and it is released ahead; the MCO starts it once w00 is out, no Job between", func(t *testing.T) {
		w := lookaheadRound(t, 1, nil)
		w.mco() // the MCO starts w00
		for i := 0; i < 10 && !doneHooks(w.rec("w01")); i++ {
			w.completeAll()
			w.reconcile()
		}
		if !doneHooks(w.rec("w01")) || w.rec("w02").Phase != nodegatev1alpha1.NodePending {
			t.Fatalf("w01 %+v, w02 %s: want w01's hooks done ahead and w02 pending", w.rec("w01"), w.rec("w02").Phase)
		}
		// Released ahead, into its source pool, whose maxUnavailable (1)
		// keeps the MCO off it while w00 updates.
		if !w.released("w01") || w.rec("w01").Phase != nodegatev1alpha1.NodeReleased {
			t.Fatalf("w01 %s (released %v): want it released ahead of its turn", w.rec("w01").Phase, w.released("w01"))
		}
		if mu := w.pools["worker"].Spec.MaxUnavailable; mu == nil || mu.IntValue() != 1 {
			t.Fatalf("worker maxUnavailable %v, want the run's 1", mu)
		}
		w.mco()
		if got := updating(w); len(got) > 1 {
			t.Fatalf("updating %v: the MCO's own bound is the run's limit", got)
		}
		// finishW00's MCO steps finish w00 and, in the same step, start
		// w01: it was released already.
		finishW00(t, w)
		if ph := w.rec("w01").Phase; ph == nodegatev1alpha1.NodePreHooks || ph == nodegatev1alpha1.NodeReleased && len(updating(w)) == 0 {
			t.Fatalf("w01 %s, updating %v: want the MCO to have started it once w00 was done", ph, updating(w))
		}
		for _, h := range w.rec("w01").Hooks {
			if h.Stage == nodegatev1alpha1.StagePre && h.Attempts != 1 {
				t.Fatalf("w01's pre-update hook %s ran %d times", h.Name, h.Attempts)
			}
		}
	})
	t.Run("a node released ahead holds no other node's hooks", func(t *testing.T) {
		// maxUnavailable 1, lookahead 2: the second and third nodes run
		// their hooks while the first updates, and are released ahead.
		// When the first is done the fourth's hooks start at once (else the
		// lookahead refills in bursts and runs dry), and the MCO starts one
		// of the two waiting.
		w := readyRound(t, 4, func(w *world) { w.rules[0].Spec.Lookahead = 2 })
		o := w.run.Status.PlannedOrder
		for i := 0; i < 20 && !(w.rec(o[0]).Phase == nodegatev1alpha1.NodeReleased && doneHooks(w.rec(o[1])) && doneHooks(w.rec(o[2]))); i++ {
			w.completeAll()
			w.reconcile()
		}
		w.reconcile()
		if w.rec(o[0]).Phase != nodegatev1alpha1.NodeReleased || w.rec(o[1]).Phase != nodegatev1alpha1.NodeReleased || w.rec(o[2]).Phase != nodegatev1alpha1.NodeReleased || w.rec(o[3]).Phase != nodegatev1alpha1.NodePending {
			t.Fatalf("setup: %s %s, %s %s, %s %s, %s %s: want three released (one slot, two ahead) and the fourth pending", o[0], w.rec(o[0]).Phase, o[1], w.rec(o[1]).Phase, o[2], w.rec(o[2]).Phase, o[3], w.rec(o[3]).Phase)
		}
		for i := 0; i < 20 && w.rec(o[0]).Phase != nodegatev1alpha1.NodeCompleted; i++ {
			w.mco()
			if got := updating(w); len(got) > 1 {
				t.Fatalf("updating %v: maxUnavailable 1", got)
			}
			w.completeAll()
			w.now = w.now.Add(time.Second)
			w.reconcile()
		}
		if w.rec(o[3]).Phase != nodegatev1alpha1.NodePreHooks {
			t.Fatalf("%s %s: want its hooks started once %s completed", o[3], w.rec(o[3]).Phase, o[0])
		}
		if c := w.cond(CondProgressing); c == nil || strings.Contains(c.Message, "no new node starts") {
			t.Fatalf("Progressing %+v: want no claim that no node starts", c)
		}
	})
	t.Run("a node whose hooks finish first is released first; the MCO starts one at a time", func(t *testing.T) {
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
		w.mco()
		if got := updating(w); !slices.Equal(got, []string{o[1]}) {
			t.Fatalf("updating %v: want %s, the one released", got, o[1])
		}
		for i := 0; i < 10 && !doneHooks(w.rec(o[0])); i++ {
			completeOf(o[0])
			w.reconcile()
		}
		if !w.released(o[0]) {
			t.Fatalf("%s not released ahead while %s updates", o[0], o[1])
		}
		for i := 0; i < 20 && w.rec(o[1]).Phase != nodegatev1alpha1.NodeCompleted; i++ {
			w.mco()
			if got := updating(w); len(got) > 1 {
				t.Fatalf("updating %v: maxUnavailable 1", got)
			}
			w.completeAll()
			w.now = w.now.Add(time.Second)
			w.reconcile()
		}
		if !releasedPhase(w.rec(o[0])) || w.rec(o[0]).Hooks[0].Attempts != 1 {
			t.Fatalf("%s %+v: want it released (and the MCO free to start it), its hook not run again", o[0], w.rec(o[0]))
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
	t.Run("hooks older than maxHookAge run again before the MCO starts the node", func(t *testing.T) {
		w := lookaheadRound(t, 1, func(w *world) { w.rules[0].Spec.MaxHookAge = &metav1.Duration{Duration: 10 * time.Minute} })
		w.mco() // w00 updates, and holds the pool's one slot
		for i := 0; i < 10 && !doneHooks(w.rec("w01")); i++ {
			w.completeAll()
			w.reconcile()
		}
		if !w.released("w01") {
			t.Fatalf("setup: w01 %s, not released ahead", w.rec("w01").Phase)
		}
		w.now = w.now.Add(11 * time.Minute)
		r := w.reconcile()
		if w.rec("w01").Phase != nodegatev1alpha1.NodePreHooks || !hasEvent(r, "HooksExpired") || w.released("w01") {
			t.Fatalf("w01 %s (released %v), HooksExpired %v: want it held again, its hooks to run again", w.rec("w01").Phase, w.released("w01"), hasEvent(r, "HooksExpired"))
		}
		if _, marked := w.nodes["w01"].Annotations[ReleasedAnnotation]; marked {
			t.Fatal("w01 held again with its release mark: it would read as released")
		}
		rerun, _ := finishW00(t, w)
		if rerun != 1 {
			t.Fatalf("%d Jobs for w01, want its hook run again once", rerun)
		}
		for i := 0; i < 10 && w.rec("w01").Phase != nodegatev1alpha1.NodeReleased; i++ {
			w.completeAll()
			w.reconcile()
		}
		if w.rec("w01").Phase != nodegatev1alpha1.NodeReleased || w.rec("w01").Hooks[0].Attempts != 2 {
			t.Fatalf("w01 %+v: want released after a second run of its hooks", w.rec("w01"))
		}
	})
	t.Run("with lookahead a node released ahead is held again while the health gate is closed", func(t *testing.T) {
		w := lookaheadRound(t, 1, func(w *world) { w.run.Spec.HealthGate = &nodegatev1alpha1.HealthGate{} })
		w.mco() // w00 updates
		for i := 0; i < 10 && !doneHooks(w.rec("w01")); i++ {
			w.completeAll()
			w.reconcile()
		}
		if !w.released("w01") {
			t.Fatalf("setup: w01 %s, not released ahead", w.rec("w01").Phase)
		}
		w.alerts = []alerts.Alert{{Labels: map[string]string{"alertname": "KubeNodeNotReady"}, State: alerts.StateFiring}}
		r := w.reconcile()
		if w.released("w01") || w.rec("w01").Phase != nodegatev1alpha1.NodePreHooks || !hasEvent(r, "HeldAgain") {
			t.Fatalf("w01 %s (released %v), HeldAgain %v: want it held again while the alert fires", w.rec("w01").Phase, w.released("w01"), hasEvent(r, "HeldAgain"))
		}
		finishW00(t, w)
		for i := 0; i < 3; i++ {
			r := w.reconcile()
			if len(releaseActions(r)) != 0 || len(actionsOf(r, CreateJob)) != 0 {
				t.Fatalf("released or started while an alert fires: %+v", r.Actions)
			}
			if w.mco(); len(updating(w)) != 0 {
				t.Fatalf("the MCO started %v while an alert fires", updating(w))
			}
		}
		w.alerts = nil
		w.reconcile()
		if w.rec("w01").Phase != nodegatev1alpha1.NodeReleased || w.rec("w01").Hooks[0].Attempts != 1 {
			t.Fatalf("w01 %+v once the alert resolved: want it released again, its hooks not rerun", w.rec("w01"))
		}
	})
	t.Run("released ahead up to (1 + lookahead) × maxUnavailable; the MCO updates maxUnavailable at once", func(t *testing.T) {
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
		if got := countPhase(w, nodegatev1alpha1.NodeReleased); got != 6 {
			t.Fatalf("%d released, want 6", got)
		}
		w.mco()
		if got := updating(w); len(got) != 2 {
			t.Fatalf("updating %v, want 2", got)
		}
	})
}
