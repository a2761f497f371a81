// Package probe checks that a URL can be reached, one phase at a time: DNS
// resolution, TCP connect, TLS handshake and the HTTP exchange, each timed,
// so a failure names the phase that failed instead of a generic "unreachable".
//
// As ARO's checker does, any HTTP response counts as reachable (a 403 from
// the registry still proves the path out works), every probe opens a new
// connection (keep-alives off: what is checked is the ability to connect, and
// a black-holed pooled HTTP/2 connection would otherwise never be noticed), and
// the request is a HEAD. Unlike ARO's, it goes through the cluster-wide
// proxy when one applies to the URL, and says so.
package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
)

// Prober probes URLs. The zero value probes directly with the system resolver
// and roots and a 10 s timeout.
type Prober struct {
	// Timeout bounds one URL, all phases together.
	Timeout time.Duration
	// Proxy picks the proxy for a URL, nil for direct (as http.Transport.Proxy).
	Proxy func(*url.URL) (*url.URL, error)
	// Resolver resolves host names; nil is the system's.
	Resolver *net.Resolver
	// RootCAs verify servers; nil is the system's pool.
	RootCAs *x509.CertPool
}

// Result is one URL's probe.
type Result struct {
	URL  string
	Path amv1alpha1.Path
	// FailedPhase is empty when the URL was reached.
	FailedPhase amv1alpha1.ProbePhase
	Err         error
	// Latency per phase that completed or failed.
	Latency map[amv1alpha1.ProbePhase]time.Duration
	// StatusCode of the HTTP response, when there was one.
	StatusCode int
}

// OK says whether the URL was reached.
func (r Result) OK() bool { return r.FailedPhase == "" }

// Probe reaches target once.
func (p *Prober) Probe(ctx context.Context, target string) Result {
	res := Result{URL: target, Path: amv1alpha1.PathDirect, Latency: map[amv1alpha1.ProbePhase]time.Duration{}}
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		res.FailedPhase, res.Err = amv1alpha1.PhaseHTTP, fmt.Errorf("not an http(s) URL: %q", target)
		return res
	}
	if p.Proxy != nil {
		if pu, err := p.Proxy(u); err != nil {
			res.FailedPhase, res.Err = amv1alpha1.PhaseConnect, fmt.Errorf("choosing the proxy: %w", err)
			return res
		} else if pu != nil {
			res.Path = amv1alpha1.PathProxy
		}
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	t := newPhases()
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, t.trace()), http.MethodHead, target, nil)
	if err != nil {
		res.FailedPhase, res.Err = amv1alpha1.PhaseHTTP, err
		return res
	}
	client := &http.Client{
		Transport: p.transport(),
		// A redirect is a response: the path out works.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if resp != nil {
		_ = resp.Body.Close()
		res.StatusCode = resp.StatusCode
	}
	t.finish(err)
	res.Latency = t.latencies()
	if err != nil {
		res.FailedPhase, res.Err = t.failed(), err
		// Through a proxy the CONNECT's answer is all that is known: the
		// proxy resolves and dials. It is a DNS failure where the proxy
		// says so, otherwise the proxy's refusal, as it worded it.
		var pr *ProxyRefusal
		if errors.As(err, &pr) {
			res.FailedPhase, res.Err = pr.Phase, pr
		}
	}
	return res
}

// ProxyRefusal is a proxy's non-2xx answer to CONNECT.
type ProxyRefusal struct {
	Status string
	// Detail is the start of the proxy's explanation (its body or error
	// header), as it wrote it.
	Detail string
	// Phase is DNS where the proxy says it could not resolve the name,
	// Connect otherwise.
	Phase amv1alpha1.ProbePhase
}

func (e *ProxyRefusal) Error() string {
	what := "the proxy refused or could not open the connection"
	if e.Phase == amv1alpha1.PhaseDNS {
		what = "the proxy could not resolve the name"
	}
	if e.Detail == "" {
		return fmt.Sprintf("%s: CONNECT answered %s", what, e.Status)
	}
	return fmt.Sprintf("%s: CONNECT answered %s: %s", what, e.Status, e.Detail)
}

// dnsSigns are how proxies say a name did not resolve: Squid's error
// header and page, Go's resolver errors (Go proxies such as goproxy pass
// them on), and the usual wordings elsewhere.
var dnsSigns = []string{"err_dns_fail", "no such host", "nxdomain", "could not resolve", "unable to resolve",
	"cannot resolve", "name resolution", "name or service not known", "server misbehaving"}

// ClassifyProxyRefusal reads a CONNECT refusal: its status, headers and
// the start of its body.
func ClassifyProxyRefusal(status string, header http.Header, body []byte) *ProxyRefusal {
	detail := strings.TrimSpace(header.Get("X-Squid-Error"))
	if b := strings.TrimSpace(string(body)); b != "" {
		if detail != "" {
			detail += ": "
		}
		detail += strings.Join(strings.Fields(b), " ")
	}
	if len(detail) > 300 {
		detail = detail[:300] + "..."
	}
	e := &ProxyRefusal{Status: status, Detail: detail, Phase: amv1alpha1.PhaseConnect}
	lower := strings.ToLower(detail)
	for _, sign := range dnsSigns {
		if strings.Contains(lower, sign) {
			e.Phase = amv1alpha1.PhaseDNS
			break
		}
	}
	return e
}

func (p *Prober) transport() *http.Transport {
	dialer := &net.Dialer{Resolver: p.Resolver}
	tr := &http.Transport{
		DialContext:       dialer.DialContext,
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: p.RootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: false,
	}
	if p.Proxy != nil {
		tr.Proxy = func(r *http.Request) (*url.URL, error) { return p.Proxy(r.URL) }
		// The transport's own error for a refused CONNECT is the status
		// text alone; the proxy's explanation is read here.
		tr.OnProxyConnectResponse = func(_ context.Context, _ *url.URL, _ *http.Request, resp *http.Response) error {
			if resp.StatusCode/100 == 2 {
				return nil
			}
			var body []byte
			if resp.Body != nil {
				body, _ = io.ReadAll(io.LimitReader(resp.Body, 4096))
			}
			return ClassifyProxyRefusal(resp.Status, resp.Header, body)
		}
	}
	return tr
}

// phases records when each phase started and ended, from httptrace's hooks.
type phases struct {
	mu         sync.Mutex
	start, end map[amv1alpha1.ProbePhase]time.Time
	errs       map[amv1alpha1.ProbePhase]error
	done       time.Time
}

func newPhases() *phases {
	return &phases{
		start: map[amv1alpha1.ProbePhase]time.Time{},
		end:   map[amv1alpha1.ProbePhase]time.Time{},
		errs:  map[amv1alpha1.ProbePhase]error{},
	}
}

// mark records the first time a phase hit a hook: a dial may try several
// addresses, and the phase is the whole attempt.
func (t *phases) mark(m map[amv1alpha1.ProbePhase]time.Time, ph amv1alpha1.ProbePhase) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := m[ph]; !ok {
		m[ph] = time.Now()
	}
}

func (t *phases) fail(ph amv1alpha1.ProbePhase, err error) {
	if err == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.errs[ph]; !ok {
		t.errs[ph] = err
	}
}

func (t *phases) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart: func(httptrace.DNSStartInfo) { t.mark(t.start, amv1alpha1.PhaseDNS) },
		DNSDone: func(i httptrace.DNSDoneInfo) {
			t.mark(t.end, amv1alpha1.PhaseDNS)
			t.fail(amv1alpha1.PhaseDNS, i.Err)
		},
		ConnectStart: func(string, string) { t.mark(t.start, amv1alpha1.PhaseConnect) },
		ConnectDone: func(_, _ string, err error) {
			t.mark(t.end, amv1alpha1.PhaseConnect)
			t.fail(amv1alpha1.PhaseConnect, err)
		},
		TLSHandshakeStart: func() { t.mark(t.start, amv1alpha1.PhaseTLS) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			t.mark(t.end, amv1alpha1.PhaseTLS)
			t.fail(amv1alpha1.PhaseTLS, err)
		},
		WroteRequest: func(httptrace.WroteRequestInfo) {
			t.mark(t.start, amv1alpha1.PhaseHTTP)
		},
		GotFirstResponseByte: func() { t.mark(t.end, amv1alpha1.PhaseHTTP) },
	}
}

func (t *phases) finish(err error) {
	t.mu.Lock()
	t.done = time.Now()
	t.mu.Unlock()
	if err != nil {
		// A timeout or a proxy refusal reaches no hook: charge it to the
		// phase that was running.
		var ph amv1alpha1.ProbePhase
		for _, p := range order {
			if _, ok := t.start[p]; ok {
				ph = p
			}
		}
		if ph == "" {
			ph = amv1alpha1.PhaseConnect
		}
		t.fail(ph, err)
	}
}

var order = []amv1alpha1.ProbePhase{amv1alpha1.PhaseDNS, amv1alpha1.PhaseConnect, amv1alpha1.PhaseTLS, amv1alpha1.PhaseHTTP}

// failed is the first phase, in order, that failed.
func (t *phases) failed() amv1alpha1.ProbePhase {
	for _, p := range order {
		if _, ok := t.errs[p]; ok {
			return p
		}
	}
	return amv1alpha1.PhaseHTTP
}

// latencies is each started phase's duration, up to its end or, for the
// phase that never ended, up to the failure.
func (t *phases) latencies() map[amv1alpha1.ProbePhase]time.Duration {
	out := map[amv1alpha1.ProbePhase]time.Duration{}
	for p, s := range t.start {
		e, ok := t.end[p]
		if !ok {
			e = t.done
		}
		out[p] = e.Sub(s)
	}
	return out
}
