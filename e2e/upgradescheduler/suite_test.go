// Package upgradescheduler is the end-to-end suite of the upgrade-scheduler:
// a real control plane with kube-controller-manager, kube-scheduler and kwok,
// a 3+6 cluster seeded and driven by ocpsim (CVO, MCO, machine API), and the
// scheduler binary running as its chart's ServiceAccount with exactly the
// chart's RBAC, checked against the audit log.
package upgradescheduler

import (
	"context"
	"encoding/base64"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocmsim"
	"github.com/upshift-io/upshift/tools/ocpsim"
)

func TestUpgradeScheduler(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "upgrade-scheduler e2e")
}

const (
	// namespace holds the chart's release, the UpgradeConfigs and MUO's
	// ConfigMap, as MUO's own namespace does.
	namespace = "upshift-upgrade"
	release   = "sched"
	chartName = "upgrade-scheduler"
	binary    = "upgrade-scheduler"
	// ocpsim plays ten simulated minutes per wall second.
	timeScale = 600
	// machineAPI is where the worker MachineSets live.
	machineAPI = "openshift-machine-api"
	// hivePoolLabel is how OSD's provisioner (Hive) labels the MachineSets of
	// a machine pool; MUO reserves capacity for those of the worker pool.
	hivePoolLabel = "hive.openshift.io/machine-pool"
	// surgeLabel marks MUO's temporary MachineSets.
	surgeLabel = "upgrade.managed.openshift.io"
	// muoConfig is an OSD production-shaped ConfigMap, with MUO's keys.
	muoConfig = `configManager:
  source: LOCAL
  localConfigName: managed-upgrade-config
  watchInterval: 1
maintenance:
  controlPlaneTime: 90
  ignoredAlerts:
    controlPlaneCriticals:
    - ClusterOperatorDown
    - ClusterOperatorDegraded
upgradeWindow:
  delayTrigger: 30
  timeOut: 120
nodeDrain:
  expectedNodeDrainTime: 8
  timeOut: 45
scale:
  timeOut: 30
healthCheck:
  ignoredCriticals:
  - PrometheusRuleFailures
  - CannotRetrieveUpdates
  ignoredNamespaces:
  - openshift-logging
`
)

var (
	env      *testenv.Env
	bins     map[string]string
	chart    *framework.Chart
	id       *framework.Identity
	sched    *framework.Component
	scraper  *framework.Scraper
	metrics  string
	readyz   string
	workerMS []string
)

// silenceTTL is the scheduler's lease length in this suite.
const silenceTTL = 6 * time.Second

// The local OCM, the cluster's ID in it, and the pull-secret token.
var (
	ocmSim   *ocmsim.Server
	ocmToken = base64.StdEncoding.EncodeToString([]byte("sre:cloud-token"))
)

const (
	ocmClusterID = "1ocmsimclusterid000000000000000"
	// ocmSyncInterval is how often the scheduler reads the policies (MUO:
	// watchInterval minutes).
	ocmSyncInterval = time.Second
)

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	// Waits are on a real process (leader election, cache sync) and a
	// simulated cluster; a second is too tight for either.
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	var err error
	bins, err = framework.BuildBinaries(GinkgoT().TempDir(), "github.com/upshift-io/upshift/cmd/"+binary)
	Expect(err).NotTo(HaveOccurred())

	cluster, err := framework.StartCluster(ctx, framework.ClusterOptions{
		ControlPlane: testenv.Options{ControllerManager: true, Scheduler: true, Kwok: true, AuditLog: true, Alertmanager: true},
		Seed: &ocpsim.Topology{Version: "4.16.1", Channel: "stable-4.16", Masters: 3, Workers: 6,
			Graph: []string{"4.16.1", "4.16.2", "4.16.3", "4.16.4", "4.16.5", "4.16.6", "4.16.7", "4.16.8", "4.16.9", "4.16.10", "4.16.11"},
			// 4.16.6 is reachable only as a conditional update: a risk that
			// applies to every cluster, as OCM may still schedule.
			Releases: []ocpsim.GraphRelease{{Version: "4.16.6", Risks: []ocpsim.Risk{{Name: "SimulatedRegression",
				Message: "A simulated regression affects every cluster updating to 4.16.6.", URL: "https://example.com/simulated-regression"}}}}},
		Sim: &ocpsim.Options{TimeScale: timeScale},
		// The chart grants the pull secret's read with ocm.enabled.
		Components: []framework.ComponentOptions{{Chart: chartName, Release: release, Namespace: namespace,
			Set: []string{"ocm.enabled=true"}, Scraper: "prometheus"}},
		// The scheduler starts on a cluster without node-gate; a spec
		// installs it later.
		Prepare: func(ctx context.Context, c *framework.Cluster) error {
			return framework.RemoveCRD(ctx, c.Env, gating.RunsCRD)
		},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
	env = cluster.Env
	id, scraper = cluster.Components[release].Identity, cluster.Components[release].Scraper
	chart = id.Chart
	// Hive labels the worker pool's MachineSets; the scheduler reserves
	// capacity for exactly those. A merge patch: the simulated machine-api
	// writes them too.
	for _, ms := range cluster.Objects.MachineSets {
		workerMS = append(workerMS, ms.Name)
		Expect(env.Client.Patch(ctx, ms, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"`+hivePoolLabel+`":"worker"}}}`)))).To(Succeed())
	}
	Expect(workerMS).NotTo(BeEmpty())

	// OCM: the local OCM knows this cluster by its ClusterVersion ID and the
	// pull secret's cloud.openshift.com token. The chart grants the pull
	// secret's read with ocm.enabled; the configuration stays LOCAL (no OCM
	// traffic) except in the OCM specs.
	ocmSim = ocmsim.Start()
	DeferCleanup(ocmSim.Close)
	cv := &configv1.ClusterVersion{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
	ocmSim.AddCluster(ocmsim.Cluster{ID: ocmClusterID, ExternalID: string(cv.Spec.ClusterID), ChannelGroup: "stable",
		NodeDrainGracePeriodMinutes: 60, Token: ocmToken})
	Expect(env.CreateNamespace(ctx, "openshift-config")).To(Succeed())
	Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pull-secret", Namespace: "openshift-config"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"cloud.openshift.com":{"auth":"` + ocmToken +
			`","email":"sre@example.com"},"quay.io":{"auth":"cXVheTpxdWF5"}}}`)},
	}))).To(Succeed())

	Expect(env.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-operator-config", Namespace: namespace},
		Data:       map[string]string{"config.yaml": muoConfig},
	})).To(Succeed())

	sched = startScheduler(true)
	DeferCleanup(func() { stopScheduler(sched) })
}, NodeTimeout(5*time.Minute))

// startScheduler runs the binary with the flags the chart's Deployment
// passes. The restart loop runs it without leader election: a killed
// leader's lease would otherwise hold the next process back for its whole
// duration, which tests failover, not resumption.
func startScheduler(leaderElect bool) *framework.Component {
	GinkgoHelper()
	r, err := startSchedulerProcess(leaderElect)
	Expect(err).NotTo(HaveOccurred())
	metrics, readyz = r.MetricsURL, r.ReadyzURL
	return r.Component
}

// startSchedulerProcess runs the binary with the chart's flags: the real
// Alertmanager, for the silences and the critical-alerts check, with a short
// lease TTL so that renewals happen within an upgrade.
func startSchedulerProcess(leaderElect bool, extra ...string) (*framework.Running, error) {
	return framework.StartAsIdentity(bins[binary], id, namespace, leaderElect, append([]string{
		"--alertmanager-url=" + env.Alertmanager.URL, "--silence-ttl=" + silenceTTL.String(),
		"--ocm=true", "--ocm-timeout=2s", "--ocm-sync-interval=" + ocmSyncInterval.String()}, extra...)...)
}

// leaseFlags shorten leader election so that a killed leader's replica takes
// over within seconds (the chart's defaults: 15 s, 10 s, 2 s).
var leaseFlags = []string{"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s"}

func stopScheduler(c *framework.Component) {
	GinkgoHelper()
	err := c.Stop(10 * time.Second)
	if err != nil || CurrentSpecReport().Failed() || os.Getenv("E2E_SHOW_LOGS") != "" {
		GinkgoWriter.Println("upgrade-scheduler logs:\n" + c.Logs())
	}
	Expect(err).NotTo(HaveOccurred())
}
