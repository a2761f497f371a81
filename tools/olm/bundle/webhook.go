package bundle

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// OLMWebhookCertDir is where OLM mounts the serving certificate (tls.crt,
// tls.key) it issues for a Deployment's webhooks, the directory
// controller-runtime reads by default.
const OLMWebhookCertDir = "/tmp/k8s-webhook-server/serving-certs"

// webhooks is the chart's admission webhooks as a CSV states them.
type webhooks struct {
	definitions []v1alpha1.WebhookDescription
	// replaced are the chart's objects OLM makes itself for a webhook: its
	// Service (OLM's is <deployment>-service) and its certificate Secret.
	replaced map[string]bool
	// certMounts are, by Deployment, the volumes that mount the chart's
	// certificate, to point at OLM's instead.
	certMounts map[string][]certMount
	notes      []string
}

type certMount struct{ volume string }

// webhookDefinitions turns webhook configurations into CSV webhook
// definitions. OLM then creates the configuration, a Service in front of the
// Deployment and a CA and serving certificate it rotates; the chart's own
// Service and Secret for the webhook are left out.
func webhookDefinitions(configs []*unstructured.Unstructured, deployments []*appsv1.Deployment, rest []*unstructured.Unstructured) (webhooks, error) {
	out := webhooks{replaced: map[string]bool{}, certMounts: map[string][]certMount{}}
	services := map[string]*corev1.Service{}
	tlsSecrets := map[string]bool{}
	for _, o := range rest {
		switch o.GetKind() {
		case "Service":
			var s corev1.Service
			if err := fromUnstructured(o, &s); err != nil {
				return out, err
			}
			services[s.Name] = &s
		case "Secret":
			var s corev1.Secret
			if err := fromUnstructured(o, &s); err != nil {
				return out, err
			}
			if s.Type == corev1.SecretTypeTLS {
				tlsSecrets[s.Name] = true
			}
		}
	}

	for _, o := range configs {
		var hooks []webhookInfo
		typ := v1alpha1.ValidatingAdmissionWebhook
		switch o.GetKind() {
		case "ValidatingWebhookConfiguration":
			var c admissionregistrationv1.ValidatingWebhookConfiguration
			if err := fromUnstructured(o, &c); err != nil {
				return out, err
			}
			for _, w := range c.Webhooks {
				hooks = append(hooks, webhookInfo{name: w.Name, client: w.ClientConfig, namespaceSelector: w.NamespaceSelector,
					desc: v1alpha1.WebhookDescription{
						Rules: w.Rules, FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy,
						ObjectSelector: w.ObjectSelector, SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds,
						AdmissionReviewVersions: w.AdmissionReviewVersions,
					}})
			}
		case "MutatingWebhookConfiguration":
			typ = v1alpha1.MutatingAdmissionWebhook
			var c admissionregistrationv1.MutatingWebhookConfiguration
			if err := fromUnstructured(o, &c); err != nil {
				return out, err
			}
			for _, w := range c.Webhooks {
				hooks = append(hooks, webhookInfo{name: w.Name, client: w.ClientConfig, namespaceSelector: w.NamespaceSelector,
					desc: v1alpha1.WebhookDescription{
						Rules: w.Rules, FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy,
						ObjectSelector: w.ObjectSelector, SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds,
						AdmissionReviewVersions: w.AdmissionReviewVersions, ReinvocationPolicy: w.ReinvocationPolicy,
					}})
			}
		}
		for _, h := range hooks {
			ref := h.client.Service
			if ref == nil {
				return out, fmt.Errorf("webhook %s calls a URL; OLM serves webhooks only from a Deployment of the CSV", h.name)
			}
			svc, ok := services[ref.Name]
			if !ok {
				return out, fmt.Errorf("webhook %s calls Service %s, which the chart does not render", h.name, ref.Name)
			}
			dep, err := selectedDeployment(svc, deployments)
			if err != nil {
				return out, fmt.Errorf("webhook %s: %w", h.name, err)
			}
			port := int32(443)
			if ref.Port != nil {
				port = *ref.Port
			}
			target, err := targetPort(svc, port, dep)
			if err != nil {
				return out, fmt.Errorf("webhook %s: %w", h.name, err)
			}
			d := h.desc
			d.GenerateName = h.name
			d.Type = typ
			d.DeploymentName = dep.Name
			d.ContainerPort = port
			d.TargetPort = &target
			d.WebhookPath = ref.Path
			out.definitions = append(out.definitions, d)
			out.replaced["Service/"+svc.Name] = true
			out.notes = append(out.notes, fmt.Sprintf("webhook %s: OLM creates its configuration, the Service %s-service and a serving certificate it rotates, in place of the chart's Service %s and certificate",
				h.name, dep.Name, svc.Name))
			if h.namespaceSelector != nil {
				sel, _ := json.Marshal(h.namespaceSelector)
				out.notes = append(out.notes, fmt.Sprintf("webhook %s: the chart's namespaceSelector %s is not carried; OLM selects the OperatorGroup's target namespaces (all of them in AllNamespaces mode)",
					h.name, sel))
			}

			if _, done := out.certMounts[dep.Name]; done {
				continue
			}
			for _, v := range dep.Spec.Template.Spec.Volumes {
				if v.Secret != nil && tlsSecrets[v.Secret.SecretName] {
					out.replaced["Secret/"+v.Secret.SecretName] = true
					out.certMounts[dep.Name] = append(out.certMounts[dep.Name], certMount{volume: v.Name})
				}
			}
			if len(out.certMounts[dep.Name]) == 0 {
				return out, fmt.Errorf("webhook %s: Deployment %s mounts no certificate Secret of the chart, so it cannot be pointed at OLM's", h.name, dep.Name)
			}
		}
	}
	return out, nil
}

type webhookInfo struct {
	name              string
	client            admissionregistrationv1.WebhookClientConfig
	namespaceSelector *metav1.LabelSelector
	desc              v1alpha1.WebhookDescription
}

// selectedDeployment is the one Deployment whose pods the Service selects.
func selectedDeployment(svc *corev1.Service, deployments []*appsv1.Deployment) (*appsv1.Deployment, error) {
	var found []*appsv1.Deployment
	for _, d := range deployments {
		labels := d.Spec.Template.Labels
		match := len(svc.Spec.Selector) > 0
		for k, v := range svc.Spec.Selector {
			if labels[k] != v {
				match = false
			}
		}
		if match {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("the Service %s selects %d Deployments of the chart, not one", svc.Name, len(found))
	}
	return found[0], nil
}

// targetPort is the container port behind the Service's port, as a number:
// OLM's Service forwards to it.
func targetPort(svc *corev1.Service, port int32, dep *appsv1.Deployment) (intstr.IntOrString, error) {
	for _, p := range svc.Spec.Ports {
		if p.Port != port {
			continue
		}
		if p.TargetPort.Type == intstr.Int {
			if p.TargetPort.IntVal == 0 {
				return intstr.FromInt32(port), nil
			}
			return p.TargetPort, nil
		}
		for _, c := range dep.Spec.Template.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == p.TargetPort.StrVal {
					return intstr.FromInt32(cp.ContainerPort), nil
				}
			}
		}
		return intstr.IntOrString{}, fmt.Errorf("the Service %s: no container of Deployment %s has port %q", svc.Name, dep.Name, p.TargetPort.StrVal)
	}
	return intstr.IntOrString{}, fmt.Errorf("the Service %s has no port %d", svc.Name, port)
}

// useOLMCertificate drops the volume with the chart's certificate and points
// the containers that mounted it at OLMWebhookCertDir, where OLM mounts its
// own: an argument naming the old mount path names OLM's instead.
func useOLMCertificate(pod *corev1.PodSpec, c certMount) error {
	pod.Volumes = slices.DeleteFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == c.volume })
	for i := range pod.Containers {
		ctr := &pod.Containers[i]
		var paths []string
		ctr.VolumeMounts = slices.DeleteFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool {
			if m.Name == c.volume {
				paths = append(paths, strings.TrimSuffix(m.MountPath, "/"))
				return true
			}
			return false
		})
		for _, p := range paths {
			found := false
			for j, a := range ctr.Args {
				if a == p || strings.HasSuffix(a, "="+p) || strings.HasSuffix(a, "="+p+"/") {
					ctr.Args[j] = strings.TrimSuffix(strings.TrimSuffix(a, "/"), p) + OLMWebhookCertDir
					found = true
				}
			}
			if !found {
				return fmt.Errorf("container %s reads its webhook certificate from %s, but no argument names that path", ctr.Name, p)
			}
		}
	}
	return nil
}

// podNamespaceInArgs rewrites the install namespace in the container's
// arguments to $(POD_NAMESPACE), which the kubelet expands from the
// container's environment, so that the Deployment works in whatever
// namespace OLM installs it.
func podNamespaceInArgs(c *corev1.Container) error {
	for i, a := range c.Args {
		if !strings.Contains(a, InstallNamespace) {
			continue
		}
		if !hasPodNamespaceEnv(c) {
			return fmt.Errorf("container %s: argument %q names the install namespace, and the container has no POD_NAMESPACE from the downward API to name it instead", c.Name, a)
		}
		c.Args[i] = strings.ReplaceAll(a, InstallNamespace, "$(POD_NAMESPACE)")
	}
	return nil
}

func hasPodNamespaceEnv(c *corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" {
			return true
		}
	}
	return false
}

// mentionsInstallNamespace says whether the install namespace appears
// anywhere in v once it is serialised.
func mentionsInstallNamespace(v any) bool {
	b, err := json.Marshal(v)
	return err != nil || strings.Contains(string(b), InstallNamespace)
}
