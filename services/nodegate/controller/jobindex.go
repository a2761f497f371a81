package controller

import (
	"context"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/upshift-io/upshift/services/nodegate/plan"
)

// jobIndex holds the hook Jobs by run, as the cache's own objects. Every
// pass reads its run's Jobs; listing them from the cache copied each Job's
// struct (twice where the Jobs are cached per namespace), about a tenth of
// node-gate's CPU late in a 500-worker rollout, with the collection of the
// copies. The Job informer has no single store to read when the chart
// confines hook Jobs to namespaces (one informer per namespace), so the
// index is fed by the informer's events instead, through handler.
type jobIndex struct {
	mu    sync.RWMutex
	byRun map[string]map[string]*batchv1.Job // run key → namespace/name → Job
}

func newJobIndex() *jobIndex {
	return &jobIndex{byRun: map[string]map[string]*batchv1.Job{}}
}

// of is the run's hook Jobs, in no particular order: the cache's objects
// themselves, which the reader must never modify (the cache replaces
// them on every event, it does not change them).
func (x *jobIndex) of(runKey string) []*batchv1.Job {
	x.mu.RLock()
	defer x.mu.RUnlock()
	jobs := x.byRun[runKey]
	out := make([]*batchv1.Job, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, j)
	}
	return out
}

// set records j in place of old (nil when j is new); a Job whose run
// label changed moves to its new run.
func (x *jobIndex) set(old, j *batchv1.Job) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old != nil {
		x.drop(old)
	}
	key := j.Labels[plan.RunLabel]
	if key == "" {
		return
	}
	if x.byRun[key] == nil {
		x.byRun[key] = map[string]*batchv1.Job{}
	}
	x.byRun[key][j.Namespace+"/"+j.Name] = j
}

func (x *jobIndex) remove(j *batchv1.Job) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.drop(j)
}

func (x *jobIndex) drop(j *batchv1.Job) {
	key := j.Labels[plan.RunLabel]
	delete(x.byRun[key], j.Namespace+"/"+j.Name)
	if len(x.byRun[key]) == 0 {
		delete(x.byRun, key)
	}
}

// handler feeds the index from every event of the Job informer, then
// hands to next the events a pass must follow (creations, deletions and
// the updates jobEndChanged passes). Both happen in the informer's one
// call, in that order, so a pass woken by a Job's event finds that Job in
// the index; and the controller starts no pass before this handler has
// seen every Job of the initial list (the Kind source waits for it).
func (x *jobIndex) handler(next handler.TypedEventHandler[*batchv1.Job, reconcile.Request]) handler.TypedEventHandler[*batchv1.Job, reconcile.Request] {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.TypedFuncs[*batchv1.Job, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[*batchv1.Job], q queue) {
			x.set(nil, e.Object)
			next.Create(ctx, e, q)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*batchv1.Job], q queue) {
			x.set(e.ObjectOld, e.ObjectNew)
			if jobEndChanged(e.ObjectOld, e.ObjectNew) {
				next.Update(ctx, e, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[*batchv1.Job], q queue) {
			x.remove(e.Object)
			next.Delete(ctx, e, q)
		},
		GenericFunc: next.Generic,
	}
}
