package controller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/services/aromonitor/config"
	"github.com/upshift-io/upshift/services/aromonitor/controller"
)

var _ = Describe("the MonitorConfig", func() {
	It("is created when there is none, every setting at its default, and carries the effective configuration, written once", func(ctx context.Context) {
		c := &arov1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
			Spec: arov1alpha1.ClusterSpec{OperatorFlags: map[string]string{"aro.azuresubnets.nsg.managed": "false"}}}
		Expect(env.Client.Create(ctx, c)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, c)).To(Succeed()) })
		mc := &amv1alpha1.MonitorConfig{}
		key := client.ObjectKey{Name: amv1alpha1.SingletonName}
		Expect(env.Client.Get(ctx, key, mc)).NotTo(Succeed(), "no MonitorConfig to begin with")
		DeferCleanup(func(ctx context.Context) {
			Expect(env.Client.Delete(ctx, &amv1alpha1.MonitorConfig{ObjectMeta: metav1.ObjectMeta{Name: amv1alpha1.SingletonName}})).To(Succeed())
		})

		r := &controller.ConfigReconciler{Client: env.Client}
		pass := func() {
			_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "cluster"}})
			Expect(err).NotTo(HaveOccurred())
			Expect(env.Client.Get(ctx, key, mc)).To(Succeed())
		}
		pass()
		Expect(mc.Spec).To(Equal(config.Defaults()), "the CRD's defaults fill the empty spec")
		pass()
		eff := mc.Status.EffectiveConfiguration
		Expect(eff).NotTo(BeNil())
		Expect(eff.NSGMode).To(Equal("Observe"), "ARO's aro.azuresubnets.nsg.managed=false narrows Remediate")
		Expect(eff.InternetChecks).To(BeTrue())
		rv := mc.ResourceVersion
		pass()
		Expect(mc.ResourceVersion).To(Equal(rv), "nothing changed: no write")
	})
})
