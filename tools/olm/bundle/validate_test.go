package bundle_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/tools/olm/bundle"
	"github.com/upshift-io/upshift/tools/olm/render"
)

// A chart's output reduced to what a bundle needs: a CRD, a Deployment, its
// ServiceAccount and a ClusterRole bound to it. Written by hand, so the
// tests below do not depend on helm.
const rendered = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.upshift.io
spec:
  group: example.upshift.io
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Cluster
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        description: A Widget is a test object. It does nothing.
        type: object
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: widget-controller
  namespace: olm-bundle-install-namespace
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widget-controller
rules:
- apiGroups: [example.upshift.io]
  resources: [widgets]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: widget-controller
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-controller}
subjects:
- {kind: ServiceAccount, name: widget-controller, namespace: olm-bundle-install-namespace}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: widget-controller
  namespace: olm-bundle-install-namespace
  labels: {app.kubernetes.io/name: widget-controller}
spec:
  replicas: 1
  selector:
    matchLabels: {app.kubernetes.io/name: widget-controller}
  template:
    metadata:
      labels: {app.kubernetes.io/name: widget-controller}
    spec:
      serviceAccountName: widget-controller
      containers:
      - name: controller
        image: ghcr.io/upshift-io/widget-controller:v0.1.0
        args: [--namespace=olm-bundle-install-namespace]
        env:
        - name: POD_NAMESPACE
          valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
`

func testMeta() bundle.Meta {
	return bundle.Meta{
		Package: "upshift-widget-controller", Version: "0.1.0",
		Channels: []string{"alpha"}, DefaultChannel: "alpha",
		DisplayName: "Widget Controller", Description: "Controls widgets. Nothing else.",
		Keywords: []string{"widgets"}, Categories: "Monitoring",
		Provider: v1alpha1.AppLink{Name: "Upshift", URL: "https://github.com/upshift-io/upshift"},
		Links:    []v1alpha1.AppLink{{Name: "Source", URL: "https://github.com/upshift-io/upshift"}},
		InstallModes: []v1alpha1.InstallMode{
			{Type: v1alpha1.InstallModeTypeOwnNamespace, Supported: true},
			{Type: v1alpha1.InstallModeTypeSingleNamespace, Supported: false},
			{Type: v1alpha1.InstallModeTypeMultiNamespace, Supported: false},
			{Type: v1alpha1.InstallModeTypeAllNamespaces, Supported: true},
		},
		MinKubeVersion: "1.29.0", OpenShiftVersions: "v4.16",
	}
}

// writeTestBundle builds the bundle of the objects above, lets edit change
// its CSV (as a generic YAML map), and writes it to a temporary folder.
func writeTestBundle(t *testing.T, edit func(csv map[string]any)) string {
	t.Helper()
	objs, err := render.Decode(strings.NewReader(rendered))
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Build(objs, testMeta())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := b.Write(dir); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		path := filepath.Join(dir, "manifests", "upshift-widget-controller.clusterserviceversion.yaml")
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var csv map[string]any
		if err := yaml.Unmarshal(raw, &csv); err != nil {
			t.Fatal(err)
		}
		edit(csv)
		out, err := yaml.Marshal(csv)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestGoodBundleValidates(t *testing.T) {
	dir := writeTestBundle(t, nil)
	if _, err := bundle.Validate(dir, "1.29", bundle.Validators); err != nil {
		t.Fatalf("the bundle should validate:\n%v", err)
	}
}

// Each broken CSV must be refused by the operator-framework validators, with
// the message they give for that fault: proof that the validation runs and
// sees what we write.
func TestBrokenBundlesFailValidation(t *testing.T) {
	spec := func(csv map[string]any) map[string]any { return csv["spec"].(map[string]any) }
	cases := []struct {
		name string
		edit func(csv map[string]any)
		want string
	}{
		{
			name: "no install strategy",
			edit: func(csv map[string]any) { delete(spec(csv), "install") },
			want: "install",
		},
		{
			name: "owned CRD the bundle does not carry",
			edit: func(csv map[string]any) {
				owned := spec(csv)["customresourcedefinitions"].(map[string]any)["owned"].([]any)
				owned[0].(map[string]any)["name"] = "gadgets.example.upshift.io"
				owned[0].(map[string]any)["kind"] = "Gadget"
			},
			want: `owned CRD "example.upshift.io/v1alpha1, Kind=Gadget" not found in bundle`,
		},
		{
			name: "no install modes",
			edit: func(csv map[string]any) { delete(spec(csv), "installModes") },
			want: "install modes not found",
		},
		{
			name: "no install mode supported",
			edit: func(csv map[string]any) {
				for _, m := range spec(csv)["installModes"].([]any) {
					m.(map[string]any)["supported"] = false
				}
			},
			want: "none of InstallModeTypes are supported",
		},
		{
			name: "version that is not semver",
			edit: func(csv map[string]any) { spec(csv)["version"] = "first" },
			want: "first",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTestBundle(t, tc.edit)
			_, err := bundle.Validate(dir, "1.29", bundle.Validators)
			if err == nil {
				t.Fatal("the broken bundle validated")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("the error does not name %q:\n%v", tc.want, err)
			}
		})
	}
}

func TestInstallNamespaceBecomesThePodsOwn(t *testing.T) {
	objs, err := render.Decode(strings.NewReader(rendered))
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Build(objs, testMeta())
	if err != nil {
		t.Fatal(err)
	}
	args := b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0].Args
	if len(args) != 1 || args[0] != "--namespace=$(POD_NAMESPACE)" {
		t.Fatalf("args = %q, want [--namespace=$(POD_NAMESPACE)]", args)
	}

	// Without POD_NAMESPACE in the container there is nothing to name it by.
	noEnv := strings.Replace(rendered, "        env:\n        - name: POD_NAMESPACE\n          valueFrom: {fieldRef: {fieldPath: metadata.namespace}}\n", "", 1)
	if noEnv == rendered {
		t.Fatal("test input unchanged")
	}
	objs, err = render.Decode(strings.NewReader(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bundle.Build(objs, testMeta()); err == nil || !strings.Contains(err.Error(), "POD_NAMESPACE") {
		t.Fatalf("err = %v, want one about POD_NAMESPACE", err)
	}
}

func TestUnsupportedKindIsRefused(t *testing.T) {
	objs, err := render.Decode(strings.NewReader(rendered + `---
apiVersion: v1
kind: Namespace
metadata:
  name: widget-leases
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = bundle.Build(objs, testMeta())
	if err == nil || !strings.Contains(err.Error(), "cannot carry a Namespace") {
		t.Fatalf("err = %v, want the Namespace refused", err)
	}
}

// OLM creates only the ServiceAccounts a CSV grants rules to: a Deployment
// whose account the chart grants nothing would never start.
func TestServiceAccountWithoutRulesIsRefused(t *testing.T) {
	i := strings.Index(rendered, "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding")
	j := strings.Index(rendered, "---\napiVersion: apps/v1")
	if i < 0 || j < i {
		t.Fatal("test input changed")
	}
	objs, err := render.Decode(strings.NewReader(rendered[:i] + rendered[j:]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bundle.Build(objs, testMeta()); err == nil || !strings.Contains(err.Error(), "grants nothing") {
		t.Fatalf("err = %v, want the unbound ServiceAccount refused", err)
	}
}
