package ocpsim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/cpmsoperator"
	"github.com/upshift-io/upshift/tools/ocpsim/cvo"
	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
)

// The control-plane-machine-set operator and the CVO around it, as a
// product that takes over control-plane Machines meets them: OnDelete
// replacements while the operator runs, none while its Deployment is
// scaled to zero, a cluster update that waits on the scaled-down operator,
// and the CVO's objection to an unmanaged override. One cluster, in order.
var _ = Describe("the control-plane-machine-set operator", Ordered, func() {
	var k *cluster
	const newInstanceType = "m6i.2xlarge"
	overridesMsg := "Disabling ownership via cluster version overrides prevents upgrades. Please remove overrides before continuing."

	co := func(ctx context.Context) *configv1.ClusterOperator {
		var o configv1.ClusterOperator
		Expect(k.c.Get(ctx, clusterKey(cpmsoperator.ClusterOperator), &o)).To(Succeed())
		return &o
	}
	coCond := func(o *configv1.ClusterOperator, t configv1.ClusterStatusConditionType) string {
		c := cvo.FindCondition(o.Status.Conditions, t)
		if c == nil {
			return ""
		}
		return fmt.Sprintf("%s %s %s", c.Status, c.Reason, c.Message)
	}
	// live lists the control-plane Machines of index i that are not being deleted.
	live := func(ctx context.Context, g Gomega, i int32) []machinev1beta1.Machine {
		var list machinev1beta1.MachineList
		g.Expect(k.c.List(ctx, &list, client.InNamespace(machineapi.Namespace), client.MatchingLabels{machineapi.RoleLabel: "master"})).To(Succeed())
		var out []machinev1beta1.Machine
		for _, m := range list.Items {
			if idx, ok := cpmsoperator.MachineIndex(m.Name); ok && idx == i && m.DeletionTimestamp == nil {
				out = append(out, m)
			}
		}
		return out
	}
	providerSpec := func(m *machinev1beta1.Machine) map[string]any {
		v := map[string]any{}
		Expect(json.Unmarshal(m.Spec.ProviderSpec.Value.Raw, &v)).To(Succeed())
		return v
	}
	scale := func(ctx context.Context, replicas int32) {
		var d appsv1.Deployment
		Expect(k.c.Get(ctx, cpmsoperator.Deployment, &d)).To(Succeed())
		orig := d.DeepCopy()
		d.Spec.Replicas = ptr.To(replicas)
		Expect(k.c.Patch(ctx, &d, client.MergeFrom(orig))).To(Succeed())
	}
	// replaced waits until index i has exactly one live Machine other than
	// old, Running with its Node, and old is gone; it returns the new one.
	replaced := func(ctx context.Context, i int32, old string) *machinev1beta1.Machine {
		GinkgoHelper()
		var repl *machinev1beta1.Machine
		Eventually(func(g Gomega) {
			ms := live(ctx, g, i)
			g.Expect(ms).To(HaveLen(1))
			g.Expect(ms[0].Name).NotTo(Equal(old))
			g.Expect(phase(&ms[0])).To(Equal(machinev1beta1.PhaseRunning))
			var gone machinev1beta1.Machine
			g.Expect(k.c.Get(ctx, machineKey(old), &gone)).NotTo(Succeed(), "the old machine is still there")
			repl = &ms[0]
		}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
		return repl
	}
	deleteMachine := func(ctx context.Context, name string) {
		Expect(k.c.Delete(ctx, &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: machineapi.Namespace, Name: name}})).To(Succeed())
		Eventually(func(g Gomega) {
			var m machinev1beta1.Machine
			g.Expect(k.c.Get(ctx, machineKey(name), &m)).To(Succeed())
			g.Expect(phase(&m)).To(Equal(machinev1beta1.PhaseDeleting))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	}

	// The payload's webhook is on: every spec below that writes the set
	// does so while the operator runs, and is admitted.
	simOpts := ocpsim.Options{
		TimeScale: 600,
		Operators: []cvo.Operator{
			{Name: "etcd", RunLevel: 12, Duration: time.Minute, Namespace: "openshift-etcd"},
			{Name: cvo.ControlPlaneMachineSet, RunLevel: 30, Duration: time.Minute, Namespace: "openshift-machine-api", Deployment: cvo.CPMSOperatorDeployment},
			{Name: cvo.MachineConfig, RunLevel: 80, Duration: time.Minute, Namespace: "openshift-machine-config-operator"},
		},
		PayloadWebhook: true,
	}
	// labelSet writes a new value of a label on the set (an UPDATE the
	// payload's webhook covers) and returns the apiserver's answer.
	labelN := 0
	labelSet := func(ctx context.Context) error {
		var set machinev1.ControlPlaneMachineSet
		if err := k.c.Get(ctx, machineKey(cpmsoperator.SetName), &set); err != nil {
			return err
		}
		orig := set.DeepCopy()
		labelN++
		set.Labels = map[string]string{"ocpsim-test": fmt.Sprint(labelN)}
		return k.c.Patch(ctx, &set, client.MergeFrom(orig))
	}
	refusedByWebhook := MatchError(ContainSubstring(`failed calling webhook "controlplanemachineset.machine.openshift.io"`))

	BeforeAll(func(ctx SpecContext) {
		k = startCluster(ctx, ocpsim.Topology{Version: "4.16.1", Masters: 3, Workers: 0, CPMSOperator: true,
			Graph: []string{"4.16.1", "4.16.2", "4.16.3", "4.17.0"}}, simOpts)
	}, NodeTimeout(2*time.Minute))

	It("reports its ClusterOperator while it runs", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			o := co(ctx)
			g.Expect(coCond(o, configv1.OperatorAvailable)).To(Equal("True AllReplicasAvailable "))
			g.Expect(coCond(o, configv1.OperatorProgressing)).To(Equal("False AllReplicasUpdated "))
			g.Expect(coCond(o, configv1.OperatorDegraded)).To(Equal("False AsExpected "))
			g.Expect(coCond(o, configv1.OperatorUpgradeable)).To(Equal("True AsExpected cluster operator is upgradable"))
			g.Expect(o.Status.Versions).To(Equal([]configv1.OperandVersion{{Name: "operator", Version: "4.16.1"}}))
			g.Expect(o.Status.RelatedObjects).To(Equal(cpmsoperator.RelatedObjects()))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	})

	It("replaces a deleted outdated master under OnDelete with exactly one Machine in the same index", func(ctx SpecContext) {
		var set machinev1.ControlPlaneMachineSet
		Expect(k.c.Get(ctx, machineKey(cpmsoperator.SetName), &set)).To(Succeed())
		orig := set.DeepCopy()
		set.Spec.Strategy.Type = machinev1.OnDelete
		set.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value = machineapi.NewProviderSpec("us-east-1", "us-east-1a", newInstanceType)
		Expect(k.c.Patch(ctx, &set, client.MergeFrom(orig))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(coCond(co(ctx), configv1.OperatorProgressing)).To(Equal("True NeedsUpdateReplicas Observed 3 replica(s) in need of update"))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(live(ctx, g, 1)).To(HaveLen(1), "OnDelete replaces nothing that is not deleted")
		}, 500*time.Millisecond, 50*time.Millisecond).Should(Succeed())

		deleteMachine(ctx, "ocp-master-1")
		repl := replaced(ctx, 1, "ocp-master-1")
		Expect(repl.Name).To(MatchRegexp(`^ocp-master-[a-z0-9]{5}-1$`))
		ps := providerSpec(repl)
		Expect(ps["instanceType"]).To(Equal(newInstanceType), "the template's spec")
		Expect(ps["placement"]).To(HaveKeyWithValue("availabilityZone", "us-east-1b"), "the deleted machine's zone")
		Expect(repl.Labels).To(Equal(set.Spec.Template.OpenShiftMachineV1Beta1Machine.ObjectMeta.Labels))
		owner := metav1.GetControllerOf(repl)
		Expect(owner).NotTo(BeNil())
		Expect(owner.Kind).To(Equal("ControlPlaneMachineSet"))
		Expect(owner.UID).To(Equal(set.UID))
		Consistently(func(g Gomega) {
			g.Expect(live(ctx, g, 1)).To(HaveLen(1), "a second replacement in index 1")
		}, time.Second, 50*time.Millisecond).Should(Succeed())

		Eventually(func(g Gomega) {
			var evs eventsv1.EventList
			g.Expect(k.c.List(ctx, &evs, client.InNamespace(machineapi.Namespace))).To(Succeed())
			var notes []string
			for _, e := range evs.Items {
				if e.Regarding.Kind == "ControlPlaneMachineSet" && e.Reason == cpmsoperator.EventCreated {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(ConsistOf("created machine: " + repl.Name))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(coCond(co(ctx), configv1.OperatorProgressing)).To(Equal("True NeedsUpdateReplicas Observed 2 replica(s) in need of update"), "masters 0 and 2 are still outdated")
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	}, NodeTimeout(time.Minute))

	It("creates nothing while its Deployment is scaled to zero, and replaces the machine once it runs again", func(ctx SpecContext) {
		scale(ctx, 0)
		deleteMachine(ctx, "ocp-master-2")
		// 1.5 s is 15 simulated minutes: a running operator replaces within one.
		Consistently(func(g Gomega) {
			g.Expect(live(ctx, g, 2)).To(BeEmpty())
			var old machinev1beta1.Machine
			g.Expect(k.c.Get(ctx, machineKey("ocp-master-2"), &old)).To(Succeed(), "the etcd hook keeps the old machine until it is replaced")
		}, 1500*time.Millisecond, 50*time.Millisecond).Should(Succeed())

		scale(ctx, 1)
		repl := replaced(ctx, 2, "ocp-master-2")
		Expect(providerSpec(repl)["placement"]).To(HaveKeyWithValue("availabilityZone", "us-east-1c"))
	}, NodeTimeout(time.Minute))

	It("installs the payload's webhook, which admits set updates while the operator runs and refuses them, not status writes, while it is scaled to zero", func(ctx SpecContext) {
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		Expect(k.c.Get(ctx, clusterKey(cpmsoperator.WebhookConfiguration), &vwc)).To(Succeed())
		Expect(vwc.Webhooks).To(HaveLen(1))
		wh := vwc.Webhooks[0]
		Expect(wh.Name).To(Equal("controlplanemachineset.machine.openshift.io"))
		Expect(wh.Rules).To(Equal([]admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"machine.openshift.io"}, APIVersions: []string{"v1"},
				Resources: []string{"controlplanemachinesets"}, Scope: ptr.To(admissionregistrationv1.AllScopes)},
		}}))
		Expect(*wh.FailurePolicy).To(Equal(admissionregistrationv1.Fail))
		Expect(*wh.SideEffects).To(Equal(admissionregistrationv1.SideEffectClassNone))
		Expect(*wh.ClientConfig.URL).To(MatchRegexp(`^https://127\.0\.0\.1:[0-9]+/validate-machine-openshift-io-v1-controlplanemachineset$`))
		Expect(wh.ClientConfig.CABundle).NotTo(BeEmpty())

		Expect(labelSet(ctx)).To(Succeed(), "the operator runs: admitted")

		scale(ctx, 0)
		var refusal error
		Eventually(func(g Gomega) {
			refusal = labelSet(ctx)
			g.Expect(refusal).To(refusedByWebhook)
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("refused: %v\n", refusal)
		Expect(apierrors.IsInternalError(refusal)).To(BeTrue(), "%v", refusal)

		// The rules do not cover the status subresource.
		var set machinev1.ControlPlaneMachineSet
		Expect(k.c.Get(ctx, machineKey(cpmsoperator.SetName), &set)).To(Succeed())
		orig := set.DeepCopy()
		set.Status.ObservedGeneration = set.Generation
		set.Status.Replicas = 3
		Expect(k.c.Status().Patch(ctx, &set, client.MergeFrom(orig))).To(Succeed(), "a status write while the operator is scaled to zero")
		Expect(labelSet(ctx)).To(refusedByWebhook, "still refused")

		scale(ctx, 1)
		Eventually(labelSet).WithContext(ctx).WithTimeout(10*time.Second).WithPolling(50*time.Millisecond).Should(Succeed(), "the operator runs again: admitted")
	}, NodeTimeout(time.Minute))

	It("stalls a cluster update at control-plane-machine-set while scaled to zero, and lets it finish once it runs", func(ctx SpecContext) {
		scale(ctx, 0)
		k.desiredUpdate(ctx, "4.16.2")
		stalled := func(g Gomega) {
			cv := k.cv(ctx)
			g.Expect(cv.Status.History[0].Version).To(Equal("4.16.2"))
			g.Expect(cv.Status.History[0].State).To(Equal(configv1.PartialUpdate))
			g.Expect(cvCond(cv, configv1.OperatorProgressing).Message).To(Equal("Working towards 4.16.2: 1 of 3 done (33% complete), waiting on control-plane-machine-set"))
			g.Expect(cvo.OperatorVersion(co(ctx))).To(Equal("4.16.1"))
		}
		Eventually(stalled, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		Consistently(stalled, time.Second, 50*time.Millisecond).Should(Succeed())
		var d appsv1.Deployment
		Expect(k.c.Get(ctx, cpmsoperator.Deployment, &d)).To(Succeed())
		Expect(cpmsoperator.ReleaseVersion(&d)).To(Equal("4.16.2"), "the CVO has rolled the operator's Deployment out")
		Expect(cvo.OperatorContainer(&d).Image).To(Equal(cvo.CPMSOperatorImage(cvo.ReleaseImage("4.16.2"))))

		scale(ctx, 1)
		Eventually(func(g Gomega) {
			cv := k.cv(ctx)
			g.Expect(cv.Status.History[0].State).To(Equal(configv1.CompletedUpdate))
			g.Expect(cvCond(cv, configv1.OperatorProgressing).Message).To(Equal("Cluster version is 4.16.2"))
		}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
		Expect(co(ctx).Status.Versions).To(Equal([]configv1.OperandVersion{{Name: "operator", Version: "4.16.2"}}))
	}, NodeTimeout(90*time.Second))

	It("an unmanaged override makes the CVO report Upgradeable=False and, on 4.16, refuse every update until it is removed", func(ctx SpecContext) {
		setOverrides := func(o []configv1.ComponentOverride) {
			cv := k.cv(ctx)
			orig := cv.DeepCopy()
			cv.Spec.Overrides = o
			Expect(k.c.Patch(ctx, cv, client.MergeFrom(orig))).To(Succeed())
		}
		setOverrides([]configv1.ComponentOverride{{Kind: "Deployment", Group: "apps", Namespace: cpmsoperator.Deployment.Namespace, Name: cpmsoperator.Deployment.Name, Unmanaged: true}})
		Eventually(func(g Gomega) {
			u := cvCond(k.cv(ctx), configv1.OperatorUpgradeable)
			g.Expect(u).NotTo(BeNil())
			g.Expect(u.Status).To(Equal(configv1.ConditionFalse))
			g.Expect(u.Reason).To(Equal("ClusterVersionOverridesSet"))
			g.Expect(u.Message).To(Equal(overridesMsg))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())

		refused := func(version string) func(Gomega) {
			return func(g Gomega) {
				cv := k.cv(ctx)
				ra := cvCond(cv, cvo.ReleaseAccepted)
				g.Expect(ra.Status).To(Equal(configv1.ConditionFalse))
				g.Expect(ra.Reason).To(Equal("PreconditionChecks"))
				g.Expect(ra.Message).To(Equal(fmt.Sprintf(`Preconditions failed for payload loaded version=%q image=%q: Precondition "ClusterVersionUpgradeable" failed because of "ClusterVersionOverridesSet": %s`,
					version, cvo.ReleaseImage(version), overridesMsg)))
				g.Expect(cv.Status.Desired.Version).To(Equal("4.16.2"))
			}
		}
		k.desiredUpdate(ctx, "4.17.0")
		Eventually(refused("4.17.0"), 10*time.Second, 50*time.Millisecond).Should(Succeed())
		k.desiredUpdate(ctx, "4.16.3")
		Eventually(refused("4.16.3"), 10*time.Second, 50*time.Millisecond).Should(Succeed())
		Consistently(refused("4.16.3"), 500*time.Millisecond, 50*time.Millisecond).Should(Succeed())

		setOverrides(nil)
		Eventually(func(g Gomega) {
			cv := k.cv(ctx)
			g.Expect(cvCond(cv, configv1.OperatorUpgradeable)).To(BeNil())
			g.Expect(cvCond(cv, cvo.ReleaseAccepted).Status).To(Equal(configv1.ConditionTrue))
			g.Expect(cv.Status.History[0].Version).To(Equal("4.16.3"), "the refused update starts by itself")
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	}, NodeTimeout(time.Minute))

	It("removes the payload's webhook when the simulator stops, and installs it again when one with the option runs", func(ctx SpecContext) {
		scale(ctx, 0)
		Eventually(func(g Gomega) { g.Expect(labelSet(ctx)).To(refusedByWebhook) }, 10*time.Second, 50*time.Millisecond).Should(Succeed())

		without := simOpts
		without.PayloadWebhook = false
		Expect(k.sim.Restart(without)).To(Succeed())
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		Expect(apierrors.IsNotFound(k.c.Get(ctx, clusterKey(cpmsoperator.WebhookConfiguration), &vwc))).To(BeTrue(), "the stopped simulator removed it")
		Expect(labelSet(ctx)).To(Succeed(), "no webhook: admitted while the operator is scaled to zero")

		Expect(k.sim.Restart(simOpts)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(labelSet(ctx)).To(refusedByWebhook) }, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		scale(ctx, 1)
		Eventually(labelSet).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	}, NodeTimeout(time.Minute))
})
