package controller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/services/aromonitor/controller"
	"github.com/upshift-io/upshift/services/aromonitor/ownership"
)

var _ = Describe("DefaultIngressCertificate and DefaultClusterDNS", Ordered, func() {
	clock := testingclock.NewFakeClock(t0)
	var clusterID configv1.ClusterID
	ic := &operatorv1.IngressController{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-ingress-operator", Name: "default"}}
	dns := &operatorv1.DNS{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pass := func(ctx context.Context) reconcile.Result {
		r := &controller.ClusterConfigReconciler{Client: env.Client, Recorder: recorder, Clock: clock}
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "cluster"}})
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	// both returns the two conditions, as recorded and as on ARO's Cluster.
	both := func(ctx context.Context, t string) (operatorv1.OperatorCondition, operatorv1.OperatorCondition) {
		return conditionOf(record(ctx).Conditions, t), conditionOf(cluster(ctx).Status.Conditions, t)
	}
	update := func(ctx context.Context, obj client.Object, mutate func()) {
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		mutate()
		Expect(env.Client.Update(ctx, obj)).To(Succeed())
	}

	BeforeAll(func(ctx context.Context) {
		cv := &configv1.ClusterVersion{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv); apierrors.IsNotFound(err) {
			cv = &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}, Spec: configv1.ClusterVersionSpec{ClusterID: "0b8e7a33-5a6f-4f3c-9d2e-1c0f7e6d5b4a"}}
			Expect(env.Client.Create(ctx, cv)).To(Succeed())
			DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, cv)).To(Succeed()) })
		} else {
			Expect(err).NotTo(HaveOccurred())
		}
		clusterID = cv.Spec.ClusterID
		Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ic.Namespace}}))).To(Succeed())
		ic.Spec.DefaultCertificate = &corev1.LocalObjectReference{Name: string(clusterID) + "-ingress"}
		Expect(env.Client.Create(ctx, ic)).To(Succeed())
		Expect(env.Client.Create(ctx, dns)).To(Succeed())
		c := &arov1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: arov1alpha1.ClusterSpec{Domain: "c1.eastus.aroapp.io"}}
		Expect(env.Client.Create(ctx, c)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			for _, o := range []client.Object{c, ic, dns} {
				Expect(env.Client.Delete(ctx, o)).To(Succeed())
			}
		})
		createMonitorConfig(ctx)
	})

	It("are True with ARO's messages, on the Cluster too where no ARO operator runs, and checked again within the hour", func(ctx context.Context) {
		res := pass(ctx)
		Expect(res.RequeueAfter).To(BeNumerically("~", time.Hour, 6*time.Minute+1))
		rec, onCluster := both(ctx, arov1alpha1.DefaultIngressCertificate)
		Expect([]string{string(rec.Status), rec.Reason, rec.Message}).To(Equal([]string{"True", "CheckDone", "Default ingress certificate is in use"}))
		Expect(onCluster.Message).To(Equal(rec.Message))
		rec, onCluster = both(ctx, arov1alpha1.DefaultClusterDNS)
		Expect([]string{string(rec.Status), rec.Reason, rec.Message}).To(Equal([]string{"True", "CheckDone", "no in-cluster upstream DNS servers"}))
		Expect(onCluster.Status).To(Equal(operatorv1.ConditionTrue))
	})

	It("confirm a root-zone forward a minute later, then report it False with ARO's message", func(ctx context.Context) {
		update(ctx, dns, func() {
			dns.Spec.Servers = []operatorv1.Server{{Name: "all", Zones: []string{"."}, ForwardPlugin: operatorv1.ForwardPlugin{Upstreams: []string{"10.0.0.10"}}}}
		})
		res := pass(ctx)
		Expect(res.RequeueAfter).To(BeNumerically("<=", 66*time.Second), "a failure held back is confirmed soon")
		rec, _ := both(ctx, arov1alpha1.DefaultClusterDNS)
		Expect(rec.Status).To(Equal(operatorv1.ConditionTrue))
		Expect(rec.Message).To(HaveSuffix(`failing for 1: malformed config: "." in zones`))
		clock.Step(time.Minute)
		pass(ctx)
		rec, onCluster := both(ctx, arov1alpha1.DefaultClusterDNS)
		Expect([]string{string(rec.Status), rec.Reason, rec.Message}).To(Equal([]string{"False", "CheckDone", `malformed config: "." in zones`}))
		Expect(onCluster.Status).To(Equal(operatorv1.ConditionFalse))

		update(ctx, dns, func() {
			dns.Spec.Servers = []operatorv1.Server{{Name: "corp", Zones: []string{"corp.example.com"}, ForwardPlugin: operatorv1.ForwardPlugin{Upstreams: []string{"10.0.0.10", "10.0.0.11"}}}}
		})
		clock.Step(time.Minute)
		pass(ctx)
		rec, _ = both(ctx, arov1alpha1.DefaultClusterDNS)
		Expect([]string{string(rec.Status), rec.Message}).To(Equal([]string{"True", "custom upstream DNS servers in use: 10.0.0.10, 10.0.0.11"}))
	})

	It("report a certificate other than ARO's on a managed domain, and accept any on a custom domain", func(ctx context.Context) {
		update(ctx, ic, func() { ic.Spec.DefaultCertificate.Name = "my-own" })
		for range 2 {
			clock.Step(time.Minute)
			pass(ctx)
		}
		rec, onCluster := both(ctx, arov1alpha1.DefaultIngressCertificate)
		Expect([]string{string(rec.Status), rec.Reason, rec.Message}).To(Equal([]string{"False", "CheckFailed", "invalid ingress certificate name for cluster with managed domain"}))
		Expect(onCluster.Status).To(Equal(operatorv1.ConditionFalse))

		c := cluster(ctx)
		c.Spec.Domain = "apps.example.com"
		Expect(env.Client.Update(ctx, c)).To(Succeed())
		clock.Step(time.Minute)
		pass(ctx)
		rec, _ = both(ctx, arov1alpha1.DefaultIngressCertificate)
		Expect(rec.Status).To(Equal(operatorv1.ConditionTrue))
	})

	It("are only recorded while ARO's operator runs its checkers: ARO's Cluster keeps what ARO wrote", func(ctx context.Context) {
		Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ownership.Namespace}}))).To(Succeed())
		dep := aroDeployment(ownership.MasterDeployment, 1)
		Expect(env.Client.Create(ctx, dep)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, dep))).To(Succeed()) })
		before := cluster(ctx).Status.Conditions
		update(ctx, dns, func() {
			dns.Spec.Servers = []operatorv1.Server{{Name: "all", Zones: []string{"."}, ForwardPlugin: operatorv1.ForwardPlugin{Upstreams: []string{"10.0.0.10"}}}}
		})
		for range 2 {
			clock.Step(time.Minute)
			pass(ctx)
		}
		rec, onCluster := both(ctx, arov1alpha1.DefaultClusterDNS)
		Expect(rec.Status).To(Equal(operatorv1.ConditionFalse), "found and recorded")
		Expect(onCluster).To(Equal(conditionOf(before, arov1alpha1.DefaultClusterDNS)), "ARO's checker owns the Cluster's condition")
		for _, ch := range record(ctx).Checks {
			if ch.Name == amv1alpha1.CheckClusterDNS || ch.Name == amv1alpha1.CheckIngressCertificate {
				Expect(ch.Ownership).To(Equal(amv1alpha1.OwnershipObserve), "%s: %s", ch.Name, ch.OwnershipMessage)
			}
		}
		Expect(env.Client.Delete(ctx, dep)).To(Succeed())
		update(ctx, dns, func() { dns.Spec.Servers = nil })
		clock.Step(time.Minute)
		pass(ctx)
		_, onCluster = both(ctx, arov1alpha1.DefaultClusterDNS)
		Expect(onCluster.Status).To(Equal(operatorv1.ConditionTrue), "replacing again once ARO's deployment is gone")
	})

	It("are Unknown, with no reason and no round, while ARO's aro.checker.enabled is false", func(ctx context.Context) {
		c := cluster(ctx)
		c.Spec.OperatorFlags = map[string]string{"aro.checker.enabled": "false"}
		Expect(env.Client.Update(ctx, c)).To(Succeed())
		res := pass(ctx)
		Expect(res.RequeueAfter).To(BeZero())
		for _, t := range []string{arov1alpha1.DefaultIngressCertificate, arov1alpha1.DefaultClusterDNS} {
			rec, onCluster := both(ctx, t)
			Expect([]string{string(rec.Status), rec.Reason, rec.Message}).To(Equal([]string{"Unknown", "", ""}), t)
			Expect(onCluster.Status).To(Equal(operatorv1.ConditionUnknown), t)
		}
	})
})
