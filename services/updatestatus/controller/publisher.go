package controller

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/ownwrite"
)

// The NodeProgressInsight writes are executed in the background, by the
// insightPublisher, not by the recomputation that planned them.
//
// A recomputation used to wait for all its node writes before the next one
// could start; on a 5,000-node cluster a node change then waited for the
// recomputation under way, its writes included, and for its own. Now a
// recomputation hands its writes over and returns: the next one starts as
// soon as the status is written, and a node's insight is written as soon as
// a worker is free.
//
// What a recomputation plans from must then include what it handed over and
// what was written but is not in the cache yet, or it would plan the same
// writes again. view gives it that: per node, the write still pending, else
// the last write while the cache is behind it (libs/ownwrite), else the
// cache. A node's writes are never concurrent (the queue hands one key to
// one worker at a time) and a newer hand-over replaces an older one still
// pending, so a node that changes faster than its insight can be written
// gets its newest insight, once.
//
// A failed write stays pending and is retried with a per-node exponential
// back-off; a recomputation meanwhile plans from the pending insight, so it
// does not hand the same write over again. A newer insight for the node
// replaces it and is tried at once.

// Retry back-off of a failed node write: the first retry after
// writeRetryBase, doubling up to writeRetryMax. At the cap, a cluster whose
// every insight write fails (say, the CRD gone) retries each node about
// twice a minute, within the client's rate limit.
const (
	writeRetryBase = 200 * time.Millisecond
	writeRetryMax  = 30 * time.Second
)

// insightPublisher executes NodeProgressInsight writes in the background.
// It runs as a leader-elected manager Runnable, like the controller.
type insightPublisher struct {
	client  client.Client
	metrics *Metrics
	queue   workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// pending is the newest write handed over per node and not yet done.
	pending map[string]handedOver
	seq     uint64
	// failing are the nodes whose last write attempt failed.
	failing map[string]bool
	// written are the writes done that the cache may not show yet. The
	// insights in pending and written are never modified once built, and
	// the planner only reads them, so they are shared rather than copied:
	// on a first start there are thousands.
	written ownwrite.Writes[*updatev1alpha1.NodeProgressInsight]
}

// handedOver is a planned write as the publisher holds it.
type handedOver struct {
	// insight is the insight to apply; nil to delete it.
	insight *updatev1alpha1.NodeProgressInsight
	// over is the insight's resourceVersion in the cache the write was
	// planned from ("" when the cache had none).
	over string
	seq  uint64
}

func newInsightPublisher(c client.Client, m *Metrics) *insightPublisher {
	return &insightPublisher{
		client:  c,
		metrics: m,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](writeRetryBase, writeRetryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "nodeprogressinsights"}),
		pending: map[string]handedOver{},
		failing: map[string]bool{},
		written: ownwrite.Writes[*updatev1alpha1.NodeProgressInsight]{Shared: true},
	}
}

// NeedLeaderElection: only the leader writes.
func (p *insightPublisher) NeedLeaderElection() bool { return true }

// Start runs nodeWriters workers until ctx ends. Writes still pending then
// are dropped: the next leader plans from what the API server has.
func (p *insightPublisher) Start(ctx context.Context) error {
	return runWorkers(ctx, p.queue, nodeWriters, p.metrics.pendingWrites.WithLabelValues(kindInsight), p.next)
}

// handOver queues ws, planned from the insights in cached (the cache as the
// recomputation read it, before view).
func (p *insightPublisher) handOver(ws []nodeWrite, cached map[string]*updatev1alpha1.NodeProgressInsight) {
	if len(ws) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range ws {
		w := &ws[i]
		p.seq++
		h := handedOver{seq: p.seq}
		if !w.remove {
			h.insight = w.insight()
		}
		if c := cached[w.name]; c != nil {
			h.over = c.ResourceVersion
		}
		p.pending[w.name] = h
		p.queue.Add(w.name)
	}
	p.metrics.pendingWrites.WithLabelValues(kindInsight).Set(float64(len(p.pending)))
}

// view is the published insights to plan from: cached (the cache, not
// modified) with the writes pending and the writes the cache does not show
// yet in place of what it has.
func (p *insightPublisher) view(cached map[string]*updatev1alpha1.NodeProgressInsight) map[string]*updatev1alpha1.NodeProgressInsight {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := p.written.Keys()
	if len(keys) == 0 && len(p.pending) == 0 {
		return cached
	}
	out := make(map[string]*updatev1alpha1.NodeProgressInsight, len(cached))
	for name, npi := range cached {
		out[name] = npi
	}
	for _, key := range keys {
		if npi := p.written.Newest(key, cached[key.Name]); npi != nil {
			out[key.Name] = npi
		}
	}
	for name, h := range p.pending {
		if h.insight == nil {
			delete(out, name)
			continue
		}
		out[name] = h.insight
	}
	return out
}

// seen drops what is remembered of the writes to obj's insight once the
// cache shows the last of them, or a version after it.
func (p *insightPublisher) seen(obj client.Object) {
	npi, ok := obj.(*updatev1alpha1.NodeProgressInsight)
	if !ok {
		return
	}
	p.written.Newest(types.NamespacedName{Name: npi.Name}, npi)
}

// forget drops what is remembered of the writes to name's insight: it was
// deleted, and a write the cache does not show yet must not stand in for it.
func (p *insightPublisher) forget(name string) {
	p.written.Forget(types.NamespacedName{Name: name})
}

// failures is the number of nodes whose last write failed.
func (p *insightPublisher) failures() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.failing)
}

// next executes the write of one node; false once the queue shut down.
func (p *insightPublisher) next(ctx context.Context) bool {
	name, shutdown := p.queue.Get()
	if shutdown {
		return false
	}
	defer p.queue.Done(name)

	p.mu.Lock()
	h, ok := p.pending[name]
	p.mu.Unlock()
	if !ok {
		p.queue.Forget(name)
		return true
	}
	written, err := publishNode(ctx, p.client, p.metrics, name, h.insight)

	p.mu.Lock()
	defer p.mu.Unlock()
	key := types.NamespacedName{Name: name}
	if err != nil {
		// The outcome is unknown: trust the cache again.
		p.written.Forget(key)
		p.failing[name] = true
		p.metrics.writeErrors.WithLabelValues(kindInsight).Inc()
		log.FromContext(ctx).Error(err, "node insight write failed; retrying", "node", name)
		if p.pending[name].seq == h.seq {
			// Nothing newer was handed over: retry this one later.
			p.queue.AddRateLimited(name)
		}
		return true
	}
	delete(p.failing, name)
	p.queue.Forget(name)
	if written != nil {
		p.written.Wrote(h.over, written)
	} else {
		p.written.Forget(key)
	}
	if p.pending[name].seq == h.seq {
		delete(p.pending, name)
		p.metrics.pendingWrites.WithLabelValues(kindInsight).Set(float64(len(p.pending)))
	}
	return true
}

// insight is the NodeProgressInsight w applies. Its status is a copy of the
// desired one: a pending write does not keep a whole computation alive.
func (w *nodeWrite) insight() *updatev1alpha1.NodeProgressInsight {
	return &updatev1alpha1.NodeProgressInsight{
		TypeMeta:   metav1.TypeMeta{APIVersion: updatev1alpha1.GroupVersion.String(), Kind: "NodeProgressInsight"},
		ObjectMeta: metav1.ObjectMeta{Name: w.name, Labels: w.labels, OwnerReferences: []metav1.OwnerReference{w.owner}},
		Status:     *w.status,
	}
}
