package main

import (
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// A queue made as the simulator's controllers make theirs shows in
// readQueues under its name, with the one item it waited for and worked.
func TestReadQueuesSeesAControllerQueue(t *testing.T) {
	const name = "bench-queue-test"
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
	defer q.ShutDown()
	before, err := readQueues()
	if err != nil {
		t.Fatal(err)
	}
	q.Add("a")
	item, _ := q.Get()
	q.Done(item)
	after, err := readQueues()
	if err != nil {
		t.Fatal(err)
	}
	got := after.since(before)[name]
	if got.waitCount != 1 || got.workCount != 1 {
		t.Fatalf("queue %s: %d waited, %d worked; want 1 and 1 (all: %+v)", name, got.waitCount, got.workCount, after)
	}
}

func TestQueueUseSince(t *testing.T) {
	before := queueUse{"a": {wait: 1, work: 2, waitCount: 10, workCount: 10}}
	after := queueUse{"a": {wait: 1.5, work: 4, waitCount: 20, workCount: 20}, "b": {wait: 0.1, waitCount: 1}}
	d := after.since(before)
	if d["a"].meanWait() != 50*time.Millisecond || d["a"].meanWork() != 200*time.Millisecond {
		t.Fatalf("a: wait %s work %s, want 50ms and 200ms", d["a"].meanWait(), d["a"].meanWork())
	}
	if d["b"].meanWait() != 100*time.Millisecond || d["b"].meanWork() != 0 {
		t.Fatalf("b: wait %s work %s, want 100ms and 0", d["b"].meanWait(), d["b"].meanWork())
	}
}
