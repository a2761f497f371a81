package egresssim

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"

	"golang.org/x/net/dns/dnsmessage"
)

// DNS is a UDP DNS server for A queries. Names it has no record for, and
// names marked failing, get NXDOMAIN; names marked broken get SERVFAIL.
type DNS struct {
	conn *net.UDPConn

	mu      sync.Mutex
	records map[string]netip.Addr
	failing map[string]dnsmessage.RCode
	queries []string
}

// StartDNS listens on a free loopback port; Close stops it.
func StartDNS() (*DNS, error) {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	d := &DNS{conn: conn, records: map[string]netip.Addr{}, failing: map[string]dnsmessage.RCode{}}
	go d.serve()
	return d, nil
}

// Addr is the server's host:port.
func (d *DNS) Addr() string { return d.conn.LocalAddr().String() }

// Close stops the server.
func (d *DNS) Close() error { return d.conn.Close() }

// Set makes name resolve to addr.
func (d *DNS) Set(name string, addr netip.Addr) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.records[fqdn(name)] = addr
}

// Fail makes name fail with NXDOMAIN (notFound) or SERVFAIL until Heal.
func (d *DNS) Fail(name string, notFound bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	code := dnsmessage.RCodeServerFailure
	if notFound {
		code = dnsmessage.RCodeNameError
	}
	d.failing[fqdn(name)] = code
}

// Heal undoes Fail.
func (d *DNS) Heal(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.failing, fqdn(name))
}

// Queries returns the names asked for, in order.
func (d *DNS) Queries() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.queries...)
}

// Resolver is a Go resolver that asks only this server.
func (d *DNS) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dialer net.Dialer
		return dialer.DialContext(ctx, "udp", d.Addr())
	}}
}

func (d *DNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if out, err := d.answer(buf[:n]); err == nil {
			_, _ = d.conn.WriteToUDP(out, from)
		}
	}
}

func (d *DNS) answer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	name := strings.ToLower(q.Name.String())
	d.mu.Lock()
	d.queries = append(d.queries, fmt.Sprintf("%s %s", q.Type, name))
	addr, known := d.records[name]
	code, failing := d.failing[name]
	d.mu.Unlock()

	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	switch {
	case failing:
		rh.RCode = code
	case !known:
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	// Only A records exist; an AAAA query for a known name gets an empty
	// answer (NOERROR), as a real server with no IPv6 record does.
	if !failing && known && q.Type == dnsmessage.TypeA && addr.Is4() {
		if err := b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5},
			dnsmessage.AResource{A: addr.As4()}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

func fqdn(name string) string {
	name = strings.ToLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return name
}
