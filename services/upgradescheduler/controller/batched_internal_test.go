package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// recordingQueue records how requests were queued.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	now   []reconcile.Request
	after map[reconcile.Request]time.Duration
}

func (q *recordingQueue) Add(r reconcile.Request) { q.now = append(q.now, r) }
func (q *recordingQueue) AddAfter(r reconcile.Request, d time.Duration) {
	q.after[r] = d
}

// A Node change plans every UpgradeConfig after the batch delay, never at
// once: the changes of a rollout's burst share a plan.
func TestNodeChangesAreBatched(t *testing.T) {
	ucs := []reconcile.Request{
		{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}},
		{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "b"}},
	}
	h := batched(func(context.Context, client.Object) []reconcile.Request { return ucs }, 3*time.Second)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}}
	ctx := context.Background()
	for name, fire := range map[string]func(q *recordingQueue){
		"create":  func(q *recordingQueue) { h.Create(ctx, event.CreateEvent{Object: node}, q) },
		"update":  func(q *recordingQueue) { h.Update(ctx, event.UpdateEvent{ObjectOld: node, ObjectNew: node}, q) },
		"delete":  func(q *recordingQueue) { h.Delete(ctx, event.DeleteEvent{Object: node}, q) },
		"generic": func(q *recordingQueue) { h.Generic(ctx, event.GenericEvent{Object: node}, q) },
	} {
		q := &recordingQueue{after: map[reconcile.Request]time.Duration{}}
		fire(q)
		if len(q.now) != 0 {
			t.Errorf("%s: queued at once: %v", name, q.now)
		}
		for _, r := range ucs {
			if d, ok := q.after[r]; !ok || d != 3*time.Second {
				t.Errorf("%s: %v queued after %v (queued: %v), want after 3s", name, r, d, ok)
			}
		}
	}
}
