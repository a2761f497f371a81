package controller

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/ownwrite"
)

// The UpgradeStatus's status is written in the background as well, by the
// statusPublisher. A recomputation used to write it before returning, and on
// a loaded API server that write was more than half of a recomputation's
// wall time (goroutine samples of the 5,000-node bench): a node change that
// arrived meanwhile waited for the write before its own recomputation could
// start.
//
// Only the newest status is written: a recomputation's status replaces one
// handed over before and not yet taken. The Events of a status are recorded
// once a write that includes it has succeeded; those of a replaced status go
// with the status that replaces it, first, so none is lost and none is
// recorded for a status that was never written. A recomputation plans from
// the status to be written or being written, else from the last one written
// while the cache lags behind it (libs/ownwrite), else from the cache, so it
// never hands the same transition over twice.
//
// A failed write is retried with the insights' back-off unless a newer status
// was handed over meanwhile (which then carries the failed one's Events);
// the last-success metric moves only when a status is written. A
// restart drops what was not written: the next leader plans from what the
// API server has and records the Events of the transitions it sees then.

// statusKey is the publisher's one work item.
const statusKey = "upgradestatus"

// statusWrite is a status to write and the Events to record once it is.
type statusWrite struct {
	// obj is the UpgradeStatus as it is once written: the object the status
	// was planned from, with the status. Never modified once built.
	obj    *updatev1alpha1.UpgradeStatus
	events []events.Event
	// complete: the recomputation published everything else it found, so
	// writing this status is a success for the last-success metric, at
	// seen, when the recomputation read the cluster.
	complete bool
	seen     time.Time
}

// newStatusWrite is status applied to us, the UpgradeStatus it was planned
// from.
func newStatusWrite(us *updatev1alpha1.UpgradeStatus, status *updatev1alpha1.UpgradeStatusStatus, evs []events.Event, complete bool, seen time.Time) *statusWrite {
	obj := *us // the metadata is shared, never written
	obj.Status = *status
	return &statusWrite{obj: &obj, events: evs, complete: complete, seen: seen}
}

// statusPublisher writes the UpgradeStatus's status in the background. It
// runs as a leader-elected manager Runnable, like the controller.
type statusPublisher struct {
	client   client.Client
	recorder *events.Recorder
	metrics  *Metrics
	queue    workqueue.TypedRateLimitingInterface[string]
	// written are the status writes done that the cache may not show yet.
	written ownwrite.Writes[*updatev1alpha1.UpgradeStatus]

	mu sync.Mutex
	// next is the newest status handed over and not yet taken; inFlight is
	// the one being written.
	next, inFlight *statusWrite
	// failing: the last write failed.
	failing bool
}

func newStatusPublisher(c client.Client, rec *events.Recorder, m *Metrics) *statusPublisher {
	return &statusPublisher{
		client:   c,
		recorder: rec,
		metrics:  m,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](writeRetryBase, writeRetryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "upgradestatus"}),
	}
}

// NeedLeaderElection: only the leader writes.
func (p *statusPublisher) NeedLeaderElection() bool { return true }

// Start writes until ctx ends. A write still pending then is dropped.
func (p *statusPublisher) Start(ctx context.Context) error {
	return runWorkers(ctx, p.queue, 1, p.metrics.pendingWrites.WithLabelValues(kindStatus), p.writeNext)
}

// newest is the UpgradeStatus to plan from: the status to be written or
// being written, else the last one written while cached is older, else
// cached. It looks at all three under one lock, which a write's end also
// takes: a write that ends meanwhile is seen in one place or the other.
func (p *statusPublisher) newest(cached *updatev1alpha1.UpgradeStatus) *updatev1alpha1.UpgradeStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.next != nil:
		return p.next.obj
	case p.inFlight != nil:
		return p.inFlight.obj
	}
	return p.written.Newest(clusterRequest.NamespacedName, cached)
}

// handOver queues w in place of any status not yet taken, whose Events go
// first.
func (p *statusPublisher) handOver(w *statusWrite) {
	p.mu.Lock()
	if p.next != nil {
		w.events = append(slices.Clone(p.next.events), w.events...)
	}
	p.next = w
	p.metrics.pendingWrites.WithLabelValues(kindStatus).Set(1)
	p.mu.Unlock()
	p.queue.Add(statusKey)
}

// idle: every status handed over is written.
func (p *statusPublisher) idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next == nil && p.inFlight == nil && !p.failing
}

// writeNext writes the newest status handed over; false once the queue shut
// down.
func (p *statusPublisher) writeNext(ctx context.Context) bool {
	key, shutdown := p.queue.Get()
	if shutdown {
		return false
	}
	defer p.queue.Done(key)
	p.mu.Lock()
	w := p.next
	p.next, p.inFlight = nil, w
	p.mu.Unlock()
	if w == nil {
		p.queue.Forget(key)
		return true
	}

	rv, err := applyUpgradeStatus(ctx, p.client, p.metrics, w.obj)

	p.mu.Lock()
	p.inFlight = nil
	p.failing = err != nil
	if err != nil {
		p.written.Forget(clusterRequest.NamespacedName) // the outcome is unknown: trust the cache again
		p.metrics.writeErrors.WithLabelValues(kindStatus).Inc()
		log.FromContext(ctx).Error(err, "UpgradeStatus status write failed; retrying")
		if p.next == nil {
			p.next = w // retry this one
		} else {
			p.next.events = append(slices.Clone(w.events), p.next.events...)
		}
		p.mu.Unlock()
		p.queue.AddRateLimited(key)
		return true
	}
	// Wrote keeps its own deep copy: a shallow one of w.obj is enough here.
	written := *w.obj
	written.ResourceVersion = rv
	p.written.Wrote(w.obj.ResourceVersion, &written)
	if p.next == nil {
		p.metrics.pendingWrites.WithLabelValues(kindStatus).Set(0)
	}
	p.mu.Unlock()
	p.queue.Forget(key)
	if w.complete {
		p.metrics.markSuccess(w.seen)
	}
	p.recorder.Record(w.events...)
	return true
}
