package runtime

import (
	"context"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/libs/testenv"
)

// fakeLW serves one prepared watch, or an error.
type fakeLW struct {
	w      watch.Interface
	err    error
	noList bool
}

func (f *fakeLW) List(metav1.ListOptions) (runtime.Object, error) {
	return &corev1.ConfigMapList{}, nil
}
func (f *fakeLW) Watch(metav1.ListOptions) (watch.Interface, error) {
	return f.w, f.err
}
func (f *fakeLW) IsWatchListSemanticsUnSupported() bool { return f.noList }

func gone(reason metav1.StatusReason) *metav1.Status {
	return &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: reason, Message: "too old resource version: 1 (2)"}
}

func TestExpiredWatchesAreCounted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []watch.Event
		err    error
		want   float64
	}{
		{name: "an expired error event (the watch cache's answer)", want: 1,
			events: []watch.Event{{Type: watch.Added, Object: &corev1.ConfigMap{}}, {Type: watch.Error, Object: gone(metav1.StatusReasonExpired)}}},
		{name: "a Gone error event (etcd's answer after compaction)", want: 1,
			events: []watch.Event{{Type: watch.Error, Object: gone(metav1.StatusReasonGone)}}},
		{name: "a 410 of a reason nobody knows", want: 1,
			events: []watch.Event{{Type: watch.Error, Object: gone("SomethingNew")}}},
		{name: "another error event", want: 0,
			events: []watch.Event{{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonInternalError}}}},
		{name: "events only", want: 0,
			events: []watch.Event{{Type: watch.Added, Object: &corev1.ConfigMap{}}, {Type: watch.Modified, Object: &corev1.ConfigMap{}}}},
		{name: "the watch refused as expired when asked for", want: 1, err: apierrors.NewResourceExpired("too old resource version")},
		{name: "the watch refused otherwise", want: 0, err: apierrors.NewServiceUnavailable("starting")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			counter := prometheus.NewCounter(prometheus.CounterOpts{Name: "test"})
			fake := watch.NewFakeWithChanSize(len(tc.events), false)
			for _, ev := range tc.events {
				fake.Action(ev.Type, ev.Object)
			}
			fake.Stop() // closes the stream after the events
			lw := expiryCounting(&fakeLW{w: fake, err: tc.err}, counter)
			w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
			if tc.err != nil {
				g.Expect(err).To(Equal(tc.err))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
				var got []watch.Event
				for ev := range w.ResultChan() {
					got = append(got, ev)
				}
				g.Expect(got).To(Equal(tc.events), "the events pass unchanged")
			}
			g.Expect(testutil.ToFloat64(counter)).To(Equal(tc.want))
		})
	}
}

// A reflector stops reading once it has called Stop; the relay must not
// stay blocked on the event it was passing on.
func TestStoppedRelayEnds(t *testing.T) {
	g := NewWithT(t)
	fake := watch.NewFakeWithChanSize(1, false)
	fake.Add(&corev1.ConfigMap{})
	w := relayCountingExpiry(fake, prometheus.NewCounter(prometheus.CounterOpts{Name: "test"}))
	w.Stop()
	g.Expect(fake.IsStopped()).To(BeTrue())
	g.Eventually(func() bool {
		select {
		case _, open := <-w.ResultChan():
			return !open
		default:
			return false
		}
	}).Should(BeTrue(), "the relay closes its stream")
}

func TestWrappingKeepsWatchListSemantics(t *testing.T) {
	g := NewWithT(t)
	counter := prometheus.NewCounter(prometheus.CounterOpts{Name: "test"})
	g.Expect(expiryCounting(&fakeLW{noList: true}, counter).IsWatchListSemanticsUnSupported()).To(BeTrue())
	g.Expect(expiryCounting(&fakeLW{}, counter).IsWatchListSemanticsUnSupported()).To(BeFalse())
	g.Expect(expiryCounting(&toolscache.ListWatch{}, counter).IsWatchListSemanticsUnSupported()).To(BeFalse())
}

func TestKindOf(t *testing.T) {
	g := NewWithT(t)
	g.Expect(kindOf(&corev1.Node{})).To(Equal("Node"))
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
	g.Expect(kindOf(meta)).To(Equal("Pod"))
}

// TestInformerCountsExpiryAcrossAPIServerRestart: a real informer, a real
// kube-apiserver restarted with its history compacted. The informer's watch
// resumes from a resourceVersion etcd no longer has; it is counted, and the
// informer lists again and goes on (it sees an object created after).
func TestInformerCountsExpiryAcrossAPIServerRestart(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := testenv.Start(ctx, testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })

	c, err := cache.New(env.Config, cache.Options{Scheme: scheme.Scheme, NewInformer: countExpiredWatches(nil)})
	g.Expect(err).NotTo(HaveOccurred())
	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = c.Start(ctx) }()
	g.Expect(c.WaitForCacheSync(ctx)).To(BeTrue())
	expired := watchesExpired.WithLabelValues("ConfigMap")
	before := testutil.ToFloat64(expired)

	// A write the informer hears, so that its resourceVersion is one etcd
	// had; the compaction removes it.
	first := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "before"}}
	g.Expect(env.Client.Create(ctx, first)).To(Succeed())
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKeyFromObject(first), &corev1.ConfigMap{}) }).Should(Succeed())
	// A write the informer does not watch: etcd's revision moves past the
	// informer's, as a busy cluster's does. (Compacting at the revision the
	// informer last heard would expire nothing: its watch resumes after it.)
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "unwatched"}})).To(Succeed())
	g.Expect(testutil.ToFloat64(expired)).To(Equal(before), "nothing expired before the restart")

	g.Expect(env.RestartAPIServer(ctx, testenv.RestartOptions{Down: 200 * time.Millisecond, CompactHistory: true})).To(Succeed())

	g.Eventually(func() float64 { return testutil.ToFloat64(expired) }, 30*time.Second).Should(BeNumerically(">", before), "the resumed watch's 410 counted")
	after := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "after"}}
	g.Expect(env.Client.Create(ctx, after)).To(Succeed())
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKeyFromObject(after), &corev1.ConfigMap{}) }, 30*time.Second).Should(Succeed(), "the informer carries on")
	g.Expect(inf.HasSynced()).To(BeTrue())
}
