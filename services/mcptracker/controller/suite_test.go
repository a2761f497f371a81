package controller_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/metricstest"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/mcptracker/controller"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

func TestController(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "mcp-tracker: controller")
}

var env *testenv.Env

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter)))
	var err error
	cluster, err := simcluster.Start(ctx, simcluster.Options{ControlPlane: testenv.Options{Kwok: true}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cluster.Stop)
	env = cluster.Env
}, NodeTimeout(2*time.Minute))

// The specs share one control plane and run in this order: the first two
// create their own pools (the first one named worker) and delete them at
// their end; the last seeds a simulated cluster whose pools stay.
var _ = Describe("mcp-tracker", Ordered, func() {
	Context("two writers on one UpgradeConfig status", twoWriters)
	Context("bounded writes and stuck nodes", boundedWrites)
	Context("tracking pools driven by the MCO simulator", mcoRollout)
})

// tracker is one running mcp-tracker with its own metrics registry.
type tracker struct {
	reg *prometheus.Registry
	r   *controller.Reconciler
	// stop ends the tracker's manager (a restart is stop, then a new one).
	stop func()
}

// startTracker runs the reconciler in a manager of its own (the Node cache
// trimmed as a binary would), until the spec ends.
func startTracker(ctx context.Context, r *controller.Reconciler) *tracker {
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     scheme.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      controller.CacheOptions(),
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	reg := prometheus.NewRegistry()
	r.Client = mgr.GetClient()
	r.Recorder = events.NewRecorder(mgr.GetEventRecorder("mcp-tracker"))
	r.Metrics = controller.NewMetrics(reg)
	Expect(r.SetupWithManager(mgr)).To(Succeed())
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(mctx)).To(Succeed())
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	DeferCleanup(stop)
	return &tracker{reg: reg, r: r, stop: stop}
}

// metric returns a gauge or counter value, or a histogram's sample count,
// of the series with exactly these labels.
func (t *tracker) metric(name string, labels map[string]string) (float64, bool) {
	all, err := metricstest.Series(t.reg, name)
	Expect(err).NotTo(HaveOccurred())
	ls := make([]string, 0, len(labels))
	for k, v := range labels {
		ls = append(ls, k+"="+v)
	}
	sort.Strings(ls)
	key := strings.Join(ls, ",")
	if v, ok := all[key]; ok {
		return v, true
	}
	v, ok := all[key+"#count"]
	return v, ok
}

func (t *tracker) writes() float64 {
	v, _ := t.metric("upshift_mcp_tracker_status_writes_total", nil)
	return v
}

// patient retries on conflict for long enough to outlast the tracker's
// writes, as the scheduler does with its requeues (client-go's default gives
// up after five quick tries).
var patient = wait.Backoff{Steps: 100, Duration: 5 * time.Millisecond, Factor: 1.5, Jitter: 0.5, Cap: 500 * time.Millisecond}

// newUpgradeConfig creates an UpgradeConfig and, as the upgrade-scheduler
// would, a history entry Upgrading since start.
func newUpgradeConfig(ctx context.Context, c client.Client, ns, version string, start time.Time) *upgradev1alpha1.UpgradeConfig {
	Expect(env.CreateNamespace(ctx, ns)).To(Succeed())
	uc := &upgradev1alpha1.UpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "managed-upgrade-config"},
		Spec: upgradev1alpha1.UpgradeConfigSpec{
			Desired: upgradev1alpha1.Update{Version: version, Channel: "stable-4.16"}, UpgradeAt: "2026-01-01T00:00:00Z",
			PDBForceDrainTimeout: 60, Type: upgradev1alpha1.OSD,
		},
	}
	Expect(c.Create(ctx, uc)).To(Succeed())
	st := metav1.NewTime(start)
	// The tracker may write first: retry on conflict, as the scheduler does
	// through its requeue.
	Expect(retry.RetryOnConflict(patient, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(uc), uc); err != nil {
			return err
		}
		uc.Status.History = []upgradev1alpha1.UpgradeHistory{{Version: version, Phase: upgradev1alpha1.UpgradePhaseUpgrading, StartTime: &st}}
		return c.Status().Update(ctx, uc)
	})).To(Succeed())
	return uc
}

func getUC(ctx context.Context, c client.Client, key client.ObjectKey) *upgradev1alpha1.UpgradeConfig {
	uc := &upgradev1alpha1.UpgradeConfig{}
	Expect(c.Get(ctx, key, uc)).To(Succeed())
	return uc
}

func poolStatus(uc *upgradev1alpha1.UpgradeConfig, name string) *upgradev1alpha1.PoolUpdate {
	for i := range uc.Status.Pools {
		if uc.Status.Pools[i].Name == name {
			return &uc.Status.Pools[i]
		}
	}
	return nil
}
