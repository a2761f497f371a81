package ocpsim_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/cvo"
	"github.com/upshift-io/upshift/tools/ocpsim/faults"
	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
)

var _ = Describe("faults", Ordered, func() {
	var k *cluster
	co := func(ctx SpecContext, name string) *configv1.ClusterOperator {
		var o configv1.ClusterOperator
		Expect(k.c.Get(ctx, types.NamespacedName{Name: name}, &o)).To(Succeed())
		return &o
	}
	coCond := func(o *configv1.ClusterOperator, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
		return cvo.FindCondition(o.Status.Conditions, t)
	}

	BeforeAll(func(ctx SpecContext) {
		k = startCluster(ctx, ocpsim.Topology{Version: "4.16.1", Masters: 3, Workers: 3, WorkerMaxUnavailable: "3"}, ocpsim.Options{
			TimeScale: 600,
			// a short payload keeps these tests quick
			Operators: []cvo.Operator{
				{Name: "etcd", RunLevel: 12, Duration: 2 * time.Minute, Namespace: "openshift-etcd"},
				{Name: "kube-apiserver", RunLevel: 20, Duration: 5 * time.Minute, Namespace: "openshift-kube-apiserver"},
				{Name: cvo.MachineConfig, RunLevel: 80, Duration: time.Minute, Namespace: "openshift-machine-config-operator"},
			},
		})
	}, NodeTimeout(2*time.Minute))

	It("refuses a desiredUpdate that is not an available update", func(ctx SpecContext) {
		k.desiredUpdate(ctx, "4.99.0")
		Eventually(func(g Gomega) {
			cv := k.cv(ctx)
			g.Expect(cvCond(cv, cvo.ReleaseAccepted)).NotTo(BeNil())
			g.Expect(cvCond(cv, cvo.ReleaseAccepted).Status).To(Equal(configv1.ConditionFalse))
			g.Expect(cvCond(cv, "Invalid")).NotTo(BeNil())
			g.Expect(cvCond(cv, "Invalid").Message).To(ContainSubstring("when image is empty the update must be a previous version or an available update"))
			g.Expect(cv.Status.History).To(HaveLen(1))
			g.Expect(cv.Status.Desired.Version).To(Equal("4.16.1"))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	})

	It("a degraded ClusterOperator reports Degraded and stops the update at its run level until it recovers", func(ctx SpecContext) {
		k.annotate(ctx, &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver"}}, faults.Annotation, string(faults.OperatorDegraded))
		Eventually(func(g Gomega) {
			c := coCond(co(ctx, "kube-apiserver"), configv1.OperatorDegraded)
			g.Expect(c.Status).To(Equal(configv1.ConditionTrue))
			g.Expect(c.Reason).To(Equal("InjectedFault"))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())

		k.desiredUpdate(ctx, "4.16.2")
		Eventually(func(g Gomega) {
			cv := k.cv(ctx)
			g.Expect(cv.Status.History[0].Version).To(Equal("4.16.2"))
			g.Expect(cv.Status.History[0].State).To(Equal(configv1.PartialUpdate))
			g.Expect(cvCond(cv, "Invalid")).To(BeNil())
			f := cvCond(cv, "Failing")
			g.Expect(f.Status).To(Equal(configv1.ConditionTrue))
			g.Expect(f.Reason).To(Equal("ClusterOperatorDegraded"))
			g.Expect(f.Message).To(Equal("Cluster operator kube-apiserver is degraded"))
			g.Expect(cvCond(cv, configv1.OperatorProgressing).Message).To(Equal("Unable to apply 4.16.2: the cluster operator kube-apiserver is degraded"))
			g.Expect(cvo.OperatorVersion(co(ctx, "etcd"))).To(Equal("4.16.2"))
		}, 20*time.Second, 50*time.Millisecond).Should(Succeed())
		Consistently(func() string { return cvo.OperatorVersion(co(ctx, "kube-apiserver")) }, 2*time.Second, 100*time.Millisecond).Should(Equal("4.16.1"))

		k.annotate(ctx, co(ctx, "kube-apiserver"), faults.Annotation, "")
		Eventually(func(g Gomega) {
			cv := k.cv(ctx)
			g.Expect(cv.Status.History[0].State).To(Equal(configv1.CompletedUpdate))
			g.Expect(cvCond(cv, "Failing").Status).To(Equal(configv1.ConditionFalse))
			g.Expect(coCond(co(ctx, "kube-apiserver"), configv1.OperatorDegraded).Status).To(Equal(configv1.ConditionFalse))
			g.Expect(condStatus(k.pool(ctx, "worker").Status.Conditions, mcfgv1.MachineConfigPoolUpdated)).To(Equal(corev1.ConditionTrue))
		}, 40*time.Second, 100*time.Millisecond).Should(Succeed())
	})

	It("an unavailable ClusterOperator reports Available=False until the fault is removed", func(ctx SpecContext) {
		k.annotate(ctx, co(ctx, "dns"), faults.Annotation, string(faults.OperatorUnavailable))
		Eventually(func(g Gomega) {
			c := coCond(co(ctx, "dns"), configv1.OperatorAvailable)
			g.Expect(c.Status).To(Equal(configv1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring("not available"))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		k.annotate(ctx, co(ctx, "dns"), faults.Annotation, "")
		Eventually(func() configv1.ConditionStatus { return coCond(co(ctx, "dns"), configv1.OperatorAvailable).Status }, 10*time.Second, 50*time.Millisecond).Should(Equal(configv1.ConditionTrue))
	})

	It("a Failing ClusterVersion reports Failing=True until the fault is removed", func(ctx SpecContext) {
		k.annotate(ctx, k.cv(ctx), faults.Annotation, string(faults.VersionFailing))
		Eventually(func(g Gomega) {
			f := cvCond(k.cv(ctx), "Failing")
			g.Expect(f.Status).To(Equal(configv1.ConditionTrue))
			g.Expect(f.Reason).To(Equal("UpdatePayloadFailed"))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		k.annotate(ctx, k.cv(ctx), faults.Annotation, "")
		Eventually(func() configv1.ConditionStatus { return cvCond(k.cv(ctx), "Failing").Status }, 10*time.Second, 50*time.Millisecond).Should(Equal(configv1.ConditionFalse))
	})

	It("node faults: a drain that never finishes, a node that never returns Ready, an Unreconcilable config", func(ctx SpecContext) {
		const stuck, dead, unrec = "ocp-worker-us-east-1a-0", "ocp-worker-us-east-1b-0", "ocp-worker-us-east-1c-0"
		k.annotate(ctx, k.node(ctx, stuck), faults.Annotation, string(faults.DrainStuck))
		k.annotate(ctx, k.node(ctx, dead), faults.Annotation, string(faults.NeverReady))
		k.annotate(ctx, k.node(ctx, unrec), faults.Annotation, string(faults.Unreconcilable))
		k.addConfig(ctx, "99-worker-faults", "worker", nil)
		Eventually(func(g Gomega) {
			s := k.node(ctx, stuck)
			g.Expect(s.Spec.Unschedulable).To(BeTrue())
			g.Expect(s.Annotations[mco.StateAnnotation]).To(Equal(mco.StateDegraded))
			g.Expect(s.Annotations[mco.ReasonAnnotation]).To(Equal(mco.DrainFailedReason(stuck)))
			g.Expect(s.Annotations[mco.LastAppliedDrainAnnotation]).To(HavePrefix("uncordon-"))

			d := k.node(ctx, dead)
			g.Expect(mco.IsReady(d)).To(BeFalse())
			g.Expect(d.Annotations[mco.PostConfigActionAnnotation]).To(Equal(mco.PostConfigRebooting))
			g.Expect(d.Annotations[mco.StateAnnotation]).To(Equal(mco.StateWorking))
			g.Expect(d.Annotations).NotTo(HaveKey(machineapi.KwokAnnotation))

			u := k.node(ctx, unrec)
			g.Expect(u.Annotations[mco.StateAnnotation]).To(Equal(mco.StateUnreconcilable))
			g.Expect(u.Annotations[mco.ReasonAnnotation]).To(HavePrefix("can't reconcile config"))
			g.Expect(u.Spec.Unschedulable).To(BeFalse())

			p := k.pool(ctx, "worker")
			g.Expect(p.Status.DegradedMachineCount).To(Equal(int32(2)))
			g.Expect(p.Status.UnavailableMachineCount).To(Equal(int32(2)))
			g.Expect(condStatus(p.Status.Conditions, mcfgv1.MachineConfigPoolDegraded)).To(Equal(corev1.ConditionTrue))
			g.Expect(condStatus(p.Status.Conditions, mcfgv1.MachineConfigPoolUpdated)).To(Equal(corev1.ConditionFalse))
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
		Consistently(func() bool { return mco.IsReady(k.node(ctx, dead)) }, 2*time.Second, 100*time.Millisecond).Should(BeFalse())
	})

	It("a Machine whose provisioning is stuck stays Provisioning until the fault is removed", func(ctx SpecContext) {
		m := machineapi.Machine(machineapi.MachineSpec{Name: "ocp-worker-stuck", InfraName: "ocp", Role: "worker", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "m6i.2xlarge"})
		m.Annotations = map[string]string{faults.Annotation: string(faults.ProvisionStuck)}
		Expect(k.c.Create(ctx, m)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k.c.Get(ctx, machineKey(m.Name), m)).To(Succeed())
			g.Expect(phase(m)).To(Equal(machinev1beta1.PhaseProvisioning))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		// Far longer than the simulated provisioning takes at this scale.
		Consistently(func(g Gomega) {
			g.Expect(k.c.Get(ctx, machineKey(m.Name), m)).To(Succeed())
			g.Expect(phase(m)).To(Equal(machinev1beta1.PhaseProvisioning))
			g.Expect(m.Spec.ProviderID).To(BeNil())
		}, 2*time.Second, 100*time.Millisecond).Should(Succeed())

		By("removing the fault lets it come up")
		orig := m.DeepCopy()
		delete(m.Annotations, faults.Annotation)
		Expect(k.c.Patch(ctx, m, client.MergeFrom(orig))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k.c.Get(ctx, machineKey(m.Name), m)).To(Succeed())
			g.Expect(phase(m)).To(Equal(machinev1beta1.PhaseRunning))
		}, 20*time.Second, 50*time.Millisecond).Should(Succeed())
	})

	It("a Machine that fails to provision goes to Failed and gets no Node", func(ctx SpecContext) {
		m := machineapi.Machine(machineapi.MachineSpec{Name: "ocp-worker-broken", InfraName: "ocp", Role: "worker", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "m6i.2xlarge"})
		m.Annotations = map[string]string{faults.Annotation: string(faults.ProvisionFailed)}
		Expect(k.c.Create(ctx, m)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k.c.Get(ctx, machineKey(m.Name), m)).To(Succeed())
			g.Expect(phase(m)).To(Equal(machinev1beta1.PhaseFailed))
			g.Expect(m.Status.ErrorReason).NotTo(BeNil())
			g.Expect(*m.Status.ErrorReason).To(Equal(machinev1beta1.InvalidConfigurationMachineError))
			g.Expect(m.Status.ErrorMessage).NotTo(BeNil())
			g.Expect(m.Spec.ProviderID).To(BeNil())
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		Consistently(func() bool {
			return apierrors.IsNotFound(k.c.Get(ctx, types.NamespacedName{Name: m.Name}, &corev1.Node{}))
		}, time.Second, 100*time.Millisecond).Should(BeTrue())

		By("a healthy Machine goes Provisioning → Provisioned → Running with a Node")
		ok := machineapi.Machine(machineapi.MachineSpec{Name: "ocp-worker-extra", InfraName: "ocp", Role: "worker", Region: "us-east-1", Zone: "us-east-1b", InstanceType: "m6i.2xlarge"})
		Expect(k.c.Create(ctx, ok)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k.c.Get(ctx, machineKey(ok.Name), ok)).To(Succeed())
			g.Expect(phase(ok)).To(Equal(machinev1beta1.PhaseRunning))
			g.Expect(ok.Status.NodeRef).NotTo(BeNil())
			n := k.node(ctx, ok.Name)
			g.Expect(n.Spec.ProviderID).To(Equal(*ok.Spec.ProviderID))
			g.Expect(n.Labels).To(HaveKeyWithValue("topology.kubernetes.io/zone", "us-east-1b"))
		}, 20*time.Second, 50*time.Millisecond).Should(Succeed())
	})

	It("MachineSet replicas create and delete Machines and their Nodes", func(ctx SpecContext) {
		ms := &machinev1beta1.MachineSet{}
		Expect(k.c.Get(ctx, machineKey("ocp-worker-us-east-1c"), ms)).To(Succeed())
		Expect(*ms.Spec.Replicas).To(Equal(int32(1)))
		orig := ms.DeepCopy()
		ms.Spec.Replicas = ptr.To(int32(2))
		Expect(k.c.Patch(ctx, ms, client.MergeFrom(orig))).To(Succeed())
		var added string
		Eventually(func(g Gomega) {
			var list machinev1beta1.MachineList
			g.Expect(k.c.List(ctx, &list, client.InNamespace(machineapi.Namespace), client.MatchingLabels{machineapi.MachineSetLabel: ms.Name})).To(Succeed())
			g.Expect(list.Items).To(HaveLen(2))
			for _, m := range list.Items {
				g.Expect(phase(&m)).To(Equal(machinev1beta1.PhaseRunning))
				if m.Name != "ocp-worker-us-east-1c-0" {
					added = m.Name
				}
			}
			g.Expect(k.c.Get(ctx, machineKey(ms.Name), ms)).To(Succeed())
			g.Expect(ms.Status.ReadyReplicas).To(Equal(int32(2)))
			n := k.node(ctx, added)
			g.Expect(n.Annotations[mco.StateAnnotation]).To(Equal(mco.StateDone))
			g.Expect(n.Annotations[mco.CurrentConfigAnnotation]).To(Equal(k.pool(ctx, "worker").Spec.Configuration.Name))
		}, 20*time.Second, 50*time.Millisecond).Should(Succeed())

		orig = ms.DeepCopy()
		ms.Spec.Replicas = ptr.To(int32(1))
		Expect(k.c.Patch(ctx, ms, client.MergeFrom(orig))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(k.c.Get(ctx, machineKey(added), &machinev1beta1.Machine{}))).To(BeTrue(), "newest machine %s removed", added)
			g.Expect(apierrors.IsNotFound(k.c.Get(ctx, types.NamespacedName{Name: added}, &corev1.Node{}))).To(BeTrue(), "its node removed")
			g.Expect(k.c.Get(ctx, machineKey("ocp-worker-us-east-1c-0"), &machinev1beta1.Machine{})).To(Succeed())
		}, 20*time.Second, 50*time.Millisecond).Should(Succeed())
	})
})
