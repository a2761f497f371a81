package controller_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/services/aromonitor/controller"
)

var _ = Describe("MachineValid", Ordered, func() {
	clock := testingclock.NewFakeClock(t0)
	var set *machinev1beta1.MachineSet
	pass := func(ctx context.Context) (reconcile.Result, operatorv1.OperatorCondition) {
		r := &controller.MachinesReconciler{Client: env.Client, Recorder: recorder, Clock: clock, MachineNamespace: machNS}
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "cluster"}})
		Expect(err).NotTo(HaveOccurred())
		return res, conditionOf(cluster(ctx).Status.Conditions, arov1alpha1.MachineValid)
	}
	rv := func(ctx context.Context) string {
		mc := &amv1alpha1.MonitorConfig{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, mc)).To(Succeed())
		return mc.ResourceVersion
	}

	BeforeAll(func(ctx context.Context) {
		Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: machNS}}))).To(Succeed())
		c := &arov1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
		Expect(env.Client.Create(ctx, c)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, c)).To(Succeed()) })
		createMonitorConfig(ctx)
		spec := &runtime.RawExtension{Raw: []byte(`{"image":{"publisher":"azureopenshift","offer":"aro4","sku":"aro_417"},"osDisk":{"diskSizeGB":128}}`)}
		for i, role := range []string{"master", "master", "master", "worker"} {
			m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("mv-%d", i), Namespace: machNS,
				Labels: map[string]string{"machine.openshift.io/cluster-api-machine-role": role}}}
			m.Spec.ProviderSpec.Value = spec
			Expect(env.Client.Create(ctx, m)).To(Succeed())
		}
		set = &machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Name: "mv-worker", Namespace: machNS}}
		set.Spec.Replicas = ptr.To[int32](1)
		set.Spec.Selector.MatchLabels = map[string]string{"set": "mv"}
		set.Spec.Template.Labels = map[string]string{"set": "mv"}
		Expect(env.Client.Create(ctx, set)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(env.Client.DeleteAllOf(ctx, &machinev1beta1.Machine{}, client.InNamespace(machNS))).To(Succeed())
			Expect(env.Client.DeleteAllOf(ctx, &machinev1beta1.MachineSet{}, client.InNamespace(machNS))).To(Succeed())
		})
	})

	It("is True with ARO's message for ARO's Machines, and runs no round before the interval", func(ctx context.Context) {
		res, c := pass(ctx)
		Expect(c.Status).To(Equal(operatorv1.ConditionTrue))
		Expect([]string{c.Reason, c.Message}).To(Equal([]string{"CheckDone", "All machines valid"}))
		Expect(res.RequeueAfter).To(BeNumerically("~", 5*time.Minute, 31*time.Second))
		before := rv(ctx)
		clock.Step(time.Minute)
		res, _ = pass(ctx)
		Expect(res.RequeueAfter).To(Equal(4 * time.Minute))
		Expect(rv(ctx)).To(Equal(before), "not due: nothing written")
	})

	It("holds True through two rounds of a wrong count, turns False at the third with ARO's message, True at the next good round", func(ctx context.Context) {
		set.Spec.Replicas = ptr.To[int32](2)
		Expect(env.Client.Update(ctx, set)).To(Succeed())
		for i := 1; i <= 2; i++ {
			clock.Step(5 * time.Minute)
			_, c := pass(ctx)
			Expect(c.Status).To(Equal(operatorv1.ConditionTrue), "round %d", i)
			Expect(c.Message).To(ContainSubstring(fmt.Sprintf("failing for %d: invalid number of worker machines 1, expected 2", i)))
		}
		clock.Step(5 * time.Minute)
		_, c := pass(ctx)
		Expect(c.Status).To(Equal(operatorv1.ConditionFalse))
		Expect([]string{c.Reason, c.Message}).To(Equal([]string{"CheckFailed", "invalid number of worker machines 1, expected 2\n"}))
		Expect(c.LastTransitionTime.Time).To(BeTemporally("==", clock.Now().Truncate(time.Second)))

		set.Spec.Replicas = ptr.To[int32](1)
		Expect(env.Client.Update(ctx, set)).To(Succeed())
		clock.Step(5 * time.Minute)
		_, c = pass(ctx)
		Expect(c.Status).To(Equal(operatorv1.ConditionTrue))
	})

	It("writes nothing while ARO's aro.machine.enabled is false, as ARO's Machine controller", func(ctx context.Context) {
		c := cluster(ctx)
		c.Spec.OperatorFlags = map[string]string{"aro.machine.enabled": "false"}
		Expect(env.Client.Update(ctx, c)).To(Succeed())
		set.Spec.Replicas = ptr.To[int32](5)
		Expect(env.Client.Update(ctx, set)).To(Succeed())
		before, cond := rv(ctx), conditionOf(cluster(ctx).Status.Conditions, arov1alpha1.MachineValid)
		for range 4 {
			clock.Step(5 * time.Minute)
			pass(ctx)
		}
		Expect(rv(ctx)).To(Equal(before))
		Expect(conditionOf(cluster(ctx).Status.Conditions, arov1alpha1.MachineValid)).To(BeComparableTo(cond), "the last answer stands")
	})
})
