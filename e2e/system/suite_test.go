// Package system is the whole-system suite: every Upshift controller that
// serves an OpenShift cluster (upgrade-scheduler, node-gate, mcp-tracker,
// update-status-controller, cpms-controller) running as its chart runs it —
// two replicas each with leader election, as the chart's ServiceAccount —
// with ocpsim, the local OCM and a real Alertmanager, through one OSD
// upgrade with capacity reservation, a node-gate run and a control-plane
// machine change requested mid-update, while faults hit it: leaders killed,
// a leader frozen past its lease (split brain), kube-apiserver and
// Alertmanager restarted, OCM failing requests. What must hold is checked
// from watch events in resourceVersion order (invariants_test.go), and the
// end state once everything settled.
//
// `make test` runs the CI profile; `make chaos` runs the long one (more
// faults, more workers): go test ./e2e/system -args -system.profile=long.
package system

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocmsim"
	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
)

func TestSystem(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "whole-system e2e")
}

var (
	profileName = flag.String("system.profile", "ci", `"ci" (make test) or "long" (make chaos).`)
	seedFlag    = flag.Int64("system.seed", 0, "Seed of the faults' order and timing; 0: a new one, printed at start.")
)

// profile sizes the cluster and the faults.
type profile struct {
	workers int
	// kills, freezes, apiRestarts and amRestarts are the faults of each
	// kind; they run one after another, kills spread between the others.
	kills, freezes, apiRestarts, amRestarts int
	// gap is the longest pause between two faults (the shortest is a
	// quarter of it).
	gap time.Duration
	// timeout bounds the upgrade and the control-plane rollout.
	timeout time.Duration
}

var profiles = map[string]profile{
	"ci":   {workers: 50, kills: 20, freezes: 1, apiRestarts: 2, amRestarts: 1, gap: 4 * time.Second, timeout: 6 * time.Minute},
	"long": {workers: 150, kills: 60, freezes: 3, apiRestarts: 4, amRestarts: 2, gap: 5 * time.Second, timeout: 20 * time.Minute},
}

const (
	// namespace holds the scheduler, the mcp-tracker, the
	// update-status-controller and node-gate (with its rule, target, run
	// and hook Jobs), and MUO's ConfigMap and UpgradeConfig.
	namespace = "upshift"
	// cpmsNamespace is the ControlPlaneMachineSet's, where the
	// cpms-controller runs as OpenShift's own operator for it does.
	cpmsNamespace = "openshift-machine-api"
	from, to      = "4.16.1", "4.16.2"
	// timeScale: simulated seconds per wall second.
	timeScale = 120
	// maxUnavailable is the gated workers' limit: the node-gate run's and
	// the worker pool's own, so that every moment of the update has the
	// same bound.
	maxUnavailable = 5
	// The charts' lease timings are 15 s, 10 s and 2 s; shorter ones give
	// a killed leader's successor the Lease within the update.
	leaseDuration, renewDeadline, retryPeriod = "6s", "4s", "1s"
)

var (
	prof    profile
	seed    int64
	rng     *rand.Rand
	env     *testenv.Env
	cluster *framework.Cluster
	am      *testenv.Alertmanager
	// amLog passes the components' requests on to am and records them:
	// Alertmanager keeps no request log, and a stale scheduler leader's
	// silence writes are told apart by it.
	amLog *framework.RequestLog
	ocm   *ocmsim.Server
	// replicas are by component, in the order faults pick from; users are
	// their ServiceAccounts' usernames, as the audit log shows them, and
	// namespaces where they run (and hold their Lease).
	replicas   []*framework.Replicas
	users      []string
	namespaces []string
)

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(time.Minute)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	var ok bool
	prof, ok = profiles[*profileName]
	Expect(ok).To(BeTrue(), "unknown -system.profile %q", *profileName)
	seed = *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	rng = rand.New(rand.NewPCG(uint64(seed), 0))
	fmt.Fprintf(GinkgoWriter, "whole-system suite: profile %s, seed %d (rerun with -args -system.seed=%d)\n", *profileName, seed, seed)
	AddReportEntry("seed", strconv.FormatInt(seed, 10))

	bins, err := framework.BuildBinaries(GinkgoT().TempDir(),
		"github.com/upshift-io/upshift/cmd/upgrade-scheduler", "github.com/upshift-io/upshift/cmd/node-gate",
		"github.com/upshift-io/upshift/cmd/mcp-tracker", "github.com/upshift-io/upshift/cmd/update-status-controller",
		"github.com/upshift-io/upshift/cmd/cpms-controller")
	Expect(err).NotTo(HaveOccurred())

	// Alertmanager first: the scheduler's and node-gate's flags name it.
	am, err = testenv.StartAlertmanager(ctx, GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(am.Stop)
	amLog, err = framework.StartRequestLog(am.URL)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(amLog.Close)

	lease := []string{"--leader-elect-lease-duration=" + leaseDuration, "--leader-elect-renew-deadline=" + renewDeadline,
		"--leader-elect-retry-period=" + retryPeriod}
	with := func(args ...string) []string { return append(append([]string(nil), lease...), args...) }
	cluster, err = framework.StartCluster(ctx, framework.ClusterOptions{
		ControlPlane: testenv.Options{ControllerManager: true, Scheduler: true, Kwok: true, AuditLog: true},
		Seed: &ocpsim.Topology{Version: from, Masters: 3, Workers: prof.workers, Graph: []string{from, to},
			WorkerMaxUnavailable: strconv.Itoa(maxUnavailable)},
		// An apiserver restart lasts wall seconds, unscaled: at this time
		// scale the MCD's one-hour drain timeout is 30 s, which a restart on
		// a loaded machine can outlast (the drain's acknowledgement waits
		// for the apiserver), and the simulated MCD would give up a node a
		// real one never would. A day keeps the faults the suite's own.
		Sim: &ocpsim.Options{TimeScale: timeScale, MCO: func() mco.Durations {
			d := mco.DefaultDurations()
			d.DrainTimeout = 24 * time.Hour
			return d
		}()},
		Components: []framework.ComponentOptions{
			{Chart: "cpms-controller", Release: "cpms", Namespace: cpmsNamespace, Scraper: "prometheus-cpms",
				Binary: bins["cpms-controller"], Replicas: 2, Webhook: true, Args: with()},
			{Chart: "upgrade-scheduler", Release: "sched", Namespace: namespace, Set: []string{"ocm.enabled=true"}, Scraper: "prometheus-sched",
				Binary: bins["upgrade-scheduler"], Replicas: 2, Args: with("--ocm=true", "--ocm-timeout=5s", "--ocm-sync-interval=1s",
					"--alertmanager-url="+amLog.URL, "--silence-ttl=30s")},
			// At this time scale the chart's 5 s between status writes is
			// ten simulated minutes: once a second instead.
			{Chart: "mcp-tracker", Release: "mcpt", Namespace: namespace, Scraper: "prometheus-mcpt",
				Binary: bins["mcp-tracker"], Replicas: 2, Args: with("--min-write-interval=1s")},
			{Chart: "update-status-controller", Release: "usc", Namespace: namespace, Scraper: "prometheus-usc",
				Binary: bins["update-status-controller"], Replicas: 2, Args: with()},
			{Chart: "node-gate", Release: "ngate", Namespace: namespace, Scraper: "prometheus-ngate",
				Binary: bins["node-gate"], Replicas: 2, Args: with("--alerts-url="+amLog.URL, "--alerts-api=alertmanager")},
		},
		// The local OCM knows the cluster by its ClusterVersion's ID.
		Prepare: func(ctx context.Context, c *framework.Cluster) (err error) {
			ocm, err = framework.StartOCM(ctx, c.Client)
			return err
		},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(SpecContext) {
		if ocm != nil {
			ocm.Close()
		}
	}, NodeTimeout(time.Minute))
	// Bounded, as the spec is: a process that does not stop is reported
	// by Ginkgo rather than left to go test's timeout.
	DeferCleanup(func(SpecContext) { Expect(cluster.Stop()).To(Succeed()) }, NodeTimeout(3*time.Minute))
	env = cluster.Env
	for _, c := range []struct{ release, namespace string }{
		{"sched", namespace}, {"ngate", namespace}, {"mcpt", namespace}, {"usc", namespace}, {"cpms", cpmsNamespace},
	} {
		cc := cluster.Components[c.release]
		replicas = append(replicas, cc.Replicas)
		users = append(users, framework.ServiceAccountUser(c.namespace, cc.Identity.ServiceAccount))
		namespaces = append(namespaces, c.namespace)
	}
}, NodeTimeout(5*time.Minute))
