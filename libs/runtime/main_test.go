package runtime_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/libs/testenv"
)

const component = "runtime-test"

// TestMain lets the test binary play a component: the tests below re-run it
// with envChild set, so that signals go to a real separate process.
const envChild = "UPSHIFT_RUNTIME_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" {
		runtime.MainProcess(runtime.Component{Name: component})
	}
	os.Exit(m.Run())
}

func child(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envChild+"=1")
	return cmd
}

func TestVersionFlag(t *testing.T) {
	out, err := child("--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); !strings.HasPrefix(got, component+" dev (go") {
		t.Errorf("--version printed %q", got)
	}
}

func TestBadFlagExitsNonZeroWithOneLine(t *testing.T) {
	var stderr bytes.Buffer
	cmd := child("--log-format=xml")
	cmd.Stderr = &stderr
	err := cmd.Run()
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != runtime.ExitUsage {
		t.Fatalf("want exit code %d, got %v", runtime.ExitUsage, err)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "--log-format") {
		t.Errorf("want one line naming --log-format, got %q", stderr.String())
	}
}

// TestServesAndStopsOnSIGTERM runs a component against a real apiserver: it
// must serve /readyz, and /metrics (with upshift_build_info) over HTTPS with
// the certificate named by --metrics-cert-dir, only to callers the apiserver
// authenticates (else 401) and authorizes for get /metrics (else 403); hold its
// Lease, and stop cleanly within 5 s of SIGTERM, releasing the Lease.
func TestServesAndStopsOnSIGTERM(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env, err := testenv.Start(ctx, testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })

	certDir, caPool := servingCert(t)
	metricsAddr, probeAddr, pprofAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	var logs bytes.Buffer
	cmd := child("--kubeconfig="+env.KubeconfigPath, "--metrics-bind-address="+metricsAddr,
		"--metrics-cert-dir="+certDir,
		"--health-probe-bind-address="+probeAddr, "--pprof-bind-address="+pprofAddr, "--leader-election-namespace=default",
		"--leader-elect-lease-duration=17s")
	cmd.Stderr = &logs
	g.Expect(cmd.Start()).To(Succeed())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// Scrapers: nobody, a ServiceAccount without the permission, and one
	// bound to a role like the charts' metrics-reader.
	noPerms := serviceAccountToken(ctx, t, env, "no-perms", false)
	reader := serviceAccountToken(ctx, t, env, "metrics-reader", true)
	// The client trusts only the CA of the certificate in --metrics-cert-dir:
	// a self-signed fallback would fail the handshake.
	httpsClient := &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: caPool, ServerName: "localhost"}}}
	scrape := func(token string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, "https://"+metricsAddr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpsClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	get := func(url string) (string, error) {
		resp, err := http.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("%s: %s", url, resp.Status)
		}
		return string(b), err
	}
	g.Eventually(func() error { _, err := get("http://" + probeAddr + "/readyz"); return err }).
		WithTimeout(20 * time.Second).Should(Succeed())
	g.Eventually(func() (string, error) {
		code, body, err := scrape(reader)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("status %d: %s", code, body)
		}
		return body, err
	}).WithTimeout(10 * time.Second).
		Should(ContainSubstring(`upshift_build_info{component="runtime-test",version="dev"} 1`))
	code, body, err := scrape("")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusUnauthorized), "no token: %s", body)
	// A token the apiserver rejects: controller-runtime's filter answers
	// 500 "Authentication failed" (the TokenReview carries an error), not
	// 401; what matters is that no metrics are served.
	code, body, err = scrape("not-a-token")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(BeElementOf(http.StatusUnauthorized, http.StatusInternalServerError), "invalid token: %s", body)
	g.Expect(body).NotTo(ContainSubstring("upshift_build_info"))
	code, body, err = scrape(noPerms)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusForbidden), "token without get /metrics: %s", body)
	g.Expect(body).NotTo(ContainSubstring("upshift_build_info"))
	// Plain HTTP gets no metrics from an HTTPS port.
	_, err = get("http://" + metricsAddr + "/metrics")
	g.Expect(err).To(HaveOccurred())
	// --pprof-bind-address serves Go's profiles.
	goroutines, err := get("http://" + pprofAddr + "/debug/pprof/goroutine?debug=1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(goroutines).To(ContainSubstring("goroutine profile:"))

	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: "default", Name: runtime.LeaseName(component)}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, lease)).To(Succeed())
		g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		g.Expect(*lease.Spec.HolderIdentity).NotTo(BeEmpty())
	}).WithTimeout(20 * time.Second).Should(Succeed())
	// The Lease carries --leader-elect-lease-duration: how long another
	// replica waits on it.
	g.Expect(lease.Spec.LeaseDurationSeconds).To(HaveValue(BeEquivalentTo(17)))

	start := time.Now()
	g.Expect(cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
	select {
	case err := <-exited:
		g.Expect(err).NotTo(HaveOccurred(), "exit status after SIGTERM; logs:\n%s", logs.String())
	case <-time.After(5 * time.Second):
		t.Fatalf("still running 5 s after SIGTERM; logs:\n%s", logs.String())
	}
	t.Logf("stopped %s after SIGTERM", time.Since(start).Round(time.Millisecond))

	g.Expect(env.Client.Get(ctx, key, lease)).To(Succeed())
	g.Expect(lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "").
		To(BeTrue(), "lease still held after a clean stop")
	g.Expect(logs.String()).To(ContainSubstring(`"component":"runtime-test"`))
}

// servingCert writes a certificate for localhost, signed by a fresh CA, as
// tls.crt and tls.key into a new folder, and returns the folder and a pool
// with that CA.
func servingCert(t *testing.T) (string, *x509.CertPool) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{{127, 0, 0, 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{runtime.MetricsCertName: certPEM, runtime.MetricsKeyName: keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// certPEM holds the serving certificate, then its CA.
	pool := x509.NewCertPool()
	rest := certPEM
	for {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil && c.IsCA {
			pool.AddCert(c)
		}
	}
	return dir, pool
}

// serviceAccountToken creates ServiceAccount default/name, bound (or not) to
// a ClusterRole that allows get on /metrics, and returns a token for it.
func serviceAccountToken(ctx context.Context, t *testing.T, env *testenv.Env, name string, canRead bool) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	if err := env.Client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	if canRead {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: "default"}}}
		for _, o := range []client.Object{role, binding} {
			if err := env.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg, err := env.ServiceAccountConfig(ctx, "default", name)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.BearerToken
}

func freeAddr(t *testing.T) string {
	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
