package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A burst of Node changes re-plans once, and not before the batch's time.
func TestBatchedNodeChangesPlanOnce(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Clock: clock})
	defer q.ShutDown()
	uc := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "managed-upgrade-config"}}
	h := batched(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{uc} }, time.Second)

	ctx := context.Background()
	for i := range 10 {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-" + string(rune('a'+i))}}
		h.Update(ctx, event.UpdateEvent{ObjectOld: n, ObjectNew: n}, q)
		clock.Step(50 * time.Millisecond)
	}
	h.Create(ctx, event.CreateEvent{Object: &corev1.Node{}}, q)
	h.Delete(ctx, event.DeleteEvent{Object: &corev1.Node{}}, q)
	if n := q.Len(); n != 0 {
		t.Fatalf("queued before the batch's second was over: %d items", n)
	}

	// The first change was 500 ms ago: another 500 ms makes it due.
	clock.Step(500 * time.Millisecond)
	got := make(chan reconcile.Request, 1)
	go func() {
		req, _ := q.Get() // blocks until the queue's goroutine moves the item
		got <- req
	}()
	select {
	case req := <-got:
		if req != uc {
			t.Fatalf("queued %v, want %v", req, uc)
		}
		q.Done(req)
	case <-time.After(30 * time.Second):
		t.Fatal("nothing queued once the batch's second was over")
	}
	// Every event of the burst was for the same item: one plan.
	if n := q.Len(); n != 0 {
		t.Fatalf("%d more items after the first plan", n)
	}
}
