package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/metricstest"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/controller"
	"github.com/upshift-io/upshift/services/upgradescheduler/metrics"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

func startController(ctx context.Context, namespace string) func() {
	return startControllerWithClock(ctx, namespace, clock.RealClock{})
}

// startControllerWithClock runs the scheduler with clk as its time: a test
// moves a fake one forward to reach a deadline.
func startControllerWithClock(ctx context.Context, namespace string, clk clock.PassiveClock) func() {
	mgr, err := runtime.NewManager("upgrade-scheduler", &runtime.Flags{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", KubeAPIQPS: 50, KubeAPIBurst: 100,
	}, func() runtime.Options {
		opts := controller.ManagerOptions(namespace)
		opts.RestConfig = env.Config
		opts.Controller = ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}
		return opts
	}())
	Expect(err).NotTo(HaveOccurred())
	Expect((&controller.Reconciler{
		Client:    mgr.GetClient(),
		Recorder:  events.NewRecorder(mgr.GetEventRecorder("upgrade-scheduler")),
		Metrics:   schedulerMetrics,
		Namespace: namespace,
		Clock:     clk,
	}).SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	return func() { cancel(); <-done }
}

// laterUpgrade creates namespace ns with the scheduler's ConfigMap (configYAML)
// and an ARO UpgradeConfig to 4.16.3 in two days.
func laterUpgrade(ctx context.Context, ns, configYAML string) (*corev1.ConfigMap, *upgradev1alpha1.UpgradeConfig) {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: config.ConfigMapName, Namespace: ns},
		Data: map[string]string{config.ConfigKey: configYAML}}
	Expect(env.Client.Create(ctx, cm)).To(Succeed())
	uc := &upgradev1alpha1.UpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-config", Namespace: ns},
		Spec: upgradev1alpha1.UpgradeConfigSpec{
			Desired:   upgradev1alpha1.Update{Version: "4.16.3", Channel: "stable-4.16"},
			UpgradeAt: time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339), Type: upgradev1alpha1.ARO,
		},
	}
	Expect(env.Client.Create(ctx, uc)).To(Succeed())
	return cm, uc
}

func create(ctx context.Context, obj client.Object) {
	GinkgoHelper()
	status := obj.DeepCopyObject().(client.Object)
	Expect(env.Client.Create(ctx, obj)).To(Succeed())
	// Write the status the fixture carries (the create drops it).
	copyStatus(status, obj)
	Expect(env.Client.Status().Update(ctx, obj)).To(Succeed())
}

func copyStatus(from, to client.Object) {
	switch f := from.(type) {
	case *configv1.ClusterVersion:
		to.(*configv1.ClusterVersion).Status = f.Status
	case *mcfgv1.MachineConfigPool:
		to.(*mcfgv1.MachineConfigPool).Status = f.Status
	case *corev1.Node:
		to.(*corev1.Node).Status = f.Status
	case *machinev1beta1.MachineSet:
		to.(*machinev1beta1.MachineSet).Status = f.Status
	case *machinev1beta1.Machine:
		to.(*machinev1beta1.Machine).Status = f.Status
	}
}

func readyNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}}
}

func updatedPool(name, config string) *mcfgv1.MachineConfigPool {
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.Configuration.Name = config
	p.Status.Configuration.Name = config
	p.Status.MachineCount, p.Status.UpdatedMachineCount, p.Status.ReadyMachineCount = 1, 1, 1
	p.Status.Conditions = []mcfgv1.MachineConfigPoolCondition{{Type: mcfgv1.MachineConfigPoolUpdated, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	return p
}

func ucPhase(ctx context.Context, key client.ObjectKey) func(Gomega) string {
	return func(g Gomega) string {
		uc := &upgradev1alpha1.UpgradeConfig{}
		g.Expect(env.Client.Get(ctx, key, uc)).To(Succeed())
		if len(uc.Status.History) == 0 {
			return ""
		}
		return string(uc.Status.History[0].Phase) + "/" + uc.Status.CurrentStep
	}
}

func surge(ctx context.Context) func(Gomega) []string {
	return func(g Gomega) []string {
		var list machinev1beta1.MachineSetList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(plan.MachineAPINamespace), client.MatchingLabels{plan.SurgeLabel: "true"})).To(Succeed())
		var names []string
		for _, ms := range list.Items {
			names = append(names, ms.Name)
		}
		return names
	}
}

var _ = Describe("upgrade-scheduler controller", Ordered, func() {
	It("runs an OSD upgrade with capacity reservation from New to Upgraded, each side effect once", func(ctx context.Context) {
		const ns = "upgrade-scheduler"
		for _, n := range []string{ns, plan.MachineAPINamespace} {
			Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})).To(Succeed())
		}
		Expect(env.Client.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: config.ConfigMapName, Namespace: ns},
			Data:       map[string]string{config.ConfigKey: "upgradeWindow:\n  timeOut: 120\nscale:\n  timeOut: 30\n"},
		})).To(Succeed())
		create(ctx, &configv1.ClusterVersion{
			ObjectMeta: metav1.ObjectMeta{Name: "version"},
			Spec:       configv1.ClusterVersionSpec{ClusterID: "5cd04b34-7d5c-4e34-9c0b-2e7c0a1c4a21", Channel: "stable-4.16"},
			Status: configv1.ClusterVersionStatus{
				Desired:            configv1.Release{Version: "4.16.1", Image: "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("a", 64)},
				History:            []configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "4.16.1", Image: "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("a", 64), StartedTime: metav1.Now(), CompletionTime: ptr.To(metav1.Now()), Verified: true}},
				AvailableUpdates:   []configv1.Release{{Version: "4.16.2", Image: "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("b", 64)}},
				ObservedGeneration: 1,
				VersionHash:        "x",
			},
		})
		create(ctx, updatedPool("master", "rendered-master-1"))
		create(ctx, updatedPool("worker", "rendered-worker-1"))
		create(ctx, readyNode("master-0"))
		create(ctx, readyNode("worker-0"))
		for _, zone := range []string{"a", "b"} {
			name := "c1-worker-" + zone
			Expect(env.Client.Create(ctx, &machinev1beta1.MachineSet{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: plan.MachineAPINamespace, Labels: map[string]string{plan.PoolLabel: "worker"}},
				Spec: machinev1beta1.MachineSetSpec{Replicas: ptr.To(int32(1)),
					Selector: metav1.LabelSelector{MatchLabels: map[string]string{plan.MachineSetLabel: name}},
					Template: machinev1beta1.MachineTemplateSpec{ObjectMeta: machinev1beta1.ObjectMeta{Labels: map[string]string{plan.MachineSetLabel: name}}}},
			})).To(Succeed())
		}
		uc := &upgradev1alpha1.UpgradeConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-config", Namespace: ns},
			Spec: upgradev1alpha1.UpgradeConfigSpec{
				Desired:   upgradev1alpha1.Update{Version: "4.16.2", Channel: "stable-4.16"},
				UpgradeAt: time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), Type: upgradev1alpha1.OSD,
				PDBForceDrainTimeout: 60, CapacityReservation: true,
			},
		}
		Expect(env.Client.Create(ctx, uc)).To(Succeed())
		key := client.ObjectKeyFromObject(uc)

		stepsBefore := stepsObserved()
		stop := startController(ctx, ns)
		defer stop()

		By("reserving capacity: one temporary MachineSet per worker MachineSet")
		Eventually(surge(ctx)).Should(ConsistOf("c1-worker-a-upgrade", "c1-worker-b-upgrade"))
		Eventually(ucPhase(ctx, key)).Should(Equal("Upgrading/ComputeCapacityReserved"))

		By("metrics: the phase, the current step, the start time, every check passing")
		own := "name=managed-upgrade-config,namespace=" + ns
		Eventually(series(metrics.Phase, own)).Should(And(HaveKeyWithValue(own+",phase=Upgrading", 1.0),
			HaveKeyWithValue(own+",phase=Pending", 0.0), HaveLen(6)))
		Eventually(series(metrics.CurrentStepInfo, own)).Should(Equal(map[string]float64{own + ",step=ComputeCapacityReserved": 1}))
		muo := "upgradeconfig_name=managed-upgrade-config"
		Eventually(series(metrics.UpgradeStarted, muo)).Should(HaveLen(1))
		Expect(series(metrics.ClusterCheckFailed, muo)()).To(Equal(map[string]float64{muo: 0}))
		Expect(series(metrics.HealthCheckFailed, muo)()).To(HaveKeyWithValue(
			"reason=cluster_operators_degraded,state=Upgrading,"+muo+",version=4.16.1", 0.0))
		Expect(series(metrics.ValidationFailed, muo)()).To(Equal(map[string]float64{muo: 0}))

		By("the machine API provisions them")
		for _, name := range []string{"c1-worker-a-upgrade", "c1-worker-b-upgrade"} {
			ms := &machinev1beta1.MachineSet{}
			Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: plan.MachineAPINamespace, Name: name}, ms)).To(Succeed())
			Expect(*ms.Spec.Replicas).To(Equal(int32(1)))
			create(ctx, readyNode(name+"-node"))
			create(ctx, &machinev1beta1.Machine{
				ObjectMeta: metav1.ObjectMeta{Name: name + "-m", Namespace: plan.MachineAPINamespace, Labels: map[string]string{plan.MachineSetLabel: name, plan.SurgeLabel: "true"}},
				Status:     machinev1beta1.MachineStatus{NodeRef: &corev1.ObjectReference{Kind: "Node", Name: name + "-node"}},
			})
			ms.Status.Replicas, ms.Status.ReadyReplicas = 1, 1
			Expect(env.Client.Status().Update(ctx, ms)).To(Succeed())
		}

		By("commencing: ClusterVersion points at the target")
		cv := &configv1.ClusterVersion{}
		Eventually(func(g Gomega) string {
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
			if cv.Spec.DesiredUpdate == nil {
				return ""
			}
			return cv.Spec.DesiredUpdate.Version
		}).Should(Equal("4.16.2"))
		Eventually(ucPhase(ctx, key)).Should(Equal("Upgrading/ControlPlaneUpgraded"))

		By("the CVO completes the control plane; the workers are already on their configuration")
		cv.Status.Desired = configv1.Release{Version: "4.16.2", Image: "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("b", 64)}
		cv.Status.History = append([]configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "4.16.2", Image: cv.Status.Desired.Image, StartedTime: metav1.Now(), CompletionTime: ptr.To(metav1.Now()), Verified: true}}, cv.Status.History...)
		Expect(env.Client.Status().Update(ctx, cv)).To(Succeed())

		By("removing the capacity: MachineSets deleted, then their Machines go")
		Eventually(surge(ctx)).Should(BeEmpty())
		Eventually(ucPhase(ctx, key)).Should(Equal("Upgrading/ComputeCapacityRemoved"))
		for _, name := range []string{"c1-worker-a-upgrade", "c1-worker-b-upgrade"} {
			Expect(env.Client.Delete(ctx, &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name + "-m", Namespace: plan.MachineAPINamespace}})).To(Succeed())
		}
		Eventually(ucPhase(ctx, key)).Should(Equal("Upgraded/"))

		got := &upgradev1alpha1.UpgradeConfig{}
		Expect(env.Client.Get(ctx, key, got)).To(Succeed())
		Expect(got.Finalizers).To(ContainElement(plan.Finalizer))
		Expect(got.Status.History[0].Conditions).To(HaveLen(17))
		Expect(got.Status.History[0].Conditions[0].Type).To(Equal(plan.StepCompletedNotificationSent))
		Expect(got.Status.CapacityReservation.Outcome).To(Equal(plan.CapacityRemoved))
		Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))

		By("metrics: Upgraded, MUO's timestamps as the status has them, each step timed once")
		Eventually(series(metrics.Phase, own)).Should(And(HaveKeyWithValue(own+",phase=Upgraded", 1.0),
			HaveKeyWithValue(own+",phase=Upgrading", 0.0)))
		Expect(series(metrics.CurrentStepInfo, own)()).To(BeEmpty())
		h := got.Status.History[0]
		ts := "_id=5cd04b34-7d5c-4e34-9c0b-2e7c0a1c4a21," + muo + ",version=4.16.2"
		Expect(series(metrics.UpgradeStarted, muo)()).To(Equal(map[string]float64{ts: float64(h.StartTime.Unix())}))
		Expect(series(metrics.UpgradeCompleted, muo)()).To(Equal(map[string]float64{ts: float64(h.CompleteTime.Unix())}))
		for name, step := range map[string]upgradev1alpha1.UpgradeConditionType{
			metrics.ControlPlaneStarted: plan.StepUpgradeCommenced, metrics.ControlPlaneCompleted: plan.StepControlPlaneUpgraded,
			metrics.WorkerNodesCompleted: plan.StepWorkerNodesUpgraded,
		} {
			var done float64
			for _, c := range h.Conditions {
				if c.Type == step {
					done = float64(c.CompleteTime.Unix())
				}
			}
			Expect(series(name, muo)()).To(Equal(map[string]float64{ts: done}), name)
		}
		Expect(series(metrics.CapacityReservationSet, own)()).To(HaveKeyWithValue(own+",outcome=Removed", 1.0))
		Expect(series(metrics.ScalingFailed, muo)()).To(Equal(map[string]float64{muo: 0}))
		Expect(stepsObserved()-stepsBefore).To(BeEquivalentTo(17), "step durations observed")

		By("every side effect happened exactly once (audit log)")
		c := sideEffects()
		Expect(c.cvPatches).To(HaveLen(1), "ClusterVersion patches")
		// The test created the two worker MachineSets; the scheduler the two copies.
		Expect(c.msCreates).To(HaveLen(4), "MachineSet creations")
		Expect(c.msDeletes).To(HaveLen(2), "MachineSet deletions")

		By("Events tell the story in `kubectl describe`")
		Eventually(func(g Gomega) []string {
			var list eventsv1.EventList
			g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, e := range list.Items {
				if e.Regarding.Name == uc.Name {
					reasons = append(reasons, e.Reason)
				}
			}
			return reasons
		}).Should(ContainElements("PhaseUpgrading", "UpgradeCommenced", "PhaseUpgraded"))

		By("deleting the UpgradeConfig releases the finalizer")
		Expect(env.Client.Delete(ctx, got)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, key, &upgradev1alpha1.UpgradeConfig{}))
		}).Should(BeTrue())
		By("and its series go with it")
		Eventually(series(metrics.Phase, own)).Should(BeEmpty())
		Expect(series(metrics.UpgradeStarted, muo)()).To(BeEmpty())
	})

	It("reports an invalid ConfigMap on the UpgradeConfig and keeps the last good configuration", func(ctx context.Context) {
		const ns = "scheduler-config"
		cm, uc := laterUpgrade(ctx, ns, "maintenance:\n  controlPlaneTime: 0\n")
		stop := startController(ctx, ns)
		defer stop()

		configValid := func(g Gomega) string {
			got := &upgradev1alpha1.UpgradeConfig{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(uc), got)).To(Succeed())
			c := meta.FindStatusCondition(got.Status.Conditions, "ConfigValid")
			if c == nil {
				return ""
			}
			return string(c.Status) + "/" + c.Reason + "/" + c.Message
		}
		By("no valid configuration ever: nothing is decided, and the key is named")
		Eventually(configValid).Should(Equal("False/InvalidConfig/maintenance.controlPlaneTime: must be at least 1 minute(s), got 0"))
		// The plan that reported the configuration is the one that would
		// have scheduled the upgrade: its status has no history.
		Expect(ucPhase(ctx, client.ObjectKeyFromObject(uc))(Default)).To(BeEmpty())

		By("fixed: the upgrade is scheduled (reloaded without a restart)")
		cm.Data[config.ConfigKey] = "maintenance:\n  controlPlaneTime: 90\n"
		Expect(env.Client.Update(ctx, cm)).To(Succeed())
		Eventually(configValid).Should(Equal("True/Valid/"))
		Eventually(ucPhase(ctx, client.ObjectKeyFromObject(uc))).Should(Equal("Pending/"))

		By("broken again: reported, and the last good configuration stays in force")
		delete(cm.Data, config.ConfigKey)
		Expect(env.Client.Update(ctx, cm)).To(Succeed())
		Eventually(configValid).Should(HavePrefix("False/InvalidConfigKeptLastGood/using the last valid configuration: ConfigMap managed-upgrade-operator-config has no key config.yaml"))
		Expect(ucPhase(ctx, client.ObjectKeyFromObject(uc))(Default)).To(Equal("Pending/"))
		Eventually(func(g Gomega) []string {
			var list eventsv1.EventList
			g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, e := range list.Items {
				reasons = append(reasons, e.Reason)
			}
			return reasons
		}).Should(ContainElement("InvalidConfig"))
	})

	It("takes over the status fields an earlier writer wrote by update, and clears them as its own", func(ctx context.Context) {
		const ns = "scheduler-adopt"
		_, uc := laterUpgrade(ctx, ns, "maintenance:\n  controlPlaneTime: 90\n")
		// What MUO (or a release of Upshift that wrote by update) leaves: an
		// attempt at an older target that reserved capacity.
		uc.Status = upgradev1alpha1.UpgradeConfigStatus{
			History:             []upgradev1alpha1.UpgradeHistory{{Version: "4.16.2", Phase: upgradev1alpha1.UpgradePhasePending}},
			CapacityReservation: &upgradev1alpha1.CapacityReservationStatus{MachineSets: []string{"gone-upgrade"}},
		}
		Expect(env.Client.Status().Update(ctx, uc, client.FieldOwner("managed-upgrade-operator"))).To(Succeed())

		stop := startController(ctx, ns)
		defer stop()
		By("the new target supersedes the old attempt, and the old reservation is cleared, not left to the update's owner")
		Eventually(func(g Gomega) {
			got := &upgradev1alpha1.UpgradeConfig{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(uc), got)).To(Succeed())
			g.Expect(got.Status.History).To(HaveLen(2))
			g.Expect(got.Status.History[0].Version).To(Equal("4.16.3"))
			g.Expect(got.Status.History[1].Phase).To(Equal(upgradev1alpha1.UpgradePhaseCancelled))
			g.Expect(got.Status.CapacityReservation).To(BeNil())
			var status []string
			for _, e := range got.ManagedFields {
				if e.Subresource == "status" {
					status = append(status, e.Manager+"/"+string(e.Operation))
				}
			}
			g.Expect(status).To(ConsistOf("upgrade-scheduler/Apply"))
		}).Should(Succeed())
	})

	It("requests the temporary capacity scale.leadTime ahead of the start, once across a restart, and gives it back when the start moves away", func(ctx context.Context) {
		const ns = "scheduler-lead"
		_, uc := laterUpgrade(ctx, ns, "scale:\n  leadTime: 150\n")
		cv := &configv1.ClusterVersion{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
		cv.Status.AvailableUpdates = []configv1.Release{{Version: "4.16.3", Image: "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("c", 64)}}
		Expect(env.Client.Status().Update(ctx, cv)).To(Succeed())
		uc.Spec.CapacityReservation = true
		uc.Spec.UpgradeAt = time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
		Expect(env.Client.Update(ctx, uc)).To(Succeed())
		key := client.ObjectKeyFromObject(uc)
		before := sideEffects()
		progressing := func(g Gomega) string {
			got := &upgradev1alpha1.UpgradeConfig{}
			g.Expect(env.Client.Get(ctx, key, got)).To(Succeed())
			c := meta.FindStatusCondition(got.Status.Conditions, "Progressing")
			g.Expect(c).NotTo(BeNil())
			return c.Message
		}

		By("two hours before the start, inside the lead time: the copies are created while the attempt is Pending")
		stop := startController(ctx, ns)
		Eventually(surge(ctx)).Should(ConsistOf("c1-worker-a-upgrade", "c1-worker-b-upgrade"))
		Eventually(progressing).Should(ContainSubstring("temporary capacity requested ahead of it: waiting for c1-worker-a-upgrade, c1-worker-b-upgrade"))
		Expect(ucPhase(ctx, key)(Default)).To(Equal("Pending/"))
		Eventually(func() []string { return sideEffects().since(before).msCreates }).Should(HaveLen(2))
		stop()

		By("a restarted scheduler creates nothing again")
		restartedAt := reconciles()
		stop = startController(ctx, ns)
		defer stop()
		Eventually(reconciles).Should(BeNumerically(">", restartedAt))
		Expect(sideEffects().since(before).msCreates).To(HaveLen(2))

		By("the start moves further away than the lead time: the copies go until it comes near again")
		Expect(env.Client.Get(ctx, key, uc)).To(Succeed())
		uc.Spec.UpgradeAt = time.Now().Add(10 * time.Hour).UTC().Format(time.RFC3339)
		Expect(env.Client.Update(ctx, uc)).To(Succeed())
		Eventually(surge(ctx)).Should(BeEmpty())
		Eventually(func(g Gomega) {
			got := &upgradev1alpha1.UpgradeConfig{}
			g.Expect(env.Client.Get(ctx, key, got)).To(Succeed())
			g.Expect(got.Status.CapacityReservation).To(BeNil())
		}).Should(Succeed())
		Expect(sideEffects().since(before).msDeletes).To(HaveLen(2))
		Expect(ucPhase(ctx, key)(Default)).To(Equal("Pending/"))
		Expect(env.Client.Delete(ctx, uc)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(ctx, key, uc)) }).Should(BeTrue())
	})

	It("resumes after a restart at every stage without repeating a side effect", func(ctx context.Context) {
		const ns = "scheduler-restart"
		Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: config.ConfigMapName, Namespace: ns},
			Data: map[string]string{config.ConfigKey: ""}})).To(Succeed())
		cv := &configv1.ClusterVersion{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
		cv.Status.AvailableUpdates = []configv1.Release{{Version: "4.16.3", Image: "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("c", 64)}}
		Expect(env.Client.Status().Update(ctx, cv)).To(Succeed())
		before := sideEffects()

		uc := &upgradev1alpha1.UpgradeConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-config", Namespace: ns},
			Spec: upgradev1alpha1.UpgradeConfigSpec{
				Desired:   upgradev1alpha1.Update{Version: "4.16.3", Channel: "stable-4.16"},
				UpgradeAt: time.Now().UTC().Format(time.RFC3339), Type: upgradev1alpha1.ARO, CapacityReservation: true,
			},
		}
		Expect(env.Client.Create(ctx, uc)).To(Succeed())
		key := client.ObjectKeyFromObject(uc)

		// Each stop comes once the stage's side effects are answered with
		// success in the audit log: a stop that cuts a request off after it
		// took effect leaves no success there (the apiserver answers 504), and
		// the counts below would come out short. The OCM chaos e2e kills the
		// scheduler at such moments instead.
		answered := func(effects func(sideEffectLog) []string, n int) {
			GinkgoHelper()
			Eventually(func() []string { return effects(sideEffects().since(before)) }).Should(HaveLen(n))
		}

		stop := startController(ctx, ns)
		Eventually(surge(ctx)).Should(HaveLen(2))
		Eventually(ucPhase(ctx, key)).Should(Equal("Upgrading/ComputeCapacityReserved"))
		answered(func(l sideEffectLog) []string { return l.msCreates }, 2)
		stop()
		restartedAt := reconciles()
		stop = startController(ctx, ns)
		// The restarted scheduler planned at least once (controller-runtime's
		// own count), and created nothing again.
		Eventually(reconciles).Should(BeNumerically(">", restartedAt))
		Expect(ucPhase(ctx, key)(Default)).To(Equal("Upgrading/ComputeCapacityReserved"))
		Expect(sideEffects().since(before).msCreates).To(HaveLen(2))
		stop()

		for _, name := range []string{"c1-worker-a-upgrade", "c1-worker-b-upgrade"} {
			ms := &machinev1beta1.MachineSet{}
			Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: plan.MachineAPINamespace, Name: name}, ms)).To(Succeed())
			create(ctx, readyNode(name+"-node2"))
			create(ctx, &machinev1beta1.Machine{
				ObjectMeta: metav1.ObjectMeta{Name: name + "-m2", Namespace: plan.MachineAPINamespace, Labels: map[string]string{plan.MachineSetLabel: name, plan.SurgeLabel: "true"}},
				Status:     machinev1beta1.MachineStatus{NodeRef: &corev1.ObjectReference{Kind: "Node", Name: name + "-node2"}},
			})
			ms.Status.Replicas, ms.Status.ReadyReplicas = 1, 1
			Expect(env.Client.Status().Update(ctx, ms)).To(Succeed())
		}
		stop = startController(ctx, ns)
		Eventually(ucPhase(ctx, key)).Should(Equal("Upgrading/ControlPlaneUpgraded"))
		answered(func(l sideEffectLog) []string { return l.cvPatches }, 1)
		stop()
		restartedAt = reconciles()
		stop = startController(ctx, ns)
		Eventually(reconciles).Should(BeNumerically(">", restartedAt))
		Expect(ucPhase(ctx, key)(Default)).To(Equal("Upgrading/ControlPlaneUpgraded"))
		Expect(sideEffects().since(before).cvPatches).To(HaveLen(1))

		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
		cv.Status.History = append([]configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "4.16.3", Image: cv.Status.AvailableUpdates[0].Image, StartedTime: metav1.Now(), CompletionTime: ptr.To(metav1.Now()), Verified: true}}, cv.Status.History...)
		Expect(env.Client.Status().Update(ctx, cv)).To(Succeed())
		Eventually(ucPhase(ctx, key)).Should(Equal("Upgrading/ComputeCapacityRemoved"))
		// The status shows this step once its first deletion is done; the
		// stop comes once the second is answered too, at the step's wait for
		// the machines.
		answered(func(l sideEffectLog) []string { return l.msDeletes }, 2)
		stop()
		for _, name := range []string{"c1-worker-a-upgrade", "c1-worker-b-upgrade"} {
			Expect(env.Client.Delete(ctx, &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name + "-m2", Namespace: plan.MachineAPINamespace}})).To(Succeed())
		}
		stop = startController(ctx, ns)
		defer stop()
		Eventually(ucPhase(ctx, key)).Should(Equal("Upgraded/"))
		Expect(surge(ctx)(Default)).To(BeEmpty())

		c := sideEffects().since(before)
		Expect(c.cvPatches).To(HaveLen(1), "ClusterVersion patches across four restarts")
		Expect(c.msCreates).To(HaveLen(2), "temporary MachineSets created across four restarts")
		Expect(c.msDeletes).To(HaveLen(2), "temporary MachineSets deleted across four restarts")
	})

	It("exports a failing post-upgrade check, failing validation and a passed start deadline, MUO's way and Upshift's", metricsSpec)

	It("on FedRAMP clusters asks for the file integrity re-initialisation once, keeping other annotations", fedrampSpec)

	It("gates on critical alerts from Alertmanager and holds its silences as leases, none left at the end", silencesSpec, NodeTimeout(4*time.Minute))
	It("syncs the managed UpgradeConfig from OCM policies in place and notifies OCM exactly once per event, also when OCM fails", ocmSpec, NodeTimeout(12*time.Minute))

	It("never commences an upgrade whose OCM policy was withdrawn before commencement, however late", ocmGuardSpec, NodeTimeout(3*time.Minute))
})

// sideEffectLog is the scheduler's successful side effects by kind, each a
// line saying which object and when, so that a failed count shows what
// happened.
// reconciles is how many reconciles of the scheduler's controller have
// ended in this process, from controller-runtime's own counter: a restarted
// scheduler has planned once it grows.
func reconciles() float64 {
	GinkgoHelper()
	series, err := metricstest.Series(ctrlmetrics.Registry, "controller_runtime_reconcile_total")
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for key, v := range series {
		if slices.Contains(strings.Split(key, ","), "controller="+controller.Name) {
			total += v
		}
	}
	return total
}

type sideEffectLog struct{ cvPatches, msCreates, msDeletes []string }

// since is what l holds that before did not.
func (l sideEffectLog) since(before sideEffectLog) sideEffectLog {
	return sideEffectLog{l.cvPatches[len(before.cvPatches):], l.msCreates[len(before.msCreates):], l.msDeletes[len(before.msDeletes):]}
}

// sideEffects reads, from the audit log, the successful side effects the
// scheduler can cause.
func sideEffects() sideEffectLog {
	GinkgoHelper()
	events, err := env.AuditEvents("upshift-admin")
	Expect(err).NotTo(HaveOccurred())
	var c sideEffectLog
	for _, e := range events {
		if e.ObjectRef == nil || e.ResponseStatus == nil || e.ResponseStatus.Code >= 300 {
			continue
		}
		line := fmt.Sprintf("%s %s %s/%s -> %d at %s", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name, e.ResponseStatus.Code, e.StageTimestamp)
		switch {
		case e.Verb == "patch" && e.ObjectRef.Resource == "clusterversions" && e.ObjectRef.Subresource == "":
			c.cvPatches = append(c.cvPatches, line)
		case e.Verb == "create" && e.ObjectRef.Resource == "machinesets":
			c.msCreates = append(c.msCreates, line)
		case e.Verb == "delete" && e.ObjectRef.Resource == "machinesets":
			c.msDeletes = append(c.msDeletes, line)
		}
	}
	return c
}
