package egresssim

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Proxy is an HTTP proxy speaking CONNECT (for https targets) and plain
// forwarding (for http targets). Refused hosts get 403, as a corporate proxy
// answers for a destination it does not allow.
type Proxy struct {
	*httptest.Server

	dialer *net.Dialer

	mu      sync.Mutex
	refused map[string]bool
	routes  map[string]string
	log     []string
}

// StartProxy starts a proxy on a free loopback port that resolves target
// names with resolver (nil: the system's); Close stops it.
func StartProxy(resolver *net.Resolver) *Proxy {
	p := &Proxy{refused: map[string]bool{}, routes: map[string]string{}, dialer: &net.Dialer{Resolver: resolver, Timeout: 5 * time.Second}}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

// Refuse makes the proxy answer 403 for host:port until Allow.
func (p *Proxy) Refuse(hostport string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused[hostport] = true
}

// Allow undoes Refuse.
func (p *Proxy) Allow(hostport string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.refused, hostport)
}

// Route makes CONNECTs to host:port dial to instead (another host:port,
// resolved as any target): a test's server on a free port stands in for a
// public endpoint on 443, under the endpoint's own name.
func (p *Proxy) Route(hostport, to string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.routes[hostport] = to
}

// Log returns "METHOD host" per request, in order.
func (p *Proxy) Log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.log = append(p.log, r.Method+" "+r.Host)
	refused := p.refused[r.Host]
	target := r.Host
	if to, ok := p.routes[r.Host]; ok {
		target = to
	}
	p.mu.Unlock()
	if refused {
		http.Error(w, "destination not allowed by proxy policy", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodConnect {
		p.forward(w, r)
		return
	}
	upstream, err := p.dialer.DialContext(r.Context(), "tcp", target)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "no hijacking", http.StatusInternalServerError)
		return
	}
	// Hijack first and answer on the raw connection: a 200 written through
	// the ResponseWriter goes out with chunked framing, and bytes the
	// server had already buffered from the client (the start of its TLS
	// handshake) would be lost with the discarded reader, so the target saw
	// a truncated ClientHello now and then.
	client, brw, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	if n := brw.Reader.Buffered(); n > 0 {
		buffered, _ := brw.Reader.Peek(n)
		if _, err := upstream.Write(buffered); err != nil {
			client.Close()
			upstream.Close()
			return
		}
	}
	go pipe(upstream, client)
	go pipe(client, upstream)
}

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out.Header = r.Header.Clone()
	resp, err := (&http.Transport{DialContext: p.dialer.DialContext}).RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	_, _ = io.Copy(dst, src)
}
