// Package mcptracker is the end-to-end suite of the mcp-tracker: a real
// control plane with kube-controller-manager, kube-scheduler and kwok, a
// cluster of 3 masters, 6 workers and a custom infra pool seeded and driven
// by ocpsim (CVO, MCO, machine API), and the upgrade-scheduler and the
// mcp-tracker binaries each running as its own chart's ServiceAccount with
// exactly that chart's RBAC, checked against the audit log.
package mcptracker

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocpsim"
)

func TestMCPTracker(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "mcp-tracker e2e")
}

const (
	// namespace holds both releases and the UpgradeConfig, as MUO's own
	// namespace does.
	namespace    = "upshift-upgrade"
	schedRelease = "sched"
	trackRelease = "mcpt"
	schedChart   = "upgrade-scheduler"
	trackChart   = "mcp-tracker"
	// ocpsim plays ten simulated minutes per wall second.
	timeScale = 600
	// infraNodes is the custom pool's size.
	infraNodes = 2
)

var (
	env     *testenv.Env
	bins    map[string]string
	schedID *framework.Identity
	trackID *framework.Identity
	sched   *framework.Component
	tracker *framework.Component
	scraper *framework.Scraper
	metrics string
)

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	var err error
	bins, err = framework.BuildBinaries(GinkgoT().TempDir(),
		"github.com/upshift-io/upshift/cmd/upgrade-scheduler", "github.com/upshift-io/upshift/cmd/mcp-tracker")
	Expect(err).NotTo(HaveOccurred())

	cluster, err := framework.StartCluster(ctx, framework.ClusterOptions{
		ControlPlane: testenv.Options{ControllerManager: true, Scheduler: true, Kwok: true, AuditLog: true},
		Seed: &ocpsim.Topology{Version: "4.16.1", Channel: "stable-4.16", Masters: 3, Workers: 6,
			CustomPools: []ocpsim.CustomPool{{Name: "infra", Nodes: infraNodes}},
			Graph:       []string{"4.16.1", "4.16.2", "4.16.3"}},
		Sim: &ocpsim.Options{TimeScale: timeScale},
		Components: []framework.ComponentOptions{
			{Chart: schedChart, Release: schedRelease, Namespace: namespace},
			{Chart: trackChart, Release: trackRelease, Namespace: namespace, Scraper: "prometheus"},
		},
		// node-gate is installed by a spec, after the tracker started
		// without it (gate_test.go).
		Prepare: func(ctx context.Context, c *framework.Cluster) error {
			return framework.RemoveCRD(ctx, c.Env, gating.RunsCRD)
		},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
	env = cluster.Env
	schedID, trackID = cluster.Components[schedRelease].Identity, cluster.Components[trackRelease].Identity
	scraper = cluster.Components[trackRelease].Scraper
	Expect(env.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-operator-config", Namespace: namespace},
		Data:       map[string]string{"config.yaml": framework.LocalConfig},
	})).To(Succeed())

	sched = start(schedChart, schedID)
	DeferCleanup(func() { stop(schedChart, sched) })
	tracker = start(trackChart, trackID)
	DeferCleanup(func() { stop(trackChart, tracker) })
}, NodeTimeout(5*time.Minute))

// start runs a binary with the flags its chart's Deployment passes, as the
// chart's ServiceAccount. The tracker's metrics URL is kept for scraping.
// For the tracker, stuckAfter overrides its stuck threshold.
func start(name string, id *framework.Identity, stuckAfter ...string) *framework.Component {
	GinkgoHelper()
	var extra []string
	if name == trackChart {
		// The chart's defaults, but a short write interval (at 600× a
		// simulated minute passes in 100 ms), and passes paced as on a real
		// cluster: the default half second between them would be five
		// simulated minutes here, longer than a node's whole update, and
		// the tracker would time no node whose update fell between two.
		extra = []string{"--stuck-after=1h", "--min-write-interval=200ms",
			"--min-pass-interval=" + (500 * time.Millisecond / timeScale).String()}
		if len(stuckAfter) > 0 {
			extra[0] = "--stuck-after=" + stuckAfter[0]
		}
	}
	r, err := framework.StartAsIdentity(bins[name], id, namespace, true, extra...)
	Expect(err).NotTo(HaveOccurred())
	if name == trackChart {
		metrics = r.MetricsURL
	}
	return r.Component
}

func stop(name string, c *framework.Component) {
	GinkgoHelper()
	err := c.Stop(10 * time.Second)
	if err != nil || CurrentSpecReport().Failed() || os.Getenv("E2E_SHOW_LOGS") != "" {
		GinkgoWriter.Println(name + " logs:\n" + c.Logs())
	}
	Expect(err).NotTo(HaveOccurred())
}
