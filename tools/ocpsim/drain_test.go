package ocpsim_test

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/etcd"
	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
)

var _ = Describe("a PodDisruptionBudget that allows no disruption", func() {
	It("keeps the node cordoned, degrades it after the drain threshold, and lets it finish once the PDB is gone", func(ctx SpecContext) {
		const blocked, other = "ocp-worker-us-east-1a-0", "ocp-worker-us-east-1b-0"
		k := startCluster(ctx, ocpsim.Topology{
			Version: "4.16.1", Masters: 3, Workers: 2,
			Workloads: []ocpsim.Workload{{Name: "critical", Replicas: 1, PDBMaxUnavailable: "0", NodeName: blocked}},
		}, ocpsim.Options{TimeScale: 600}) // the 1 h drain threshold is 6 s

		By("the workload runs on the node the MCO will pick first (zone a)")
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(k.c.List(ctx, &pods, client.InNamespace("workloads"))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1))
			g.Expect(pods.Items[0].Spec.NodeName).To(Equal(blocked))
			g.Expect(pods.Items[0].Status.Phase).To(Equal(corev1.PodRunning))
		}, 60*time.Second, 200*time.Millisecond).Should(Succeed())

		By("rolling out a new worker config")
		k.addConfig(ctx, "99-worker-kargs", "worker", nil)
		Eventually(func(g Gomega) {
			n := k.node(ctx, blocked)
			g.Expect(n.Spec.Unschedulable).To(BeTrue())
			g.Expect(n.Annotations[mco.DesiredDrainAnnotation]).To(HavePrefix("drain-"))
		}, 20*time.Second, 50*time.Millisecond).Should(Succeed())
		drainRequested := time.Now()

		By("the drain cannot finish: the node stays cordoned, the pool Updating, the other worker untouched")
		Consistently(func(g Gomega) {
			n := k.node(ctx, blocked)
			g.Expect(n.Spec.Unschedulable).To(BeTrue())
			g.Expect(n.Annotations[mco.LastAppliedDrainAnnotation]).NotTo(Equal(n.Annotations[mco.DesiredDrainAnnotation]))
			g.Expect(n.Annotations[mco.StateAnnotation]).To(Equal(mco.StateWorking))
			g.Expect(condStatus(k.pool(ctx, "worker").Status.Conditions, mcfgv1.MachineConfigPoolUpdating)).To(Equal(corev1.ConditionTrue))
			o := k.node(ctx, other)
			g.Expect(o.Annotations[mco.DesiredConfigAnnotation]).To(Equal(o.Annotations[mco.CurrentConfigAnnotation]))
		}, 3*time.Second, 100*time.Millisecond).Should(Succeed())

		By("after the threshold the node is Degraded with the MCO's reason")
		Eventually(func(g Gomega) {
			n := k.node(ctx, blocked)
			g.Expect(n.Annotations[mco.StateAnnotation]).To(Equal(mco.StateDegraded))
			g.Expect(n.Annotations[mco.ReasonAnnotation]).To(Equal(mco.DrainFailedReason(blocked)))
			g.Expect(n.Spec.Unschedulable).To(BeTrue())
			p := k.pool(ctx, "worker")
			g.Expect(p.Status.DegradedMachineCount).To(Equal(int32(1)))
			g.Expect(condStatus(p.Status.Conditions, mcfgv1.MachineConfigPoolNodeDegraded)).To(Equal(corev1.ConditionTrue))
			g.Expect(condStatus(p.Status.Conditions, mcfgv1.MachineConfigPoolDegraded)).To(Equal(corev1.ConditionTrue))
			g.Expect(condStatus(p.Status.Conditions, mcfgv1.MachineConfigPoolUpdating)).To(Equal(corev1.ConditionTrue))
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
		Expect(time.Since(drainRequested)).To(BeNumerically(">=", 5*time.Second), "degraded before the 1 h (6 s) threshold")
		Expect(k.node(ctx, other).Annotations[mco.DesiredConfigAnnotation]).To(Equal(k.node(ctx, other).Annotations[mco.CurrentConfigAnnotation]))

		By("removing the PDB lets the drain and the whole pool finish")
		Expect(k.c.Delete(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "critical", Namespace: "workloads"}})).To(Succeed())
		Eventually(func(g Gomega) {
			p := k.pool(ctx, "worker")
			g.Expect(condStatus(p.Status.Conditions, mcfgv1.MachineConfigPoolUpdated)).To(Equal(corev1.ConditionTrue))
			g.Expect(condStatus(p.Status.Conditions, mcfgv1.MachineConfigPoolDegraded)).To(Equal(corev1.ConditionFalse))
			n := k.node(ctx, blocked)
			g.Expect(n.Annotations[mco.StateAnnotation]).To(Equal(mco.StateDone))
			g.Expect(n.Annotations[mco.ReasonAnnotation]).To(BeEmpty())
			g.Expect(n.Annotations[mco.CurrentConfigAnnotation]).To(Equal(p.Spec.Configuration.Name))
			g.Expect(n.Spec.Unschedulable).To(BeFalse())
		}, 40*time.Second, 100*time.Millisecond).Should(Succeed())
	}, NodeTimeout(3*time.Minute))
})

var _ = Describe("the etcd quorum guard", func() {
	It("keeps a deleted control-plane Machine until its replacement is Running", func(ctx SpecContext) {
		k := startCluster(ctx, ocpsim.Topology{Version: "4.16.1", Masters: 3, Workers: 0}, ocpsim.Options{
			TimeScale:  600,
			MachineAPI: machineapi.Durations{Provision: 10 * time.Minute, Join: 20 * time.Minute, Terminate: time.Minute},
		})
		old := &machinev1beta1.Machine{}
		Expect(k.c.Get(ctx, machineKey("ocp-master-0"), old)).To(Succeed())
		Expect(old.Spec.LifecycleHooks.PreDrain).To(ContainElement(machinev1beta1.LifecycleHook{Name: etcd.HookName, Owner: etcd.HookOwner}))

		By("deleting the machine: the hook blocks the drain")
		Expect(k.c.Delete(ctx, old)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k.c.Get(ctx, machineKey("ocp-master-0"), old)).To(Succeed())
			g.Expect(phase(old)).To(Equal(machinev1beta1.PhaseDeleting))
			var drainable *machinev1beta1.Condition
			for i := range old.Status.Conditions {
				if old.Status.Conditions[i].Type == machinev1beta1.MachineDrainable {
					drainable = &old.Status.Conditions[i]
				}
			}
			g.Expect(drainable).NotTo(BeNil())
			g.Expect(drainable.Status).To(Equal(corev1.ConditionFalse))
			g.Expect(drainable.Reason).To(Equal(machinev1beta1.MachineHookPresent))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(k.c.Get(ctx, machineKey("ocp-master-0"), old)).To(Succeed())
			g.Expect(k.node(ctx, "ocp-master-0")).NotTo(BeNil())
		}, 2*time.Second, 100*time.Millisecond).Should(Succeed())

		By("creating a replacement, as the ControlPlaneMachineSet controller would")
		repl := machineapi.Machine(machineapi.MachineSpec{Name: "ocp-master-3", InfraName: "ocp", Role: "master", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "m6i.xlarge"})
		Expect(k.c.Create(ctx, repl)).To(Succeed())
		Eventually(func(g Gomega) {
			err := k.c.Get(ctx, machineKey("ocp-master-0"), old)
			if apierrors.IsNotFound(err) {
				var r machinev1beta1.Machine
				g.Expect(k.c.Get(ctx, machineKey("ocp-master-3"), &r)).To(Succeed())
				if phase(&r) != machinev1beta1.PhaseRunning {
					StopTrying("the old control-plane machine was removed before its replacement was Running").Now()
				}
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(errors.New("old machine still exists")).NotTo(HaveOccurred())
		}, 30*time.Second, 20*time.Millisecond).Should(Succeed())

		By("the replacement carries the hook and the old node is gone")
		var r machinev1beta1.Machine
		Expect(k.c.Get(ctx, machineKey("ocp-master-3"), &r)).To(Succeed())
		Expect(r.Spec.LifecycleHooks.PreDrain).To(ContainElement(machinev1beta1.LifecycleHook{Name: etcd.HookName, Owner: etcd.HookOwner}))
		Expect(r.Status.NodeRef).NotTo(BeNil())
		Expect(r.Spec.ProviderID).NotTo(BeNil())
		n := k.node(ctx, "ocp-master-3")
		Expect(mco.IsReady(n)).To(BeTrue())
		Expect(n.Annotations[mco.StateAnnotation]).To(Equal(mco.StateDone))
		Expect(n.Annotations[mco.CurrentConfigAnnotation]).To(Equal(k.pool(ctx, "master").Spec.Configuration.Name))
		err := k.c.Get(ctx, types.NamespacedName{Name: "ocp-master-0"}, &corev1.Node{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "old node still exists: %v", err)
	}, NodeTimeout(2*time.Minute))
})

var _ = Describe("moving a node between pools with identical content", func() {
	It("is rebootless: no drain, no cordon, no reboot, only the uncordon handshake", func(ctx SpecContext) {
		const moved = "ocp-worker-us-east-1b-0"
		k := startCluster(ctx, ocpsim.Topology{Version: "4.16.1", Masters: 1, Workers: 2, CustomPools: []ocpsim.CustomPool{{Name: "infra", Nodes: 0}}},
			ocpsim.Options{TimeScale: 600})
		rec := startRecorder(ctx, k)
		before := k.node(ctx, moved).Annotations[mco.CurrentConfigAnnotation]
		n := k.node(ctx, moved)
		orig := n.DeepCopy()
		n.Labels["node-role.kubernetes.io/infra"] = ""
		Expect(k.c.Patch(ctx, n, client.MergeFrom(orig))).To(Succeed())
		Eventually(func(g Gomega) {
			p := k.pool(ctx, "infra")
			g.Expect(p.Status.MachineCount).To(Equal(int32(1)))
			g.Expect(condStatus(p.Status.Conditions, mcfgv1.MachineConfigPoolUpdated)).To(Equal(corev1.ConditionTrue))
			x := k.node(ctx, moved)
			g.Expect(x.Annotations[mco.CurrentConfigAnnotation]).To(Equal(p.Spec.Configuration.Name))
			g.Expect(x.Annotations[mco.StateAnnotation]).To(Equal(mco.StateDone))
			g.Expect(k.pool(ctx, "worker").Status.MachineCount).To(Equal(int32(1)))
		}, 20*time.Second, 50*time.Millisecond).Should(Succeed())
		after := k.node(ctx, moved).Annotations[mco.CurrentConfigAnnotation]
		Expect(after).NotTo(Equal(before))
		Expect(mco.SameContent(before, after)).To(BeTrue())
		steps, _ := rec.snapshot()
		Expect(steps[moved]).To(Equal([]string{"desiredConfig", "state=Working", "desiredDrain=uncordon", "lastAppliedDrain=uncordon", "state=Done+currentConfig"}))
	}, NodeTimeout(2*time.Minute))
})
