package alerts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The charts give the cluster-wide proxy as HTTP_PROXY, HTTPS_PROXY and
// NO_PROXY. The client here builds its own transport (a CA, a bearer
// token): it must still take the proxy from the environment, as the
// default transport does. Go reads those variables once per process, so
// each case runs in a child process of the test binary.

const (
	envChild = "UPSHIFT_ALERTS_PROXY_CHILD"
	// A name that never resolves: only a proxy can answer for it.
	behindProxy = "http://alertmanager.example.invalid:9093"
)

func TestClientTakesTheProxyFromTheEnvironment(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []*http.Request
	)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Clone(context.Background()))
		mu.Unlock()
		if r.URL.Path != alertmanagerPath {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(alertmanagerAlerts())
	}))
	defer proxy.Close()
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.crt")
	tlsServer := httptest.NewTLSServer(http.NotFoundHandler())
	writeCA(t, ca, tlsServer)
	tlsServer.Close()

	// Through the proxy: the request reaches it in proxy form, with the
	// token the client adds.
	if out, err := runChild(t, "HTTP_PROXY="+proxy.URL, "NO_PROXY=", envChild+"="+token+"|"+ca); err != nil {
		t.Fatalf("through HTTP_PROXY: %v\n%s", err, out)
	}
	mu.Lock()
	if len(seen) != 1 {
		t.Fatalf("the proxy saw %d requests, want 1", len(seen))
	}
	if r := seen[0]; r.Host != "alertmanager.example.invalid:9093" || r.Header.Get("Authorization") != "Bearer s3cret" {
		t.Errorf("the proxy saw host %q, Authorization %q", r.Host, r.Header.Get("Authorization"))
	}
	seen = nil
	mu.Unlock()

	// NO_PROXY naming the host: direct, so the name does not resolve and
	// the proxy sees nothing.
	if out, err := runChild(t, "HTTP_PROXY="+proxy.URL, "NO_PROXY=.example.invalid", envChild+"="+token+"|"+ca); err == nil {
		t.Fatalf("with NO_PROXY naming the host, the read succeeded:\n%s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 0 {
		t.Errorf("the proxy saw %d requests for a host in NO_PROXY", len(seen))
	}
}

func runChild(t *testing.T, env ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestProxyChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	return cmd.CombinedOutput()
}

// TestProxyChild is the child process: it reads the alerts of behindProxy
// with a bearer token file and a CA file (the client's own transport).
func TestProxyChild(t *testing.T) {
	arg := os.Getenv(envChild)
	if arg == "" {
		t.Skip("run by TestClientTakesTheProxyFromTheEnvironment")
	}
	token, ca, _ := strings.Cut(arg, "|")
	c, err := New(Config{URL: behindProxy, API: Alertmanager, BearerTokenFile: token, CAFile: ca})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Alerts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatal("no alerts read")
	}
}
