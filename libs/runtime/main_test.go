package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
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
// must serve /readyz and /metrics with upshift_build_info, hold its Lease, and
// stop cleanly within 5 s of SIGTERM, releasing the Lease.
func TestServesAndStopsOnSIGTERM(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env, err := testenv.Start(ctx, testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })

	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	var logs bytes.Buffer
	cmd := child("--kubeconfig="+env.KubeconfigPath, "--metrics-bind-address="+metricsAddr,
		"--health-probe-bind-address="+probeAddr, "--leader-election-namespace=default")
	cmd.Stderr = &logs
	g.Expect(cmd.Start()).To(Succeed())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

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
	g.Eventually(func() (string, error) { return get("http://" + metricsAddr + "/metrics") }).
		WithTimeout(10 * time.Second).
		Should(ContainSubstring(`upshift_build_info{component="runtime-test",version="dev"} 1`))

	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: "default", Name: runtime.LeaseName(component)}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, lease)).To(Succeed())
		g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		g.Expect(*lease.Spec.HolderIdentity).NotTo(BeEmpty())
	}).WithTimeout(20 * time.Second).Should(Succeed())

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

func freeAddr(t *testing.T) string {
	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
