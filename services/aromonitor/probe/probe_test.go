package probe

import (
	"context"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/tools/egresssim"
)

// world is one set of probe targets on loopback, reached by name through a
// DNS server the test controls.
type world struct {
	dns *egresssim.DNS
	ok  *httptest.Server // answers 503: any response is reachable
	// okConns counts the connections ok accepted (set before it starts:
	// the server reads its config from its own goroutines).
	okConns atomic.Int32
	hang    *httptest.Server // completes TLS, never answers
	roots   *x509.CertPool
	release chan struct{}
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dns, err := egresssim.StartDNS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dns.Close() })
	w := &world{dns: dns, release: make(chan struct{})}
	w.ok = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodHead {
			t.Errorf("probe sent %s, want HEAD", r.Method)
		}
		rw.WriteHeader(http.StatusServiceUnavailable)
	}))
	w.ok.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			w.okConns.Add(1)
		}
	}
	w.ok.StartTLS()
	t.Cleanup(w.ok.Close)
	w.hang = httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-w.release }))
	t.Cleanup(func() { close(w.release); w.hang.Close() })
	w.roots = x509.NewCertPool()
	w.roots.AddCert(w.ok.Certificate())
	w.roots.AddCert(w.hang.Certificate())
	for _, name := range []string{"egress.test", "hang.test", "refused.test", "blocked.test", "example.com"} {
		dns.Set(name, netip.MustParseAddr("127.0.0.1"))
	}
	return w
}

// url points a name at a server's port; httptest certificates are valid for
// example.com, so TLS targets go by that name.
func (w *world) url(name string, s *httptest.Server) string {
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	return "https://" + name + ":" + port + "/"
}

func (w *world) prober(timeout time.Duration) *Prober {
	return &Prober{Timeout: timeout, Resolver: w.dns.Resolver(), RootCAs: w.roots}
}

func TestPhases(t *testing.T) {
	w := newWorld(t)
	closed := closedPort(t)
	for _, tc := range []struct {
		name      string
		prober    *Prober
		url       string
		wantPhase amv1alpha1.ProbePhase
		wantTimed []amv1alpha1.ProbePhase
		prepare   func()
	}{
		{"reached: any HTTP response counts", w.prober(5 * time.Second), w.url("example.com", w.ok), "",
			[]amv1alpha1.ProbePhase{"DNS", "Connect", "TLS", "HTTP"}, nil},
		{"name does not resolve", w.prober(5 * time.Second), w.url("blocked.test", w.ok), "DNS",
			[]amv1alpha1.ProbePhase{"DNS"}, func() { w.dns.Fail("blocked.test", true) }},
		{"resolver failing", w.prober(5 * time.Second), "https://nowhere.test/", "DNS", nil, nil},
		{"nothing listens", w.prober(5 * time.Second), "https://refused.test:" + closed + "/", "Connect",
			[]amv1alpha1.ProbePhase{"DNS", "Connect"}, nil},
		{"certificate not trusted (interception)", &Prober{Timeout: 5 * time.Second, Resolver: w.dns.Resolver(), RootCAs: x509.NewCertPool()},
			w.url("example.com", w.ok), "TLS", []amv1alpha1.ProbePhase{"DNS", "Connect", "TLS"}, nil},
		{"server never answers", w.prober(300 * time.Millisecond), w.url("example.com", w.hang), "HTTP",
			[]amv1alpha1.ProbePhase{"DNS", "Connect", "TLS", "HTTP"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.prepare != nil {
				tc.prepare()
			}
			res := tc.prober.Probe(context.Background(), tc.url)
			if res.FailedPhase != tc.wantPhase {
				t.Fatalf("failed phase %q (err %v), want %q", res.FailedPhase, res.Err, tc.wantPhase)
			}
			if tc.wantPhase == "" && (res.Err != nil || res.StatusCode != http.StatusServiceUnavailable) {
				t.Errorf("reached with err %v, status %d", res.Err, res.StatusCode)
			}
			if tc.wantPhase != "" && res.Err == nil {
				t.Error("a failure without an error")
			}
			for _, ph := range tc.wantTimed {
				if _, ok := res.Latency[ph]; !ok {
					t.Errorf("no latency for phase %s: %v", ph, res.Latency)
				}
			}
			if res.Path != amv1alpha1.PathDirect {
				t.Errorf("path %s, want Direct", res.Path)
			}
		})
	}
}

func TestNewConnectionPerProbe(t *testing.T) {
	w := newWorld(t)
	p := w.prober(5 * time.Second)
	for i := 0; i < 3; i++ {
		if res := p.Probe(context.Background(), w.url("example.com", w.ok)); !res.OK() {
			t.Fatal(res.Err)
		}
	}
	if conns := w.okConns.Load(); conns != 3 {
		t.Errorf("3 probes opened %d connections: a pooled connection would hide a black hole", conns)
	}
}

func TestThroughProxy(t *testing.T) {
	w := newWorld(t)
	proxy := egresssim.StartProxy(w.dns.Resolver())
	t.Cleanup(proxy.Close)
	proxyURL, _ := url.Parse(proxy.URL)
	p := w.prober(5 * time.Second)
	p.Proxy = func(u *url.URL) (*url.URL, error) {
		if u.Hostname() == "direct.test" {
			return nil, nil
		}
		return proxyURL, nil
	}
	target := w.url("example.com", w.ok)
	res := p.Probe(context.Background(), target)
	if !res.OK() || res.Path != amv1alpha1.PathProxy {
		t.Fatalf("through the proxy: ok=%v path=%s err=%v", res.OK(), res.Path, res.Err)
	}
	host := strings.TrimSuffix(strings.TrimPrefix(target, "https://"), "/")
	if !slices.Contains(proxy.Log(), "CONNECT "+host) {
		t.Errorf("the proxy never saw CONNECT %s: %v", host, proxy.Log())
	}

	// The proxy cannot resolve the name and says so (a 502 with Go's
	// resolver error): DNS, not Connect.
	w.dns.Fail("example.com", true)
	res = p.Probe(context.Background(), target)
	if res.OK() || res.FailedPhase != amv1alpha1.PhaseDNS || res.Path != amv1alpha1.PathProxy ||
		!strings.Contains(res.Err.Error(), "the proxy could not resolve the name: CONNECT answered 502") {
		t.Errorf("a proxy failing to resolve: phase %q path %s err %v, want DNS through Proxy", res.FailedPhase, res.Path, res.Err)
	}
	w.dns.Heal("example.com")

	proxy.Refuse(host)
	res = p.Probe(context.Background(), target)
	if res.OK() || res.FailedPhase != amv1alpha1.PhaseConnect || res.Path != amv1alpha1.PathProxy ||
		!strings.Contains(res.Err.Error(), "403 Forbidden: destination not allowed by proxy policy") {
		t.Errorf("a refusing proxy: phase %q path %s err %v, want Connect through Proxy with the proxy's words", res.FailedPhase, res.Path, res.Err)
	}
}

func TestClassifyProxyRefusal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status string
		header http.Header
		body   string
		want   amv1alpha1.ProbePhase
	}{
		{"Squid's DNS error header", "503 Service Unavailable", http.Header{"X-Squid-Error": {"ERR_DNS_FAIL 0"}}, "<html>...</html>", amv1alpha1.PhaseDNS},
		{"Go's resolver error in the body", "502 Bad Gateway", nil, "dial tcp: lookup arosvc.azurecr.io on 10.0.0.10:53: no such host", amv1alpha1.PhaseDNS},
		{"Squid's connect failure", "503 Service Unavailable", http.Header{"X-Squid-Error": {"ERR_CONNECT_FAIL 111"}}, "", amv1alpha1.PhaseConnect},
		{"a policy refusal", "403 Forbidden", nil, "destination not allowed", amv1alpha1.PhaseConnect},
		{"no explanation at all", "502 Bad Gateway", nil, "", amv1alpha1.PhaseConnect},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ClassifyProxyRefusal(tc.status, tc.header, []byte(tc.body))
			if got.Phase != tc.want {
				t.Errorf("phase %s, want %s (%v)", got.Phase, tc.want, got)
			}
			if !strings.Contains(got.Error(), tc.status) {
				t.Errorf("%q does not give the proxy's status", got.Error())
			}
		})
	}
}

func TestNotAURL(t *testing.T) {
	res := (&Prober{}).Probe(context.Background(), "ftp://x/")
	if res.OK() || res.Err == nil {
		t.Fatalf("ftp URL probed: %+v", res)
	}
}

func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	return port
}
