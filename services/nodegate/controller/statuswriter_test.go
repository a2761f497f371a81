package controller

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/ownwrite"
	"github.com/upshift-io/upshift/libs/testenv"
)

// The background writer coalesces: three statuses handed over before it
// runs cost one write, of the newest; a status written before a pass acts
// supersedes what is pending; until written, the newest decision is what
// the next pass plans from.
func TestStatusWriterCoalesces(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	if err := env.CreateNamespace(ctx, "runs"); err != nil {
		t.Fatal(err)
	}
	run := &nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "runs", Name: "r"}}
	run.Spec.MutexRules = []nodegatev1alpha1.ObjectReference{{Name: "rule"}}
	run.Spec.MutexTargets = []nodegatev1alpha1.ObjectReference{{Name: "target"}}
	if err := env.Client.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(run)
	// No wait: queued at once, so that Len below counts it.
	w := newStatusWriter(env.Client, &ownwrite.Writes[*nodegatev1alpha1.MutexRunConfig]{}, 0)
	defer w.queue.ShutDown()

	status := func(id string) nodegatev1alpha1.MutexRunConfigStatus {
		return nodegatev1alpha1.MutexRunConfigStatus{Phase: nodegatev1alpha1.RunProgressing, RunID: id}
	}
	for _, id := range []string{"a", "b", "c"} {
		w.Put(key, status(id))
	}
	if st, ok := w.Pending(key); !ok || st.RunID != "c" {
		t.Fatalf("pending = %v %v, want the newest (c)", st.RunID, ok)
	}
	if n := w.queue.Len(); n != 1 {
		t.Fatalf("queued %d times, want once", n)
	}

	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	watcher, err := wc.Watch(ctx, &nodegatev1alpha1.MutexRunConfigList{},
		client.InNamespace("runs"), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: run.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Stop()

	if !w.next(ctx) {
		t.Fatal("the queue shut down")
	}
	if _, ok := w.Pending(key); ok {
		t.Fatal("still pending after its write")
	}
	got := &nodegatev1alpha1.MutexRunConfig{}
	if err := env.Client.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.RunID != "c" {
		t.Fatalf("written status %q, want c", got.Status.RunID)
	}
	// Every write of the run is a watch event: count those up to the one
	// that carries the status written.
	writes := 0
	for ev := range watcher.ResultChan() {
		if ev.Type != watch.Modified {
			t.Fatalf("unexpected %s event", ev.Type)
		}
		writes++
		if ev.Object.(*nodegatev1alpha1.MutexRunConfig).ResourceVersion == got.ResourceVersion {
			break
		}
	}
	if writes != 1 {
		t.Fatalf("%d writes for three hand-overs, want 1", writes)
	}

	// A synchronous write supersedes the pending status it was planned
	// from; the worker then has nothing to write.
	w.Put(key, status("d"))
	written, err := w.WriteNow(ctx, got, status("e"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Pending(key); ok {
		t.Fatal("pending after a synchronous write superseded it")
	}
	if !w.next(ctx) {
		t.Fatal("the queue shut down")
	}
	final := &nodegatev1alpha1.MutexRunConfig{}
	if err := env.Client.Get(ctx, key, final); err != nil {
		t.Fatal(err)
	}
	if final.Status.RunID != "e" || final.ResourceVersion != written.ResourceVersion {
		t.Fatalf("status %q at %s, want e at %s (the worker wrote the superseded d over it?)",
			final.Status.RunID, final.ResourceVersion, written.ResourceVersion)
	}
}
