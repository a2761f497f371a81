// Package updatestatus is the end-to-end suite of the update-status-controller:
// a real control plane with kube-controller-manager, kube-scheduler and kwok,
// a cluster seeded and driven by ocpsim, and the controller binary running as
// its chart's ServiceAccount with exactly the chart's RBAC.
package updatestatus

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocpsim"
)

func TestUpdateStatus(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "update-status-controller e2e")
}

const (
	namespace = "upshift"
	release   = "usc"
	chartName = "update-status-controller"
	// ocpsim plays ten simulated minutes per wall second: an upgrade of
	// 3 masters and 6 workers takes well under a minute.
	timeScale = 600
)

var (
	env        *testenv.Env
	bins       map[string]string
	chart      *framework.Chart
	controller *framework.Component
	saName     string
	metricsURL string
	readyzURL  string
	// scraper plays Prometheus: a ServiceAccount bound to the chart's
	// metrics-reader ClusterRole.
	scraper *framework.Scraper
)

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	bins, err = framework.BuildBinaries(GinkgoT().TempDir(),
		"github.com/upshift-io/upshift/cmd/update-status-controller",
		"github.com/upshift-io/upshift/cmd/kubectl-upshift")
	Expect(err).NotTo(HaveOccurred())

	// The component's identity and permissions come from its chart, nothing
	// else; it runs with the same flags the chart's Deployment passes, and
	// its POD_NAMESPACE.
	cluster, err := framework.StartCluster(ctx, framework.ClusterOptions{
		ControlPlane: testenv.Options{ControllerManager: true, Scheduler: true, Kwok: true, AuditLog: true},
		Seed: &ocpsim.Topology{Version: "4.16.1", Masters: 3, Workers: 6,
			Graph: []string{"4.16.1", "4.16.2", "4.16.3"}},
		Sim: &ocpsim.Options{TimeScale: timeScale},
		Components: []framework.ComponentOptions{{Chart: chartName, Release: release, Namespace: namespace,
			Scraper: "prometheus", Binary: bins["update-status-controller"], LeaderElect: true,
			// Recomputations paced as on a real cluster: the default half
			// second between them would be five simulated minutes here,
			// longer than a node's whole update, and the insights would
			// skip the phases that fell between two.
			Args: []string{"--min-recompute-interval=" + (500 * time.Millisecond / timeScale).String()}}},
		// The controller starts on a cluster without node-gate; a spec
		// installs it later (nodegate_test.go).
		Prepare: func(ctx context.Context, c *framework.Cluster) error {
			return framework.RemoveCRD(ctx, c.Env, gating.RunsCRD)
		},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
	env = cluster.Env
	c := cluster.Components[release]
	chart, saName, scraper = c.Identity.Chart, c.Identity.ServiceAccount, c.Scraper
	controller, metricsURL, readyzURL = c.Running.Component, c.Running.MetricsURL, c.Running.ReadyzURL
	DeferCleanup(func() {
		Expect(controller.Stop(10 * time.Second)).To(Succeed())
		if CurrentSpecReport().Failed() || os.Getenv("E2E_SHOW_LOGS") != "" {
			GinkgoWriter.Println("update-status-controller logs:\n" + controller.Logs())
		}
	})
}, NodeTimeout(5*time.Minute))
