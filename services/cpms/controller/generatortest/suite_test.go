// Package generatortest runs the cpms-controller's set generator
// (controller.Generator) against a real kube-apiserver, beside the
// reconciler as the binary runs them with --generate-set, with the webhook
// registered in the apiserver (so every generated set is admitted the way a
// cluster admits it) and ocpsim's machine-api bringing the masters up and
// taking deleted ones away. A suite of its own: the reconciler's suite never
// runs the generator, whose sets would get in its way.
package generatortest

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/cpms/controller"
	"github.com/upshift-io/upshift/services/cpms/metrics"
	"github.com/upshift-io/upshift/services/cpms/webhook"
	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

func TestGenerator(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
	SetDefaultConsistentlyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "cpms-controller: set generator against a real apiserver")
}

var env *testenv.Env

var _ = BeforeSuite(func(ctx context.Context) {
	// Shown only for a failed spec (GinkgoWriter).
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	cluster, err := simcluster.Start(ctx, simcluster.Options{ControlPlane: testenv.Options{
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{webhook.Configuration("upshift", "cpms-controller")},
	}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cluster.Stop)
	env = cluster.Env

	srv := ctrlwebhook.NewServer(ctrlwebhook.Options{Host: env.Webhook.Host, Port: env.Webhook.Port, CertDir: env.Webhook.CertDir})
	webhook.Register(srv, scheme.Scheme, env.Client, env.Client)
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(srv.Start(wctx)).To(Succeed())
	}()
	DeferCleanup(func() { cancel(); <-done })

	Expect(env.CreateNamespace(ctx, controller.Namespace)).To(Succeed())
	// The installer's Infrastructure: where the generator reads the
	// platform (its status, which the reconciler's cache alone drops).
	infra := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec: configv1.InfrastructureSpec{PlatformSpec: configv1.PlatformSpec{Type: configv1.AWSPlatformType}}}
	Expect(env.Client.Create(ctx, infra)).To(Succeed())
	infra.Status = configv1.InfrastructureStatus{InfrastructureName: "c1", PlatformStatus: &configv1.PlatformStatus{Type: configv1.AWSPlatformType},
		ControlPlaneTopology: configv1.HighlyAvailableTopologyMode, InfrastructureTopology: configv1.HighlyAvailableTopologyMode}
	Expect(env.Client.Status().Update(ctx, infra)).To(Succeed())

	// 600x: a machine launches and joins in 0.6 s, and a deleted one is
	// drained and gone as fast.
	Expect(cluster.Restart(ocpsim.Options{TimeScale: 600, Parts: []ocpsim.Part{ocpsim.PartMachineAPI},
		Log: logf.Log.WithName("ocpsim")})).To(Succeed())

	startController()
}, NodeTimeout(3*time.Minute))

// startController runs the reconciler and the generator in one manager with
// the binary's cache options for --generate-set, for the whole suite.
func startController() {
	opts := controller.ManagerOptions()
	opts.RestConfig = env.Config
	opts.Controller = ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}
	mgr, err := runtime.NewManager("cpms-controller", &runtime.Flags{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", KubeAPIQPS: 50, KubeAPIBurst: 100,
	}, opts)
	Expect(err).NotTo(HaveOccurred())
	recorder := events.NewRecorder(mgr.GetEventRecorder("cpms-controller"))
	Expect((&controller.Generator{Client: mgr.GetClient(), Recorder: recorder}).SetupWithManager(mgr)).To(Succeed())
	Expect((&controller.Reconciler{
		Client: mgr.GetClient(), Recorder: recorder, Metrics: metrics.New(prometheus.NewRegistry()),
	}).SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	DeferCleanup(func() { cancel(); <-done })
}
