package framework

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/upshift-io/upshift/libs/testenv"
)

// ValidatingWebhooks returns the chart's ValidatingWebhookConfigurations,
// for testenv.Options.ValidatingWebhooks: the apiserver then calls the
// webhooks exactly as the chart registers them (rules, failure policy,
// path), at the local address testenv gives (Env.Webhook) instead of the
// chart's Service.
func (c *Chart) ValidatingWebhooks() ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	var out []*admissionregistrationv1.ValidatingWebhookConfiguration
	for _, o := range c.Kinds("ValidatingWebhookConfiguration") {
		w := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, w); err != nil {
			return nil, fmt.Errorf("ValidatingWebhookConfiguration %s: %w", o.GetName(), err)
		}
		out = append(out, w)
	}
	return out, nil
}

// WebhookFlags are the flags that make a component serve its webhook where
// the apiserver of env calls it (Env.Webhook): its host, port and the folder
// with the certificate the apiserver trusts.
func WebhookFlags(env *testenv.Env) []string {
	return []string{"--webhook-host=" + env.Webhook.Host, fmt.Sprintf("--webhook-port=%d", env.Webhook.Port),
		"--webhook-cert-dir=" + env.Webhook.CertDir}
}
