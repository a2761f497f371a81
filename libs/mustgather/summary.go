package mustgather

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// String is summary.txt: when, which namespaces, what was gathered, what was
// not and why, and what an Upshift archive never holds.
func (s *Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Upshift must-gather\nstarted:  %s\nfinished: %s\n", s.Started.Format(time.RFC3339), s.Finished.Format(time.RFC3339))
	ns := strings.Join(s.Namespaces, ", ")
	if ns == "" {
		ns = "(none found)"
	}
	fmt.Fprintf(&b, "component namespaces: %s\n\ngathered:\n", ns)
	for _, g := range s.Gathered {
		fmt.Fprintf(&b, "  %s: %d  (%s)\n", g.What, g.Count, g.Where)
	}
	b.WriteString("\nnot gathered:\n")
	if len(s.Missing) == 0 {
		b.WriteString("  (nothing)\n")
	}
	for _, m := range s.Missing {
		fmt.Fprintf(&b, "  %s: %s\n", m.What, m.Why)
	}
	b.WriteString(`
never gathered, by design:
  Secret values: Secrets are listed by name only (secrets.names), in the components' namespaces; the pull secret is never read
  MachineConfigs: their Ignition files can carry the pull secret and other credentials
  literal environment variable values of Pods and Deployments: replaced by ` + Redacted + `
`)
	return b.String()
}

// insecureTransport is a transport that does not verify the server's
// certificate: see scrapeDirectly.
func insecureTransport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // a component's self-signed metrics certificate
	return t
}

func hostPort(ip string, port int32) string {
	return net.JoinHostPort(ip, strconv.Itoa(int(port)))
}
