package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

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
	env      *testenv.Env
	recorder events.EventRecorder
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
	b.StartRecordingToSink(stop)
	DeferCleanup(func() { close(stop); b.Shutdown() })
	recorder = b.NewRecorder(scheme.Scheme, "aro-monitor")
}, NodeTimeout(2*time.Minute))
