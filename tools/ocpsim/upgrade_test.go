package ocpsim_test

import (
	"context"
	"fmt"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/cvo"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
)

// runUpgrade patches only ClusterVersion.spec.desiredUpdate and waits for the
// whole cluster to be on the new version; it returns the wall time.
func runUpgrade(ctx context.Context, k *cluster, rec *nodeRecorder, to string, timeout time.Duration) time.Duration {
	start := time.Now()
	k.desiredUpdate(ctx, to)
	Eventually(func(g Gomega) {
		cv := k.cv(ctx)
		g.Expect(cv.Status.History).NotTo(BeEmpty())
		g.Expect(cv.Status.History[0].Version).To(Equal(to))
		g.Expect(cv.Status.History[0].State).To(Equal(configv1.CompletedUpdate))
		for _, name := range []string{"master", "worker"} {
			p := k.pool(ctx, name)
			g.Expect(condStatus(p.Status.Conditions, mcfgv1.MachineConfigPoolUpdated)).To(Equal(corev1.ConditionTrue), "pool %s", name)
			var mc mcfgv1.MachineConfig
			g.Expect(k.c.Get(ctx, clusterKey(p.Spec.Configuration.Name), &mc)).To(Succeed())
			g.Expect(mc.Annotations[mco.ReleaseImageVersionAnnot]).To(Equal(to), "pool %s renders the new release", name)
		}
	}, timeout, 100*time.Millisecond).Should(Succeed())
	return time.Since(start)
}

func verifyUpgraded(ctx context.Context, k *cluster, rec *nodeRecorder, to string, maxUnavailable map[string]int) {
	cv := k.cv(ctx)
	Expect(cv.Status.History[0].CompletionTime).NotTo(BeNil())
	Expect(cv.Status.History[1].State).To(Equal(configv1.CompletedUpdate))
	Expect(cvCond(cv, configv1.OperatorProgressing).Status).To(Equal(configv1.ConditionFalse))
	Expect(cvCond(cv, configv1.OperatorProgressing).Message).To(Equal("Cluster version is " + to))
	var cos configv1.ClusterOperatorList
	Expect(k.c.List(ctx, &cos)).To(Succeed())
	Expect(len(cos.Items)).To(BeNumerically(">=", 30))
	for _, co := range cos.Items {
		Expect(cvo.OperatorVersion(&co)).To(Equal(to), "cluster operator %s", co.Name)
	}
	By("the MCO Deployment runs the release's MCO image, and machine-config reports it")
	mcoImage := cvo.MCOImage(cv.Status.Desired.Image)
	var d appsv1.Deployment
	Expect(k.c.Get(ctx, types.NamespacedName{Namespace: cvo.MCONamespace, Name: cvo.MCODeployment}, &d)).To(Succeed())
	Expect(d.Spec.Template.Spec.Containers).To(ContainElement(And(HaveField("Name", cvo.MCOContainer), HaveField("Image", mcoImage))))
	var mcoCO configv1.ClusterOperator
	Expect(k.c.Get(ctx, clusterKey(cvo.MachineConfig), &mcoCO)).To(Succeed())
	Expect(mcoCO.Status.Versions).To(ContainElement(configv1.OperandVersion{Name: "operator-image", Version: mcoImage}))
	var pools mcfgv1.MachineConfigPoolList
	Expect(k.c.List(ctx, &pools)).To(Succeed())
	target := map[string]string{}
	for _, p := range pools.Items {
		target[p.Name] = p.Spec.Configuration.Name
		Expect(p.Status.Configuration.Name).To(Equal(p.Spec.Configuration.Name))
		Expect(p.Status.UpdatedMachineCount).To(Equal(p.Status.MachineCount))
	}
	var nodes corev1.NodeList
	Expect(k.c.List(ctx, &nodes)).To(Succeed())
	steps, peak := rec.snapshot()
	taints := rec.taintSteps()
	for _, n := range nodes.Items {
		pool := "worker"
		if _, ok := n.Labels["node-role.kubernetes.io/master"]; ok {
			pool = "master"
		}
		Expect(n.Annotations[mco.StateAnnotation]).To(Equal(mco.StateDone), n.Name)
		Expect(n.Annotations[mco.CurrentConfigAnnotation]).To(Equal(target[pool]), n.Name)
		Expect(n.Annotations[mco.DesiredConfigAnnotation]).To(Equal(target[pool]), n.Name)
		Expect(n.Spec.Unschedulable).To(BeFalse(), n.Name)
		Expect(steps[n.Name]).To(Equal(rebootSequence), "annotation order of node %s", n.Name)
		// The MCO's pool sync taints a node that waits for its update
		// before it targets it (an earlier write), and removes the taint
		// in a later sync (a later write), never in the targeting write.
		var names []string
		for _, st := range taints[n.Name] {
			names = append(names, st.step)
		}
		Expect(names).To(Equal([]string{"taint=true", "desiredConfig", "taint=false"}), "taint and desiredConfig writes of node %s: %v", n.Name, taints[n.Name])
		Expect(taints[n.Name][0].rv).To(BeNumerically("<", taints[n.Name][1].rv), "node %s tainted in the write that targeted it", n.Name)
		Expect(taints[n.Name][1].rv).To(BeNumerically("<", taints[n.Name][2].rv), "node %s untainted in the write that targeted it", n.Name)
		Expect(mco.HasUpdateInProgressTaint(&n)).To(BeFalse(), n.Name)
	}
	for pool, max := range maxUnavailable {
		Expect(peak[pool]).To(BeNumerically("<=", max), "pool %s had %d nodes unavailable at once", pool, peak[pool])
		Expect(peak[pool]).To(BeNumerically(">=", 1), "pool %s never updated", pool)
	}
}

var _ = Describe("a full cluster update", func() {
	It("updates 3 masters and 6 workers from one desiredUpdate patch in under a minute", func(ctx SpecContext) {
		k := startCluster(ctx, ocpsim.Topology{Version: "4.16.1", Masters: 3, Workers: 6, WorkerMaxUnavailable: "2"}, ocpsim.Options{TimeScale: 300})
		rec := startRecorder(ctx, k)
		wall := runUpgrade(ctx, k, rec, "4.16.2", 60*time.Second)
		verifyUpgraded(ctx, k, rec, "4.16.2", map[string]int{"master": 1, "worker": 2})
		AddReportEntry("wall time 3+6 update at 300x", wall.String())
		fmt.Fprintf(GinkgoWriter, "3 masters + 6 workers: update 4.16.1 -> 4.16.2 took %s wall at time scale 300\n", wall)
		Expect(wall).To(BeNumerically("<", 60*time.Second))

		By("offering the next release afterwards")
		cv := k.cv(ctx)
		Expect(cv.Status.AvailableUpdates).To(HaveLen(1))
		Expect(cv.Status.AvailableUpdates[0].Version).To(Equal("4.16.3"))
	}, NodeTimeout(4*time.Minute))

	// OCPSIM_SCALE_WORKERS (e.g. 100), OCPSIM_SCALE_MAX_UNAVAILABLE (default 10%),
	// OCPSIM_SCALE_TIME (time scale, default 600).
	It("updates 3 masters and 100 workers (set OCPSIM_SCALE_WORKERS=100 to run)", Label("scale"), func(ctx SpecContext) {
		workers := envInt("OCPSIM_SCALE_WORKERS", 0)
		if workers == 0 {
			Skip("scale run disabled; set OCPSIM_SCALE_WORKERS=100")
		}
		maxU := os.Getenv("OCPSIM_SCALE_MAX_UNAVAILABLE") // default 10%
		if maxU == "" {
			maxU = "10%"
		}
		scale := float64(envInt("OCPSIM_SCALE_TIME", 600))
		k := startCluster(ctx, ocpsim.Topology{Version: "4.16.1", Masters: 3, Workers: workers, WorkerMaxUnavailable: maxU}, ocpsim.Options{TimeScale: scale})
		rec := startRecorder(ctx, k)
		wall := runUpgrade(ctx, k, rec, "4.16.2", 10*time.Minute)
		maxNodes, _ := intstr.GetScaledValueFromIntOrPercent(ptr.To(intstr.Parse(maxU)), workers, false)
		verifyUpgraded(ctx, k, rec, "4.16.2", map[string]int{"master": 1, "worker": max(1, maxNodes)})
		AddReportEntry(fmt.Sprintf("wall time 3+%d update (workers maxUnavailable %s) at %gx", workers, maxU, scale), wall.String())
	}, NodeTimeout(15*time.Minute))
})

var _ = Describe("a paused worker pool", func() {
	It("does not block the cluster update from completing", func(ctx SpecContext) {
		k := startCluster(ctx, ocpsim.Topology{Version: "4.16.1", Masters: 3, Workers: 1, CustomPools: []ocpsim.CustomPool{{Name: "infra", Nodes: 1, Paused: true}}},
			ocpsim.Options{TimeScale: 600, Operators: []cvo.Operator{
				{Name: "kube-apiserver", RunLevel: 20, Duration: 5 * time.Minute, Namespace: "openshift-kube-apiserver"},
				{Name: cvo.MachineConfig, RunLevel: 80, Duration: time.Minute, Namespace: "openshift-machine-config-operator"},
			}})
		k.desiredUpdate(ctx, "4.16.2")
		Eventually(func(g Gomega) {
			cv := k.cv(ctx)
			g.Expect(cv.Status.History[0].Version).To(Equal("4.16.2"))
			g.Expect(cv.Status.History[0].State).To(Equal(configv1.CompletedUpdate))
			g.Expect(k.pool(ctx, "worker").Status.Configuration.Name).To(Equal(k.pool(ctx, "worker").Spec.Configuration.Name))
			g.Expect(condStatus(k.pool(ctx, "worker").Status.Conditions, mcfgv1.MachineConfigPoolUpdated)).To(Equal(corev1.ConditionTrue))
		}, 40*time.Second, 100*time.Millisecond).Should(Succeed())
		infra := k.pool(ctx, "infra")
		Expect(condStatus(infra.Status.Conditions, mcfgv1.MachineConfigPoolUpdated)).To(Equal(corev1.ConditionFalse))
		Expect(mco.PoolCondition(&infra.Status, mcfgv1.MachineConfigPoolUpdating).Message).To(Equal("Pool is paused; will not update to " + infra.Spec.Configuration.Name))
		n := k.node(ctx, "ocp-infra-us-east-1a-0")
		Expect(n.Annotations[mco.DesiredConfigAnnotation]).To(Equal(n.Annotations[mco.CurrentConfigAnnotation]))
		// The MCO's sync of a paused pool only writes its status: its
		// nodes are not tainted.
		Expect(mco.HasUpdateInProgressTaint(n)).To(BeFalse())
		Expect(n.Annotations[mco.CurrentConfigAnnotation]).NotTo(Equal(infra.Spec.Configuration.Name))
	}, NodeTimeout(2*time.Minute))
})
