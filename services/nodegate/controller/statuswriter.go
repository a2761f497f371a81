package controller

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/ownwrite"
)

// statusWriter takes the run status off the update's critical path. A pass
// whose actions are only hook Jobs and hold labels (plan's ActionsFirst), or
// which has none, acts, hands its status here and ends: the Job
// (deterministically named) and the label are the durable record, so a
// status lost to a crash is decided again from them (the planner's
// lostStatus property). A worker writes the newest status handed over for
// each run; a burst of passes costs one write. Every pass plans from the
// newest status decided, written or not. A pass whose status must be stored
// before anything follows from it (a pool original, a new round or phase, a
// drain's record: see plan.Deferrable) writes synchronously, superseding
// what is pending.
type statusWriter struct {
	client  client.Client
	written *ownwrite.Writes[*nodegatev1alpha1.MutexRunConfig]
	queue   workqueue.TypedRateLimitingInterface[types.NamespacedName]
	// coalesce is how long a handed-over status waits for newer ones of
	// its run before it is written (Reconciler.StatusWriteInterval; tests
	// set 0).
	coalesce time.Duration

	mu      sync.Mutex
	pending map[types.NamespacedName]pendingStatus
	seq     uint64

	// writeMu makes the worker's write and a pass's synchronous write of
	// one status one at a time, so each starts from the resourceVersion the
	// other left (runs are few: one lock for all is enough).
	writeMu sync.Mutex
}

func newStatusWriter(c client.Client, written *ownwrite.Writes[*nodegatev1alpha1.MutexRunConfig], coalesce time.Duration) *statusWriter {
	return &statusWriter{
		client:  c,
		written: written,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "nodegate_status"}),
		pending:  map[types.NamespacedName]pendingStatus{},
		coalesce: coalesce,
	}
}

// DefaultStatusWriteInterval is how long a status handed to the background
// writer waits for newer ones of its run (--status-write-interval). A
// rollout's passes come several a second, each with a status of 50 to 90 KB
// at 500 workers, and every write of it is decoded, validated, stored and
// sent to every watcher by the API server the update shares: written at most
// once a second instead of four times, they cost it 13 s of CPU less over
// the bench's gated 500-worker update, of the 30 s node-gate added there
// (docs/benchmarks/node-gate.md). Nothing waits for them: the next pass
// plans from the newest status decided, written or not, and the statuses
// that must be stored before anything follows from them are written at once.
const DefaultStatusWriteInterval = time.Second

// pendingStatus is a status decided and not yet written; seq tells a newer
// hand-over of the same run from the one being written.
type pendingStatus struct {
	status nodegatev1alpha1.MutexRunConfigStatus
	seq    uint64
}

// Pending is the status decided for the run and not yet written.
func (w *statusWriter) Pending(key types.NamespacedName) (nodegatev1alpha1.MutexRunConfigStatus, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[key]
	return p.status, ok
}

// Put hands a decided status over for writing in the background.
func (w *statusWriter) Put(key types.NamespacedName, st nodegatev1alpha1.MutexRunConfigStatus) {
	w.mu.Lock()
	w.seq++
	w.pending[key] = pendingStatus{status: st, seq: w.seq}
	w.mu.Unlock()
	// A key already waiting keeps its earlier time: the write is at most
	// coalesce after the first hand-over it carries.
	w.queue.AddAfter(key, w.coalesce)
}

// Forget drops what is pending for a run that is gone.
func (w *statusWriter) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, key)
}

// WriteNow writes st over run (as the pass read it) before the pass acts.
// Written, it supersedes the pending status it was planned from; not
// written, the pending status stays.
func (w *statusWriter) WriteNow(ctx context.Context, run *nodegatev1alpha1.MutexRunConfig, st nodegatev1alpha1.MutexRunConfigStatus) (*nodegatev1alpha1.MutexRunConfig, error) {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	key := client.ObjectKeyFromObject(run)
	w.mu.Lock()
	p, had := w.pending[key]
	w.mu.Unlock()
	upd, err := w.write(ctx, key, run, st)
	if err == nil && had {
		w.done(key, p.seq)
	}
	return upd, err
}

// done drops the pending status of key if it is still the one with seq.
func (w *statusWriter) done(key types.NamespacedName, seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending[key].seq == seq {
		delete(w.pending, key)
	}
}

// write updates the status of the newest version of run this controller
// knows. Update, not patch: the resourceVersion makes a write over a stale
// run fail instead of overwriting what a newer one recorded.
func (w *statusWriter) write(ctx context.Context, key types.NamespacedName, run *nodegatev1alpha1.MutexRunConfig, st nodegatev1alpha1.MutexRunConfigStatus) (*nodegatev1alpha1.MutexRunConfig, error) {
	base := w.written.Newest(key, run)
	if equality.Semantic.DeepEqual(base.Status, st) {
		return base, nil
	}
	upd := base.DeepCopy()
	upd.Status = st
	if err := w.client.Status().Update(ctx, upd); err != nil {
		return nil, err
	}
	w.written.Wrote(base.ResourceVersion, upd)
	return upd, nil
}

// Start runs the worker until ctx ends; what is pending then is dropped
// (the next leader decides it again from the Jobs and labels).
func (w *statusWriter) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	for w.next(ctx) {
	}
	return nil
}

// NeedLeaderElection: only the leader writes.
func (w *statusWriter) NeedLeaderElection() bool { return true }

func (w *statusWriter) next(ctx context.Context) bool {
	key, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(key)
	if err := w.flush(ctx, key); err != nil {
		log.FromContext(ctx).Info("run status write failed; retrying", "run", key.String(), "error", err.Error())
		w.queue.AddRateLimited(key)
		return true
	}
	w.queue.Forget(key)
	return true
}

// flush writes the run's pending status. It stays pending (planned from)
// until written: a failed write, a conflict included (the run changed under
// it: its spec, or a cache behind), is retried unless a newer status was
// handed over meanwhile, which the retry then writes.
func (w *statusWriter) flush(ctx context.Context, key types.NamespacedName) error {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	w.mu.Lock()
	p, ok := w.pending[key]
	w.mu.Unlock()
	if !ok {
		return nil
	}
	run := &nodegatev1alpha1.MutexRunConfig{}
	err := w.client.Get(ctx, key, run)
	if err == nil {
		_, err = w.write(ctx, key, run, p.status)
	}
	if err == nil || apierrors.IsNotFound(err) {
		w.done(key, p.seq)
		return nil
	}
	return err
}
