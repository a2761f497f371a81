package controller

import (
	"context"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/upshift-io/upshift/services/nodegate/plan"
)

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
	if got := x.of("ns.run1"); len(got) != 2 || !slices.Contains(got, a2) || !slices.Contains(got, b) {
		t.Fatalf("run1's Jobs = %v, want the newest a and b themselves", got)
	}

	moved := indexedJob("hooks", "c", "ns.run1", "")
	x.set(indexedJob("hooks", "c", "ns.run2", ""), moved)
	if got := x.of("ns.run2"); len(got) != 0 {
		t.Fatalf("run2's Jobs after its only Job moved = %v, want none", got)
	}
	if got := x.of("ns.run1"); len(got) != 3 || !slices.Contains(got, moved) {
		t.Fatalf("run1's Jobs = %v, want a, b and the moved c", got)
	}

	x.remove(b)
	if got := x.of("ns.run1"); len(got) != 2 || slices.Contains(got, b) {
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
		if !slices.Contains(x.of(j.Labels[plan.RunLabel]), j) {
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
			if len(x.of(e.Object.Labels[plan.RunLabel])) != 0 {
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
	if got := x.of("ns.run"); len(got) != 1 || got[0] != progressed {
		t.Fatalf("index after a progress update = %v, want the new object", got)
	}
	done := indexedJob("hooks", "a", "ns.run", batchv1.JobComplete)
	h.Update(ctx, event.TypedUpdateEvent[*batchv1.Job]{ObjectOld: progressed, ObjectNew: done}, nil)
	h.Delete(ctx, event.TypedDeleteEvent[*batchv1.Job]{Object: done}, nil)
	if want := []string{"create", "update", "delete"}; !slices.Equal(passed, want) {
		t.Fatalf("passed on %v, want %v", passed, want)
	}
}
