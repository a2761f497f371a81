package controller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	"github.com/upshift-io/upshift/services/aromonitor/azure"
	"github.com/upshift-io/upshift/services/aromonitor/controller"
	"github.com/upshift-io/upshift/tools/azuresim"
)

var _ = Describe("credentials", Ordered, func() {
	var (
		a *azureCluster
		r *controller.CredentialsReconciler
	)
	BeforeAll(func(ctx context.Context) {
		a = newAzureCluster(ctx)
		cloud := a.arm.Cloud()
		r = &controller.CredentialsReconciler{Client: env.Client, Recorder: recorder, Clock: a.clock, Credentials: a.creds,
			Azure: azure.NewFactory(azure.Options{Cloud: &cloud, Transport: a.arm.Client(), GraphScope: azuresim.GraphAudience + "/.default"})}
	})
	pass := func(ctx context.Context) operatorv1.OperatorCondition {
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "cluster"}})
		Expect(err).NotTo(HaveOccurred())
		return conditionOf(cluster(ctx).Status.Conditions, arov1alpha1.ServicePrincipalValid)
	}

	It("is valid with a working secret, and says which identity it checked", func(ctx context.Context) {
		c := pass(ctx)
		Expect(c.Status).To(Equal(operatorv1.ConditionTrue))
		Expect(c.Reason).To(Equal("Validation Successful"))
		st := record(ctx).Credentials
		Expect(st).NotTo(BeNil())
		Expect(st.Kind).To(Equal("ServicePrincipal"))
		Expect(st.ClientID).To(Equal(clientID))
	})

	It("turns False with ARO's reason and the AAD code when the secret expires", func(ctx context.Context) {
		invalid := emitted.count(controller.EventCredentialsInvalid)
		a.arm.UpdateApp(clientID, func(app *azuresim.App) { app.SecretExpired = true })
		a.bumpSecret(ctx, nil)
		c := pass(ctx)
		Expect(c.Status).To(Equal(operatorv1.ConditionFalse))
		Expect(c.Reason).To(Equal("Service Principal invalid"))
		Expect(c.Message).To(ContainSubstring("AADSTS7000222"))
		Expect(record(ctx).Credentials.AADErrorCode).To(Equal("AADSTS7000222"))
		Expect(emitted.count(controller.EventCredentialsInvalid)).To(Equal(invalid + 1))
		Eventually(func() []eventsv1.Event { return eventsWith(ctx, controller.EventCredentialsInvalid) }).ShouldNot(BeEmpty())
	})

	It("is Unknown, not False, when AAD cannot be reached", func(ctx context.Context) {
		a.arm.UpdateApp(clientID, func(app *azuresim.App) { app.SecretExpired = false })
		a.bumpSecret(ctx, nil)
		a.arm.FailNext("POST", "token", azuresim.Fault{Status: 503, Code: "ServiceUnavailable"}, azuresim.Fault{Status: 503}, azuresim.Fault{Status: 503}, azuresim.Fault{Status: 503})
		c := pass(ctx)
		Expect(c.Status).To(Equal(operatorv1.ConditionUnknown), c.Message)
		Expect(c.Reason).To(Equal("Validation Unavailable"))
	})

	It("recovers, and warns once ahead of a known expiry", func(ctx context.Context) {
		warned := emitted.count(controller.EventCredentialsExpiring)
		valid := emitted.count(controller.EventCredentialsValid)
		soon := a.clock.Now().Add(10 * 24 * time.Hour).Format(time.RFC3339)
		a.bumpSecret(ctx, map[string]string{azure.ExpiresAnnotation: soon})
		c := pass(ctx)
		Expect(c.Status).To(Equal(operatorv1.ConditionTrue))
		Expect(c.Message).To(ContainSubstring("the client secret expires at " + soon))
		a.clock.Step(15 * time.Minute)
		pass(ctx)
		Eventually(func() []eventsv1.Event { return eventsWith(ctx, controller.EventCredentialsExpiring) }).Should(HaveLen(1))
		Expect(emitted.count(controller.EventCredentialsExpiring)).To(Equal(warned+1), "one Warning over two passes")
		Expect(emitted.count(controller.EventCredentialsValid)).To(Equal(valid+1), "one Normal Event as it turned True")
		Eventually(func() []eventsv1.Event { return eventsWith(ctx, controller.EventCredentialsValid) }).ShouldNot(BeEmpty())
	})

	It("warns once per expiry, also while the condition is not True", func(ctx context.Context) {
		expiring := func() []eventsv1.Event { return eventsWith(ctx, controller.EventCredentialsExpiring) }
		Eventually(expiring).Should(HaveLen(1))
		// AAD unreachable for two passes: the condition is Unknown, its
		// message without the expiry.
		secret := &corev1.Secret{}
		Expect(env.Client.Get(ctx, a.creds, secret)).To(Succeed())
		Expect(secret.Annotations).To(HaveKey(azure.ExpiresAnnotation))
		warned := emitted.count(controller.EventCredentialsExpiring)
		for i := 0; i < 2; i++ {
			// A new version, so a new credential: azidentity would
			// otherwise answer from its token cache.
			a.bumpSecret(ctx, secret.Annotations)
			a.arm.FailNext("POST", "token", azuresim.Fault{Status: 503}, azuresim.Fault{Status: 503}, azuresim.Fault{Status: 503}, azuresim.Fault{Status: 503})
			a.clock.Step(15 * time.Minute)
			Expect(pass(ctx).Status).To(Equal(operatorv1.ConditionUnknown))
		}
		// No repeat was emitted (it would be folded into the first Event as
		// its series).
		Expect(emitted.count(controller.EventCredentialsExpiring)).To(Equal(warned))
		Expect(expiring()[0].Series).To(BeNil())
		Expect(expiring()).To(HaveLen(1))
	})

	It("dates a Secret version when it first sees it", func(ctx context.Context) {
		a.clock.Step(time.Hour)
		a.bumpSecret(ctx, nil)
		seen := a.clock.Now()
		pass(ctx)
		st := record(ctx).Credentials
		Expect(st.SecretUpdatedTime).NotTo(BeNil())
		Expect(st.SecretUpdatedTime.Time).To(BeTemporally("==", seen.Truncate(time.Second)))
		a.clock.Step(time.Hour)
		pass(ctx)
		Expect(record(ctx).Credentials.SecretUpdatedTime.Time).To(BeTemporally("==", seen.Truncate(time.Second)), "the same version keeps its date")
	})

	It("refuses a principal holding the forbidden Graph role", func(ctx context.Context) {
		a.arm.UpdateApp(clientID, func(app *azuresim.App) { app.GraphRoles = []string{"Application.ReadWrite.OwnedBy"} })
		// azidentity caches tokens for their lifetime (an hour), so a role
		// granted later is seen at the next token; a rotation gets one now.
		a.bumpSecret(ctx, nil)
		c := pass(ctx)
		Expect(c.Status).To(Equal(operatorv1.ConditionFalse))
		Expect(c.Message).To(ContainSubstring("Application.ReadWrite.OwnedBy"))
	})
})

// bumpSecret rewrites the credentials Secret (a rotation), with annotations.
func (a *azureCluster) bumpSecret(ctx context.Context, annotations map[string]string) {
	s := &corev1.Secret{}
	Expect(env.Client.Get(ctx, a.creds, s)).To(Succeed())
	s.Annotations = annotations
	s.Data["rotation"] = []byte(a.clock.Now().String())
	Expect(env.Client.Update(ctx, s)).To(Succeed())
}
