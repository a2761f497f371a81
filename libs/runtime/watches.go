package runtime

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// watchesExpired counts the informers' watches the API server ended as
// expired. client-go handles that on its own (the informer lists the kind
// again and carries on) and logs it only at a verbosity nobody runs with,
// so without this count a component that keeps falling behind its watches,
// or an API server that keeps restarting, is invisible from the component.
var watchesExpired = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "upshift_informer_watches_expired_total",
	Help: "Watches of this process's informers that the API server ended with 410 Gone: the resourceVersion they resumed from was no longer served (an API server restart, etcd compaction, or a watch that fell too far behind). Each is followed by a list of the kind.",
}, []string{"kind"})

func init() {
	metrics.Registry.MustRegister(watchesExpired)
}

// countExpiredWatches wraps an informer constructor (controller-runtime's
// cache.Options.NewInformer; nil for client-go's own) so that each
// informer's watches count their expiries under the informer's kind.
func countExpiredWatches(next func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	if next == nil {
		next = toolscache.NewSharedIndexInformer
	}
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		return next(expiryCounting(lw, watchesExpired.WithLabelValues(kindOf(obj))), obj, resync, idx)
	}
}

// kindOf names an informer's kind: its object's kind when set (metadata-only
// and unstructured informers), else the Go type's name.
func kindOf(obj runtime.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// expiryCountingLW is a ListerWatcher whose watches count, in expired, the
// times the API server refuses them as expired: when the watch is asked for
// or, as the watch cache and etcd answer, as an error event in its stream.
type expiryCountingLW struct {
	inner   toolscache.ListerWatcherWithContext
	noList  bool
	expired prometheus.Counter
}

func expiryCounting(lw toolscache.ListerWatcher, expired prometheus.Counter) *expiryCountingLW {
	return &expiryCountingLW{
		inner: toolscache.ToListerWatcherWithContext(lw),
		// The reflector streams its lists (watch-list) unless the
		// ListerWatcher says it cannot; wrapping must not change that.
		noList:  watchlist.DoesClientNotSupportWatchListSemantics(lw),
		expired: expired,
	}
}

// IsWatchListSemanticsUnSupported passes on what the wrapped ListerWatcher
// says.
func (l *expiryCountingLW) IsWatchListSemanticsUnSupported() bool { return l.noList }

func (l *expiryCountingLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *expiryCountingLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return l.inner.ListWithContext(ctx, opts)
}

func (l *expiryCountingLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l *expiryCountingLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := l.inner.WatchWithContext(ctx, opts)
	if err != nil {
		if isExpired(err) {
			l.expired.Inc()
		}
		return w, err
	}
	return relayCountingExpiry(w, l.expired), nil
}

func isExpired(err error) bool { return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) }

// expiryRelay passes a watch's events on unchanged, counting an expiry error
// event as it goes by. Unlike apimachinery's watch.Filter it stops relaying
// when stopped, so a reflector that stops reading after Stop never strands
// its goroutine on a send.
type expiryRelay struct {
	inner   watch.Interface
	out     chan watch.Event
	stopped chan struct{}
	once    sync.Once
}

func relayCountingExpiry(w watch.Interface, expired prometheus.Counter) *expiryRelay {
	r := &expiryRelay{inner: w, out: make(chan watch.Event), stopped: make(chan struct{})}
	go func() {
		defer close(r.out)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				if st, ok := ev.Object.(*metav1.Status); ok && isExpired(apierrors.FromObject(st)) {
					expired.Inc()
				}
			}
			select {
			case r.out <- ev:
			case <-r.stopped:
				return
			}
		}
	}()
	return r
}

func (r *expiryRelay) ResultChan() <-chan watch.Event { return r.out }

func (r *expiryRelay) Stop() {
	r.once.Do(func() { close(r.stopped) })
	r.inner.Stop()
}
