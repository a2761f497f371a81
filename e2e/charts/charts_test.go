package charts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/testenv"
)

const (
	// Helm stamps these on everything a release creates.
	releaseNameAnnotation      = "meta.helm.sh/release-name"
	releaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
	// The field the upgraded chart adds to its CRDs.
	addedField = "chartTestField"
	timeout    = 90 * time.Second
)

var componentCharts, umbrellaCharts, chartDirsErr = framework.ChartDirs()

var _ = Describe("the test control plane", func() {
	It("enforces the restricted Pod Security Standard, so the charts' pods are really checked", func(ctx context.Context) {
		ns := restrictedNamespace(ctx, "psa-check")
		bad := pod(ns, "runs-as-root", nil)
		err := env.Client.Create(ctx, bad)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a pod without the restricted securityContext was admitted: %v", err)
		Expect(err.Error()).To(ContainSubstring(`violates PodSecurity "restricted:latest"`))

		good := pod(ns, "restricted", restrictedContext())
		Expect(env.Client.Create(ctx, good)).To(Succeed(), "a compliant pod was refused")
		Expect(env.Client.Delete(ctx, good)).To(Succeed())

		// And the refusal came from the PodSecurity admission plugin.
		cs, err := env.Clientset()
		Expect(err).NotTo(HaveOccurred())
		raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(MatchRegexp(`(?m)^apiserver_admission_controller_admission_duration_seconds_count\{[^}]*name="PodSecurity"[^}]*rejected="true"`))
	})
})

var _ = Describe("the charts", func() {
	It("are found under charts/", func() {
		Expect(chartDirsErr).NotTo(HaveOccurred())
		Expect(componentCharts).NotTo(BeEmpty())
		Expect(umbrellaCharts).NotTo(BeEmpty())
	})
})

// Every component chart: install, upgrade with a CRD change, uninstall.
var _ = func() bool {
	for _, name := range componentCharts {
		Describe("chart "+name, Ordered, func() {
			ns, release := "chart-"+name, name
			var crds []apiextensionsv1.CustomResourceDefinition
			uids := map[string]types.UID{}

			BeforeAll(func(ctx context.Context) {
				restrictedNamespace(ctx, ns)
				DeferCleanup(deleteReleaseCRDs, release, ns)
			})

			It("installs: its Deployments' pods pass restricted admission, run on kwok nodes and become available", func(ctx context.Context) {
				_, err := helm.Run("install", release, chartForCluster(name), "--namespace", ns)
				Expect(err).NotTo(HaveOccurred())
				expectDeploymentsAvailable(ctx, ns, release, 1)
			})

			It("installs its CRDs, whose objects can be created; a field of a later chart is not served yet", func(ctx context.Context) {
				crds = releaseCRDs(ctx, release, ns)
				for _, crd := range crds {
					// A large CRD (MutexRule embeds Job specs) may take a
					// moment to be served after it is Established.
					Eventually(func() error {
						return env.Client.Create(ctx, customResource(crd, ns, ptr.To("too-early")))
					}).WithContext(ctx).WithTimeout(timeout).Should(Succeed(), crd.Name)
					got := customResource(crd, ns, nil)
					Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(got), got)).To(Succeed())
					// Pruned: so the check after the upgrade can fail.
					Expect(got.Object).NotTo(HaveKey(addedField), crd.Name)
					uids[crd.Name] = got.GetUID()
				}
			})

			It("upgrades to a chart whose CRDs gained a field: existing objects stay, the field is served", func(ctx context.Context) {
				dir := copyChart(name)
				Expect(addFieldToCRDs(dir)).To(Equal(len(crds)), "CRD files in the chart vs CRDs installed")
				// Secrets a chart generates (a webhook's CA and certificate)
				// are rendered anew each time unless the chart reads them
				// back: an upgrade must keep them, or running pods would
				// serve a certificate the apiserver no longer trusts.
				secrets := releaseSecrets(ctx, ns, release)
				_, err := helm.Run("upgrade", release, dir, "--namespace", ns)
				Expect(err).NotTo(HaveOccurred())
				Expect(releaseSecrets(ctx, ns, release)).To(Equal(secrets), "the release's Secrets changed on upgrade")
				for _, crd := range crds {
					Eventually(func(g Gomega) {
						got := customResource(crd, ns, nil)
						g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(got), got)).To(Succeed())
						g.Expect(got.GetUID()).To(Equal(uids[crd.Name]), "%s: the object from before the upgrade", crd.Name)
						if got.Object[addedField] != "served" {
							got.Object[addedField] = "served"
							g.Expect(env.Client.Update(ctx, got)).To(Succeed())
						}
						// Written while the apiserver still used the old
						// schema, the field is pruned again: retry until the
						// new one is in force.
						g.Expect(got.Object).To(HaveKeyWithValue(addedField, "served"), "%s after the upgrade", crd.Name)
					}).WithContext(ctx).WithTimeout(timeout).Should(Succeed())
				}
				expectDeploymentsAvailable(ctx, ns, release, 1)
			})

			It("uninstalls, leaving its CRDs and their objects", func(ctx context.Context) {
				_, err := helm.Run("uninstall", release, "--namespace", ns)
				Expect(err).NotTo(HaveOccurred())
				Eventually(func(g Gomega) {
					g.Expect(releaseDeployments(ctx, ns, release)).To(BeEmpty())
				}).WithContext(ctx).WithTimeout(timeout).Should(Succeed())
				for _, crd := range crds {
					got := &apiextensionsv1.CustomResourceDefinition{}
					Expect(env.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, got)).To(Succeed())
					// Deleting a CRD with objects takes a while; a deletion
					// request shows at once.
					Expect(got.DeletionTimestamp).To(BeNil(), "%s is being deleted", crd.Name)
					cr := customResource(crd, ns, nil)
					Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cr), cr)).To(Succeed())
					Expect(cr.GetUID()).To(Equal(uids[crd.Name]))
					Expect(cr.GetDeletionTimestamp()).To(BeNil())
					Expect(cr.Object).To(HaveKeyWithValue(addedField, "served"))
				}
			})
		})
	}
	return true
}()

// With monitoring.openshift.platform, a chart refuses to install into a
// namespace the platform Prometheus does not scrape, naming the label: the
// check looks the namespace up, which only an install against a cluster
// does (helm template cannot).
var _ = Describe("the OpenShift platform monitoring switch", func() {
	It("refuses to install into a namespace without the openshift.io/cluster-monitoring label, naming it", func(ctx context.Context) {
		Expect(chartDirsErr).NotTo(HaveOccurred())
		ns := restrictedNamespace(ctx, "chart-unlabelled")
		for _, name := range componentCharts {
			_, err := helm.Run("install", name, chartForCluster(name), "--namespace", ns,
				"--set", "monitoring.openshift.platform=true", "--set", "monitoring.openshift.serviceCA=true")
			Expect(err).To(MatchError(ContainSubstring("oc label namespace "+ns+" openshift.io/cluster-monitoring=true")), name)
		}
		Expect(releaseDeployments(ctx, ns, componentCharts[0])).To(BeEmpty())
	})
})

// Every umbrella chart: its default components install together, and any
// subset renders.
var _ = func() bool {
	for _, name := range umbrellaCharts {
		Describe("umbrella chart "+name, Ordered, func() {
			ns, release := "chart-"+name, name
			var dir string
			var on, off []string

			BeforeAll(func(ctx context.Context) {
				restrictedNamespace(ctx, ns)
				DeferCleanup(deleteReleaseCRDs, release, ns)
				// Build its dependencies in a copy of charts/, not in the
				// working tree.
				root, err := testenv.RepoRoot()
				Expect(err).NotTo(HaveOccurred())
				tmp := GinkgoT().TempDir()
				Expect(os.CopyFS(tmp, os.DirFS(filepath.Join(root, "charts")))).To(Succeed())
				dir = filepath.Join(tmp, name)
				_ = os.RemoveAll(filepath.Join(dir, "charts"))
				for _, c := range append(slices.Clone(componentCharts), umbrellaCharts...) {
					dropKubeVersionIfUnstamped(filepath.Join(tmp, c))
				}
				_, err = helm.Run("dependency", "update", "--skip-refresh", dir)
				Expect(err).NotTo(HaveOccurred())
				on, off = components(dir)
				Expect(on).NotTo(BeEmpty(), "the umbrella switches no component on by default")
			})

			It("renders any subset of its components", func() {
				kubeVersion, err := framework.KubeVersion()
				Expect(err).NotTo(HaveOccurred())
				none := []string{"template", release, dir, "--namespace", ns, "--kube-version", kubeVersion}
				for _, c := range append(slices.Clone(on), off...) {
					none = append(none, "--set", "components."+c+"=false")
				}
				out, err := helm.Run(none...)
				Expect(err).NotTo(HaveOccurred())
				Expect(out).NotTo(ContainSubstring("kind: Deployment"), "with every component off")
				for _, c := range on {
					out, err := helm.Run(append(slices.Clone(none), "--set", "components."+c+"=true")...)
					Expect(err).NotTo(HaveOccurred())
					Expect(regexp.MustCompile(`(?m)^kind: Deployment$`).FindAllString(out, -1)).NotTo(BeEmpty(), "with only %s on", c)
					Expect(out).To(ContainSubstring("app.kubernetes.io/name: " + c))
				}
			})

			It("installs its default components into a restricted namespace, and they become available", func(ctx context.Context) {
				_, err := helm.Run("install", release, dir, "--namespace", ns)
				Expect(err).NotTo(HaveOccurred())
				deps := expectDeploymentsAvailable(ctx, ns, release, len(on))
				var names []string
				for _, d := range deps {
					names = append(names, d.Labels["app.kubernetes.io/name"])
				}
				Expect(names).To(ConsistOf(on), "the Deployments' components")
				Expect(releaseCRDs(ctx, release, ns)).NotTo(BeEmpty())
			})

			It("uninstalls", func(ctx context.Context) {
				_, err := helm.Run("uninstall", release, "--namespace", ns)
				Expect(err).NotTo(HaveOccurred())
				Eventually(func(g Gomega) {
					g.Expect(releaseDeployments(ctx, ns, release)).To(BeEmpty())
				}).WithContext(ctx).WithTimeout(timeout).Should(Succeed())
			})
		})
	}
	return true
}()

func chartPath(name string) string {
	root, err := testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	return filepath.Join(root, "charts", name)
}

// restrictedNamespace creates a namespace enforcing the restricted Pod
// Security Standard.
func restrictedNamespace(ctx context.Context, name string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	Expect(env.Client.Create(ctx, ns)).To(Succeed())
	return name
}

func restrictedContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func pod(ns, name string, sc *corev1.SecurityContext) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "registry.invalid/never-pulled:1", SecurityContext: sc,
		}}},
	}
}

// releaseSecrets are the data of the Secrets the release created (not
// helm's own release records), by name.
func releaseSecrets(ctx context.Context, ns, release string) map[string]map[string][]byte {
	GinkgoHelper()
	list := &corev1.SecretList{}
	Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	out := map[string]map[string][]byte{}
	for _, s := range list.Items {
		if s.Annotations[releaseNameAnnotation] == release {
			out[s.Name] = s.Data
		}
	}
	return out
}

func releaseDeployments(ctx context.Context, ns, release string) []appsv1.Deployment {
	GinkgoHelper()
	list := &appsv1.DeploymentList{}
	Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var out []appsv1.Deployment
	for _, d := range list.Items {
		if d.Annotations[releaseNameAnnotation] == release {
			out = append(out, d)
		}
	}
	return out
}

// expectDeploymentsAvailable waits until the release has at least min
// Deployments, each with all its replicas available, their pods scheduled
// onto kwok nodes and running. On timeout the failure shows why pods are
// missing (a ReplicaSet's FailedCreate carries the admission refusal).
func expectDeploymentsAvailable(ctx context.Context, ns, release string, min int) []appsv1.Deployment {
	GinkgoHelper()
	var deps []appsv1.Deployment
	Eventually(func(g Gomega) {
		deps = releaseDeployments(ctx, ns, release)
		g.Expect(len(deps)).To(BeNumerically(">=", min), "Deployments of release %s", release)
		for _, d := range deps {
			want := ptr.Deref(d.Spec.Replicas, 1)
			g.Expect(d.Status.AvailableReplicas).To(Equal(want), "%s available replicas; %s", d.Name, replicaSetProblems(ctx, ns))
			sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
			g.Expect(err).NotTo(HaveOccurred())
			pods := &corev1.PodList{}
			g.Expect(env.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(int(want)))
			for _, p := range pods.Items {
				g.Expect(p.Spec.NodeName).To(HavePrefix("worker-"), "pod %s", p.Name)
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
			}
		}
	}).WithContext(ctx).WithTimeout(timeout).Should(Succeed())
	return deps
}

func replicaSetProblems(ctx context.Context, ns string) string {
	list := &appsv1.ReplicaSetList{}
	if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	var out []string
	for _, rs := range list.Items {
		for _, c := range rs.Status.Conditions {
			out = append(out, fmt.Sprintf("ReplicaSet %s %s: %s", rs.Name, c.Reason, c.Message))
		}
	}
	if len(out) == 0 {
		return "no ReplicaSet conditions"
	}
	return strings.Join(out, "; ")
}

// releaseCRDs are the CRDs the release installed.
func releaseCRDs(ctx context.Context, release, ns string) []apiextensionsv1.CustomResourceDefinition {
	GinkgoHelper()
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	Expect(env.Client.List(ctx, list)).To(Succeed())
	var out []apiextensionsv1.CustomResourceDefinition
	for _, c := range list.Items {
		if c.Annotations[releaseNameAnnotation] == release && c.Annotations[releaseNamespaceAnnotation] == ns {
			Expect(c.Annotations).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"), c.Name)
			out = append(out, c)
		}
	}
	return out
}

// deleteReleaseCRDs removes what uninstall leaves by design, so the next
// chart that owns the same CRDs can install them.
func deleteReleaseCRDs(ctx context.Context, release, ns string) {
	for _, c := range releaseCRDs(ctx, release, ns) {
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, &c))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: c.Name}, &apiextensionsv1.CustomResourceDefinition{}))
		}).WithContext(ctx).WithTimeout(timeout).Should(BeTrue(), "CRD %s deleted", c.Name)
	}
}

// customResource is the test's object of crd's storage version: only a
// name (and the added field when value is set).
func customResource(crd apiextensionsv1.CustomResourceDefinition, ns string, value *string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			u.SetAPIVersion(crd.Spec.Group + "/" + v.Name)
			u.SetName(objectName(v))
		}
	}
	u.SetKind(crd.Spec.Names.Kind)
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		u.SetNamespace(ns)
	}
	if value != nil {
		u.Object[addedField] = *value
	}
	if spec, ok := minimalSpecs[crd.Name]; ok {
		u.Object["spec"] = spec(ns)
	}
	return u
}

// minimalSpecs are the smallest specs the CRDs whose spec is required
// accept, for an object in namespace ns; the others are created empty. (A
// MutexRule's Jobs run in its own namespace: node-gate's admission policy
// refuses another unless the chart lists it.)
var minimalSpecs = map[string]func(ns string) map[string]any{
	"mutexrules.nodegate.upshift.io": func(ns string) map[string]any {
		return map[string]any{"jobName": "chart-test", "jobNamespace": ns, "jobSpec": map[string]any{
			"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
				"containers": []any{map[string]any{"name": "c", "image": "registry.example.com/c:1"}}}}}}
	},
	"mutextargets.nodegate.upshift.io": func(string) map[string]any {
		return map[string]any{"machineConfigPools": []any{"worker"}}
	},
	"mutexrunconfigs.nodegate.upshift.io": func(string) map[string]any {
		return map[string]any{"mutexTargets": []any{map[string]any{"name": "chart-test"}}}
	},
}

// singletonRule is how our CRDs pin a singleton's name (UpgradeStatus
// "cluster"), a CEL rule on the root.
var singletonRule = regexp.MustCompile(`^self\.metadata\.name == '([a-z0-9.-]+)'$`)

// objectName is a name the version's schema accepts: the singleton's name
// where a rule pins one.
func objectName(v apiextensionsv1.CustomResourceDefinitionVersion) string {
	if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
		for _, r := range v.Schema.OpenAPIV3Schema.XValidations {
			if m := singletonRule.FindStringSubmatch(r.Rule); m != nil {
				return m[1]
			}
		}
	}
	return "chart-test"
}

// copyChart copies charts/<name> into a temporary folder, with a higher
// chart version, as the next release of it would be.
func copyChart(name string) string {
	GinkgoHelper()
	dir := filepath.Join(GinkgoT().TempDir(), name)
	Expect(os.CopyFS(dir, os.DirFS(chartPath(name)))).To(Succeed())
	chartYAML := filepath.Join(dir, "Chart.yaml")
	raw, err := os.ReadFile(chartYAML)
	Expect(err).NotTo(HaveOccurred())
	raw = regexp.MustCompile(`(?m)^version: .*$`).ReplaceAll(raw, []byte("version: 99.0.0"))
	Expect(os.WriteFile(chartYAML, raw, 0o644)).To(Succeed())
	dropKubeVersionIfUnstamped(dir)
	return dir
}

// chartForCluster is the chart to install into the test control plane:
// charts/<name> itself, or a copy without kubeVersion when the apiserver
// cannot be checked against it (dropKubeVersionIfUnstamped).
func chartForCluster(name string) string {
	GinkgoHelper()
	if !unstampedAPIServer {
		return chartPath(name)
	}
	dir := filepath.Join(GinkgoT().TempDir(), name)
	Expect(os.CopyFS(dir, os.DirFS(chartPath(name)))).To(Succeed())
	dropKubeVersionIfUnstamped(dir)
	return dir
}

// dropKubeVersionIfUnstamped removes kubeVersion from the Chart.yaml in
// dir when the test control plane's kube-apiserver was built without a
// version stamp: it reports v0.0.0-master+$Format:%H$, which Helm cannot
// compare with any kubeVersion and refuses. The charts' kubeVersion is
// tested by helm template (values_test.go); here what is installed is.
func dropKubeVersionIfUnstamped(dir string) {
	GinkgoHelper()
	if !unstampedAPIServer {
		return
	}
	chartYAML := filepath.Join(dir, "Chart.yaml")
	raw, err := os.ReadFile(chartYAML)
	Expect(err).NotTo(HaveOccurred())
	raw = regexp.MustCompile(`(?m)^kubeVersion: .*\n`).ReplaceAll(raw, nil)
	Expect(os.WriteFile(chartYAML, raw, 0o644)).To(Succeed())
}

// addFieldToCRDs adds an optional top-level string field to every version
// of every CRD the chart carries (files/crds/, see templates/crds.yaml) and
// returns how many it changed.
func addFieldToCRDs(dir string) int {
	GinkgoHelper()
	files, err := filepath.Glob(filepath.Join(dir, "files", "crds", "*.yaml"))
	Expect(err).NotTo(HaveOccurred())
	for _, f := range files {
		raw, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(yaml.UnmarshalStrict(raw, crd)).To(Succeed(), f)
		for i := range crd.Spec.Versions {
			s := crd.Spec.Versions[i].Schema.OpenAPIV3Schema
			s.Properties[addedField] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		}
		out, err := yaml.Marshal(crd)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(f, out, 0o644)).To(Succeed())
	}
	return len(files)
}

// components reads the umbrella's components.<name> switches: on by
// default, and off.
func components(dir string) (on, off []string) {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	Expect(err).NotTo(HaveOccurred())
	var v struct {
		Components map[string]bool `json:"components"`
	}
	Expect(yaml.Unmarshal(raw, &v)).To(Succeed())
	for c, enabled := range v.Components {
		if enabled {
			on = append(on, c)
		} else {
			off = append(off, c)
		}
	}
	slices.Sort(on)
	slices.Sort(off)
	return on, off
}
