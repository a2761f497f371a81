package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/upshift-io/upshift/tools/olm/bundle"
	"github.com/upshift-io/upshift/tools/olm/catalog"
	"github.com/upshift-io/upshift/tools/olm/render"
)

const chartsDir = "../../../../charts"

// refused are the charts no bundle is made of, and the kind that stops each.
var refused = map[string]string{
	"node-gate":   "ValidatingAdmissionPolicy",
	"aro-monitor": "Namespace",
}

func helm(t *testing.T) string {
	t.Helper()
	h := os.Getenv("UPSHIFT_HELM")
	if h == "" {
		t.Fatal("UPSHIFT_HELM is not set: the Makefile exports it (bin/tools/helm-<version>)")
	}
	return h
}

func testOptions(t *testing.T) options {
	dir := t.TempDir()
	return options{
		charts: chartsDir, helm: helm(t), version: "1.2.3", appVersion: "v1.2.3",
		out: filepath.Join(dir, "bundles"), catalogDir: filepath.Join(dir, "catalog"),
		registry: "registry.example/upshift", channel: channelFor("1.2.3"), minKube: "1.29.0",
	}
}

func packaged() []string {
	var names []string
	for n := range packages {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Every component chart is either packaged or refused for a stated reason,
// so that a new chart cannot be forgotten.
func TestEveryChartIsDecided(t *testing.T) {
	entries, err := os.ReadDir(chartsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "upshift" {
			continue
		}
		// A folder without Chart.yaml is not a chart (charts/_shared holds
		// the templates make generate copies into each chart).
		if _, err := os.Stat(filepath.Join(chartsDir, e.Name(), "Chart.yaml")); err != nil {
			continue
		}
		_, isPackaged := packages[e.Name()]
		_, isRefused := refused[e.Name()]
		if isPackaged == isRefused {
			t.Errorf("chart %s: packaged=%v refused=%v; decide one in packages.go", e.Name(), isPackaged, isRefused)
		}
	}
}

// The whole of `make bundles`: every packaged chart rendered, built,
// written, validated; then each bundle loaded back as OLM's tooling loads it
// and checked against the operator-framework validators, and the catalog
// loaded back and validated as opm would serve it.
func TestBundlesAndCatalog(t *testing.T) {
	o := testOptions(t)
	if err := run(o, packaged()); err != nil {
		t.Fatal(err)
	}
	for _, name := range packaged() {
		dir := filepath.Join(o.out, "upshift-"+name)
		if _, err := bundle.Validate(dir, "1.29", bundle.Validators); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		b, err := manifests.GetBundleFromDir(dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b.DefaultChannel != "stable" || !slices.Equal(b.Channels, []string{"stable"}) {
			t.Errorf("%s: channels %v, default %q from annotations.yaml", name, b.Channels, b.DefaultChannel)
		}
		if b.CSV.Name != "upshift-"+name+".v1.2.3" || b.CSV.Spec.Version.String() != "1.2.3" {
			t.Errorf("%s: CSV %s version %s", name, b.CSV.Name, b.CSV.Spec.Version)
		}
		if got := b.CSV.Annotations["olm.skipRange"]; got != ">=0.0.0 <1.2.3" {
			t.Errorf("%s: olm.skipRange %q", name, got)
		}
		// The default image tag is the release, stamped as appVersion.
		if ri := b.CSV.Spec.RelatedImages; len(ri) != 1 || !strings.HasSuffix(ri[0].Image, "/"+name+":v1.2.3") {
			t.Errorf("%s: relatedImages %+v", name, ri)
		}
		// The default minimum, unless the chart's kubeVersion states one.
		minKube, ocp := "1.29.0", "v4.16"
		if c, err := readChart(filepath.Join(chartsDir, name)); err != nil {
			t.Fatal(err)
		} else if c.KubeVersion != "" {
			minKube = lowerBound(c.KubeVersion)
			if ocp, err = openShiftFor(minKube); err != nil {
				t.Fatal(err)
			}
		}
		if b.CSV.Spec.MinKubeVersion != minKube {
			t.Errorf("%s: minKubeVersion %q, want %q", name, b.CSV.Spec.MinKubeVersion, minKube)
		}
		ann, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"operators.operatorframework.io.bundle.mediatype.v1: registry+v1",
			"operators.operatorframework.io.bundle.package.v1: upshift-" + name,
			"operators.operatorframework.io.bundle.manifests.v1: manifests/",
			"com.redhat.openshift.versions: " + ocp,
		} {
			if !strings.Contains(string(ann), want) {
				t.Errorf("%s: annotations.yaml lacks %q:\n%s", name, want, ann)
			}
		}
		df, err := os.ReadFile(filepath.Join(dir, "bundle.Dockerfile"))
		if err != nil || !strings.Contains(string(df), "LABEL operators.operatorframework.io.bundle.package.v1=upshift-"+name) {
			t.Errorf("%s: bundle.Dockerfile without the package label (%v):\n%s", name, err, df)
		}
	}

	cfg, err := declcfg.LoadFS(t.Context(), os.DirFS(o.catalogDir))
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.Validate(*cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Packages) != len(packages) || len(cfg.Bundles) != len(packages) {
		t.Fatalf("%d packages, %d bundles; want %d each", len(cfg.Packages), len(cfg.Bundles), len(packages))
	}
	for _, b := range cfg.Bundles {
		if want := "registry.example/upshift/" + b.Package + "-bundle:v1.2.3"; b.Image != want {
			t.Errorf("bundle %s image %q, want %q", b.Name, b.Image, want)
		}
		var kinds []string
		for _, p := range b.Properties {
			kinds = append(kinds, p.Type)
		}
		for _, want := range []string{"olm.package", "olm.csv.metadata"} {
			if !slices.Contains(kinds, want) {
				t.Errorf("bundle %s has no %s property: %v", b.Name, want, kinds)
			}
		}
	}
	// The tracker requires the UpgradeConfig kind; the scheduler provides it.
	byName := map[string]declcfg.Bundle{}
	for _, b := range cfg.Bundles {
		byName[b.Package] = b
	}
	if !hasProperty(byName["upshift-mcp-tracker"], "olm.gvk.required", `"kind":"UpgradeConfig"`) ||
		!hasProperty(byName["upshift-upgrade-scheduler"], "olm.gvk", `"kind":"UpgradeConfig"`) {
		t.Error("the UpgradeConfig dependency is not in the catalog: the tracker must require the kind the scheduler provides")
	}

	// A catalog whose channel names a bundle it does not have is refused:
	// the validation above can fail.
	broken := *cfg
	broken.Channels = slices.Clone(cfg.Channels)
	broken.Channels[0].Entries = []declcfg.ChannelEntry{{Name: "nothing.v0.0.1"}}
	if err := catalog.Validate(broken); err == nil {
		t.Error("a channel entry without its bundle validated")
	}
}

func hasProperty(b declcfg.Bundle, typ, contains string) bool {
	for _, p := range b.Properties {
		if p.Type == typ && strings.Contains(string(p.Value), contains) {
			return true
		}
	}
	return false
}

func TestRefusedCharts(t *testing.T) {
	o := testOptions(t)
	for chart, kind := range refused {
		objs, err := render.Chart(filepath.Join(chartsDir, chart), render.Options{Helm: o.helm, Release: chart, Namespace: bundle.InstallNamespace})
		if err != nil {
			t.Fatal(err)
		}
		_, err = bundle.Build(objs, bundle.Meta{Package: "upshift-" + chart, Version: "1.2.3"})
		if err == nil || !strings.Contains(err.Error(), "cannot carry a "+kind) {
			t.Errorf("%s: err = %v, want it refused for its %s", chart, err, kind)
		}
	}
}

// One source of truth: the CSV grants each ServiceAccount exactly the rules
// the chart binds to it, no more and no fewer. The chart's objects are read
// here on their own, not through the bundle package: a rule bound in the
// install namespace must be in permissions, one bound cluster-wide or in
// another namespace in clusterPermissions.
func TestPermissionsAreTheChartsRBAC(t *testing.T) {
	o := testOptions(t)
	for _, name := range packaged() {
		t.Run(name, func(t *testing.T) {
			objs, err := render.Chart(filepath.Join(chartsDir, name), render.Options{Helm: o.helm, Release: name, Namespace: bundle.InstallNamespace})
			if err != nil {
				t.Fatal(err)
			}
			rulesOf := map[string][]rbacv1.PolicyRule{} // "Role/ns/name" or "ClusterRole/name"
			type binding struct {
				namespace string
				roleRef   rbacv1.RoleRef
				subjects  []rbacv1.Subject
			}
			var bindings []binding
			for _, u := range objs {
				switch u.GetKind() {
				case "Role", "ClusterRole":
					var r struct {
						Rules []rbacv1.PolicyRule `json:"rules"`
					}
					mustConvert(t, u.Object, &r)
					k := u.GetKind() + "/" + u.GetName()
					if u.GetKind() == "Role" {
						k = "Role/" + u.GetNamespace() + "/" + u.GetName()
					}
					rulesOf[k] = r.Rules
				case "RoleBinding", "ClusterRoleBinding":
					var b rbacv1.RoleBinding
					mustConvert(t, u.Object, &b)
					bindings = append(bindings, binding{u.GetNamespace(), b.RoleRef, b.Subjects})
				}
			}
			wantNS, wantCluster := map[string][]string{}, map[string][]string{}
			for _, b := range bindings {
				ref := "ClusterRole/" + b.roleRef.Name
				if b.roleRef.Kind == "Role" {
					ref = "Role/" + b.namespace + "/" + b.roleRef.Name
				}
				for _, s := range b.subjects {
					if s.Kind != "ServiceAccount" || s.Namespace != bundle.InstallNamespace {
						continue
					}
					for _, r := range rulesOf[ref] {
						if b.namespace == bundle.InstallNamespace {
							wantNS[s.Name] = append(wantNS[s.Name], ruleString(r))
						} else {
							wantCluster[s.Name] = append(wantCluster[s.Name], ruleString(r))
						}
					}
				}
			}

			b, err := buildOne(o, name)
			if err != nil {
				t.Fatal(err)
			}
			strategy := b.CSV.Spec.InstallStrategy.StrategySpec
			compare(t, "permissions", wantNS, strategy.Permissions)
			compare(t, "clusterPermissions", wantCluster, strategy.ClusterPermissions)
		})
	}
}

func compare(t *testing.T, field string, want map[string][]string, got []v1alpha1.StrategyDeploymentPermissions) {
	t.Helper()
	gotRules := map[string][]string{}
	for _, p := range got {
		for _, r := range p.Rules {
			gotRules[p.ServiceAccountName] = append(gotRules[p.ServiceAccountName], ruleString(r))
		}
	}
	if len(want) == 0 {
		t.Errorf("%s: the chart binds no rules; the test reads nothing", field)
	}
	for sa := range mergeKeys(want, gotRules) {
		w, g := slices.Sorted(slices.Values(want[sa])), slices.Sorted(slices.Values(gotRules[sa]))
		if !slices.Equal(w, g) {
			t.Errorf("%s of %s:\n got  %q\n want %q", field, sa, g, w)
		}
	}
}

func mergeKeys(a, b map[string][]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func ruleString(r rbacv1.PolicyRule) string {
	b, _ := json.Marshal(r)
	return string(b)
}

func mustConvert(t *testing.T, obj map[string]any, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into); err != nil {
		t.Fatal(err)
	}
}

// Rules as charts/cpms-controller/templates/rbac.yaml writes them, copied by
// hand: the machine rules of its Role in openshift-machine-api (granted
// cluster-wide, since OLM cannot grant a Role elsewhere) and the Lease it
// elects its leader with (a Role of its own namespace, kept namespaced).
func TestCPMSControllerRulesFromTheChartSource(t *testing.T) {
	b, err := buildOne(testOptions(t), "cpms-controller")
	if err != nil {
		t.Fatal(err)
	}
	s := b.CSV.Spec.InstallStrategy.StrategySpec
	machines := rbacv1.PolicyRule{APIGroups: []string{"machine.openshift.io"}, Resources: []string{"machines"}, Verbs: []string{"list", "watch", "create", "delete", "patch"}}
	lease := rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"upshift-cpms-controller"}, Verbs: []string{"get", "update"}}
	if !grants(s.ClusterPermissions, "cpms-controller", machines) {
		t.Errorf("clusterPermissions lack %v", machines)
	}
	if !grants(s.Permissions, "cpms-controller", lease) {
		t.Errorf("permissions lack %v", lease)
	}
	if grants(s.ClusterPermissions, "cpms-controller", lease) {
		t.Errorf("the Lease rule of its own namespace became cluster-wide")
	}
	// The metrics reader is for Prometheus, not the controller: a manifest.
	found := false
	for _, o := range b.Others {
		found = found || (o.GetKind() == "ClusterRole" && o.GetName() == "cpms-controller-metrics-reader")
	}
	if !found {
		t.Error("the metrics-reader ClusterRole is not carried as a manifest")
	}
}

func grants(perms []v1alpha1.StrategyDeploymentPermissions, sa string, rule rbacv1.PolicyRule) bool {
	for _, p := range perms {
		if p.ServiceAccountName != sa {
			continue
		}
		for _, r := range p.Rules {
			if ruleString(r) == ruleString(rule) {
				return true
			}
		}
	}
	return false
}

// The cpms-controller's webhook, as its chart's webhook.yaml and
// deployment.yaml declare it, becomes a webhook definition OLM serves with
// its own certificate; the chart's certificate Secret and webhook Service
// are not carried.
func TestCPMSControllerWebhook(t *testing.T) {
	b, err := buildOne(testOptions(t), "cpms-controller")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(b.CSV.Spec.WebhookDefinitions); n != 1 {
		t.Fatalf("%d webhook definitions, want 1", n)
	}
	w := b.CSV.Spec.WebhookDefinitions[0]
	if w.GenerateName != "controlplanemachineset.cpms.upshift.io" || w.Type != v1alpha1.ValidatingAdmissionWebhook ||
		w.DeploymentName != "cpms-controller" || w.ContainerPort != 443 || w.TargetPort == nil || w.TargetPort.IntValue() != 9443 ||
		w.WebhookPath == nil || *w.WebhookPath != "/validate-machine-openshift-io-v1-controlplanemachineset" ||
		w.FailurePolicy == nil || *w.FailurePolicy != "Fail" || w.SideEffects == nil || *w.SideEffects != "None" {
		t.Errorf("webhook definition %+v", w)
	}
	if len(w.Rules) != 1 || !slices.Equal(w.Rules[0].Resources, []string{"controlplanemachinesets"}) {
		t.Errorf("rules %+v", w.Rules)
	}
	if m := b.CSV.Spec.InstallModes[0]; m.Type != v1alpha1.InstallModeTypeOwnNamespace || m.Supported {
		t.Errorf("install modes %+v: OwnNamespace must be unsupported (the webhook must see openshift-machine-api)", b.CSV.Spec.InstallModes)
	}
	pod := b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec
	if !slices.Contains(pod.Containers[0].Args, "--webhook-cert-dir="+bundle.OLMWebhookCertDir) {
		t.Errorf("args %q do not read OLM's certificate", pod.Containers[0].Args)
	}
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "cpms-controller-webhook-cert" {
			t.Errorf("the chart's certificate volume is still mounted: %+v", v)
		}
	}
	for _, o := range b.Others {
		if o.GetKind() == "Secret" || o.GetName() == "cpms-controller-webhook" {
			t.Errorf("%s %s carried; OLM makes its own", o.GetKind(), o.GetName())
		}
	}
}

// A digest pinned in the chart's values is the image the CSV runs and
// lists as related, for mirroring.
func TestRelatedImagesByDigest(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	o := testOptions(t)
	o.sets = []string{"upgrade-scheduler:image.digest=" + digest, "cpms-controller:image.digest=sha256:ffff"}
	b, err := buildOne(o, "upgrade-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	want := "ghcr.io/upshift-io/upgrade-scheduler@" + digest
	if got := b.CSV.Spec.RelatedImages; len(got) != 1 || got[0].Image != want {
		t.Errorf("relatedImages %+v, want [%s]", got, want)
	}
	if got := b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0].Image; got != want {
		t.Errorf("image %q, want %q", got, want)
	}
	// The scheduler's namespace argument follows the pod, wherever OLM puts it.
	if args := b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--namespace=$(POD_NAMESPACE)") {
		t.Errorf("args %q", args)
	}
}

func TestChannelFor(t *testing.T) {
	for version, want := range map[string]string{"1.2.3": "stable", "0.0.0-g1234abc": "candidate", "1.3.0-rc.1": "candidate"} {
		if got := channelFor(version); got != want {
			t.Errorf("channelFor(%s) = %s, want %s", version, got, want)
		}
	}
}

func TestOpenShiftFor(t *testing.T) {
	// Pairs from OpenShift's release notes: 4.12 ships Kubernetes 1.25,
	// 4.16 1.29, 4.18 1.31.
	for kube, want := range map[string]string{"1.25.0": "v4.12", "1.29.0": "v4.16", "1.31": "v4.18"} {
		if got, err := openShiftFor(kube); err != nil || got != want {
			t.Errorf("openShiftFor(%s) = %q, %v; want %q", kube, got, err, want)
		}
	}
	if got := lowerBound(">= 1.30.0-0"); got != "1.30.0" {
		t.Errorf("lowerBound = %q", got)
	}
}

// The ServiceMonitor is carried; the PrometheusRule is carried only if its
// expressions do not name the release namespace, else left out with a note
// rather than carried wrong.
func TestMonitoringObjects(t *testing.T) {
	b, err := buildOne(testOptions(t), "mcp-tracker")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, o := range b.Others {
		kinds[o.GetKind()] = true
		if o.GetNamespace() != "" {
			t.Errorf("%s %s keeps namespace %q; OLM sets it", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
	if !kinds["ServiceMonitor"] {
		t.Errorf("kinds carried %v: want a ServiceMonitor", kinds)
	}
	// Whether the chart's rule names the namespace, read from its output.
	objs, err := render.Chart(filepath.Join(chartsDir, "mcp-tracker"), render.Options{
		Helm: helm(t), Release: "mcp-tracker", Namespace: bundle.InstallNamespace, Set: monitoring})
	if err != nil {
		t.Fatal(err)
	}
	names := false
	for _, o := range objs {
		if o.GetKind() == "PrometheusRule" {
			raw, _ := json.Marshal(o.Object["spec"])
			names = strings.Contains(string(raw), bundle.InstallNamespace)
		}
	}
	noted := slices.ContainsFunc(b.Notes, func(n string) bool { return strings.HasPrefix(n, "PrometheusRule mcp-tracker left out") })
	if names && (kinds["PrometheusRule"] || !noted) {
		t.Errorf("the rule names the namespace: want it left out with a note (carried %v, notes %q)", kinds, b.Notes)
	}
	if !names && (!kinds["PrometheusRule"] || noted) {
		t.Errorf("the rule names no namespace: want it carried (carried %v, notes %q)", kinds, b.Notes)
	}
}
