package controller_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/upshift-io/upshift/libs/metricstest"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/cpms/controller"
	"github.com/upshift-io/upshift/services/cpms/plan"
	"github.com/upshift-io/upshift/services/cpms/platform"
	"github.com/upshift-io/upshift/tools/ocpsim/faults"
	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
)

var setKey = types.NamespacedName{Namespace: controller.Namespace, Name: controller.Name}

func getSet(ctx context.Context, g Gomega) *machinev1.ControlPlaneMachineSet {
	c := &machinev1.ControlPlaneMachineSet{}
	g.Expect(env.Client.Get(ctx, setKey, c)).To(Succeed())
	return c
}

func machines(ctx context.Context, g Gomega) []machinev1beta1.Machine {
	var list machinev1beta1.MachineList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(controller.Namespace))).To(Succeed())
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// setInstanceType changes the template's instance type (and, optionally,
// the strategy) and returns the new generation.
func setInstanceType(ctx context.Context, instanceType string, strategy machinev1.ControlPlaneMachineSetStrategyType) int64 {
	GinkgoHelper()
	var gen int64
	Eventually(func(g Gomega) {
		c := getSet(ctx, g)
		c.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value = machineapi.NewProviderSpec(region, "", instanceType)
		if strategy != "" {
			c.Spec.Strategy.Type = strategy
		}
		g.Expect(env.Client.Update(ctx, c)).To(Succeed())
		gen = c.Generation
	}).Should(Succeed())
	return gen
}

// settled: every index holds one Running machine of instanceType in its
// zone, nothing else exists, and the status says so for generation gen.
func settled(ctx context.Context, instanceType string, gen int64) func(Gomega) {
	return func(g Gomega) {
		ms := machines(ctx, g)
		g.Expect(ms).To(HaveLen(3))
		for _, m := range ms {
			ps := machineapi.ReadProviderSpec(&m)
			g.Expect(ps.InstanceType).To(Equal(instanceType), m.Name)
			g.Expect(m.DeletionTimestamp).To(BeNil(), m.Name)
			g.Expect(ptr.Deref(m.Status.Phase, "")).To(Equal(machinev1beta1.PhaseRunning), m.Name)
			i, ok := platform.IndexFromName(m.Name)
			g.Expect(ok).To(BeTrue(), m.Name)
			g.Expect(ps.Placement.AvailabilityZone).To(Equal(zones[i]), m.Name)
		}
		c := getSet(ctx, g)
		g.Expect(c.Status.ObservedGeneration).To(Equal(gen))
		g.Expect(c.Status.Replicas).To(BeEquivalentTo(3))
		g.Expect(c.Status.ReadyReplicas).To(BeEquivalentTo(3))
		g.Expect(c.Status.UpdatedReplicas).To(BeEquivalentTo(3))
		g.Expect(c.Status.UnavailableReplicas).To(BeEquivalentTo(0))
		expectCondition(g, c, plan.ConditionAvailable, metav1.ConditionTrue, plan.ReasonAllReplicasAvailable)
		expectCondition(g, c, plan.ConditionDegraded, metav1.ConditionFalse, plan.ReasonAsExpected)
		expectCondition(g, c, plan.ConditionProgressing, metav1.ConditionFalse, plan.ReasonAllReplicasUpdated)
	}
}

func expectCondition(g Gomega, c *machinev1.ControlPlaneMachineSet, t string, s metav1.ConditionStatus, reason string) {
	cond := meta.FindStatusCondition(c.Status.Conditions, t)
	g.Expect(cond).NotTo(BeNil(), t)
	g.Expect(cond.Status).To(Equal(s), "%s: %s", t, cond.Message)
	g.Expect(cond.Reason).To(Equal(reason), "%s: %s", t, cond.Message)
	g.Expect(cond.ObservedGeneration).To(Equal(c.Generation), t)
}

// controllerMachineCreates returns the Machine creates the controller's
// identity made, by HTTP status, in audit-log order.
func controllerMachineCreates() map[int][]string {
	GinkgoHelper()
	evs, err := env.AuditEvents(controllerUser)
	Expect(err).NotTo(HaveOccurred())
	out := map[int][]string{}
	for _, e := range evs {
		if e.Verb == "create" && e.ObjectRef != nil && e.ObjectRef.Resource == "machines" && e.ResponseStatus != nil {
			out[e.ResponseStatus.Code] = append(out[e.ResponseStatus.Code], e.ObjectRef.Name)
		}
	}
	return out
}

// statusWrites counts the controller's writes of the set's status.
func statusWrites() int {
	GinkgoHelper()
	evs, err := env.AuditEvents(controllerUser)
	Expect(err).NotTo(HaveOccurred())
	return testenv.Writes(evs, "controlplanemachinesets", "status")
}

// setEvents are the Events on the set with the given reason.
func setEvents(ctx context.Context, g Gomega, reason string) []string {
	var list eventsv1.EventList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(controller.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "ControlPlaneMachineSet" && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	sort.Strings(out)
	return out
}

// scrape returns the series of a metric as the running controller's process
// would serve it (controller-runtime's metrics and the controller's own) as
// "label=value,..." -> value (a histogram's count as "<labels>#count").
func scrape(name string) map[string]float64 {
	GinkgoHelper()
	out, err := metricstest.Series(prometheus.Gatherers{ctrlmetrics.Registry, controllerMetrics}, name)
	Expect(err).NotTo(HaveOccurred())
	return out
}

var _ = Describe("cpms-controller", Ordered, func() {
	var stop func()
	cfg := plan.DefaultConfig()
	AfterAll(func() {
		if stop != nil {
			stop()
		}
	})

	BeforeAll(func(ctx context.Context) {
		seedMachines(ctx)
	})

	It("has its webhook refuse, in the apiserver, what the schema cannot", func(ctx context.Context) {
		refused := func(c *machinev1.ControlPlaneMachineSet, fragments ...string) {
			GinkgoHelper()
			err := env.Client.Create(ctx, c)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			for _, f := range fragments {
				Expect(err.Error()).To(ContainSubstring(f))
			}
		}
		c := controlPlaneSet(machinev1.ControlPlaneMachineSetStateActive)
		c.Spec.Selector.MatchLabels[machineapi.TypeLabel] = "control-plane"
		refused(c, `admission webhook "controlplanemachineset.cpms.upshift.io" denied the request`,
			"spec.selector: Invalid value", "does not match the template labels")

		c = controlPlaneSet(machinev1.ControlPlaneMachineSetStateActive)
		c.Spec.Replicas = ptr.To(int32(5))
		refused(c, "spec.replicas: Invalid value: 5: 3 control-plane machines match spec.selector (c1-master-0, c1-master-1, c1-master-2)")

		c = controlPlaneSet(machinev1.ControlPlaneMachineSetStateActive)
		fds := (*c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains.AWS)[:2]
		c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains.AWS = &fds
		refused(c, "spec.template.machines_v1beta1_machine_openshift_io.failureDomains: Invalid value", "machine c1-master-2 is in AWS{availabilityZone=us-east-1c}, which the set does not declare")

		// The upstream webhook counts machines on create only: an Inactive
		// set with five replicas could be activated over three machines.
		c = controlPlaneSet(machinev1.ControlPlaneMachineSetStateInactive)
		c.Spec.Replicas = ptr.To(int32(5))
		Expect(env.Client.Create(ctx, c)).To(Succeed())
		c.Spec.State = machinev1.ControlPlaneMachineSetStateActive
		err := env.Client.Update(ctx, c)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.replicas: Invalid value: 5"))
		Expect(env.Client.Delete(ctx, c)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(ctx, setKey, c)) }).Should(BeTrue())
	})

	It("activates over the installer's masters by adopting them, replacing none", func(ctx context.Context) {
		w := watchMachines(ctx)
		c := controlPlaneSet(machinev1.ControlPlaneMachineSetStateActive)
		Expect(env.Client.Create(ctx, c)).To(Succeed())
		stop = startController(cfg)
		Eventually(func(g Gomega) {
			c := getSet(ctx, g)
			g.Expect(c.Finalizers).To(ContainElement(controller.Finalizer))
			for _, m := range machines(ctx, g) {
				ref := metav1.GetControllerOf(&m)
				g.Expect(ref).NotTo(BeNil(), m.Name)
				g.Expect(ref.UID).To(Equal(c.UID), m.Name)
			}
		}).Should(Succeed())
		Eventually(settled(ctx, "m6i.xlarge", 1)).Should(Succeed())
		Eventually(func(g Gomega) []string { return setEvents(ctx, g, "Adopted") }).Should(ConsistOf(
			"Adopted machines c1-master-0, c1-master-1, c1-master-2"))
		violations, added, _, _ := w.report()
		Expect(violations).To(BeEmpty())
		Expect(added).To(BeEmpty())
		Expect(controllerMachineCreates()).To(BeEmpty())

		By("a pass that changes nothing writes nothing")
		writes0 := statusWrites()
		reconciles0 := scrape("controller_runtime_reconcile_total")["controller=cpms,result=success"]
		Eventually(func(g Gomega) {
			m := &machinev1beta1.Machine{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: controller.Namespace, Name: "c1-master-0"}, m)).To(Succeed())
			m.Annotations = map[string]string{"example.com/touched": "yes"}
			g.Expect(env.Client.Update(ctx, m)).To(Succeed())
		}).Should(Succeed())
		Eventually(func() float64 {
			return scrape("controller_runtime_reconcile_total")["controller=cpms,result=success"]
		}).Should(BeNumerically(">", reconciles0))
		Expect(statusWrites()).To(Equal(writes0))
	})

	It("rolls the three masters one index at a time after an instance-type change", func(ctx context.Context) {
		w := watchMachines(ctx)
		created0 := scrape("upshift_cpms_actions_total")["kind=CreateMachine,result=success"]
		durations0 := scrape("upshift_cpms_replacement_duration_seconds")["#count"]
		hookWaits0 := scrape("upshift_cpms_etcd_hook_wait_duration_seconds")["#count"]
		start := time.Now()
		gen := setInstanceType(ctx, "m6i.2xlarge", "")
		Eventually(settled(ctx, "m6i.2xlarge", gen), 2*time.Minute).Should(Succeed())
		AddReportEntry("rolling update of 3 masters (simulated launch+join 6 min at 600x), wall", time.Since(start).Round(time.Millisecond).String())

		violations, added, maxMachines, events := w.report()
		Expect(violations).To(BeEmpty())
		// One replacement per index, lowest index first, and the surge used.
		Expect(added).To(HaveLen(3))
		for i, name := range added {
			idx, _ := platform.IndexFromName(name)
			Expect(idx).To(Equal(i), "replacements in order %v", added)
		}
		Expect(maxMachines).To(Equal(4))
		AddReportEntry("machine events watched during the rollout", events)
		react := w.reaction()
		Expect(react).To(HaveLen(3))
		AddReportEntry("replacement Running with a Ready Node -> old machine deleting (p50, max)", fmt.Sprintf("%v, %v", react[1].Round(time.Millisecond), react[2].Round(time.Millisecond)))

		Eventually(func(g Gomega) {
			created := setEvents(ctx, g, "Created")
			deleted := setEvents(ctx, g, "Deleted")
			for i, name := range added {
				g.Expect(created).To(ContainElement(And(HavePrefix(fmt.Sprintf("Created machine %s in index %d (AWS{availabilityZone=%s}) to replace c1-master-%d:", name, i, zones[i], i)),
					ContainSubstring(`instanceType: "m6i.xlarge" -> "m6i.2xlarge"`))))
				g.Expect(deleted).To(ContainElement(HavePrefix(fmt.Sprintf("Deleted machine c1-master-%d in index %d: replaced by %s", i, i, name))))
			}
		}).Should(Succeed())

		By("metrics")
		Expect(scrape("upshift_cpms_actions_total")["kind=CreateMachine,result=success"] - created0).To(BeEquivalentTo(3))
		Expect(scrape("upshift_cpms_replacement_duration_seconds")["#count"] - durations0).To(BeEquivalentTo(3))
		Expect(scrape("upshift_cpms_etcd_hook_wait_duration_seconds")["#count"] - hookWaits0).To(BeNumerically(">=", 1))
		Expect(scrape("upshift_cpms_etcd_hook_wait_start_timestamp_seconds")).To(BeEmpty())
		states := scrape("upshift_cpms_index_state")
		for i := range 3 {
			Expect(states[fmt.Sprintf("index=%d,state=Stable", i)]).To(BeEquivalentTo(1))
			Expect(states[fmt.Sprintf("index=%d,state=ReplacementProvisioning", i)]).To(BeEquivalentTo(0))
		}
		Expect(scrape("upshift_cpms_replicas")).To(Equal(map[string]float64{
			"kind=desired": 3, "kind=current": 3, "kind=ready": 3, "kind=updated": 3, "kind=unavailable": 0}))
		for _, v := range scrape("upshift_cpms_blocked") {
			Expect(v).To(BeZero())
		}
	})

	It("never makes a second replacement for an index when restarted throughout a rollout", func(ctx context.Context) {
		w := watchMachines(ctx)
		before := controllerMachineCreates()
		gen := setInstanceType(ctx, "m6i.4xlarge", "")
		restarts := 0
		done := settled(ctx, "m6i.4xlarge", gen)
		finished := func() bool { return InterceptGomegaFailure(func() { done(Default) }) == nil }
		for !finished() {
			// Stop and start a new controller every few machine events, at
			// whatever step the rollout is in.
			_, _, _, seen := w.report()
			Eventually(func() bool {
				_, _, _, n := w.report()
				return n >= seen+4 || finished()
			}, 2*time.Minute).Should(BeTrue())
			stop()
			stop = startController(cfg)
			restarts++
		}
		AddReportEntry("controller restarts during the rollout", restarts)
		Expect(restarts).To(BeNumerically(">=", 5))

		violations, added, maxMachines, _ := w.report()
		Expect(violations).To(BeEmpty())
		Expect(maxMachines).To(BeNumerically("<=", 4))
		Expect(added).To(HaveLen(3))
		after := controllerMachineCreates()
		ok := after[201][len(before[201]):]
		perIndex := map[int][]string{}
		for _, name := range ok {
			i, _ := platform.IndexFromName(name)
			perIndex[i] = append(perIndex[i], name)
		}
		// added (the watch) shows the three replacements were made. A stop
		// can cut a create off after it took effect, leaving a 504 in the
		// audit log and no success, so an index may have none here; none
		// may have two.
		Expect(len(perIndex)).To(BeNumerically("<=", 3), "creates %v", ok)
		for i, names := range perIndex {
			Expect(names).To(HaveLen(1), "index %d created %v", i, names)
		}
		AddReportEntry("machine creates refused with AlreadyExists during the restarts", len(after[409])-len(before[409]))
	})

	It("holds the next replacement while the etcd operator is Degraded, and resumes when it recovers", func(ctx context.Context) {
		w := watchMachines(ctx)
		co := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "etcd"}}
		Expect(env.Client.Create(ctx, co)).To(Succeed())
		setDegraded := func(s configv1.ConditionStatus) {
			GinkgoHelper()
			co.Status.Conditions = []configv1.ClusterOperatorStatusCondition{
				{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, LastTransitionTime: metav1.Now()},
				{Type: configv1.OperatorDegraded, Status: s, Reason: "EtcdMembersDegraded", Message: "2 of 3 members are available", LastTransitionTime: metav1.Now()},
			}
			Expect(env.Client.Status().Update(ctx, co)).To(Succeed())
		}
		setDegraded(configv1.ConditionTrue)
		gen := setInstanceType(ctx, "m6i.large", "")
		Eventually(func(g Gomega) {
			c := getSet(ctx, g)
			g.Expect(c.Status.ObservedGeneration).To(Equal(gen))
			expectCondition(g, c, plan.ConditionProgressing, metav1.ConditionTrue, plan.ReasonEtcdDegraded)
			g.Expect(meta.FindStatusCondition(c.Status.Conditions, plan.ConditionProgressing).Message).To(ContainSubstring(
				"index 0: Blocked: clusteroperator/etcd is Degraded: 2 of 3 members are available"))
		}).Should(Succeed())
		Expect(scrape("upshift_cpms_blocked")["reason=EtcdDegraded"]).To(BeEquivalentTo(1))
		Expect(scrape("upshift_cpms_index_state")["index=0,state=Blocked"]).To(BeEquivalentTo(1))
		Eventually(func(g Gomega) []string { return setEvents(ctx, g, plan.ReasonEtcdDegraded) }).Should(ContainElement(
			ContainSubstring("Progressing=True: index 0: Blocked: clusteroperator/etcd is Degraded")))
		_, added, _, _ := w.report()
		Expect(added).To(BeEmpty(), "a replacement started while etcd was Degraded")

		setDegraded(configv1.ConditionFalse)
		Eventually(settled(ctx, "m6i.large", gen), 2*time.Minute).Should(Succeed())
		Expect(scrape("upshift_cpms_blocked")["reason=EtcdDegraded"]).To(BeEquivalentTo(0))
		violations, added, _, _ := w.report()
		Expect(violations).To(BeEmpty())
		Expect(added).To(HaveLen(3))
	})

	It("holds the next replacement while a cluster update is in progress, without calling it a fault, and resumes after it", func(ctx context.Context) {
		w := watchMachines(ctx)
		cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}, Spec: configv1.ClusterVersionSpec{ClusterID: "6b2f1d6e-4c5a-4f3e-9a57-0f8a5b7c2d10"}}
		Expect(env.Client.Create(ctx, cv)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, cv)).To(Succeed()) })
		setProgressing := func(s configv1.ConditionStatus) {
			GinkgoHelper()
			cv.Status.Conditions = []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorProgressing, Status: s,
				Message: "Working towards 4.16.2: 512 of 903 done (56% complete)", LastTransitionTime: metav1.Now()}}
			Expect(env.Client.Status().Update(ctx, cv)).To(Succeed())
		}
		setProgressing(configv1.ConditionTrue)
		gen := setInstanceType(ctx, "m6i.xlarge", "")
		Eventually(func(g Gomega) {
			c := getSet(ctx, g)
			g.Expect(c.Status.ObservedGeneration).To(Equal(gen))
			expectCondition(g, c, plan.ConditionProgressing, metav1.ConditionTrue, plan.ReasonClusterUpdating)
			g.Expect(meta.FindStatusCondition(c.Status.Conditions, plan.ConditionProgressing).Message).To(ContainSubstring(
				"index 0: ReplacementRequested: a cluster update is in progress (ClusterVersion Progressing: Working towards 4.16.2"))
		}).Should(Succeed())
		Eventually(func(g Gomega) []string { return setEvents(ctx, g, plan.ReasonClusterUpdating) }).Should(ContainElement(
			ContainSubstring("the next replacement starts when it completes")))
		Expect(scrape("upshift_cpms_index_state")["index=0,state=Blocked"]).To(BeEquivalentTo(0), "an update is no fault")
		_, added, _, _ := w.report()
		Expect(added).To(BeEmpty(), "a replacement started during a cluster update")

		By("a cache that has not seen the update yet decides a replacement; the apiserver does not confirm it")
		stale := cv.DeepCopy()
		stale.Status.Conditions = nil
		a, ok, err := controller.ConfirmWithStaleClusterVersion(ctx, env.Client, plan.DefaultConfig(), stale)
		Expect(err).NotTo(HaveOccurred())
		Expect(a).NotTo(BeNil(), "the stale snapshot plans a replacement")
		Expect(a.Kind).To(BeElementOf(plan.CreateMachine, plan.DeleteMachine))
		Expect(ok).To(BeFalse(), "confirmed %s of index %d during a cluster update", a.Kind, a.Index)

		// Confirmed decisions are every replacement the other specs make.

		setProgressing(configv1.ConditionFalse)
		Eventually(settled(ctx, "m6i.xlarge", gen), 2*time.Minute).Should(Succeed())
		violations, added, _, _ := w.report()
		Expect(violations).To(BeEmpty())
		Expect(added).To(HaveLen(3))
	})

	It("with remediation on, deletes and retries a failed replacement within its budget, then reports it spent", func(ctx context.Context) {
		stop()
		rem := cfg
		rem.Remediation = plan.Remediation{Enabled: true, MaxRetries: 2, RetryPeriod: time.Second}
		stop = startController(rem)
		w := watchMachines(ctx)
		remediated0 := scrape("upshift_cpms_actions_total")["kind=Remediate,result=success"]
		// Every machine made from this template fails to launch (ocpsim's
		// ProvisionFailed fault, copied onto new machines from the template).
		var gen int64
		Eventually(func(g Gomega) {
			c := getSet(ctx, g)
			t := c.Spec.Template.OpenShiftMachineV1Beta1Machine
			t.Spec.ProviderSpec.Value = machineapi.NewProviderSpec(region, "", "m7i.xlarge")
			t.ObjectMeta.Annotations = map[string]string{faults.Annotation: string(faults.ProvisionFailed)}
			g.Expect(env.Client.Update(ctx, c)).To(Succeed())
			gen = c.Generation
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			c := getSet(ctx, g)
			g.Expect(c.Status.ObservedGeneration).To(Equal(gen))
			expectCondition(g, c, plan.ConditionDegraded, metav1.ConditionTrue, plan.ReasonFailedReplacement)
			msg := meta.FindStatusCondition(c.Status.Conditions, plan.ConditionDegraded).Message
			g.Expect(msg).To(ContainSubstring("error launching instance"))
			g.Expect(msg).To(ContainSubstring("remediation retries exhausted (2 of 2)"))
			b, err := plan.ParseBudget(c.Annotations[plan.RemediationAnnotation])
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(b).To(HaveKeyWithValue("0", HaveField("Retries", 2)))
		}, 2*time.Minute).Should(Succeed())
		Expect(scrape("upshift_cpms_blocked")["reason=FailedReplacement"]).To(BeEquivalentTo(1))
		Expect(scrape("upshift_cpms_actions_total")["kind=Remediate,result=success"] - remediated0).To(BeEquivalentTo(2))
		Eventually(func(g Gomega) []string { return setEvents(ctx, g, "Remediated") }).Should(HaveLen(2))
		violations, added, maxMachines, _ := w.report()
		Expect(violations).To(BeEmpty())
		Expect(maxMachines).To(Equal(4))
		Expect(added).To(HaveLen(3), "the first replacement and two retries")
		for _, name := range added {
			i, _ := platform.IndexFromName(name)
			Expect(i).To(Equal(0), "only index 0 was tried: %v", added)
		}

		By("a fixed template is a fresh budget and rolls out")
		Eventually(func(g Gomega) {
			c := getSet(ctx, g)
			t := c.Spec.Template.OpenShiftMachineV1Beta1Machine
			t.Spec.ProviderSpec.Value = machineapi.NewProviderSpec(region, "", "m7i.2xlarge")
			t.ObjectMeta.Annotations = nil
			g.Expect(env.Client.Update(ctx, c)).To(Succeed())
			gen = c.Generation
		}).Should(Succeed())
		Eventually(settled(ctx, "m7i.2xlarge", gen), 2*time.Minute).Should(Succeed())
		violations, _, maxMachines, _ = w.report()
		Expect(violations).To(BeEmpty())
		Expect(maxMachines).To(Equal(4))
	})

	It("under OnDelete, replaces only the machine a person deletes, in its index and zone", func(ctx context.Context) {
		w := watchMachines(ctx)
		gen := setInstanceType(ctx, "m6i.8xlarge", machinev1.OnDelete)
		waiting := func(indexes ...int) func(Gomega) {
			return func(g Gomega) {
				c := getSet(ctx, g)
				g.Expect(c.Status.ObservedGeneration).To(Equal(gen))
				expectCondition(g, c, plan.ConditionProgressing, metav1.ConditionFalse, plan.ReasonWaitingForUserDeletion)
				msg := meta.FindStatusCondition(c.Status.Conditions, plan.ConditionProgressing).Message
				for _, i := range indexes {
					g.Expect(msg).To(ContainSubstring(fmt.Sprintf("index %d: WaitingForDeletion", i)))
				}
				g.Expect(c.Status.UpdatedReplicas).To(BeEquivalentTo(3 - len(indexes)))
			}
		}
		Eventually(waiting(0, 1, 2)).Should(Succeed())
		_, added, _, _ := w.report()
		Expect(added).To(BeEmpty(), "OnDelete created machines nobody deleted")

		var victim, keep0, keep2 machinev1beta1.Machine
		for _, m := range machines(ctx, Default) {
			switch i, _ := platform.IndexFromName(m.Name); i {
			case 0:
				keep0 = m
			case 1:
				victim = m
			case 2:
				keep2 = m
			}
		}
		Expect(env.Client.Delete(ctx, &victim)).To(Succeed())
		Eventually(func(g Gomega) {
			ms := machines(ctx, g)
			g.Expect(ms).To(HaveLen(3))
			var names []string
			for _, m := range ms {
				names = append(names, m.Name)
				if i, _ := platform.IndexFromName(m.Name); i == 1 {
					ps := machineapi.ReadProviderSpec(&m)
					g.Expect(ps.InstanceType).To(Equal("m6i.8xlarge"))
					g.Expect(ps.Placement.AvailabilityZone).To(Equal(zones[1]))
					g.Expect(ptr.Deref(m.Status.Phase, "")).To(Equal(machinev1beta1.PhaseRunning))
				}
			}
			g.Expect(names).To(ContainElements(keep0.Name, keep2.Name))
			g.Expect(names).NotTo(ContainElement(victim.Name))
		}, 2*time.Minute).Should(Succeed())
		Eventually(waiting(0, 2)).Should(Succeed())
		violations, added, _, _ := w.report()
		Expect(violations).To(BeEmpty())
		Expect(added).To(HaveLen(1))
	})

	It("beside a running control-plane-machine-set operator, deletes one outdated machine for it to replace, writes only its own conditions, and replaces machines itself once the operator is scaled down", func(ctx context.Context) {
		// Left by the previous spec: OnDelete, indexes 0 and 2 outdated.
		w := watchMachines(ctx)
		op := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: controller.Namespace, Name: controller.CPMSOperatorDeployment},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "control-plane-machine-set-operator"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"k8s-app": "control-plane-machine-set-operator"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "operator", Image: "quay.io/openshift/cpmso:latest"}}}}},
		}
		Expect(env.Client.Create(ctx, op)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, op))).To(Succeed()) })

		// The operator writes its own Progressing; the controller must leave
		// it alone and write only its conditions.
		const operatorMessage = "Observed 2 replica(s) in need of update"
		var victim string
		Eventually(func(g Gomega) {
			c := getSet(ctx, g)
			expectCondition(g, c, plan.ConditionMode, metav1.ConditionTrue, string(plan.ModeOrchestrate))
			if p := meta.FindStatusCondition(c.Status.Conditions, plan.ConditionProgressing); p.Message != operatorMessage {
				meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: plan.ConditionProgressing, Status: metav1.ConditionTrue,
					Reason: plan.ReasonNeedsUpdateReplicas, Message: operatorMessage, ObservedGeneration: c.Generation})
				g.Expect(env.Client.Status().Update(ctx, c)).To(Succeed())
			}
			var deleting []string
			for _, m := range machines(ctx, g) {
				if m.DeletionTimestamp != nil {
					deleting = append(deleting, m.Name)
				}
			}
			g.Expect(deleting).To(HaveLen(1))
			victim = deleting[0]
			i, _ := platform.IndexFromName(victim)
			g.Expect(i).To(Equal(0), "the lowest outdated index goes first")
			c = getSet(ctx, g)
			expectCondition(g, c, plan.ConditionUpshiftProgressing, metav1.ConditionTrue, plan.ReasonNeedsUpdateReplicas)
			g.Expect(meta.FindStatusCondition(c.Status.Conditions, plan.ConditionProgressing).Message).To(Equal(operatorMessage))
		}).Should(Succeed())
		Eventually(func(g Gomega) []string { return setEvents(ctx, g, "Deleted") }).Should(ContainElement(
			HavePrefix("Deleted outdated machine " + victim + " in index 0")))
		Expect(scrape("upshift_cpms_mode")).To(Equal(map[string]float64{"mode=Orchestrate": 1, "mode=Replace": 0}))
		_, added, _, _ := w.report()
		Expect(added).To(BeEmpty(), "in Orchestrate mode the operator creates the replacements")

		// The operator is scaled down before it made the replacement. The
		// etcd hook holds the deleted machine; the index is not in the
		// middle of a replacement, so Replace mode takes over and restores it.
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(op), op)).To(Succeed())
			op.Spec.Replicas = ptr.To(int32(0))
			g.Expect(env.Client.Update(ctx, op)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			c := getSet(ctx, g)
			expectCondition(g, c, plan.ConditionMode, metav1.ConditionTrue, string(plan.ModeReplace))
			expectCondition(g, c, plan.ConditionProgressing, metav1.ConditionFalse, plan.ReasonWaitingForUserDeletion)
			g.Expect(meta.FindStatusCondition(c.Status.Conditions, plan.ConditionProgressing).Message).To(MatchRegexp(`^index 2: WaitingForDeletion: delete machine c1-master-\S*2 to replace it$`))
			names := []string{}
			for _, m := range machines(ctx, g) {
				names = append(names, m.Name)
			}
			g.Expect(names).NotTo(ContainElement(victim))
		}, 2*time.Minute).Should(Succeed())
		Eventually(func(g Gomega) []string { return setEvents(ctx, g, string(plan.ModeReplace)) }).Should(ContainElement(
			ContainSubstring("no control-plane-machine-set operator runs")))
		violations, added, _, _ := w.report()
		Expect(violations).To(BeEmpty())
		Expect(added).To(HaveLen(1))
	})

	It("releases the machines when the set is deleted; they keep running", func(ctx context.Context) {
		c := getSet(ctx, Default)
		names := func(g Gomega) []string {
			var out []string
			for _, m := range machines(ctx, g) {
				out = append(out, m.Name)
			}
			return out
		}
		want := names(Default)
		Expect(env.Client.Delete(ctx, c)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(ctx, setKey, c)) }).Should(BeTrue())
		// The garbage collector runs: had an owner reference stayed, it
		// would now delete the control plane. The finalizer goes only after
		// every reference is removed, so the moment the set is gone no
		// machine names it, and the collector has nothing to delete.
		Expect(names(Default)).To(Equal(want))
		for _, m := range machines(ctx, Default) {
			Expect(m.DeletionTimestamp).To(BeNil(), m.Name)
			for _, o := range m.OwnerReferences {
				Expect(o.UID).NotTo(Equal(c.UID), m.Name)
			}
		}
		Eventually(func(g Gomega) []string { return setEvents(ctx, g, "Released") }).Should(ContainElement(
			"The set is being deleted: released machines " + strings.Join(want, ", ") + ", which keep running"))
	})
})
