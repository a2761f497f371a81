package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/mod/modfile"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/libs/testenv"
)

// EnvHelm names the helm binary; the Makefile exports it.
const EnvHelm = "UPSHIFT_HELM"

func helmBinary() (string, error) {
	if h := os.Getenv(EnvHelm); h != "" {
		return h, nil
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	matches, _ := filepath.Glob(filepath.Join(root, "bin", "tools", "helm-*"))
	if len(matches) == 0 {
		return "", errors.New("helm not found: run `make testbin` or set " + EnvHelm)
	}
	return matches[len(matches)-1], nil
}

// KubeVersion is the Kubernetes version of the test control plane (the
// k8s.io/kubernetes its builder module pins, as the Makefile reads it), for
// `helm template --kube-version`: the charts require a minimum Kubernetes
// version (kubeVersion in Chart.yaml), and a helm built from its Go module
// without its release's flags renders for Kubernetes 1.20 when not told.
var KubeVersion = sync.OnceValues(func() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, "tools", "build", "kube", "go.mod")
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax(path, raw, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == "k8s.io/kubernetes" {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("%s requires no k8s.io/kubernetes", path)
})

// Chart is a rendered Helm chart.
type Chart struct {
	Objects []*unstructured.Unstructured
	// MetricsCert is the certificate the component serves /metrics with,
	// when InstallChartIdentity issued one.
	MetricsCert *MetricsCert
}

// RenderChart renders charts/<name> with `helm template` as release in
// namespace, with optional --set values.
func RenderChart(name, release, namespace string, set ...string) (*Chart, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	var args []string
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return RenderChartDir(filepath.Join(root, "charts", name), release, namespace, args...)
}

// RenderChartDir renders the chart in dir with `helm template` as release in
// namespace, for the test control plane's Kubernetes version; args are more
// `helm template` flags (a --kube-version among them wins).
func RenderChartDir(dir, release, namespace string, args ...string) (*Chart, error) {
	helm, err := helmBinary()
	if err != nil {
		return nil, err
	}
	kubeVersion, err := KubeVersion()
	if err != nil {
		return nil, err
	}
	args = append([]string{"template", release, dir, "--namespace", namespace, "--kube-version", kubeVersion}, args...)
	var stderr bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template %s: %w: %s", filepath.Base(dir), err, stderr.String())
	}
	chart := &Chart{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("reading rendered chart %s: %w", filepath.Base(dir), err)
		}
		if len(u.Object) > 0 {
			chart.Objects = append(chart.Objects, u)
		}
	}
	return chart, nil
}

// Kinds returns the rendered objects of the given kinds.
func (c *Chart) Kinds(kinds ...string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range c.Objects {
		for _, k := range kinds {
			if o.GetKind() == k {
				out = append(out, o)
			}
		}
	}
	return out
}

// RBACKinds are the component's identity and permissions, without its
// Deployment (the test runs the binary itself).
var RBACKinds = []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

// AdmissionKinds are the chart's admission policies: what the API server
// refuses on the component's behalf belongs to what it allows.
var AdmissionKinds = []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}

// InstallIdentity creates the chart's ServiceAccount, RBAC objects and
// admission policies.
func (c *Chart) InstallIdentity(ctx context.Context, cl client.Client) error {
	for _, o := range c.Kinds(slices.Concat(RBACKinds, AdmissionKinds)...) {
		if err := cl.Create(ctx, o.DeepCopy()); err != nil {
			return fmt.Errorf("creating %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// Identity is a component's installed chart identity.
type Identity struct {
	Chart          *Chart
	ServiceAccount string
	// Kubeconfig authenticates as the ServiceAccount (TokenRequest).
	Kubeconfig string
}

// InstallChartIdentity renders charts/<chartName> as release in namespace
// (created if missing), installs its ServiceAccount and RBAC, and returns a
// kubeconfig for that ServiceAccount: how every suite, the demo and the bench
// run a component with exactly its chart's permissions.
func InstallChartIdentity(ctx context.Context, env *testenv.Env, chartName, release, namespace string, set ...string) (*Identity, error) {
	if err := env.CreateNamespace(ctx, namespace); err != nil {
		return nil, err
	}
	// The chart serves /metrics from a certificate Secret, as on OpenShift
	// with the service CA; the caller's values come after, and win.
	chart, err := RenderChart(chartName, release, namespace, append([]string{"metrics.certSecret=" + MetricsCertSecret}, set...)...)
	if err != nil {
		return nil, err
	}
	if chart.MetricsCert, err = chart.IssueMetricsCert(filepath.Dir(env.KubeconfigPath)); err != nil {
		return nil, fmt.Errorf("chart %s: %w", chartName, err)
	}
	// The namespaces the chart grants Roles in exist on every OpenShift
	// cluster (openshift-config, openshift-machine-config-operator...); a
	// control plane has only those its seed created.
	for _, o := range chart.Kinds(RBACKinds...) {
		if ns := o.GetNamespace(); ns != "" {
			if err := env.CreateNamespace(ctx, ns); err != nil {
				return nil, err
			}
		}
	}
	if err := chart.InstallIdentity(ctx, env.Client); err != nil {
		return nil, err
	}
	sas := chart.Kinds("ServiceAccount")
	if len(sas) != 1 {
		return nil, fmt.Errorf("chart %s renders %d ServiceAccounts, want 1", chartName, len(sas))
	}
	kubeconfig, err := env.ServiceAccountKubeconfig(ctx, namespace, sas[0].GetName())
	if err != nil {
		return nil, err
	}
	return &Identity{Chart: chart, ServiceAccount: sas[0].GetName(), Kubeconfig: kubeconfig}, nil
}

// MetricsReaderRole returns the name of the chart's ClusterRole that grants
// get on /metrics and nothing else: the role a scraper is bound to.
func (c *Chart) MetricsReaderRole() (string, error) {
	perms, err := c.Permissions()
	if err != nil {
		return "", err
	}
	var found []string
	for _, role := range RolesWith(perms) {
		ps := OfRoles(perms, role)
		if len(ps) == 1 && ps[0].NonResourceURL == "/metrics" && ps[0].Verb == "get" && strings.HasPrefix(role, "ClusterRole/") {
			found = append(found, strings.TrimPrefix(role, "ClusterRole/"))
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("want one ClusterRole granting only get /metrics, found %v", found)
	}
	return found[0], nil
}

// InstallMetricsScraper creates ServiceAccount namespace/name (and the
// namespace when missing), binds it to the chart's metrics-reader ClusterRole, and
// returns it as a Scraper: the identity Prometheus has once an operator
// follows the chart's instructions. It verifies the chart's MetricsCert.
func InstallMetricsScraper(ctx context.Context, env *testenv.Env, chart *Chart, namespace, name string) (*Scraper, error) {
	role, err := chart.MetricsReaderRole()
	if err != nil {
		return nil, err
	}
	if err := env.CreateNamespace(ctx, namespace); err != nil {
		return nil, err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: namespace + "-" + name + "-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
	}
	for _, o := range []client.Object{sa, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("creating the metrics scraper's %T: %w", o, err)
		}
	}
	cfg, err := env.ServiceAccountConfig(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	s := &Scraper{User: ServiceAccountUser(namespace, name), Token: cfg.BearerToken}
	if chart.MetricsCert != nil {
		s.CA, s.ServerName = chart.MetricsCert.CA, chart.MetricsCert.ServerName
	}
	return s, nil
}
