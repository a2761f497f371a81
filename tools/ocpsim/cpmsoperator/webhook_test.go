package cpmsoperator

import (
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// payloadWebhook is manifests/0000_30_control-plane-machine-set-operator_05_webhook.yaml
// of openshift/cluster-control-plane-machine-set-operator (unchanged since
// 2023), without its release annotations.
const payloadWebhook = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: controlplanemachineset.machine.openshift.io
webhooks:
- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: control-plane-machine-set-operator
      namespace: openshift-machine-api
      path: /validate-machine-openshift-io-v1-controlplanemachineset
      port: 9443
  failurePolicy: Fail
  name: controlplanemachineset.machine.openshift.io
  rules:
  - apiGroups:
    - machine.openshift.io
    apiVersions:
    - v1
    operations:
    - CREATE
    - UPDATE
    resources:
    - controlplanemachinesets
  sideEffects: None
`

func TestValidatingWebhookConfigurationIsThePayloads(t *testing.T) {
	var want admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict([]byte(payloadWebhook), &want); err != nil {
		t.Fatal(err)
	}
	svc := want.Webhooks[0].ClientConfig.Service
	if svc.Name != WebhookService || svc.Namespace != Namespace || *svc.Path != WebhookPath {
		t.Errorf("service %+v, want %s/%s %s", svc, Namespace, WebhookService, WebhookPath)
	}
	// The simulated one is called by URL, with the simulator's CA.
	want.TypeMeta = metav1.TypeMeta{}
	want.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1234" + WebhookPath), CABundle: []byte("ca")}

	got := ValidatingWebhookConfiguration("https://127.0.0.1:1234"+WebhookPath, []byte("ca"))
	if !reflect.DeepEqual(got, &want) {
		gy, _ := yaml.Marshal(got)
		wy, _ := yaml.Marshal(&want)
		t.Errorf("got\n%s\nwant\n%s", gy, wy)
	}
}
