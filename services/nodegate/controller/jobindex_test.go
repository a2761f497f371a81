package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/upshift-io/upshift/services/nodegate/plan"
)

var t0 = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func indexedJob(ns, name, run string, end batchv1.JobConditionType) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{plan.RunLabel: run}}}
	if end != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: end, Status: corev1.ConditionTrue}}
	}
	return j
}

// The index holds each run's Jobs as the objects the events carried, the
// newest one of each Job, and moves a Job whose run label changed.
func TestJobIndexFollowsEvents(t *testing.T) {
	x := newJobIndex()
	a1, b := indexedJob("hooks", "a", "ns.run1", ""), indexedJob("other", "b", "ns.run1", "")
	x.set(nil, a1)
	x.set(nil, b)
	x.set(nil, indexedJob("hooks", "c", "ns.run2", ""))
	x.set(nil, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "hooks", Name: "unlabelled"}})

	a2 := indexedJob("hooks", "a", "ns.run1", batchv1.JobComplete)
	x.set(a1, a2)
	if got := x.of("ns.run1", t0); len(got) != 2 || !slices.Contains(got, a2) || !slices.Contains(got, b) {
		t.Fatalf("run1's Jobs = %v, want the newest a and b themselves", got)
	}

	moved := indexedJob("hooks", "c", "ns.run1", "")
	x.set(indexedJob("hooks", "c", "ns.run2", ""), moved)
	if got := x.of("ns.run2", t0); len(got) != 0 {
		t.Fatalf("run2's Jobs after its only Job moved = %v, want none", got)
	}
	if got := x.of("ns.run1", t0); len(got) != 3 || !slices.Contains(got, moved) {
		t.Fatalf("run1's Jobs = %v, want a, b and the moved c", got)
	}

	x.remove(b)
	if got := x.of("ns.run1", t0); len(got) != 2 || slices.Contains(got, b) {
		t.Fatalf("run1's Jobs after b's deletion = %v", got)
	}
	if len(x.byRun) != 1 {
		t.Fatalf("runs indexed = %d, want 1 (no empty entries kept)", len(x.byRun))
	}
}

// The handler updates the index before it passes an event on, so the pass
// the event wakes reads that event's Job; it passes on creations,
// deletions and the updates that end a Job, and indexes every update.
func TestJobIndexHandlerIndexesFirst(t *testing.T) {
	x := newJobIndex()
	var passed []string
	seen := func(what string, j *batchv1.Job) {
		if !slices.Contains(x.of(j.Labels[plan.RunLabel], t0), j) {
			t.Errorf("%s of %s passed on before the index held it", what, j.Name)
		}
		passed = append(passed, what)
	}
	h := x.handler(handler.TypedFuncs[*batchv1.Job, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*batchv1.Job], _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			seen("create", e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*batchv1.Job], _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			seen("update", e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*batchv1.Job], _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if len(x.of(e.Object.Labels[plan.RunLabel], t0)) != 0 {
				t.Errorf("delete of %s passed on while the index still held it", e.Object.Name)
			}
			passed = append(passed, "delete")
		},
	})
	ctx := context.Background()
	running := indexedJob("hooks", "a", "ns.run", "")
	h.Create(ctx, event.TypedCreateEvent[*batchv1.Job]{Object: running}, nil)
	// A status change that does not end the Job: indexed, not passed on.
	progressed := running.DeepCopy()
	progressed.Status.Active = 1
	h.Update(ctx, event.TypedUpdateEvent[*batchv1.Job]{ObjectOld: running, ObjectNew: progressed}, nil)
	if got := x.of("ns.run", t0); len(got) != 1 || got[0] != progressed {
		t.Fatalf("index after a progress update = %v, want the new object", got)
	}
	done := indexedJob("hooks", "a", "ns.run", batchv1.JobComplete)
	h.Update(ctx, event.TypedUpdateEvent[*batchv1.Job]{ObjectOld: progressed, ObjectNew: done}, nil)
	h.Delete(ctx, event.TypedDeleteEvent[*batchv1.Job]{Object: done}, nil)
	if want := []string{"create", "update", "delete"}; !slices.Equal(passed, want) {
		t.Fatalf("passed on %v, want %v", passed, want)
	}
}

// A Job node-gate created shows in its run's Jobs before the informer
// shows it, so the next pass does not create it again; the informer's
// object replaces it; an expectation the informer never confirms lapses
// after expectFor, and a create after that renews it.
func TestJobIndexExpectsCreatedJobs(t *testing.T) {
	x := newJobIndex()
	created := indexedJob("hooks", "a", "ns.run", "")
	x.expect(created, t0)
	if got := x.of("ns.run", t0.Add(time.Second)); len(got) != 1 || got[0] != created {
		t.Fatalf("run's Jobs after the create = %v, want the created Job", got)
	}
	if !x.has(indexedJob("hooks", "a", "ns.run", ""), t0.Add(time.Second)) {
		t.Fatal("has: the created Job is not there")
	}
	if x.has(indexedJob("hooks", "z", "ns.run", ""), t0) || x.has(indexedJob("hooks", "a", "ns.other", ""), t0) {
		t.Fatal("has: a Job never created, or of another run, is there")
	}

	// The informer shows it: its object, and no lapse any more.
	seen := indexedJob("hooks", "a", "ns.run", "")
	x.set(nil, seen)
	if got := x.of("ns.run", t0.Add(time.Hour)); len(got) != 1 || got[0] != seen {
		t.Fatalf("run's Jobs once the informer showed it = %v, want the informer's object, for good", got)
	}
	// A create whose answer arrives after the informer's event changes nothing.
	x.expect(created, t0.Add(2*time.Second))
	if got := x.of("ns.run", t0.Add(time.Hour)); len(got) != 1 || got[0] != seen {
		t.Fatalf("run's Jobs after a late create answer = %v, want the informer's object", got)
	}

	// Never confirmed: left out from expectFor on, renewed by a new create.
	lost := indexedJob("hooks", "b", "ns.run", "")
	x.expect(lost, t0)
	if got := x.of("ns.run", t0.Add(expectFor-time.Millisecond)); !slices.Contains(got, lost) {
		t.Fatalf("run's Jobs just before the expectation lapses = %v, want b in them", got)
	}
	if got := x.of("ns.run", t0.Add(expectFor)); slices.Contains(got, lost) {
		t.Fatalf("run's Jobs once the expectation lapsed = %v, want b left out", got)
	}
	if x.has(lost, t0.Add(expectFor)) {
		t.Fatal("has: a lapsed expectation is there")
	}
	if !x.has(seen, t0.Add(time.Hour)) {
		t.Fatal("has: a Job the informer showed is not there")
	}
	again := indexedJob("hooks", "b", "ns.run", "")
	x.expect(again, t0.Add(expectFor))
	if got := x.of("ns.run", t0.Add(expectFor+time.Second)); !slices.Contains(got, again) {
		t.Fatalf("run's Jobs after b was created again = %v, want the new b", got)
	}

	// The informer's deletion removes an expectation too.
	x.remove(again)
	if got := x.of("ns.run", t0.Add(expectFor+time.Second)); len(got) != 1 || got[0] != seen {
		t.Fatalf("run's Jobs after b's deletion = %v, want a alone", got)
	}
	if len(x.expected) != 0 {
		t.Fatalf("expectations left: %v", x.expected)
	}
}
