// Package bundle turns the objects a component's chart renders into an OLM
// bundle (the registry+v1 format): a ClusterServiceVersion that carries the
// Deployments, the ServiceAccounts' RBAC and the admission webhooks, next to
// the CRDs and the other objects OLM installs as they are.
//
// The chart stays the one source of truth: nothing here adds a permission,
// a flag or an object the chart does not render. What OLM cannot carry
// faithfully is either adapted in a way the result says (Notes), or refused.
package bundle

import (
	"fmt"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// InstallNamespace is the namespace charts are rendered into. OLM decides the
// real one at install time, so this name must not survive into the bundle:
// where a Deployment's arguments name it, they are rewritten to the pod's
// namespace; anywhere else the object cannot be carried (see Build).
const InstallNamespace = "olm-bundle-install-namespace"

// Meta is what a bundle says about itself beyond the chart's objects.
type Meta struct {
	// Package is the OLM package name; the CSV is <Package>.v<Version>.
	Package string
	// Version is the bundle's semantic version (the charts' version).
	Version string
	// Channels the bundle is in, and the package's default channel.
	Channels       []string
	DefaultChannel string

	DisplayName string
	// Description is the chart's one-paragraph description.
	Description string
	Keywords    []string
	Categories  string
	Provider    v1alpha1.AppLink
	Links       []v1alpha1.AppLink
	Maintainers []v1alpha1.Maintainer

	// InstallModes the component supports, each with the reason.
	InstallModes []v1alpha1.InstallMode
	// MinKubeVersion is the oldest Kubernetes the component runs on, and
	// OpenShiftVersions the matching OpenShift range for the
	// com.redhat.openshift.versions annotation ("v4.16": 4.16 and later).
	MinKubeVersion    string
	OpenShiftVersions string
	// SuggestedNamespace is where the console offers to install it.
	SuggestedNamespace string

	// Required are CRDs another package must provide (by name, version,
	// kind): OLM installs a package that owns them first.
	Required []v1alpha1.CRDDescription
}

// CSVName is the ClusterServiceVersion's name.
func (m Meta) CSVName() string { return m.Package + ".v" + m.Version }

// SkipRange lets every earlier version upgrade straight to this one: no
// release has been published, so there is no chain of replaces to extend.
func (m Meta) SkipRange() string { return ">=0.0.0 <" + m.Version }

// Bundle is a built bundle, ready to write.
type Bundle struct {
	Meta Meta
	CSV  *v1alpha1.ClusterServiceVersion
	// CRDs are the chart's CustomResourceDefinitions, owned by the CSV.
	CRDs []*unstructured.Unstructured
	// Others are the objects OLM creates as they are beside the CSV.
	Others []*unstructured.Unstructured
	// Notes say where the bundle differs from a helm install, one line each.
	Notes []string
}

// Build makes the bundle from the objects a chart rendered into
// InstallNamespace.
func Build(objs []*unstructured.Unstructured, meta Meta) (*Bundle, error) {
	if _, err := semver.Parse(meta.Version); err != nil {
		return nil, fmt.Errorf("version %q: %w", meta.Version, err)
	}
	b := &Bundle{Meta: meta}
	var (
		deployments []*appsv1.Deployment
		rbacObjs    []*unstructured.Unstructured
		webhooks    []*unstructured.Unstructured
		rest        []*unstructured.Unstructured
	)
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			var d appsv1.Deployment
			if err := fromUnstructured(o, &d); err != nil {
				return nil, err
			}
			deployments = append(deployments, &d)
		case "CustomResourceDefinition":
			b.CRDs = append(b.CRDs, clean(o))
		case "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
			rbacObjs = append(rbacObjs, o)
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			webhooks = append(webhooks, o)
		default:
			rest = append(rest, o)
		}
	}
	if len(deployments) == 0 {
		return nil, fmt.Errorf("the chart renders no Deployment")
	}

	// Webhooks first: they decide which Service and Secret OLM replaces and
	// how the Deployments find OLM's certificate.
	wh, err := webhookDefinitions(webhooks, deployments, rest)
	if err != nil {
		return nil, err
	}
	b.Notes = append(b.Notes, wh.notes...)

	perms, err := permissions(rbacObjs, deployments)
	if err != nil {
		return nil, err
	}
	b.Notes = append(b.Notes, perms.notes...)
	rest = append(rest, perms.others...)

	for _, o := range rest {
		if wh.replaced[key(o)] {
			continue
		}
		if !supported[o.GetKind()] {
			return nil, fmt.Errorf("%s %s: OLM bundles cannot carry a %s (a registry+v1 bundle holds only %s)",
				o.GetKind(), o.GetName(), o.GetKind(), supportedList())
		}
		if o.GetKind() == "Secret" {
			return nil, fmt.Errorf("the chart renders Secret %s, which a bundle would publish in its image to anyone who can pull it", o.GetName())
		}
		c := clean(o)
		if mentionsInstallNamespace(c) {
			b.Notes = append(b.Notes, fmt.Sprintf("%s %s left out: it names the install namespace, which OLM decides at install time",
				o.GetKind(), o.GetName()))
			continue
		}
		b.Others = append(b.Others, c)
	}

	specs := make([]v1alpha1.StrategyDeploymentSpec, 0, len(deployments))
	for _, d := range deployments {
		spec, err := deploymentSpec(d, wh.certMounts[d.Name])
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}

	owned, err := ownedCRDs(b.CRDs)
	if err != nil {
		return nil, err
	}

	b.CSV = &v1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.ClusterServiceVersionKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        meta.CSVName(),
			Annotations: csvAnnotations(meta, specs),
		},
		Spec: v1alpha1.ClusterServiceVersionSpec{
			DisplayName:    meta.DisplayName,
			Description:    meta.Description,
			Version:        version.OperatorVersion{Version: semver.MustParse(meta.Version)},
			Maturity:       "alpha",
			Keywords:       meta.Keywords,
			Provider:       meta.Provider,
			Links:          meta.Links,
			Maintainers:    meta.Maintainers,
			InstallModes:   meta.InstallModes,
			MinKubeVersion: meta.MinKubeVersion,
			CustomResourceDefinitions: v1alpha1.CustomResourceDefinitions{
				Owned:    owned,
				Required: meta.Required,
			},
			InstallStrategy: v1alpha1.NamedInstallStrategy{
				StrategyName: v1alpha1.InstallStrategyNameDeployment,
				StrategySpec: v1alpha1.StrategyDetailsDeployment{
					DeploymentSpecs:    specs,
					Permissions:        perms.namespaced,
					ClusterPermissions: perms.cluster,
				},
			},
			WebhookDefinitions: wh.definitions,
			RelatedImages:      relatedImages(specs),
		},
	}
	return b, nil
}

// supported are the kinds OLM creates from a registry+v1 bundle besides the
// CSV and CRDs (operator-registry's list of supported bundle resources).
// OLM creates the namespaced ones in the install namespace, whatever
// namespace the manifest names.
var supported = map[string]bool{
	"Secret": true, "ConfigMap": true, "Service": true, "ServiceAccount": true,
	"Role": true, "RoleBinding": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"PrometheusRule": true, "ServiceMonitor": true, "PodDisruptionBudget": true,
	"PriorityClass": true, "VerticalPodAutoscaler": true, "ConsoleYAMLSample": true,
}

func supportedList() string {
	kinds := make([]string, 0, len(supported))
	for k := range supported {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return "a ClusterServiceVersion, CustomResourceDefinitions and " + strings.Join(kinds, ", ")
}

// deploymentSpec is the CSV's copy of a chart Deployment, with the install
// namespace in its arguments replaced by the pod's own, and, when it serves a
// webhook, the chart's certificate replaced by the one OLM mounts.
func deploymentSpec(d *appsv1.Deployment, certs []certMount) (v1alpha1.StrategyDeploymentSpec, error) {
	d = d.DeepCopy()
	pod := &d.Spec.Template.Spec
	for _, c := range certs {
		if err := useOLMCertificate(pod, c); err != nil {
			return v1alpha1.StrategyDeploymentSpec{}, fmt.Errorf("the Deployment %s: %w", d.Name, err)
		}
	}
	for i := range pod.Containers {
		if err := podNamespaceInArgs(&pod.Containers[i]); err != nil {
			return v1alpha1.StrategyDeploymentSpec{}, fmt.Errorf("the Deployment %s: %w", d.Name, err)
		}
	}
	cleanLabels(d.Labels)
	cleanLabels(d.Spec.Template.Labels)
	spec := v1alpha1.StrategyDeploymentSpec{Name: d.Name, Label: d.Labels, Spec: d.Spec}
	if mentionsInstallNamespace(spec) {
		return spec, fmt.Errorf("the Deployment %s names the install namespace outside a container's arguments; OLM decides it at install time", d.Name)
	}
	return spec, nil
}

// ownedCRDs describes every served version of every CRD, as OLM requires
// of the CRDs a bundle carries.
func ownedCRDs(crds []*unstructured.Unstructured) ([]v1alpha1.CRDDescription, error) {
	var owned []v1alpha1.CRDDescription
	for _, o := range crds {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := fromUnstructured(o, &crd); err != nil {
			return nil, err
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			desc := ""
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				desc = firstSentence(v.Schema.OpenAPIV3Schema.Description)
			}
			if desc == "" {
				desc = fmt.Sprintf("%s of %s", crd.Spec.Names.Kind, crd.Spec.Group)
			}
			owned = append(owned, v1alpha1.CRDDescription{
				Name:        crd.Name,
				Version:     v.Name,
				Kind:        crd.Spec.Names.Kind,
				DisplayName: crd.Spec.Names.Kind,
				Description: desc,
			})
		}
	}
	return owned, nil
}

// relatedImages lists every image the Deployments run, so that a mirror
// for a disconnected cluster knows what to copy. A chart value that pins a
// digest makes the reference a digest here too.
func relatedImages(specs []v1alpha1.StrategyDeploymentSpec) []v1alpha1.RelatedImage {
	var out []v1alpha1.RelatedImage
	seen := map[string]bool{}
	for _, s := range specs {
		pod := s.Spec.Template.Spec
		for _, c := range append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...) {
			if seen[c.Image] {
				continue
			}
			seen[c.Image] = true
			out = append(out, v1alpha1.RelatedImage{Name: imageName(c.Image), Image: c.Image})
		}
	}
	return out
}

// imageName is the last path element of an image reference, without tag or
// digest: ghcr.io/upshift-io/cpms-controller:v1 -> cpms-controller.
func imageName(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		ref = ref[i+1:]
	}
	if i := strings.Index(ref, ":"); i >= 0 {
		ref = ref[:i]
	}
	return ref
}

func csvAnnotations(meta Meta, specs []v1alpha1.StrategyDeploymentSpec) map[string]string {
	a := map[string]string{
		"capabilities":   "Basic Install",
		"categories":     meta.Categories,
		"description":    firstSentence(meta.Description),
		"repository":     meta.Provider.URL,
		"support":        meta.Provider.Name,
		"olm.skipRange":  meta.SkipRange(),
		"containerImage": specs[0].Spec.Template.Spec.Containers[0].Image,
	}
	if meta.SuggestedNamespace != "" {
		a["operatorframework.io/suggested-namespace"] = meta.SuggestedNamespace
	}
	return a
}

// firstSentence is the text up to and including the first ". ", or all of it.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// clean is a copy of o as a bundle manifest: no namespace (OLM sets it), and
// no trace of helm, which does not manage it.
func clean(o *unstructured.Unstructured) *unstructured.Unstructured {
	c := o.DeepCopy()
	c.SetNamespace("")
	labels := c.GetLabels()
	cleanLabels(labels)
	c.SetLabels(labels)
	ann := c.GetAnnotations()
	delete(ann, "helm.sh/resource-policy")
	if len(ann) == 0 {
		ann = nil
	}
	c.SetAnnotations(ann)
	return c
}

func cleanLabels(labels map[string]string) {
	delete(labels, "helm.sh/chart")
	if _, ok := labels["app.kubernetes.io/managed-by"]; ok {
		labels["app.kubernetes.io/managed-by"] = "olm"
	}
}

func key(o *unstructured.Unstructured) string { return o.GetKind() + "/" + o.GetName() }

func fromUnstructured(o *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
	}
	return nil
}
