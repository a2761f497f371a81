package controller_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/metricstest"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/nodegate/controller"
	"github.com/upshift-io/upshift/services/nodegate/metrics"
	"github.com/upshift-io/upshift/services/nodegate/plan"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

func TestController(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "node-gate: controller")
}

// node-gate's identity, so that the audit log tells its requests from the
// test's and the simulators'.
const (
	gateNS   = "upshift"
	gateSA   = "node-gate"
	gateUser = "system:serviceaccount:" + gateNS + ":" + gateSA
)

var (
	env    *testenv.Env
	gateRC *rest.Config
)

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter)))
	var err error
	cluster, err := simcluster.Start(ctx, simcluster.Options{ControlPlane: testenv.Options{ControllerManager: true, Scheduler: true, Kwok: true, AuditLog: true}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cluster.Stop)
	env = cluster.Env
	// The chart's least-privilege role is e2e/nodegate's to check; here the
	// identity only has to be distinct.
	gateRC, err = env.AdminServiceAccountConfig(ctx, gateNS, gateSA)
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(2*time.Minute))

// gateNodeWrites counts node-gate's writes of Nodes so far (the release
// label is the only thing it writes on one), from the audit log.
func gateNodeWrites() int {
	GinkgoHelper()
	evs, err := env.AuditEvents(gateUser)
	Expect(err).NotTo(HaveOccurred())
	return testenv.Writes(evs, "nodes", "")
}

// gate is one running node-gate with its own metrics registry.
type gate struct {
	reg  *prometheus.Registry
	stop func()
}

// startGate runs the reconciler in a manager of its own, with the cache a
// binary uses, until stop or the end of the spec.
func startGate(ctx context.Context) *gate {
	mgr, err := ctrl.NewManager(gateRC, ctrl.Options{
		Scheme:     scheme.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultTransform: cache.TransformStripManagedFields(), ByObject: controller.CacheByObject()},
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	reg := prometheus.NewRegistry()
	r := &controller.Reconciler{Client: mgr.GetClient(), Recorder: events.NewRecorder(mgr.GetEventRecorder("node-gate")), Metrics: metrics.New(reg)}
	Expect(r.SetupWithManager(mgr)).To(Succeed())
	Expect((&controller.ObjectStatus{Client: mgr.GetClient()}).SetupWithManager(mgr)).To(Succeed())
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(mctx)).To(Succeed())
	}()
	var once sync.Once
	g := &gate{reg: reg, stop: func() { once.Do(func() { cancel(); <-done }) }}
	DeferCleanup(g.stop)
	return g
}

func (g *gate) metric(name string, lbls map[string]string) float64 {
	all, err := metricstest.Series(g.reg, name)
	Expect(err).NotTo(HaveOccurred())
	ls := make([]string, 0, len(lbls))
	for k, v := range lbls {
		ls = append(ls, k+"="+v)
	}
	sort.Strings(ls)
	key := strings.Join(ls, ",")
	if v, ok := all[key]; ok {
		return v
	}
	return all[key+"#count"]
}

// timeline is the test's own record, from watches independent of
// node-gate, of the write that released each node (removed the hold label
// it carried), the write
// in which the MCO first marked it Working on a new config, the one that
// made it Done+Ready+schedulable on that config, and the one that marked
// each hook Job Complete. Writes are ordered by their resourceVersion: one
// etcd numbers every write of every resource in commit order, which is
// exact where wall-clock arrival times of two watch streams are not.
type timeline struct {
	mu sync.Mutex
	// held are the nodes seen carrying the hold label; labelled is the
	// write that released each (removed it).
	held      map[string]bool
	labelled  map[string]uint64
	working   map[string]uint64
	done      map[string]uint64
	desiredAt map[string]uint64 // first desiredConfig change
	jobDone   map[string]uint64 // job name -> write that completed it
	jobNode   map[string]string // job name -> NODE_NAME
	// cvCompleted is the write that marked each version's update Completed.
	cvCompleted map[string]uint64
	// Wall-clock arrival of the release and Done writes, for the
	// reaction-time figure only (never for ordering).
	labelledAt, doneAt map[string]time.Time
}

func rv(o client.Object) uint64 {
	v, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
	Expect(err).NotTo(HaveOccurred())
	return v
}

func watchTimeline(ctx context.Context) *timeline {
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	tl := &timeline{held: map[string]bool{}, labelled: map[string]uint64{}, working: map[string]uint64{}, done: map[string]uint64{},
		desiredAt: map[string]uint64{}, jobDone: map[string]uint64{}, jobNode: map[string]string{},
		labelledAt: map[string]time.Time{}, doneAt: map[string]time.Time{}, cvCompleted: map[string]uint64{}}
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
			now := rv(n)
			tl.mu.Lock()
			if n.Labels[plan.HoldLabel] != "" {
				tl.held[n.Name] = true
			}
			if _, ok := tl.labelled[n.Name]; !ok && tl.held[n.Name] && n.Labels[plan.HoldLabel] == "" {
				tl.labelled[n.Name] = now
				tl.labelledAt[n.Name] = time.Now()
			}
			if _, seen := first[n.Name]; !seen {
				// A node created after the watch started: its first config.
				first[n.Name] = n.Annotations[mcostate.DesiredConfig]
			}
			moved := n.Annotations[mcostate.DesiredConfig] != first[n.Name]
			if _, ok := tl.desiredAt[n.Name]; !ok && moved {
				tl.desiredAt[n.Name] = now
			}
			if _, ok := tl.working[n.Name]; !ok && moved && n.Annotations[mcostate.State] == mcostate.StateWorking {
				tl.working[n.Name] = now
			}
			if _, ok := tl.done[n.Name]; !ok && moved && mcostate.UpdatedTo(n, n.Annotations[mcostate.DesiredConfig]) {
				tl.done[n.Name] = now
				tl.doneAt[n.Name] = time.Now()
			}
			tl.mu.Unlock()
		}
	}()
	var cvs configv1.ClusterVersionList
	Expect(wc.List(ctx, &cvs)).To(Succeed())
	cw, err := wc.Watch(context.Background(), &configv1.ClusterVersionList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: cvs.ResourceVersion}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cw.Stop)
	go func() {
		for ev := range cw.ResultChan() {
			cv, ok := ev.Object.(*configv1.ClusterVersion)
			if !ok || len(cv.Status.History) == 0 || cv.Status.History[0].State != configv1.CompletedUpdate {
				continue
			}
			tl.mu.Lock()
			if _, ok := tl.cvCompleted[cv.Status.History[0].Version]; !ok {
				tl.cvCompleted[cv.Status.History[0].Version] = rv(cv)
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
			now := rv(j)
			tl.mu.Lock()
			for _, e := range j.Spec.Template.Spec.Containers[0].Env {
				if e.Name == plan.EnvNodeName {
					tl.jobNode[j.Name] = e.Value
				}
			}
			for _, c := range j.Status.Conditions {
				if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
					if _, ok := tl.jobDone[j.Name]; !ok {
						tl.jobDone[j.Name] = now
					}
				}
			}
			tl.mu.Unlock()
		}
	}()
	return tl
}

func setDesiredVersion(ctx context.Context, version string) {
	cv := &configv1.ClusterVersion{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
	patch := client.MergeFrom(cv.DeepCopy())
	cv.Spec.DesiredUpdate = &configv1.Update{Version: version}
	Expect(env.Client.Patch(ctx, cv, patch)).To(Succeed())
}

func setPoolPaused(ctx context.Context, name string, paused bool) {
	GinkgoHelper()
	patch := []byte(fmt.Sprintf(`{"spec":{"paused":%t}}`, paused))
	Expect(env.Client.Patch(ctx, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

func getRun(ctx context.Context, key client.ObjectKey) *nodegatev1alpha1.MutexRunConfig {
	run := &nodegatev1alpha1.MutexRunConfig{}
	Expect(env.Client.Get(ctx, key, run)).To(Succeed())
	return run
}

func getPool(ctx context.Context, name string) *mcfgv1.MachineConfigPool {
	p := &mcfgv1.MachineConfigPool{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, p)).To(Succeed())
	return p
}

func workers(ctx context.Context) []corev1.Node {
	var nodes corev1.NodeList
	Expect(env.Client.List(ctx, &nodes, client.HasLabels{"node-role.kubernetes.io/worker"})).To(Succeed())
	return nodes.Items
}

func hookSpec(container string, env ...corev1.EnvVar) batchv1.JobSpec {
	return batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: container, Image: "registry.example.com/hook:1", Env: env}},
	}}}
}

// eventsFor lists the reasons of the Events about an object.
func eventReasons(ctx context.Context, kind, ns, name string) []string {
	var evs corev1.EventList
	Expect(env.Client.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			out = append(out, e.Reason)
		}
	}
	return out
}
