package controller_test

import (
	"context"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientevents "k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/metricstest"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/updatestatus/controller"
)

const namespace = "upshift"

// The controller startController runs: its metrics and the Events it asked
// to record.
var (
	controllerMetrics *prometheus.Registry
	controllerEvents  *eventCounter
)

// startController runs the reconciler in a manager of its own, as the
// binary does, and returns a function that stops it.
func startController(ctx context.Context) func() {
	reg, evs := prometheus.NewRegistry(), &eventCounter{}
	stop := startReconciler(ctx, env, &controller.Reconciler{Namespace: namespace}, reg, evs, nil)
	controllerMetrics, controllerEvents = reg, evs
	return stop
}

// startReconciler runs r, configured as the caller wants it, against env in
// a manager of its own, with its metrics in reg and the Events it records
// counted in evs (each may be nil), and returns a function that stops it.
// With observe, the result of each reconcile is handed to it.
func startReconciler(ctx context.Context, env *testenv.Env, r *controller.Reconciler, reg *prometheus.Registry, evs *eventCounter,
	observe func(reconcile.Result, error)) func() {
	opts := controller.ManagerOptions(namespace)
	opts.RestConfig = env.Config
	opts.Controller = ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}
	mgr, err := runtime.NewManager("update-status-controller", &runtime.Flags{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", KubeAPIQPS: 50, KubeAPIBurst: 100,
	}, opts)
	Expect(err).NotTo(HaveOccurred())
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	if evs == nil {
		evs = &eventCounter{}
	}
	r.Client = gatedClient{Client: mgr.GetClient(), g: insightWrites}
	evs.EventRecorder = mgr.GetEventRecorder("update-status-controller")
	r.Recorder = events.NewRecorder(evs)
	r.Metrics = controller.NewMetrics(reg)
	if observe != nil {
		Expect(r.SetupWithManagerObserved(mgr, observe)).To(Succeed())
	} else {
		Expect(r.SetupWithManager(mgr)).To(Succeed())
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	return func() { cancel(); <-done }
}

// eventCounter passes the Events a controller records on to the manager's
// recorder and counts them by reason: each call is one request to record
// an Event, so a count proves how often the controller asked, whatever the
// events library then makes of it.
type eventCounter struct {
	clientevents.EventRecorder
	mu       sync.Mutex
	byReason map[string]int
}

func (c *eventCounter) Eventf(regarding, related apiruntime.Object, eventtype, reason, action, note string, args ...any) {
	c.mu.Lock()
	if c.byReason == nil {
		c.byReason = map[string]int{}
	}
	c.byReason[reason]++
	c.mu.Unlock()
	c.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// recorded is how many Events of reason the controller asked to record.
func (c *eventCounter) recorded(reason string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byReason[reason]
}

// reconciles reads controller-runtime's count of finished reconciles.
func reconciles() float64 {
	all, err := metricstest.Series(metrics.Registry, "controller_runtime_reconcile_total")
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for key, v := range all {
		if strings.Contains(","+key+",", ",controller=updatestatus,") {
			total += v
		}
	}
	return total
}

// writeErrors reads the controller's count of failed writes of a kind
// (nodeprogressinsight, upgradestatus).
func writeErrors(kind string) func() float64 {
	return func() float64 {
		all, err := metricstest.Series(controllerMetrics, "upshift_update_status_write_errors_total")
		Expect(err).NotTo(HaveOccurred())
		return all["kind="+kind]
	}
}

// lastSuccess reads upshift_update_status_last_success_timestamp_seconds.
func lastSuccess() float64 {
	all, err := metricstest.Series(controllerMetrics, "upshift_update_status_last_success_timestamp_seconds")
	Expect(err).NotTo(HaveOccurred())
	return all[""]
}

// eventsWithReason lists the Events of a reason.
func eventsWithReason(ctx context.Context, reason string) func(Gomega) []eventsv1.Event {
	return func(g Gomega) []eventsv1.Event {
		evs := &eventsv1.EventList{}
		g.Expect(env.Client.List(ctx, evs)).To(Succeed())
		var out []eventsv1.Event
		for _, e := range evs.Items {
			if e.Reason == reason {
				out = append(out, e)
			}
		}
		return out
	}
}

// expectRecordedOnce checks, once a recomputation after now has had every
// write it handed over done, that the controller asked for the Event of
// reason once and the API server holds it once, in no series: a repeat
// would be a second Event or a series.
func expectRecordedOnce(ctx context.Context, reason string) {
	count := reconciles()
	touchNode(ctx, "worker-0")
	settle(count)
	Expect(controllerEvents.recorded(reason)).To(Equal(1), "Events of reason %s asked for", reason)
	Expect(eventsWithReason(ctx, reason)(Default)).To(ConsistOf(HaveField("Series", BeNil())))
}

func upgradeStatus(ctx context.Context) func(Gomega) *updatev1alpha1.UpgradeStatus {
	return func(g Gomega) *updatev1alpha1.UpgradeStatus {
		us := &updatev1alpha1.UpgradeStatus{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "cluster"}, us)).To(Succeed())
		return us
	}
}

// reportedWorker is node name as the UpgradeStatus's node table of the
// worker pool lists it.
func reportedWorker(ctx context.Context, g Gomega, name string) updatev1alpha1.NodeStatusInsight {
	us := upgradeStatus(ctx)(g)
	g.Expect(us.Status.ReportedNodes).NotTo(BeNil())
	for _, t := range us.Status.ReportedNodes.WorkerPools {
		for _, n := range t.Nodes {
			if t.Name == "worker" && n.Name == name {
				return n
			}
		}
	}
	g.Expect(us.Status.ReportedNodes.WorkerPools).To(ContainElement(And(HaveField("Name", "worker"),
		HaveField("NodeTable.Nodes", ContainElement(HaveField("Name", name))))))
	return updatev1alpha1.NodeStatusInsight{}
}

func resourceVersions(ctx context.Context) map[string]string {
	rvs := map[string]string{}
	us := &updatev1alpha1.UpgradeStatus{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "cluster"}, us)).To(Succeed())
	rvs["UpgradeStatus/cluster"] = us.ResourceVersion
	npis := &updatev1alpha1.NodeProgressInsightList{}
	Expect(env.Client.List(ctx, npis)).To(Succeed())
	for _, n := range npis.Items {
		rvs["NodeProgressInsight/"+n.Name] = n.ResourceVersion
	}
	return rvs
}

// pendingWritesIn reads the count of objects of the kinds given
// (nodeprogressinsight, upgradestatus) with a write handed over and not done
// yet, of the controller whose metrics are reg.
func pendingWritesIn(reg prometheus.Gatherer, kinds ...string) float64 {
	all, err := metricstest.Series(reg, "upshift_update_status_pending_writes")
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, kind := range kinds {
		total += all["kind="+kind]
	}
	return total
}

// settle waits for at least one more reconcile to finish after a change and
// for the writes of the kinds given (default: all) it handed over to be
// done, so that what it wrote, if anything, is on the API server.
func settle(before float64, kinds ...string) {
	settleIn(controllerMetrics, before, kinds...)
}

// settleIn is settle for the controller whose metrics are reg.
func settleIn(reg prometheus.Gatherer, before float64, kinds ...string) {
	if len(kinds) == 0 {
		kinds = []string{"nodeprogressinsight", "upgradestatus"}
	}
	Eventually(func(g Gomega) {
		g.Expect(reconciles()).To(BeNumerically(">", before))
		g.Expect(pendingWritesIn(reg, kinds...)).To(BeZero())
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

var _ = Describe("the update-status controller", Ordered, func() {
	var stop func()
	started := time.Now().Add(-20 * time.Minute).Truncate(time.Second)

	BeforeAll(func(ctx SpecContext) {
		stop = startController(context.WithoutCancel(ctx))
		DeferCleanup(func() { stop() })
	})

	It("says why it cannot assess while there is no ClusterVersion", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			us := upgradeStatus(ctx)(g)
			c := meta.FindStatusCondition(us.Status.Conditions, updatev1alpha1.ConditionStatusAvailable)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(updatev1alpha1.ReasonCannotAssess))
			g.Expect(c.Message).To(ContainSubstring("no cluster version information"))
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("publishes the control plane, pools and one insight per node, owned by the node", func(ctx SpecContext) {
		createRenderedConfig(ctx, env.Client, "rendered-master-old", fromVersion)
		createRenderedConfig(ctx, env.Client, "rendered-master-new", toVersion)
		createRenderedConfig(ctx, env.Client, "rendered-worker-old", fromVersion)
		createRenderedConfig(ctx, env.Client, "rendered-worker-new", toVersion)
		createPool(ctx, env.Client, "master", "rendered-master-old", 1)
		createPool(ctx, env.Client, "worker", "rendered-worker-old", 2)
		createNode(ctx, env.Client, "master-0", "master", "rendered-master-old")
		createNode(ctx, env.Client, "worker-0", "worker", "rendered-worker-old")
		createNode(ctx, env.Client, "worker-1", "worker", "rendered-worker-old")
		createClusterOperator(ctx, env.Client, "etcd", toVersion, started.Add(5*time.Minute))
		createClusterOperator(ctx, env.Client, "kube-apiserver", fromVersion, started.Add(-time.Hour))
		createClusterVersion(ctx, env.Client, started)

		Eventually(func(g Gomega) {
			us := upgradeStatus(ctx)(g)
			g.Expect(meta.IsStatusConditionTrue(us.Status.Conditions, updatev1alpha1.ConditionStatusAvailable)).To(BeTrue())
			cp := us.Status.ControlPlane
			g.Expect(cp).NotTo(BeNil())
			g.Expect(meta.IsStatusConditionTrue(cp.Conditions, updatev1alpha1.ConditionUpdating)).To(BeTrue())
			g.Expect(cp.ClusterVersion.Assessment).To(Equal(updatev1alpha1.ControlPlaneAssessmentProgressing))
			g.Expect(cp.ClusterVersion.Completion).To(BeEquivalentTo(50))
			g.Expect(cp.ClusterVersion.Versions.Target.Version).To(Equal(toVersion))
			g.Expect(cp.ClusterVersion.StartedAt.Time).To(BeTemporally("==", started))
			g.Expect(us.Status.WorkerPools).To(ConsistOf(HaveField("Name", "worker")))
			// The report's node tables, with the status they belong to.
			g.Expect(us.Status.ReportedNodes).NotTo(BeNil())
			g.Expect(us.Status.ReportedNodes.ControlPlane.Nodes).To(ConsistOf(HaveField("Name", "master-0")))
			g.Expect(us.Status.ReportedNodes.WorkerPools).To(ConsistOf(And(HaveField("Name", "worker"),
				HaveField("NodeTable.Nodes", ConsistOf(HaveField("Name", "worker-0"), HaveField("Name", "worker-1"))))))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		Eventually(func(g Gomega) {
			npis := &updatev1alpha1.NodeProgressInsightList{}
			g.Expect(env.Client.List(ctx, npis)).To(Succeed())
			g.Expect(npis.Items).To(HaveLen(3))
			for _, npi := range npis.Items {
				node := &corev1.Node{}
				g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: npi.Name}, node)).To(Succeed())
				g.Expect(npi.OwnerReferences).To(ConsistOf(And(
					HaveField("Kind", "Node"), HaveField("Name", node.Name), HaveField("UID", node.UID))))
				g.Expect(npi.Status.Name).To(Equal(npi.Name))
			}
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("writes nothing when a change does not alter the insights", func(ctx SpecContext) {
		before := resourceVersions(ctx)
		count := reconciles()
		node := &corev1.Node{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "worker-0"}, node)).To(Succeed())
		patch := client.MergeFrom(node.DeepCopy())
		node.Labels["unrelated"] = "touched"
		Expect(env.Client.Patch(ctx, node, patch)).To(Succeed())
		settle(count)
		Expect(resourceVersions(ctx)).To(Equal(before))
	})

	It("follows a node through the machine-config daemon's phases", func(ctx SpecContext) {
		retargetPool(ctx, env.Client, "worker", "rendered-worker-new")
		annotateNode(ctx, env.Client, "worker-0", map[string]string{annoDesired: "rendered-worker-new", annoState: "Working"})
		Eventually(func(g Gomega) {
			npi := &updatev1alpha1.NodeProgressInsight{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "worker-0"}, npi)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(npi.Status.Conditions, updatev1alpha1.ConditionUpdating)).To(BeTrue())
			g.Expect(reportedWorker(ctx, g, "worker-0").Conditions).To(ContainElement(And(
				HaveField("Type", updatev1alpha1.ConditionUpdating), HaveField("Status", metav1.ConditionTrue))))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		annotateNode(ctx, env.Client, "worker-0", map[string]string{annoCurrent: "rendered-worker-new", annoState: "Done"})
		Eventually(func(g Gomega) {
			npi := &updatev1alpha1.NodeProgressInsight{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "worker-0"}, npi)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(npi.Status.Conditions, updatev1alpha1.ConditionUpdating)).To(BeFalse())
			g.Expect(npi.Status.Version).To(Equal(toVersion))
			g.Expect(reportedWorker(ctx, g, "worker-0").Version).To(Equal(toVersion))
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("labels node insights by pool, phase, degradation and availability", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			npis := &updatev1alpha1.NodeProgressInsightList{}
			g.Expect(env.Client.List(ctx, npis, client.MatchingLabels{
				updatev1alpha1.LabelPool: "worker", updatev1alpha1.LabelPhase: "Completed", updatev1alpha1.LabelDegraded: "false", updatev1alpha1.LabelAvailable: "true",
			})).To(Succeed())
			g.Expect(npis.Items).To(ConsistOf(HaveField("Name", "worker-0")))
			g.Expect(env.Client.List(ctx, npis, client.MatchingLabels{updatev1alpha1.LabelPhase: "Pending"})).To(Succeed())
			g.Expect(npis.Items).To(ConsistOf(HaveField("Name", "worker-1"), HaveField("Name", "master-0")))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		// Labels, owner and status come from one apply each time, never from
		// a separate create, status write or label patch: worker-0 went
		// through two phases and is still one applier's alone.
		npis := &updatev1alpha1.NodeProgressInsightList{}
		Expect(env.Client.List(ctx, npis)).To(Succeed())
		for _, npi := range npis.Items {
			Expect(npi.ManagedFields).To(ConsistOf(And(HaveField("Manager", controller.FieldManager),
				HaveField("Operation", metav1.ManagedFieldsOperationApply), HaveField("Subresource", ""))), npi.Name)
		}
	})

	It("records a transition's Event exactly once even when a node insight write fails", func(ctx SpecContext) {
		// The apiserver refuses every write to worker-1's insight.
		refuse := refuseWrites(ctx, "nodeprogressinsights", "worker-1")
		errorsBefore := writeErrors("nodeprogressinsight")()
		annotateNode(ctx, env.Client, "worker-1", map[string]string{annoCurrent: "rendered-worker-new", annoDesired: "rendered-worker-new", annoState: "Done"})
		Eventually(func(g Gomega) {
			g.Expect(upgradeStatus(ctx)(g).Status.WorkerPools).To(ConsistOf(HaveField("Pool.Assessment", updatev1alpha1.PoolCompleted)))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		poolCompleted := eventsWithReason(ctx, "WorkerPoolCompleted")
		Eventually(poolCompleted).WithTimeout(10 * time.Second).Should(HaveLen(1))
		npi := &updatev1alpha1.NodeProgressInsight{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "worker-1"}, npi)).To(Succeed())
		Expect(npi.Labels[updatev1alpha1.LabelPhase]).To(Equal("Pending"), "the refused write went through")
		Eventually(writeErrors("nodeprogressinsight")).WithTimeout(10 * time.Second).Should(BeNumerically(">", errorsBefore))

		// Once writes are allowed again the insight catches up, and the
		// retries did not repeat the Event: once everything handed over is
		// written, the controller has asked for it once, and the API server
		// holds it once, in no series.
		refuse()
		count := reconciles()
		touchNode(ctx, "worker-0")
		settle(count)
		Eventually(func(g Gomega) string {
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "worker-1"}, npi)).To(Succeed())
			return npi.Labels[updatev1alpha1.LabelPhase]
		}).WithTimeout(45 * time.Second).Should(Equal("Completed"))
		expectRecordedOnce(ctx, "WorkerPoolCompleted")
	})

	It("publishes the status without waiting for a node's insight, and writes only a node's newest insight", func(ctx SpecContext) {
		available := func(conds []metav1.Condition) metav1.ConditionStatus {
			if c := meta.FindStatusCondition(conds, updatev1alpha1.ConditionAvailable); c != nil {
				return c.Status
			}
			return ""
		}
		insight := func(g Gomega) *updatev1alpha1.NodeProgressInsight {
			npi := &updatev1alpha1.NodeProgressInsight{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "worker-0"}, npi)).To(Succeed())
			return npi
		}
		Expect(available(insight(Default).Status.Conditions)).To(Equal(metav1.ConditionTrue))
		release := insightWrites.hold("worker-0")
		DeferCleanup(func() {
			if release != nil {
				release()
			}
		})
		before := insightWrites.count("worker-0")

		By("a cordon: the status shows it while the insight's write is held")
		cordonNode(ctx, "worker-0", true)
		Eventually(func(g Gomega) metav1.ConditionStatus {
			return available(reportedWorker(ctx, g, "worker-0").Conditions)
		}).WithTimeout(20 * time.Second).Should(Equal(metav1.ConditionFalse))
		Expect(insightWrites.count("worker-0")).To(Equal(before+1), "the held write")
		Expect(available(insight(Default).Status.Conditions)).To(Equal(metav1.ConditionTrue))

		By("other nodes' changes meanwhile: recomputed from the held insight, not the stale one")
		since := func(g Gomega) metav1.Time {
			return meta.FindStatusCondition(reportedWorker(ctx, g, "worker-0").Conditions, updatev1alpha1.ConditionAvailable).LastTransitionTime
		}
		cordoned := since(Default)
		// Recomputations over more than two seconds, so that a transition
		// time taken anew would show in the status's whole seconds.
		for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); {
			count := reconciles()
			touchNode(ctx, "worker-1")
			settle(count, "upgradestatus") // worker-0's insight write is held
			Expect(since(Default)).To(Equal(cordoned))
		}
		Expect(insightWrites.count("worker-0")).To(Equal(before+1), "the held write alone")

		By("two more changes while that write is held")
		cordonNode(ctx, "worker-0", false)
		Eventually(func(g Gomega) metav1.ConditionStatus {
			return available(reportedWorker(ctx, g, "worker-0").Conditions)
		}).WithTimeout(20 * time.Second).Should(Equal(metav1.ConditionTrue))
		cordonNode(ctx, "worker-0", true)
		var newest updatev1alpha1.NodeStatusInsight
		Eventually(func(g Gomega) metav1.ConditionStatus {
			newest = reportedWorker(ctx, g, "worker-0")
			return available(newest.Conditions)
		}).WithTimeout(20 * time.Second).Should(Equal(metav1.ConditionFalse))

		By("released: the held write, then the newest insight, and nothing else")
		release()
		release = nil
		Eventually(func(g Gomega) {
			st := insight(g).Status
			g.Expect(available(st.Conditions)).To(Equal(metav1.ConditionFalse))
			g.Expect(meta.FindStatusCondition(st.Conditions, updatev1alpha1.ConditionAvailable).LastTransitionTime).To(
				Equal(meta.FindStatusCondition(newest.Conditions, updatev1alpha1.ConditionAvailable).LastTransitionTime))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		// Once a recomputation after it has handed over what it would and
		// every write is done, the insight had two applies: nothing else.
		count := reconciles()
		touchNode(ctx, "worker-1")
		settle(count)
		Expect(insightWrites.count("worker-0")).To(Equal(before + 2))

		cordonNode(ctx, "worker-0", false)
		Eventually(func(g Gomega) metav1.ConditionStatus {
			return available(insight(g).Status.Conditions)
		}).WithTimeout(20 * time.Second).Should(Equal(metav1.ConditionTrue))
	})

	It("keeps the prototype ConfigMap key once the ConfigMap exists, with the API's field names", func(ctx SpecContext) {
		Expect(env.CreateNamespace(ctx, namespace)).To(Succeed())
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: controller.PrototypeConfigMap, Namespace: namespace}}
		Expect(env.Client.Create(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) string {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
			return cm.Data[controller.PrototypeKey]
		}).WithTimeout(10 * time.Second).Should(And(
			ContainSubstring("assessment: Progressing"),
			ContainSubstring("startedAt: "),
			ContainSubstring("target:"),
			Not(ContainSubstring("startedat")),
		))
	})

	It("reports the end of the control-plane update, with its Event once the status write goes through", func(ctx SpecContext) {
		// The apiserver refuses the status writes while the control plane
		// completes: the Event must wait for a write that shows it, and the
		// retries must not repeat it.
		refuse := refuseWrites(ctx, "upgradestatuses/status", updatev1alpha1.UpgradeStatusName)
		errorsBefore := writeErrors("upgradestatus")()
		cpCompleted := eventsWithReason(ctx, "ControlPlaneUpdateCompleted")
		completed := func(g Gomega) {
			cp := upgradeStatus(ctx)(g).Status.ControlPlane
			g.Expect(meta.IsStatusConditionFalse(cp.Conditions, updatev1alpha1.ConditionUpdating)).To(BeTrue())
			g.Expect(cp.ClusterVersion.Assessment).To(Equal(updatev1alpha1.ControlPlaneAssessmentCompleted))
			g.Expect(cp.ClusterVersion.Completion).To(BeEquivalentTo(100))
			g.Expect(cp.ClusterVersion.CompletedAt).NotTo(BeNil())
		}
		setClusterOperator(ctx, env.Client, "kube-apiserver", toVersion, time.Now())
		// A refused write shows that a recomputation has read the change:
		// every read from here on has a status to write, and the
		// last-success metric (the time of the latest read published) must
		// not reach it until a write goes through. A read from before the
		// change may still be published, with its own, earlier time.
		Eventually(writeErrors("upgradestatus")).WithTimeout(10 * time.Second).Should(BeNumerically(">", errorsBefore))
		handedOver := float64(time.Now().UnixNano()) / 1e9
		completeClusterVersion(ctx, env.Client, time.Now())
		// Another recomputation while the write is refused plans from the
		// refused status: no second Event is queued for the same transition.
		count := reconciles()
		touchNode(ctx, "worker-0")
		Eventually(reconciles).WithTimeout(10 * time.Second).Should(BeNumerically(">", count))
		Expect(cpCompleted(Default)).To(BeEmpty(), "an Event before its status was written")
		Expect(controllerEvents.recorded("ControlPlaneUpdateCompleted")).To(BeZero(), "an Event asked for before its status was written")
		Expect(InterceptGomegaFailure(func() { completed(Default) })).To(HaveOccurred(), "the refused write went through")
		Expect(lastSuccess()).To(BeNumerically("<", handedOver), "a success marked while the status write was refused")

		refuse()
		Eventually(completed).WithTimeout(45 * time.Second).Should(Succeed())
		Eventually(lastSuccess).WithTimeout(10 * time.Second).Should(BeNumerically(">", handedOver))
		Eventually(cpCompleted).WithTimeout(10 * time.Second).Should(ConsistOf(And(
			HaveField("Regarding.Kind", "UpgradeStatus"),
			HaveField("Note", ContainSubstring("from "+fromVersion+" to "+toVersion)),
		)))
		expectRecordedOnce(ctx, "ControlPlaneUpdateCompleted")
	})

	It("publishes nothing new after a restart when nothing changed", func(ctx SpecContext) {
		before := resourceVersions(ctx)
		stop()
		count := reconciles()
		stop = startController(context.WithoutCancel(ctx))
		settle(count)
		Expect(resourceVersions(ctx)).To(Equal(before))
	})

	It("recomputes at the next time threshold only, and never when idle", func(ctx SpecContext) {
		stop()
		// The controller on a clock of the spec's, its requeues seen as the
		// controller-runtime loop gets them.
		now := time.Now().Truncate(time.Second)
		clk := clocktesting.NewFakePassiveClock(now)
		var (
			mu      sync.Mutex
			results []reconcile.Result
		)
		observe := func(res reconcile.Result, err error) {
			defer GinkgoRecover()
			Expect(err).NotTo(HaveOccurred())
			mu.Lock()
			defer mu.Unlock()
			results = append(results, res)
		}
		// requeueAfter is the requeue of the last reconcile, once the status
		// it handed over, if any, is written. Every reconcile after a change
		// plans from the same objects and time, so the last one's is the
		// answer to that change.
		reg := prometheus.NewRegistry()
		requeueAfter := func(g Gomega) time.Duration {
			mu.Lock()
			n := len(results)
			var last reconcile.Result
			if n > 0 {
				last = results[n-1]
			}
			mu.Unlock()
			g.Expect(n).To(BeNumerically(">", 0), "no reconcile yet")
			g.Expect(pendingWritesIn(reg, "upgradestatus")).To(BeZero())
			return last.RequeueAfter
		}
		stopObserved := startReconciler(context.WithoutCancel(ctx), env, &controller.Reconciler{Namespace: namespace, Clock: clk}, reg, nil, observe)
		DeferCleanup(func(ctx SpecContext) {
			stopObserved()
			setClusterOperator(ctx, env.Client, "kube-apiserver", toVersion, time.Now())
			stop = startController(context.WithoutCancel(ctx))
		})

		By("an idle cluster: no requeue")
		Eventually(requeueAfter).WithTimeout(10 * time.Second).Should(BeZero())
		Expect(meta.FindStatusCondition(upgradeStatus(ctx)(Default).Status.Conditions, updatev1alpha1.ConditionHeartbeat)).To(
			HaveField("Status", metav1.ConditionFalse), "the heartbeat should have said Idle once the update ended")

		By("an operator degraded for 3 minutes: requeue when it has been 5")
		degradeClusterOperator(ctx, "kube-apiserver", now.Add(-3*time.Minute))
		Eventually(requeueAfter).WithTimeout(10 * time.Second).Should(Equal(2*time.Minute + time.Nanosecond))
		Expect(upgradeStatus(ctx)(Default).Status.Health).NotTo(ContainElement(HaveField("UID", "co-kube-apiserver-degraded")))

		By("at that time: the insight, and a requeue when it turns into an error at 40 minutes")
		clk.SetTime(now.Add(2*time.Minute + time.Nanosecond))
		// The requeue would come in two minutes of real time: a Node event
		// starts the recomputation now.
		touchNode(ctx, "worker-0")
		Eventually(requeueAfter).WithTimeout(10 * time.Second).Should(Equal(35 * time.Minute))
		Expect(upgradeStatus(ctx)(Default).Status.Health).To(ContainElement(And(
			HaveField("UID", "co-kube-apiserver-degraded"), HaveField("Impact.Level", updatev1alpha1.WarningImpactLevel))))
	})

	It("loses a node's insight with the node (garbage collection)", func(ctx SpecContext) {
		Expect(env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}})).To(Succeed())
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Name: "worker-1"}, &updatev1alpha1.NodeProgressInsight{})
		}).WithTimeout(30 * time.Second).Should(MatchError(ContainSubstring("not found")))
	})
})
