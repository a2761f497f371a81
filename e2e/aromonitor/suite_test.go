// Package aromonitor is aro-monitor's end-to-end suite: one simulated ARO
// cluster for the whole suite — a real kube-apiserver with ARO's own Cluster
// object applied unchanged, a local Azure Resource Manager and Azure AD
// (azuresim) over TLS, a DNS server and one HTTPS proxy per role (egresssim)
// in front of a server answering for the egress hosts — and both roles of the
// aro-monitor binary running as their chart's ServiceAccounts, each with
// exactly that chart's RBAC, checked against the audit log.
package aromonitor

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

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/testenv"
)

func TestAROMonitor(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "aro-monitor e2e")
}

const namespace = "aro-monitor"

// The suite's MonitorConfig: rounds every 5 s, two in a row to turn a
// condition either way; the NSG read every 10 s with a budget of two
// re-associations per hour and the tug-of-war window off, so the budget is
// what stops a persistent actor (the tug-of-war spec sets a window of its
// own).
var settings = amv1alpha1.MonitorConfigSpec{
	Internet:    amv1alpha1.InternetConfig{Interval: "5s", Timeout: "2s", FailureThreshold: 2, SuccessThreshold: 2},
	Credentials: amv1alpha1.CredentialsConfig{Interval: "10s", ExpiryWarning: "720h"},
	NSG: amv1alpha1.NSGConfig{Mode: amv1alpha1.NSGRemediate, Interval: "10s", MaxRemediationsPerHour: 2,
		TugOfWarWindow: "0s", SuppressFor: "1m"},
	ARM: amv1alpha1.ARMConfig{RequestsPerMinute: 600},
}

var (
	env     *testenv.Env
	aro     *framework.AROCluster
	scraper *framework.Scraper
	started time.Time
)

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(45 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	bins, err := framework.BuildBinaries(GinkgoT().TempDir(), "github.com/upshift-io/upshift/cmd/aro-monitor")
	Expect(err).NotTo(HaveOccurred())

	// A bare control plane: ARO's objects are not ocpsim's (StartAROCluster
	// seeds them).
	cluster, err := framework.StartCluster(ctx, framework.ClusterOptions{ControlPlane: testenv.Options{AuditLog: true}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
	env = cluster.Env

	started = time.Now()
	aro, err = framework.StartAROCluster(ctx, env, bins["aro-monitor"], namespace, GinkgoT().TempDir(), settings)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		stop(aro.Master, "master")
		stop(aro.Worker, "worker")
		aro.Close()
	})
	scraper, err = framework.InstallMetricsScraper(ctx, env, aro.Chart, "monitoring", "prometheus")
	Expect(err).NotTo(HaveOccurred())
	for _, r := range []*framework.Running{aro.Master, aro.Worker} {
		waitReady(r)
	}
}, NodeTimeout(3*time.Minute))

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

// anyFailed: a spec failed, so the suite-level stop prints the logs.
var anyFailed bool

var _ = AfterEach(func() { anyFailed = anyFailed || CurrentSpecReport().Failed() })

func stop(r *framework.Running, role string) {
	GinkgoHelper()
	if r == nil {
		return
	}
	err := r.Stop(10 * time.Second)
	if err != nil || anyFailed || os.Getenv("E2E_SHOW_LOGS") != "" {
		GinkgoWriter.Printf("aro-monitor %s logs:\n%s\n", role, r.Logs())
	}
	Expect(err).NotTo(HaveOccurred())
}
