package framework

import (
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestScraperVerifiesTheMetricsCert: a chart's metrics certificate is
// accepted by a scraper that trusts its CA and expects the metrics
// Service's name, and refused by one that trusts another CA or expects
// another name, so a scrape that succeeds has verified the component.
func TestScraperVerifiesTheMetricsCert(t *testing.T) {
	chart, err := RenderChart("update-status-controller", "usc", "upshift", "metrics.certSecret="+MetricsCertSecret)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := chart.IssueMetricsCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if cert.ServerName != "usc-update-status-controller-metrics.upshift.svc" {
		t.Errorf("ServerName %q, want the metrics Service's name", cert.ServerName)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(cert.Dir, "tls.crt"), filepath.Join(cert.Dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("up 1\n"))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes below
	srv.StartTLS()
	defer srv.Close()

	if body, err := (&Scraper{CA: cert.CA, ServerName: cert.ServerName}).Scrape(srv.URL); err != nil || body != "up 1\n" {
		t.Errorf("the right CA and name: got %q, %v", body, err)
	}
	other, err := chart.IssueMetricsCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*Scraper{
		"another CA":   {CA: other.CA, ServerName: cert.ServerName},
		"another name": {CA: cert.CA, ServerName: "other-metrics.upshift.svc"},
		"no CA":        {ServerName: cert.ServerName},
	} {
		// Unknown authority, or valid for another name.
		if _, err := s.Scrape(srv.URL); err == nil || !strings.Contains(err.Error(), "x509: certificate") {
			t.Errorf("%s: want a certificate error, got %v", name, err)
		}
	}
}

// TestIssueMetricsCertNeedsTheChartToMountIt: a chart that does not mount
// its certificate Secret where --metrics-cert-dir points is refused.
func TestIssueMetricsCertNeedsTheChartToMountIt(t *testing.T) {
	chart, err := RenderChart("update-status-controller", "usc", "upshift")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chart.IssueMetricsCert(t.TempDir()); err == nil || !strings.Contains(err.Error(), "--metrics-cert-dir") {
		t.Errorf("without metrics.certSecret: want an error naming --metrics-cert-dir, got %v", err)
	}
}
