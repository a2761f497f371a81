// Package cpms is the end-to-end suite of the cpms-controller: a real
// kube-apiserver with the chart's ValidatingWebhookConfiguration registered,
// a cluster of three masters seeded and driven by ocpsim (its machine-api
// launches, joins, drains and terminates machines; its etcd operator holds
// the EtcdQuorumOperator hook on every control-plane machine until a
// replacement member votes), and the cpms-controller binary running as its
// chart's ServiceAccount with exactly that chart's RBAC, checked against the
// audit log, serving its webhook to the apiserver.
package cpms

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
)

func TestCPMS(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "cpms-controller e2e")
}

const (
	// namespace holds the release, as OpenShift's own control-plane machine
	// set operator runs there: the binary's --namespace (what the framework
	// passes as the release namespace) names the set's namespace, and only
	// openshift-machine-api is supported.
	namespace = "openshift-machine-api"
	release   = "cpms"
	chartName = "cpms-controller"
	// ocpsim plays ten simulated minutes per wall second: a machine
	// launches and joins in 0.6 s.
	timeScale = 600
)

var (
	env      *testenv.Env
	bin      string
	id       *framework.Identity
	scraper  *framework.Scraper
	ctl      *framework.Running
	ctlFlags []string
)

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	bins, err := framework.BuildBinaries(GinkgoT().TempDir(), "github.com/upshift-io/upshift/cmd/cpms-controller")
	Expect(err).NotTo(HaveOccurred())
	bin = bins["cpms-controller"]

	// The apiserver calls the webhook as the chart registers it, so the
	// controller starts — and answers — before the seeded set is created
	// (the chart's failure policy is Fail).
	cluster, err := framework.StartCluster(ctx, framework.ClusterOptions{
		ControlPlane: testenv.Options{AuditLog: true},
		Seed:         &ocpsim.Topology{Version: "4.16.1", Masters: 3, Workers: 0},
		Sim:          &ocpsim.Options{TimeScale: timeScale, MachineAPI: machineapi.DefaultDurations()},
		Components: []framework.ComponentOptions{{Chart: chartName, Release: release, Namespace: namespace,
			Scraper: "prometheus", Binary: bin, LeaderElect: true, Webhook: true}},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
	env = cluster.Env
	c := cluster.Components[release]
	id, scraper, ctl = c.Identity, c.Scraper, c.Running
	ctlFlags = framework.WebhookFlags(env)
	DeferCleanup(func() { stop() })
}, NodeTimeout(5*time.Minute))

// start runs the binary with the flags its chart's Deployment passes, as
// the chart's ServiceAccount, plus the webhook's local serving flags and
// extra; it returns once the binary is ready (informers synced, webhook
// listening).
func start(leaderElect bool, extra ...string) {
	GinkgoHelper()
	var err error
	ctl, err = framework.StartAsIdentity(bin, id, namespace, leaderElect, append(append([]string{}, ctlFlags...), extra...)...)
	Expect(err).NotTo(HaveOccurred())
	waitReady(ctl)
}

// waitReady waits for the binary's /readyz: informers synced, webhook
// server listening.
func waitReady(r *framework.Running) {
	GinkgoHelper()
	Eventually(func() (int, error) {
		resp, err := http.Get(r.ReadyzURL)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}).Should(Equal(http.StatusOK), func() string { return r.Logs() })
}

func stop() {
	GinkgoHelper()
	err := ctl.Stop(10 * time.Second)
	if err != nil || CurrentSpecReport().Failed() || os.Getenv("E2E_SHOW_LOGS") != "" {
		GinkgoWriter.Println("cpms-controller logs:\n" + ctl.Logs())
	}
	Expect(err).NotTo(HaveOccurred())
}
