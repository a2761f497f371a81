package controller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	libevents "github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

func TestController(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "aro-monitor: controller")
}

var (
	env *testenv.Env
	// recorder is the controllers' Recorder; emitted counts what it hands
	// to the events library.
	recorder *libevents.Recorder
	emitted  *emittedEvents
)

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter)))
	var err error
	cluster, err := simcluster.Start(ctx, simcluster.Options{ControlPlane: testenv.Options{}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cluster.Stop)
	env = cluster.Env
	cs, err := env.Clientset()
	Expect(err).NotTo(HaveOccurred())
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	stop := make(chan struct{})
	emitted = &emittedEvents{byReason: map[string]int{}}
	stopCounting, err := b.StartEventWatcher(emitted.add)
	Expect(err).NotTo(HaveOccurred())
	b.StartRecordingToSink(stop)
	DeferCleanup(func() { close(stop); stopCounting(); b.Shutdown() })
	emitted.lib = b.NewRecorder(scheme.Scheme, "aro-monitor")
	recorder = libevents.NewRecorder(emitted.lib)
}, NodeTimeout(2*time.Minute))

// emittedEvents counts, by reason, the Events the controllers hand to the
// events library: each is one request to the API server (a create, or a
// series update when it repeats an earlier one). Tests prove "exactly once"
// by this count instead of watching the Events for a while.
type emittedEvents struct {
	lib      events.EventRecorder
	mu       sync.Mutex
	byReason map[string]int
	markers  int
}

func (e *emittedEvents) add(obj runtime.Object) {
	ev, ok := obj.(*eventsv1.Event)
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byReason[ev.Reason]++
}

// count is how many Events of reason were emitted so far. The library
// hands Events to its watchers in the order they were emitted, so once a
// marker emitted now is counted, every earlier Event is too.
func (e *emittedEvents) count(reason string) int {
	e.mu.Lock()
	e.markers++
	marker := fmt.Sprintf("CountMarker%d", e.markers)
	e.mu.Unlock()
	e.lib.Eventf(&corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "default"}, nil, corev1.EventTypeNormal, marker, "Count", "marker")
	Eventually(func() int {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.byReason[marker]
	}).Should(Equal(1))
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byReason[reason]
}
