package controller

import (
	"context"
	"sync"
	"time"

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
//
// It also holds the Jobs node-gate created and the informer has not shown
// yet (expect): a pass in between would otherwise decide the create again,
// a write the API server refuses as AlreadyExists (a third of the creates
// in a 500-worker rollout).
type jobIndex struct {
	mu    sync.RWMutex
	byRun map[string]map[string]*batchv1.Job // run key → namespace/name → Job
	// expected holds when each Job that expect added was created, until an
	// event of the informer replaces or removes it.
	expected map[string]time.Time // namespace/name → created
}

// expectFor is how long a created Job the informer has not shown counts as
// there. Past it the Job is left out again, so a pass decides its create
// anew: were it deleted while the watch was down, the informer, which
// never had it, would send no deletion.
const expectFor = 30 * time.Second

func newJobIndex() *jobIndex {
	return &jobIndex{byRun: map[string]map[string]*batchv1.Job{}, expected: map[string]time.Time{}}
}

// of is the run's hook Jobs, in no particular order: the cache's objects
// themselves, which the reader must never modify (the cache replaces
// them on every event, it does not change them), and those created since
// now-expectFor that the cache has yet to show.
func (x *jobIndex) of(runKey string, now time.Time) []*batchv1.Job {
	x.mu.RLock()
	defer x.mu.RUnlock()
	jobs := x.byRun[runKey]
	out := make([]*batchv1.Job, 0, len(jobs))
	for k, j := range jobs {
		if !x.lapsed(k, now) {
			out = append(out, j)
		}
	}
	return out
}

// lapsed: the Job named is an expectation older than expectFor.
func (x *jobIndex) lapsed(name string, now time.Time) bool {
	at, unconfirmed := x.expected[name]
	return unconfirmed && now.Sub(at) >= expectFor
}

// jobName is the Job's key in the index: namespace/name.
func jobName(j *batchv1.Job) string { return j.Namespace + "/" + j.Name }

// has tells whether the index holds j (by namespace and name) as of now:
// shown by the informer, or created by node-gate and not yet lapsed. A
// pass that read the index before a create finished may hand the same
// create over again; this stops it short of the API server.
func (x *jobIndex) has(j *batchv1.Job, now time.Time) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	name := jobName(j)
	_, ok := x.byRun[j.Labels[plan.RunLabel]][name]
	return ok && !x.lapsed(name, now)
}

// expect records j, just created at now, unless the informer has shown
// it already: its object is as new as j or newer. An earlier expectation
// of the same Job (created again after it lapsed) is renewed.
func (x *jobIndex) expect(j *batchv1.Job, now time.Time) {
	key := j.Labels[plan.RunLabel]
	if key == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	name := jobName(j)
	_, known := x.byRun[key][name]
	if _, unconfirmed := x.expected[name]; known && !unconfirmed {
		return
	}
	x.put(key, name, j)
	x.expected[name] = now
}

// set records j in place of old (nil when j is new); a Job whose run
// label changed moves to its new run.
func (x *jobIndex) set(old, j *batchv1.Job) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old != nil {
		x.drop(old)
	}
	name := jobName(j)
	delete(x.expected, name)
	if key := j.Labels[plan.RunLabel]; key != "" {
		x.put(key, name, j)
	}
}

func (x *jobIndex) put(key, name string, j *batchv1.Job) {
	if x.byRun[key] == nil {
		x.byRun[key] = map[string]*batchv1.Job{}
	}
	x.byRun[key][name] = j
}

func (x *jobIndex) remove(j *batchv1.Job) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.drop(j)
}

func (x *jobIndex) drop(j *batchv1.Job) {
	key, name := j.Labels[plan.RunLabel], jobName(j)
	delete(x.expected, name)
	delete(x.byRun[key], name)
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
