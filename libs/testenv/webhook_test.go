package testenv_test

import (
	"bytes"
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/upshift-io/upshift/libs/testenv"
)

var _ = Describe("validating webhooks", func() {
	It("sends the requests a webhook matches to the test's webhook server, and refuses them while it is down", func(ctx SpecContext) {
		hook := &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "deny-forbidden"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "deny.testenv.upshift.io",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{
					Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "webhook", Path: ptr.To("/deny")},
				},
				Rules: []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}},
				ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"testenv-webhook": "on"}},
				FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
			}},
		}
		wenv, err := testenv.Start(ctx, testenv.Options{ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{hook}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(wenv.Stop)
		Expect(hook.Webhooks[0].ClientConfig.Service).NotTo(BeNil(), "the caller's configuration was rewritten")
		Expect(wenv.Webhook.Port).NotTo(BeZero())

		cm := func(name, value string) *corev1.ConfigMap {
			return &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"testenv-webhook": "on"}},
				Data:       map[string]string{"value": value},
			}
		}
		// No server yet: failurePolicy Fail refuses.
		err = wenv.Client.Create(ctx, cm("early", "fine"))
		Expect(err).To(HaveOccurred())
		Expect(apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err)).To(BeTrue(), "%v", err)

		srv := webhook.NewServer(webhook.Options{Host: wenv.Webhook.Host, Port: wenv.Webhook.Port, CertDir: wenv.Webhook.CertDir})
		srv.Register("/deny", &admission.Webhook{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
			if bytes.Contains(req.Object.Raw, []byte(`"forbidden"`)) {
				return admission.Denied("value forbidden")
			}
			return admission.Allowed("")
		})})
		sctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(srv.Start(sctx)).To(Succeed())
		}()
		DeferCleanup(func() { cancel(); <-done })
		Eventually(func() error { return srv.StartedChecker()(&http.Request{}) }).WithTimeout(10 * time.Second).Should(Succeed())

		Eventually(func() error { return wenv.Client.Create(ctx, cm("fine", "fine")) }).WithTimeout(10 * time.Second).Should(Succeed())
		err = wenv.Client.Create(ctx, cm("denied", "forbidden"))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring(`admission webhook "deny.testenv.upshift.io" denied the request: value forbidden`))
	}, NodeTimeout(2*time.Minute))
})
