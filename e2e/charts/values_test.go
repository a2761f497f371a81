package charts

// What an administrator sets for a disconnected or proxied OpenShift cluster,
// checked on the rendered charts (helm template, no cluster needed): the
// registry override and pull secrets reach every pod of every component,
// alone and through the umbrella chart; the trusted CA bundle is a ConfigMap
// OpenShift fills, mounted where Go looks for CAs; the proxy reaches the
// environment without ever covering the kube-apiserver; and a cluster older
// than a chart's kubeVersion is refused. The expectations come from the
// charts' folder names, Chart.yaml and values.yaml, and from what OpenShift
// and Go read (label, key, variables), not from the templates.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/testenv"
)

// outbound are the charts whose components call out of the cluster
// (Alertmanager or Prometheus, OCM, Azure): they offer the trusted CA
// bundle. The proxy environment goes to those among them that take it
// from the environment; aro-monitor gives the proxy to its prober alone.
var (
	outbound  = []string{"aro-monitor", "node-gate", "update-status-controller", "upgrade-scheduler"}
	proxyEnv  = []string{"node-gate", "update-status-controller", "upgrade-scheduler"}
	testValue = "sha256:" + strings.Repeat("ab", 32)
)

const (
	// What OpenShift's network operator looks for and writes.
	injectLabel = "config.openshift.io/inject-trusted-cabundle"
	injectKey   = "ca-bundle.crt"
)

func chartsOrSkip(t *testing.T) []string {
	t.Helper()
	if chartDirsErr != nil {
		t.Fatal(chartDirsErr)
	}
	if len(componentCharts) == 0 {
		t.Fatal("no component chart found under charts/")
	}
	return componentCharts
}

func render(t *testing.T, dir string, args ...string) *framework.Chart {
	t.Helper()
	c, err := framework.RenderChartDir(dir, "rel", "upshift", args...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func deployments(t *testing.T, c *framework.Chart) []appsv1.Deployment {
	t.Helper()
	var out []appsv1.Deployment
	for _, o := range c.Kinds("Deployment") {
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		t.Fatal("no Deployment rendered")
	}
	return out
}

// chartDefaults reads a chart's appVersion and default image repository.
func chartDefaults(t *testing.T, name string) (appVersion, repository string) {
	t.Helper()
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	var values struct {
		Image struct {
			Repository string `json:"repository"`
		} `json:"image"`
	}
	readYAML(t, filepath.Join(chartDir(t, name), "Chart.yaml"), &chart)
	readYAML(t, filepath.Join(chartDir(t, name), "values.yaml"), &values)
	if chart.AppVersion == "" || values.Image.Repository == "" {
		t.Fatalf("%s: no appVersion or image.repository", name)
	}
	return chart.AppVersion, values.Image.Repository
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func secretNames(refs []corev1.LocalObjectReference) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.Name)
	}
	return out
}

func TestImagesAndPullSecrets(t *testing.T) {
	for _, name := range chartsOrSkip(t) {
		t.Run(name, func(t *testing.T) {
			appVersion, repository := chartDefaults(t, name)
			for _, d := range deployments(t, render(t, chartDir(t, name))) {
				if got := d.Spec.Template.Spec.ImagePullSecrets; len(got) != 0 {
					t.Errorf("%s: pull secrets %v without any set", d.Name, got)
				}
				for _, c := range d.Spec.Template.Spec.Containers {
					if want := repository + ":" + appVersion; c.Image != want {
						t.Errorf("%s: default image %s, want %s", d.Name, c.Image, want)
					}
				}
			}

			// A mirror, a pull secret from the umbrella and one of the
			// chart's own, a digest pinned: the image is the mirror's
			// <binary> (the chart's folder name) at that digest.
			ch := render(t, chartDir(t, name), "--set", "global.imageRegistry=mirror.example.com:5000/upshift",
				"--set", "global.imagePullSecrets[0].name=mirror-pull", "--set", "imagePullSecrets[0].name=own-pull",
				"--set", "imagePullSecrets[1].name=mirror-pull", "--set", "image.digest="+testValue)
			for _, d := range deployments(t, ch) {
				if got, want := secretNames(d.Spec.Template.Spec.ImagePullSecrets), []string{"mirror-pull", "own-pull"}; !slices.Equal(got, want) {
					t.Errorf("%s: pull secrets %v, want %v (global first, no repeat)", d.Name, got, want)
				}
				for _, c := range d.Spec.Template.Spec.Containers {
					if want := "mirror.example.com:5000/upshift/" + name + "@" + testValue; c.Image != want {
						t.Errorf("%s: image %s, want %s", d.Name, c.Image, want)
					}
				}
			}
			// A tag with the registry override.
			for _, d := range deployments(t, render(t, chartDir(t, name), "--set", "global.imageRegistry=mirror.example.com/upshift/", "--set", "image.tag=v9.8.7")) {
				for _, c := range d.Spec.Template.Spec.Containers {
					if want := "mirror.example.com/upshift/" + name + ":v9.8.7"; c.Image != want {
						t.Errorf("%s: image %s, want %s", d.Name, c.Image, want)
					}
				}
			}
			// What the schema refuses, with the value named.
			for _, bad := range []string{"global.imageRegistry=https://mirror.example.com", "imagePullSecrets[0].name=Not_A_Name", "imagePullSecrets[0].secret=x"} {
				_, err := framework.RenderChartDir(chartDir(t, name), "rel", "upshift", "--set", bad)
				if err == nil || !strings.Contains(err.Error(), "schema") {
					t.Errorf("--set %s: want a schema error, got %v", bad, err)
				}
			}
		})
	}
}

// umbrellaDir builds the umbrella chart's dependencies in a copy of charts/.
func umbrellaDir(t *testing.T) string {
	t.Helper()
	if len(umbrellaCharts) != 1 {
		t.Fatalf("umbrella charts %v, want one", umbrellaCharts)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	if err := os.CopyFS(tmp, os.DirFS(filepath.Join(root, "charts"))); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, umbrellaCharts[0])
	_ = os.RemoveAll(filepath.Join(dir, "charts"))
	h, err := framework.NewHelm("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Run("dependency", "update", "--skip-refresh", dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestUmbrellaGlobalsReachEveryComponent(t *testing.T) {
	names := chartsOrSkip(t)
	dir := umbrellaDir(t)
	args := []string{"--set", "global.imageRegistry=registry.internal:8443/mirror", "--set", "global.imagePullSecrets[0].name=mirror-pull"}
	for _, n := range names {
		args = append(args, "--set", "components."+n+"=true")
	}
	seen := map[string]bool{}
	for _, d := range deployments(t, render(t, dir, args...)) {
		component := d.Labels["app.kubernetes.io/name"]
		seen[component] = true
		appVersion, _ := chartDefaults(t, component)
		if got := secretNames(d.Spec.Template.Spec.ImagePullSecrets); !slices.Equal(got, []string{"mirror-pull"}) {
			t.Errorf("%s: pull secrets %v, want [mirror-pull]", d.Name, got)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if want := "registry.internal:8443/mirror/" + component + ":" + appVersion; c.Image != want {
				t.Errorf("%s: image %s, want %s", d.Name, c.Image, want)
			}
		}
	}
	for _, n := range names {
		if !seen[n] {
			t.Errorf("no Deployment of %s with every component on", n)
		}
	}
	if _, err := framework.RenderChartDir(dir, "rel", "upshift", "--set", "componets.node-gate=true"); err == nil || !strings.Contains(err.Error(), "componets") {
		t.Errorf("a misspelt top-level key: want a schema error naming it, got %v", err)
	}
}

func TestTrustedCABundle(t *testing.T) {
	for _, name := range chartsOrSkip(t) {
		t.Run(name, func(t *testing.T) {
			if !slices.Contains(outbound, name) {
				// A component that makes no outbound call has no use for
				// it: the value is refused rather than ignored.
				_, err := framework.RenderChartDir(chartDir(t, name), "rel", "upshift", "--set", "openshift.trustedCABundle.enabled=true")
				if err == nil || !strings.Contains(err.Error(), "schema") {
					t.Errorf("want a schema error, got %v", err)
				}
				return
			}
			off := render(t, chartDir(t, name))
			for _, cm := range off.Kinds("ConfigMap") {
				if _, ok := cm.GetLabels()[injectLabel]; ok {
					t.Errorf("ConfigMap %s labelled for injection while the bundle is off", cm.GetName())
				}
			}
			for _, d := range deployments(t, off) {
				for _, c := range d.Spec.Template.Spec.Containers {
					if envVar(c, "SSL_CERT_DIR") != nil {
						t.Errorf("%s: SSL_CERT_DIR set while the bundle is off", d.Name)
					}
				}
			}

			on := render(t, chartDir(t, name), "--set", "openshift.trustedCABundle.enabled=true", "--set", "metrics.certSecret=metrics-tls")
			var injected []string
			for _, cm := range on.Kinds("ConfigMap") {
				if cm.GetLabels()[injectLabel] == "true" {
					injected = append(injected, cm.GetName())
					// The operator owns the data: an upgrade that rendered
					// some would take it back.
					if _, ok := cm.Object["data"]; ok {
						t.Errorf("ConfigMap %s renders data", cm.GetName())
					}
					if cm.GetNamespace() != "upshift" {
						t.Errorf("ConfigMap %s in namespace %q, want the release's", cm.GetName(), cm.GetNamespace())
					}
				}
			}
			if len(injected) != 1 {
				t.Fatalf("ConfigMaps labelled %s=true: %v, want one", injectLabel, injected)
			}
			for _, d := range deployments(t, on) {
				spec := d.Spec.Template.Spec
				var files []string // the bundle's files inside its volume
				var volume string
				for _, v := range spec.Volumes {
					if v.ConfigMap != nil && v.ConfigMap.Name == injected[0] {
						volume = v.Name
						for _, it := range v.ConfigMap.Items {
							if it.Key == injectKey {
								files = append(files, it.Path)
							}
						}
						if len(v.ConfigMap.Items) > 0 && len(files) == 0 {
							t.Errorf("%s: the volume maps keys %v, not %s", d.Name, v.ConfigMap.Items, injectKey)
						}
						if v.ConfigMap.Optional != nil && *v.ConfigMap.Optional {
							t.Errorf("%s: the bundle is optional: the pod would start before it is filled", d.Name)
						}
					}
				}
				if volume == "" {
					t.Fatalf("%s: no volume of ConfigMap %s", d.Name, injected[0])
				}
				if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "metrics-tls" }) {
					t.Errorf("%s: the metrics certificate's volume is gone beside the bundle", d.Name)
				}
				for _, c := range spec.Containers {
					dir := ""
					for _, m := range c.VolumeMounts {
						if m.Name == volume {
							dir = m.MountPath
						}
					}
					sslCertDir := envVar(c, "SSL_CERT_DIR")
					if dir == "" || sslCertDir == nil || sslCertDir.Value != dir {
						t.Errorf("%s/%s: bundle mounted at %q, SSL_CERT_DIR %v: Go would not read it", d.Name, c.Name, dir, sslCertDir)
						continue
					}
					if envVar(c, "SSL_CERT_FILE") != nil {
						t.Errorf("%s/%s: SSL_CERT_FILE set: the image's public roots would be dropped", d.Name, c.Name)
					}
					if len(files) == 0 {
						files = []string{injectKey}
					}
					goTrustsBundleIn(t, files[0])
				}
			}
		})
	}
}

func envVar(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// goTrustsBundleIn lays a CA out as the kubelet writes a ConfigMap volume
// (the file a symlink into ..data, itself a symlink to a timestamped
// folder) under file name, and checks that a Go process whose SSL_CERT_DIR
// names that folder verifies a server signed by the CA, on top of the roots
// of its SSL_CERT_FILE (the image's), and that without SSL_CERT_DIR it does
// not: the check can fail.
func goTrustsBundleIn(t *testing.T, file string) {
	t.Helper()
	serverCert, serverPEM := selfSigned(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}
	// The refusal the second check expects is not news.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()

	mount := t.TempDir()
	stamp := filepath.Join(mount, "..2026_12_02_03_04_05.000000001")
	if err := os.Mkdir(stamp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stamp, file), serverPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(stamp), filepath.Join(mount, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", file), filepath.Join(mount, file)); err != nil {
		t.Fatal(err)
	}
	// The image's own bundle: another CA.
	_, otherPEM := selfSigned(t)
	imageBundle := filepath.Join(t.TempDir(), "ca-certificates.crt")
	if err := os.WriteFile(imageBundle, otherPEM, 0o644); err != nil {
		t.Fatal(err)
	}

	if out, err := fetchInChild(srv.URL, "SSL_CERT_FILE="+imageBundle, "SSL_CERT_DIR="+mount); err != nil {
		t.Errorf("with SSL_CERT_DIR=%s holding %s: %v\n%s", mount, file, err, out)
	}
	if _, err := fetchInChild(srv.URL, "SSL_CERT_FILE="+imageBundle, "SSL_CERT_DIR="+t.TempDir()); err == nil {
		t.Error("the server was trusted without the bundle: the check above proves nothing")
	}
}

// envChildURL makes the test binary, run again, fetch one URL with Go's
// default client and system roots (read once per process, hence a child).
const envChildURL = "UPSHIFT_CHARTS_TEST_FETCH"

func fetchInChild(url string, env ...string) ([]byte, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestFetchChild$")
	cmd.Env = append(os.Environ(), append(env, envChildURL+"="+url)...)
	return cmd.CombinedOutput()
}

func TestFetchChild(t *testing.T) {
	url := os.Getenv(envChildURL)
	if url == "" {
		t.Skip("run by TestTrustedCABundle")
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestProxyEnvironment(t *testing.T) {
	for _, name := range chartsOrSkip(t) {
		t.Run(name, func(t *testing.T) {
			set := []string{"--set", "proxy.httpProxy=http://proxy.example.com:3128", "--set", "proxy.httpsProxy=http://proxy.example.com:3129",
				"--set-string", `proxy.noProxy=.cluster.local\,.svc\,10.128.0.0/14\,172.30.0.0/16`}
			switch {
			case slices.Contains(proxyEnv, name):
			case name == "aro-monitor":
				// Its prober takes the proxy as flags; the rest of the
				// process goes direct (docs/operations/aro-monitor.md).
				for _, d := range deployments(t, render(t, chartDir(t, name), set...)) {
					for _, c := range d.Spec.Template.Spec.Containers {
						if envVar(c, "HTTPS_PROXY") != nil || envVar(c, "HTTP_PROXY") != nil {
							t.Errorf("%s: proxy in the environment", d.Name)
						}
						if !slices.Contains(c.Args, "--probe-https-proxy=http://proxy.example.com:3129") {
							t.Errorf("%s: the prober is not given the proxy: %v", d.Name, c.Args)
						}
					}
				}
				return
			default:
				_, err := framework.RenderChartDir(chartDir(t, name), "rel", "upshift", set...)
				if err == nil || !strings.Contains(err.Error(), "schema") {
					t.Errorf("a component without outbound calls took a proxy: %v", err)
				}
				return
			}
			for _, d := range deployments(t, render(t, chartDir(t, name))) {
				for _, c := range d.Spec.Template.Spec.Containers {
					for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"} {
						if envVar(c, v) != nil {
							t.Errorf("%s: %s set without a proxy", d.Name, v)
						}
					}
				}
			}
			for _, d := range deployments(t, render(t, chartDir(t, name), set...)) {
				for _, c := range d.Spec.Template.Spec.Containers {
					want := map[string]string{
						"HTTP_PROXY":  "http://proxy.example.com:3128",
						"HTTPS_PROXY": "http://proxy.example.com:3129",
						// The in-cluster apiserver address, which the
						// kubelet expands, is never proxied.
						"NO_PROXY": ".cluster.local,.svc,10.128.0.0/14,172.30.0.0/16,$(KUBERNETES_SERVICE_HOST)",
					}
					for k, v := range want {
						if e := envVar(c, k); e == nil || e.Value != v {
							t.Errorf("%s: %s = %v, want %q", d.Name, k, e, v)
						}
					}
				}
			}
			// Only the apiserver left out when no noProxy is given.
			for _, d := range deployments(t, render(t, chartDir(t, name), "--set", "proxy.httpsProxy=http://proxy.example.com:3129")) {
				for _, c := range d.Spec.Template.Spec.Containers {
					if e := envVar(c, "NO_PROXY"); e == nil || e.Value != "$(KUBERNETES_SERVICE_HOST)" {
						t.Errorf("%s: NO_PROXY = %v, want the apiserver alone", d.Name, e)
					}
				}
			}
			if _, err := framework.RenderChartDir(chartDir(t, name), "rel", "upshift", "--set", "proxy.httpsProxy=proxy.example.com:3128"); err == nil || !strings.Contains(err.Error(), "httpsProxy") {
				t.Errorf("a proxy without scheme: want a schema error naming httpsProxy, got %v", err)
			}
		})
	}
}

// minimumKube is each chart's oldest Kubernetes: node-gate's admission
// policy is admissionregistration.k8s.io/v1, GA in 1.30; the rest run on
// OpenShift 4.16 (1.29).
var minimumKube = map[string]string{"node-gate": "1.30.0"}

func TestKubeVersion(t *testing.T) {
	for _, name := range chartsOrSkip(t) {
		t.Run(name, func(t *testing.T) {
			min := minimumKube[name]
			if min == "" {
				min = "1.29.0"
			}
			// OpenShift reports its versions with build metadata.
			if _, err := framework.RenderChartDir(chartDir(t, name), "rel", "upshift", "--kube-version", "v"+min+"+0a1b2c3"); err != nil {
				t.Errorf("at its minimum %s: %v", min, err)
			}
			for _, old := range []string{"1.28.15", previousMinor(t, min)} {
				_, err := framework.RenderChartDir(chartDir(t, name), "rel", "upshift", "--kube-version", old)
				if err == nil || !strings.Contains(err.Error(), "chart requires kubeVersion") {
					t.Errorf("at %s: want the kubeVersion refusal, got %v", old, err)
				}
			}
		})
	}
	t.Run("umbrella", func(t *testing.T) {
		dir := umbrellaDir(t)
		if _, err := framework.RenderChartDir(dir, "rel", "upshift", "--kube-version", "1.29.0"); err != nil {
			t.Errorf("default components at 1.29: %v", err)
		}
		if _, err := framework.RenderChartDir(dir, "rel", "upshift", "--kube-version", "1.28.0"); err == nil || !strings.Contains(err.Error(), "chart requires kubeVersion") {
			t.Errorf("at 1.28: want the kubeVersion refusal, got %v", err)
		}
		// Helm checks only the top chart's kubeVersion: node-gate's own
		// check must refuse for it.
		_, err := framework.RenderChartDir(dir, "rel", "upshift", "--kube-version", "1.29.9", "--set", "components.node-gate=true")
		if err == nil || !strings.Contains(err.Error(), "node-gate needs Kubernetes 1.30") {
			t.Errorf("node-gate at 1.29: want its refusal, got %v", err)
		}
	})
}

// previousMinor is the last patch of the minor before min ("1.30.0" ->
// "1.29.99").
func previousMinor(t *testing.T, min string) string {
	t.Helper()
	var major, minor, patch int
	if _, err := fmt.Sscanf(min, "%d.%d.%d", &major, &minor, &patch); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d.%d.99", major, minor-1)
}

// chartDir is charts/<name> (chartPath needs Gomega, for the specs).
func chartDir(t *testing.T, name string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "charts", name)
}

// selfSigned is a new self-signed certificate for 127.0.0.1, its own CA.
func selfSigned(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "trusted-ca-bundle test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
