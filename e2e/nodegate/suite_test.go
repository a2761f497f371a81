// Package nodegate is node-gate's end-to-end suite: a real control plane
// with kube-controller-manager, kube-scheduler and kwok (hook Jobs really
// run), a cluster of 3 masters and 6 workers seeded and driven by ocpsim
// (CVO, MCO with real evictions and PodDisruptionBudgets), and the node-gate
// binary running as its chart's ServiceAccount with exactly that chart's
// RBAC, checked against the audit log.
package nodegate

import (
	"context"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/nodegate/plan"
	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
)

func TestNodeGate(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "node-gate e2e")
}

const (
	// namespace holds the release, the runs, the rules and the hook Jobs.
	namespace = "upshift-gate"
	release   = "ngate"
	chartName = "node-gate"
	timeScale = 600
)

var (
	env        *testenv.Env
	bin        string
	id         *framework.Identity
	gate       *framework.Component
	scraper    *framework.Scraper
	metricsURL string
)

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	bins, err := framework.BuildBinaries(GinkgoT().TempDir(), "github.com/upshift-io/upshift/cmd/node-gate")
	Expect(err).NotTo(HaveOccurred())
	bin = bins[chartName]

	d := mco.DefaultDurations()
	// node-gate's remediation, not the MCD's own give-up, acts on a blocked drain.
	d.DrainTimeout = 1000 * time.Hour
	cluster, err := framework.StartCluster(ctx, framework.ClusterOptions{
		ControlPlane: testenv.Options{ControllerManager: true, Scheduler: true, Kwok: true, AuditLog: true},
		Seed: &ocpsim.Topology{Version: "4.16.1", Channel: "stable-4.16", Masters: 3, Workers: 6,
			Graph: []string{"4.16.1", "4.16.2", "4.16.3"}},
		Sim: &ocpsim.Options{TimeScale: timeScale, MCO: d},
		// The rules of team-b may run their hooks in node-gate's namespace
		// (admission_test.go); start passes the Deployment's flag for it.
		Components: []framework.ComponentOptions{{Chart: chartName, Release: release, Namespace: namespace, Scraper: "prometheus",
			Set: []string{"ruleJobNamespaces." + listedTeam + "={" + namespace + "}"}}},
		// The runs take their drain timeout from the UpgradeConfig of their
		// namespace, as MUO's NodeKeeper did: one minute.
		Prepare: func(ctx context.Context, c *framework.Cluster) error {
			return c.Client.Create(ctx, &upgradev1alpha1.UpgradeConfig{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "managed-upgrade-config"},
				Spec: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.16.2", Channel: "stable-4.16"},
					UpgradeAt: "2026-01-01T00:00:00Z", PDBForceDrainTimeout: 1, Type: upgradev1alpha1.OSD},
			})
		},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
	env = cluster.Env
	id, scraper = cluster.Components[release].Identity, cluster.Components[release].Scraper
	gate = start()
	DeferCleanup(func() { stop(gate) })
}, NodeTimeout(5*time.Minute))

// start runs node-gate with the flags its chart's Deployment passes, as the
// chart's ServiceAccount.
func start() *framework.Component {
	GinkgoHelper()
	c, err := startProcess(true)
	Expect(err).NotTo(HaveOccurred())
	return c
}

// startProcess starts node-gate (with leader election or without: see
// kill_test.go) and returns it, for start and for the kill loop, which runs
// outside a spec's goroutine and cannot use Expect.
func startProcess(leaderElect bool) (*framework.Component, error) {
	r, err := framework.StartAsIdentity(bin, id, namespace, leaderElect, "--job-namespaces="+namespace, "--rule-job-namespaces="+listedTeam+"="+namespace)
	if err != nil {
		return nil, err
	}
	metricsURL = r.MetricsURL
	return r.Component, nil
}

// anyFailed: a spec failed, so the suite-level stop prints the logs too.
var anyFailed bool

var _ = AfterEach(func() { anyFailed = anyFailed || CurrentSpecReport().Failed() })

func stop(c *framework.Component) {
	GinkgoHelper()
	err := c.Stop(10 * time.Second)
	if err != nil || anyFailed || CurrentSpecReport().Failed() || os.Getenv("E2E_SHOW_LOGS") != "" {
		GinkgoWriter.Println("node-gate logs:\n" + c.Logs())
	}
	Expect(err).NotTo(HaveOccurred())
}

// timeline records, from watches independent of node-gate, the write that
// released each node (removed the hold label it carried), the write in which the MCO first marked
// it Working on a new config, the write that made it Done+Ready+schedulable
// on that config, the write that marked each hook Job Complete, and the
// most workers unavailable after any one write. Writes
// are ordered by resourceVersion: the one etcd numbers every write of every
// resource in commit order, where two watch streams' arrival times are not
// ordered.
type timeline struct {
	mu sync.Mutex
	// held are the nodes seen carrying the hold label; labelled is the
	// write that released each (removed it).
	held     map[string]bool
	labelled map[string]uint64
	working  map[string]uint64
	done     map[string]uint64
	jobDone  map[string]uint64
	jobNode  map[string]string
	// unavailable are the workers unavailable after the last write seen,
	// mostUnavailable the most at once after any write.
	unavailable     map[string]bool
	mostUnavailable []string
}

func rv(o client.Object) uint64 {
	v, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
	Expect(err).NotTo(HaveOccurred())
	return v
}

func watchTimeline(ctx context.Context) *timeline {
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	tl := &timeline{labelled: map[string]uint64{}, working: map[string]uint64{}, done: map[string]uint64{},
		jobDone: map[string]uint64{}, jobNode: map[string]string{}, unavailable: map[string]bool{}, held: map[string]bool{}}
	var nodes corev1.NodeList
	Expect(wc.List(ctx, &nodes)).To(Succeed())
	first := map[string]string{}
	for _, n := range nodes.Items {
		first[n.Name] = n.Annotations[mcostate.DesiredConfig]
	}
	nw, err := wc.Watch(context.Background(), &corev1.NodeList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: nodes.ResourceVersion}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(nw.Stop)
	go func() {
		for ev := range nw.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			at := rv(n)
			tl.mu.Lock()
			// Released: the hold label it carried is gone.
			if n.Labels[plan.HoldLabel] != "" {
				tl.held[n.Name] = true
			}
			if _, ok := tl.labelled[n.Name]; !ok && tl.held[n.Name] && n.Labels[plan.HoldLabel] == "" {
				tl.labelled[n.Name] = at
			}
			moved := n.Annotations[mcostate.DesiredConfig] != first[n.Name]
			if _, ok := tl.working[n.Name]; !ok && moved && n.Annotations[mcostate.State] == mcostate.StateWorking {
				tl.working[n.Name] = at
			}
			if _, ok := tl.done[n.Name]; !ok && moved && mcostate.UpdatedTo(n, n.Annotations[mcostate.DesiredConfig]) {
				tl.done[n.Name] = at
			}
			if _, worker := n.Labels["node-role.kubernetes.io/worker"]; worker {
				// The MCO's own reading (ocpsim's): updating, cordoned or
				// not Ready.
				if mco.IsUnavailable(n) {
					tl.unavailable[n.Name] = true
				} else {
					delete(tl.unavailable, n.Name)
				}
				if len(tl.unavailable) > len(tl.mostUnavailable) {
					tl.mostUnavailable = slices.Sorted(maps.Keys(tl.unavailable))
				}
			}
			tl.mu.Unlock()
		}
	}()
	var jobs batchv1.JobList
	Expect(wc.List(ctx, &jobs)).To(Succeed())
	jw, err := wc.Watch(context.Background(), &batchv1.JobList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: jobs.ResourceVersion}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(jw.Stop)
	go func() {
		for ev := range jw.ResultChan() {
			j, ok := ev.Object.(*batchv1.Job)
			if !ok {
				continue
			}
			at := rv(j)
			tl.mu.Lock()
			for _, e := range j.Spec.Template.Spec.Containers[0].Env {
				if e.Name == plan.EnvNodeName {
					tl.jobNode[j.Name] = e.Value
				}
			}
			for _, c := range j.Status.Conditions {
				if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
					if _, ok := tl.jobDone[j.Name]; !ok {
						tl.jobDone[j.Name] = at
					}
				}
			}
			tl.mu.Unlock()
		}
	}()
	return tl
}
