package controller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/libs/metricstest"

	"github.com/upshift-io/upshift/services/aromonitor/controller"
	"github.com/upshift-io/upshift/services/aromonitor/metrics"
)

var _ = Describe("Status metrics", func() {
	It("drops a condition's series when the condition or the MonitorConfig goes", func(ctx context.Context) {
		reg := prometheus.NewRegistry()
		r := &controller.StatusMetricsReconciler{Client: env.Client, Metrics: metrics.New(reg)}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "cluster"}}
		series := func() map[string]float64 {
			got, err := metricstest.Series(reg, "upshift_aro_monitor_condition")
			Expect(err).NotTo(HaveOccurred())
			return got
		}
		const suppressedTrue = "status=True,type=RemediationSuppressed"

		c := &amv1alpha1.MonitorConfig{ObjectMeta: metav1.ObjectMeta{Name: amv1alpha1.SingletonName}}
		Expect(env.Client.Create(ctx, c)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(env.Client.Delete(ctx, &amv1alpha1.MonitorConfig{ObjectMeta: metav1.ObjectMeta{Name: amv1alpha1.SingletonName}}))).To(Succeed())
		})
		c.Status.Conditions = []operatorv1.OperatorCondition{
			{Type: amv1alpha1.RemediationSuppressed, Status: operatorv1.ConditionTrue, Reason: "TugOfWar", LastTransitionTime: metav1.Now()},
			{Type: amv1alpha1.NSGAssociated, Status: operatorv1.ConditionTrue, Reason: "CheckDone", LastTransitionTime: metav1.Now()},
		}
		Expect(env.Client.Status().Update(ctx, c)).To(Succeed())
		_, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(series()).To(HaveKeyWithValue(suppressedTrue, 1.0))

		c.Status.Conditions = c.Status.Conditions[1:]
		Expect(env.Client.Status().Update(ctx, c)).To(Succeed())
		_, err = r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(series()).NotTo(HaveKey(suppressedTrue), "a condition no longer written is no longer exported")
		Expect(series()).To(HaveKeyWithValue("status=True,type=NSGAssociated", 1.0))

		Expect(env.Client.Delete(ctx, c)).To(Succeed())
		_, err = r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(series()).To(BeEmpty())
	})
})
