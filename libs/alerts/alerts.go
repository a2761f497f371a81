// Package alerts reads the alerts of a cluster's monitoring stack, from either
// of the two APIs that serve them:
//
//   - Prometheus's /api/v1/alerts, also served by the Thanos querier that
//     OpenShift runs in openshift-monitoring (what `oc adm upgrade status`
//     reads). It returns firing and pending alerts and knows nothing of
//     silences.
//   - Alertmanager's /api/v2/alerts. It returns only firing alerts, and says
//     which of them are silenced or inhibited.
//
// The Prometheus API is read with prometheus/client_golang's API client, the
// Alertmanager API with Alertmanager's own generated API v2 client. Every
// read is bounded by Config.Timeout.
//
// The update-status-controller turns the alerts into health insights; the
// upgrade-scheduler checks them for critical alerts before an upgrade.
package alerts

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// API names the alerts API a URL serves.
type API string

const (
	// Prometheus is Prometheus's (or the Thanos querier's) /api/v1/alerts.
	Prometheus API = "prometheus"
	// Alertmanager is Alertmanager's /api/v2/alerts.
	Alertmanager API = "alertmanager"
)

// APIs are the accepted values of Config.API.
var APIs = []API{Prometheus, Alertmanager}

// Alert states. Prometheus reports StateFiring and StatePending;
// Alertmanager's alerts are all StateFiring (it never sees pending alerts).
const (
	StateFiring  = "firing"
	StatePending = "pending"
)

// Alert is one alert, whichever API it came from.
type Alert struct {
	Labels      map[string]string
	Annotations map[string]string
	// State is StateFiring or StatePending.
	State string
	// ActiveAt is when the alert became active: Prometheus's activeAt,
	// Alertmanager's startsAt.
	ActiveAt time.Time
	// Suppressed is true for an alert Alertmanager silences or inhibits.
	// Prometheus does not know silences: its alerts never are.
	Suppressed bool
	// SilencedBy and InhibitedBy are the IDs of the silences and the
	// fingerprints of the alerts that suppress it (Alertmanager only).
	SilencedBy, InhibitedBy []string
}

// Name is the alert's alertname label.
func (a Alert) Name() string { return a.Labels["alertname"] }

// Recheck is how soon a reader whose decision the alerts block reads them
// again. Alerts change without any Kubernetes event to wake a controller,
// and Prometheus evaluates the platform's alerting rules every 30 seconds.
const Recheck = 30 * time.Second

// DefaultTimeout bounds a read when Config.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// Config says where and how to read alerts.
type Config struct {
	// URL is the base URL of the API, e.g.
	// https://thanos-querier.openshift-monitoring.svc:9091 or
	// https://alertmanager-main.openshift-monitoring.svc:9094. A URL that
	// ends in the API's own path (/api/v1/alerts or /api/v2/alerts) is
	// accepted too, and then tells the API when API is empty.
	URL string
	// API is the API the URL serves; empty: see DetectAPI.
	API API
	// Timeout bounds each read (connecting, waiting, reading the body);
	// zero means DefaultTimeout.
	Timeout time.Duration
	// BearerTokenFile, when set, is read before every request and sent as
	// "Authorization: Bearer <token>" (in a pod: the ServiceAccount token,
	// which the kubelet rotates).
	BearerTokenFile string
	// CAFile, when set, holds the PEM certificates that sign the server's
	// certificate (on OpenShift, the service CA), instead of the system's.
	CAFile string
	// Transport, when set, carries the requests instead of a transport
	// built from CAFile and BearerTokenFile, which are then ignored: a CLI
	// reads alerts with the credentials and CAs of the user's kubeconfig,
	// as `oc adm upgrade status` does.
	Transport http.RoundTripper
	// UserAgent, when set, is sent as User-Agent on every request (the
	// reads, and the silences written through HTTPClient): a component's
	// requests then name it and its pod (libs/runtime.UserAgent), as its
	// API requests do, so that a request can be traced to the replica that
	// sent it.
	UserAgent string
}

// Client reads alerts from one API.
type Client interface {
	// Alerts returns every alert the API reports.
	Alerts(ctx context.Context) ([]Alert, error)
}

// Paths of the two APIs, as a URL may end in them.
const (
	prometheusPath   = "/api/v1/alerts"
	alertmanagerPath = "/api/v2/alerts"
)

// DetectAPI returns the API a URL serves when it is not said: a URL ending in
// /api/v2/alerts (or /api/v2) is Alertmanager's; anything else is taken to
// be Prometheus's, the Thanos querier being what an OpenShift cluster offers
// (and what oc reads).
func DetectAPI(rawURL string) API {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Prometheus
	}
	p := strings.TrimRight(u.Path, "/")
	if strings.HasSuffix(p, alertmanagerPath) || strings.HasSuffix(p, "/api/v2") {
		return Alertmanager
	}
	return Prometheus
}

// Validate checks the configuration without contacting anything.
func (c Config) Validate() error {
	u, err := url.Parse(c.URL)
	if err != nil {
		return fmt.Errorf("alerts URL %q: %w", c.URL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("alerts URL %q: want http(s)://host[:port][/path]", c.URL)
	}
	if c.API != "" && c.API != Prometheus && c.API != Alertmanager {
		return fmt.Errorf("alerts API %q: must be %s or %s", c.API, Prometheus, Alertmanager)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("alerts timeout %s: must not be negative", c.Timeout)
	}
	return nil
}

// New returns the client for the configured API. It reads the CA file now
// (a bad one is a configuration error); the token file is read per request.
func New(c Config) (Client, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	api := c.API
	if api == "" {
		api = DetectAPI(c.URL)
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	hc, err := httpClient(c, timeout)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(c.URL) // validated above
	switch api {
	case Alertmanager:
		u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/alerts")
		u.Path = strings.TrimSuffix(u.Path, "/api/v2")
		return newAlertmanager(u, hc, timeout), nil
	default:
		u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), prometheusPath)
		return newPrometheus(u, hc, timeout)
	}
}

// HTTPClient is the HTTP client New uses, with the configured CA, bearer
// token and timeout: for other calls to the same server (the
// upgrade-scheduler's Alertmanager silences).
func HTTPClient(c Config) (*http.Client, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return httpClient(c, cmp.Or(c.Timeout, DefaultTimeout))
}

// httpClient is the HTTP client of both APIs: the configured CA, the bearer
// token, and the timeout as a last resort behind the context's deadline.
func httpClient(c Config, timeout time.Duration) (*http.Client, error) {
	if c.Transport != nil {
		return &http.Client{Transport: withUserAgent(c.Transport, c.UserAgent), Timeout: timeout}, nil
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("alerts CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("alerts CA file %s: no PEM certificate in it", c.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	var rt http.RoundTripper = tr
	if c.BearerTokenFile != "" {
		rt = &bearerFile{path: c.BearerTokenFile, next: tr}
	}
	return &http.Client{Transport: withUserAgent(rt, c.UserAgent), Timeout: timeout}, nil
}

// withUserAgent sets ua on every request rt carries; rt itself when ua is
// empty (Go's default agent then).
func withUserAgent(rt http.RoundTripper, ua string) http.RoundTripper {
	if ua == "" {
		return rt
	}
	return userAgent{ua: ua, next: rt}
}

type userAgent struct {
	ua   string
	next http.RoundTripper
}

func (u userAgent) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("User-Agent", u.ua)
	return u.next.RoundTrip(req)
}

// bearerFile adds the token read from a file to every request: the kubelet
// rotates projected ServiceAccount tokens, so it is never cached.
type bearerFile struct {
	path string
	next http.RoundTripper
}

func (b *bearerFile) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := os.ReadFile(b.path)
	if err != nil {
		return nil, fmt.Errorf("alerts bearer token file: %w", err)
	}
	token := strings.TrimSpace(string(tok))
	if token == "" {
		return nil, errors.New("alerts bearer token file " + b.path + " is empty")
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+token)
	return b.next.RoundTrip(req)
}
