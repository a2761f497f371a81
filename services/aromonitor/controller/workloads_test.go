package controller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/services/aromonitor/controller"
)

var _ = Describe("DaemonSetsAvailable and PodsHealthy", Ordered, func() {
	clock := testingclock.NewFakeClock(t0)
	// A namespace no other Describe puts pods in: the counts are exact.
	const ns = "openshift-azure-logging"
	pass := func(ctx context.Context) reconcile.Result {
		r := &controller.WorkloadsReconciler{Client: env.Client, Reader: env.Client, Clock: clock}
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "cluster"}})
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "otel-exporter-master-abc"},
		// No scheduler takes it, so no kubelet (kwok) writes its status
		// but the test.
		Spec: corev1.PodSpec{SchedulerName: "nobody", Containers: []corev1.Container{{Name: "otel", Image: "otel:latest"}}}}

	BeforeAll(func(ctx context.Context) {
		Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
		c := &arov1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
		Expect(env.Client.Create(ctx, c)).To(Succeed())
		Expect(env.Client.Create(ctx, pod)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(env.Client.Delete(ctx, c)).To(Succeed())
			Expect(env.Client.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
		})
		createMonitorConfig(ctx)
		// Only this namespace, and a quick failure threshold.
		mc := &amv1alpha1.MonitorConfig{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, mc)).To(Succeed())
		mc.Spec.Workloads.Namespaces = []string{ns}
		mc.Spec.Workloads.FailureThreshold = 2
		Expect(env.Client.Update(ctx, mc)).To(Succeed())
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "otel", Ready: true, RestartCount: 1}}}
		Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
	})

	It("reports every pod of the monitored namespaces healthy on the MonitorConfig only, and runs no round before the interval", func(ctx context.Context) {
		res := pass(ctx)
		Expect(res.RequeueAfter).To(BeNumerically("~", 5*time.Minute, 31*time.Second))
		st := record(ctx)
		Expect(conditionOf(st.Conditions, amv1alpha1.PodsHealthy).Message).To(Equal("all 1 pods in 1 namespaces healthy"))
		Expect(conditionOf(st.Conditions, amv1alpha1.DaemonSetsAvailable).Status).To(Equal(operatorv1.ConditionTrue))
		Expect(conditionOf(cluster(ctx).Status.Conditions, amv1alpha1.PodsHealthy).Type).To(BeEmpty(), "never on ARO's Cluster")
		clock.Step(time.Minute)
		Expect(pass(ctx).RequeueAfter).To(Equal(4 * time.Minute))
	})

	It("names a crash-looping pod after two failed rounds, and forgets it once healthy", func(ctx context.Context) {
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		pod.Status.Conditions[1].Status = corev1.ConditionFalse
		pod.Status.ContainerStatuses[0].RestartCount = 12
		pod.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
		Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
		for range 2 {
			clock.Step(5 * time.Minute)
			pass(ctx)
		}
		st := record(ctx)
		c := conditionOf(st.Conditions, amv1alpha1.PodsHealthy)
		Expect([]string{string(c.Status), c.Reason, c.Message}).To(Equal([]string{"False", "Unhealthy",
			"1 of 1 pods unhealthy: openshift-azure-logging/otel-exporter-master-abc (Ready is False; container otel waiting: CrashLoopBackOff; 12 restarts)"}))
		Expect(st.Workloads).To(HaveLen(1))
		Expect(st.Workloads[0].Kind).To(Equal("Pod"))

		Expect(env.Client.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
		Expect(env.Client.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod.Name}, Spec: pod.Spec})).To(Succeed())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		clock.Step(5 * time.Minute)
		pass(ctx)
		st = record(ctx)
		Expect(conditionOf(st.Conditions, amv1alpha1.PodsHealthy).Status).To(Equal(operatorv1.ConditionTrue), "a pod without conditions yet is not judged")
		Expect(st.Workloads).To(BeEmpty())
	})

	It("turns its conditions Unknown when switched off", func(ctx context.Context) {
		mc := &amv1alpha1.MonitorConfig{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, mc)).To(Succeed())
		mc.Spec.Workloads.Enabled = ptr.To(false)
		Expect(env.Client.Update(ctx, mc)).To(Succeed())
		Expect(pass(ctx).RequeueAfter).To(BeZero())
		st := record(ctx)
		for _, t := range []string{amv1alpha1.PodsHealthy, amv1alpha1.DaemonSetsAvailable} {
			c := conditionOf(st.Conditions, t)
			Expect([]string{string(c.Status), c.Reason, c.Message}).To(Equal([]string{"Unknown", "CheckDisabled", "spec.workloads.enabled is false"}))
		}
		Expect(st.Workloads).To(BeEmpty())
	})
})
