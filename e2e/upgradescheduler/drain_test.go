package upgradescheduler

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/nodes"
)

// drainConfig is muoConfig with MUO's shortest drain timeouts (a minute
// each) and a namespace whose pods are never forced.
func drainConfig() string {
	c := strings.Replace(muoConfig, "nodeDrain:\n  expectedNodeDrainTime: 8\n  timeOut: 45\n",
		"nodeDrain:\n  expectedNodeDrainTime: 1\n  timeOut: 1\n  ignoredNamespacePatterns:\n  - ^drain-ignored$\n", 1)
	Expect(c).NotTo(Equal(muoConfig))
	return c
}

// guardedLabel marks the pods whose forced removal the tracker reports.
const guardedLabel = "e2e.upshift.io/guarded"

// firstWorker is the worker node first by name.
func firstWorker(ctx context.Context) string {
	GinkgoHelper()
	var list corev1.NodeList
	Expect(env.Client.List(ctx, &list)).To(Succeed())
	worker := ""
	for i := range list.Items {
		if !nodes.ControlPlane(&list.Items[i]) && (worker == "" || list.Items[i].Name < worker) {
			worker = list.Items[i].Name
		}
	}
	Expect(worker).NotTo(BeEmpty())
	return worker
}

// budgetsComputed waits until the disruption controller computed the
// budgets: a drain asking for evictions before would not be refused.
func budgetsComputed(ctx context.Context, keys ...client.ObjectKey) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for _, key := range keys {
			pdb := &policyv1.PodDisruptionBudget{}
			g.Expect(env.Client.Get(ctx, key, pdb)).To(Succeed())
			g.Expect(pdb.Status.ObservedGeneration).To(Equal(pdb.Generation))
			g.Expect(pdb.Status.CurrentHealthy).To(BeEquivalentTo(1))
		}
	}, time.Minute).Should(Succeed())
}

// forcedSteps counts the scheduler's successful requests on pods in the
// audit log, as "<verb> <namespace>/<name>".
func forcedSteps() map[string]int {
	GinkgoHelper()
	events, err := env.AuditEvents(framework.ServiceAccountUser(namespace, id.ServiceAccount))
	Expect(err).NotTo(HaveOccurred())
	out := map[string]int{}
	for _, e := range events {
		if e.ObjectRef == nil || e.ObjectRef.Resource != "pods" || e.ResponseStatus == nil || e.ResponseStatus.Code >= 300 ||
			(e.Verb != "delete" && e.Verb != "patch") {
			continue
		}
		out[e.Verb+" "+e.ObjectRef.Namespace+"/"+e.ObjectRef.Name]++
	}
	return out
}

// pinnedPod is a bare pod bound to node, as the default scheduler binds one.
func pinnedPod(ns, name, node string, labels map[string]string, finalizers ...string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Finalizers: finalizers},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:1"}}}}
}

func guardingPDB(ns, name string, labels map[string]string) *policyv1.PodDisruptionBudget {
	zero := intstr.FromInt32(0)
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: labels}}}
}

// forcesBlockedDrain is the spec of the scheduler's drains (MUO's
// NodeKeeper), run inside the suite's ordered specs: the audit check at their
// end counts its requests.
func forcesBlockedDrain(ctx context.Context) {
	deleteUC(ctx)
	setConfig(ctx, drainConfig())
	DeferCleanup(func(ctx context.Context) { setConfig(ctx, muoConfig) })

	By("a worker with a pod a PDB allowing no disruption guards, a pod with a finalizer, and a guarded pod of an ignored namespace")
	worker := firstWorker(ctx)
	app := map[string]string{"app": "guarded"}
	for _, ns := range []string{"drain-guarded", "drain-held", "drain-ignored"} {
		Expect(env.CreateNamespace(ctx, ns)).To(Succeed())
	}
	Expect(env.Client.Create(ctx, pinnedPod("drain-guarded", "db-0", worker, app))).To(Succeed())
	guard := guardingPDB("drain-guarded", "db", app)
	Expect(env.Client.Create(ctx, guard)).To(Succeed())
	// MUO's PreHealthCheck finds a budget by its spec, pods or none: the
	// later specs start without it.
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, guard))).To(Succeed()) })
	Expect(env.Client.Create(ctx, pinnedPod("drain-held", "web-0", worker, nil, "example.com/hold"))).To(Succeed())
	Expect(env.Client.Create(ctx, pinnedPod("drain-ignored", "collector-0", worker, app))).To(Succeed())
	ignoredPDB := guardingPDB("drain-ignored", "collector", app)
	Expect(env.Client.Create(ctx, ignoredPDB)).To(Succeed())
	budgetsComputed(ctx, client.ObjectKey{Namespace: "drain-guarded", Name: "db"}, client.ObjectKey{Namespace: "drain-ignored", Name: "collector"})
	before := forcedSteps()

	// Far enough ahead for the report to be read while Pending on a loaded
	// machine.
	uc := newUC(upgradev1alpha1.OSD, nextVersion(ctx), time.Now().Add(20*time.Second))
	uc.Spec.CapacityReservation = false
	uc.Spec.PDBForceDrainTimeout = 0
	Expect(env.Client.Create(ctx, uc)).To(Succeed())

	By("before the start, the preflight report names the budgets and the node whose drain they will hold")
	Eventually(func(g Gomega) []upgradev1alpha1.DrainBlocker {
		got := getUC(ctx)
		g.Expect(got.Status.History).NotTo(BeEmpty())
		g.Expect(got.Status.History[0].Phase).To(Equal(upgradev1alpha1.UpgradePhasePending))
		g.Expect(got.Status.Report).NotTo(BeNil())
		g.Expect(got.Status.Report.ExpectedWorkerDuration).NotTo(BeNil())
		return got.Status.Report.DrainBlockers
	}).Should(Equal([]upgradev1alpha1.DrainBlocker{
		{PodDisruptionBudget: "drain-guarded/db", Nodes: []string{worker}},
		{PodDisruptionBudget: "drain-ignored/collector", Nodes: []string{worker}},
	}))

	By("the scheduler records the drain as its own")
	drain := func(g Gomega) upgradev1alpha1.NodeDrain {
		for _, d := range getUC(ctx).Status.Drains {
			if d.Node == worker {
				return d
			}
		}
		g.Expect(worker).To(BeEmpty(), "no drain recorded for the worker")
		return upgradev1alpha1.NodeDrain{}
	}
	Eventually(func(g Gomega) string { return drain(g).Owner }, 3*time.Minute).Should(Equal(upgradev1alpha1.DrainOwnerScheduler))

	By("after a minute both pods are deleted with grace period 0, then the finalizer is removed; the ignored pod stays")
	Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(env.Client.List(ctx, &pods, client.MatchingFields{"spec.nodeName": worker})).To(Succeed())
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Namespace+"/"+p.Name)
		}
		g.Expect(names).NotTo(ContainElements("drain-guarded/db-0"))
		g.Expect(names).NotTo(ContainElements("drain-held/web-0"))
		g.Expect(names).To(ContainElement("drain-ignored/collector-0"))
	}, 3*time.Minute, time.Second).Should(Succeed())

	By("still blocked with nothing left to force: timed out, MUO's metric is 1")
	Eventually(func(g Gomega) *metav1.Time { return drain(g).TimedOutTime }, 2*time.Minute).ShouldNot(BeNil())
	Eventually(scrape).Should(ContainSubstring(`upgradeoperator_node_drain_timeout{node_name="` + worker + `"} 1`))
	Eventually(eventReasons(ctx)).Should(ContainElement("NodeDrainTimedOut"))

	By("once the person lifts the ignored namespace's budget the drain ends: the metric is reset, the upgrade completes")
	Expect(env.Client.Delete(ctx, ignoredPDB)).To(Succeed())
	Eventually(func(g Gomega) {
		d := drain(g)
		g.Expect(d.Record).NotTo(BeNil())
		g.Expect(d.Record.CompletionTime).NotTo(BeNil())
		g.Expect(d.Record.ForcedPods).To(BeEquivalentTo(2))
	}, 2*time.Minute).Should(Succeed())
	Eventually(phaseStep(ctx), 4*time.Minute).Should(Equal("Upgraded/"))
	Expect(getUC(ctx).Status.Drains).To(BeEmpty())
	Expect(scrape()).NotTo(ContainSubstring(`upgradeoperator_node_drain_timeout{node_name="` + worker + `"} 1`))

	By("each step exactly once (audit log)")
	after := forcedSteps()
	Expect(sub(after, before)).To(Equal(map[string]int{
		"delete drain-guarded/db-0": 1, "delete drain-held/web-0": 1, "patch drain-held/web-0": 1}))
	deleteUC(ctx)
}
