package alerts

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-openapi/strfmt"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/alertmanager/api/v2/models"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

var activeAt = time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)

// prometheusAlerts is a /api/v1/alerts response as Prometheus (and the Thanos
// querier) writes it: the documented envelope, each alert with lower-case
// labels, annotations, state, activeAt and value.
func prometheusAlerts() []byte {
	type alert struct {
		Labels      model.LabelSet    `json:"labels"`
		Annotations model.LabelSet    `json:"annotations"`
		State       promv1.AlertState `json:"state"`
		ActiveAt    time.Time         `json:"activeAt"`
		Value       string            `json:"value"`
	}
	body := map[string]any{
		"status": "success",
		"data": map[string]any{"alerts": []alert{
			{
				Labels:      model.LabelSet{"alertname": "KubeNodeNotReady", "severity": "warning", "namespace": "openshift-monitoring"},
				Annotations: model.LabelSet{"summary": "Node is not ready.", "runbook_url": "https://runbooks.example/KubeNodeNotReady.md"},
				State:       promv1.AlertStateFiring, ActiveAt: activeAt, Value: "1e+00",
			},
			{
				Labels: model.LabelSet{"alertname": "Watchdog", "severity": "none"},
				State:  promv1.AlertStatePending, ActiveAt: activeAt.Add(time.Minute), Value: "1e+00",
			},
		}},
	}
	b, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return b
}

// alertmanagerAlerts is a /api/v2/alerts response built with Alertmanager's
// own models: one active alert and one silenced.
func alertmanagerAlerts() []byte {
	str := func(s string) *string { return &s }
	dt := func(t time.Time) *strfmt.DateTime { d := strfmt.DateTime(t); return &d }
	alerts := models.GettableAlerts{
		{
			Alert:       models.Alert{Labels: models.LabelSet{"alertname": "ClusterOperatorDegraded", "severity": "critical", "name": "network"}},
			Annotations: models.LabelSet{"summary": "Cluster operator has been degraded for 30 minutes."},
			StartsAt:    dt(activeAt), EndsAt: dt(activeAt.Add(time.Hour)), UpdatedAt: dt(activeAt),
			Fingerprint: str("3f0c1e0a9b1c2d3e"), Receivers: []*models.Receiver{{Name: str("default")}},
			Status: &models.AlertStatus{State: str(models.AlertStatusStateActive), SilencedBy: []string{}, InhibitedBy: []string{}, MutedBy: []string{}},
		},
		{
			Alert:       models.Alert{Labels: models.LabelSet{"alertname": "PodDisruptionBudgetAtLimit", "severity": "warning"}},
			Annotations: models.LabelSet{},
			StartsAt:    dt(activeAt.Add(-time.Hour)), EndsAt: dt(activeAt.Add(time.Hour)), UpdatedAt: dt(activeAt),
			Fingerprint: str("aa11bb22cc33dd44"), Receivers: []*models.Receiver{{Name: str("default")}},
			Status: &models.AlertStatus{State: str(models.AlertStatusStateSuppressed), SilencedBy: []string{"b3a0f6e2"}, InhibitedBy: []string{}, MutedBy: []string{}},
		},
	}
	if err := alerts.Validate(strfmt.Default); err != nil {
		panic(err) // the fixture must be what Alertmanager's schema allows
	}
	b, err := json.Marshal(alerts)
	if err != nil {
		panic(err)
	}
	return b
}

// serve answers path with body, and records the requests it got.
type server struct {
	*httptest.Server
	paths []string
	auth  []string
}

func newServer(t *testing.T, tls bool, path string, body []byte) *server {
	s := &server{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.paths = append(s.paths, r.URL.Path)
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	if tls {
		s.Server = httptest.NewTLSServer(h)
	} else {
		s.Server = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

func TestPrometheusAlerts(t *testing.T) {
	s := newServer(t, false, "/api/v1/alerts", prometheusAlerts())
	for _, u := range []string{s.URL, s.URL + "/", s.URL + "/api/v1/alerts"} {
		c, err := New(Config{URL: u})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Alerts(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		want := []Alert{
			{
				Labels:      map[string]string{"alertname": "KubeNodeNotReady", "severity": "warning", "namespace": "openshift-monitoring"},
				Annotations: map[string]string{"summary": "Node is not ready.", "runbook_url": "https://runbooks.example/KubeNodeNotReady.md"},
				State:       StateFiring, ActiveAt: activeAt,
			},
			{Labels: map[string]string{"alertname": "Watchdog", "severity": "none"}, Annotations: map[string]string{}, State: StatePending, ActiveAt: activeAt.Add(time.Minute)},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: alerts (-want +got):\n%s", u, d)
		}
	}
}

func TestAlertmanagerAlerts(t *testing.T) {
	for _, tc := range []struct{ prefix, api, urlSuffix string }{
		{"", "", "/api/v2/alerts"},  // detected from the path
		{"", "alertmanager", ""},    // said
		{"/am", "alertmanager", ""}, // behind a proxy's path prefix
		{"/am", "", "/api/v2"},      // detected, with the prefix
		{"/am", "alertmanager", "/api/v2/alerts/"},
	} {
		s := newServer(t, false, tc.prefix+"/api/v2/alerts", alertmanagerAlerts())
		u := s.URL + tc.prefix + tc.urlSuffix
		c, err := New(Config{URL: u, API: API(tc.api)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Alerts(context.Background())
		if err != nil {
			t.Fatalf("%s: %v (server saw %v)", u, err, s.paths)
		}
		want := []Alert{
			{
				Labels:      map[string]string{"alertname": "ClusterOperatorDegraded", "severity": "critical", "name": "network"},
				Annotations: map[string]string{"summary": "Cluster operator has been degraded for 30 minutes."},
				State:       StateFiring, ActiveAt: activeAt,
			},
			{
				Labels: map[string]string{"alertname": "PodDisruptionBudgetAtLimit", "severity": "warning"}, Annotations: map[string]string{},
				State: StateFiring, ActiveAt: activeAt.Add(-time.Hour), Suppressed: true, SilencedBy: []string{"b3a0f6e2"},
			},
		}
		if d := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
			t.Errorf("%s: alerts (-want +got):\n%s", u, d)
		}
	}
}

// TestTLSAndBearerToken: the in-cluster Thanos querier wants the
// ServiceAccount token and is signed by the service CA.
func TestTLSAndBearerToken(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	caFile := filepath.Join(dir, "ca.crt")
	for _, tc := range []struct {
		api  API
		path string
		body []byte
	}{
		{Prometheus, "/api/v1/alerts", prometheusAlerts()},
		{Alertmanager, "/api/v2/alerts", alertmanagerAlerts()},
	} {
		s := newServer(t, true, tc.path, tc.body)
		writeCA(t, caFile, s.Server)

		if err := os.WriteFile(tokenFile, []byte("first-token\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := New(Config{URL: s.URL, API: tc.api, BearerTokenFile: tokenFile, CAFile: caFile})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Alerts(context.Background()); err != nil {
			t.Fatalf("%s: %v", tc.api, err)
		}
		// A rotated token is used from the next request on.
		if err := os.WriteFile(tokenFile, []byte("second-token"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Alerts(context.Background()); err != nil {
			t.Fatalf("%s: %v", tc.api, err)
		}
		if want := []string{"Bearer first-token", "Bearer second-token"}; !cmp.Equal(s.auth, want) {
			t.Errorf("%s: Authorization headers %q, want %q", tc.api, s.auth, want)
		}

		// Without the CA the server's certificate is not trusted.
		c, err = New(Config{URL: s.URL, API: tc.api})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Alerts(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s without the CA: err = %v, want a certificate error", tc.api, err)
		}
	}
}

func writeCA(t *testing.T, path string, s *httptest.Server) {
	t.Helper()
	cert := s.Certificate()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFailures: whatever goes wrong comes back as an error within the
// timeout, never a hang.
func TestFailures(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	blocking := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // answers only when the client gives up
	}))
	t.Cleanup(blocking.Close)

	status := func(code int, body string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(s.Close)
		return s
	}
	promError := status(http.StatusServiceUnavailable, `{"status":"error","errorType":"unavailable","error":"no store matched"}`)
	amError := status(http.StatusInternalServerError, `"failed to get alerts"`)
	garbage := status(http.StatusOK, `<html>login</html>`)

	const timeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name, url string
		api       API
		want      string
	}{
		{"prometheus unreachable", closedURL, Prometheus, "connect"},
		{"alertmanager unreachable", closedURL, Alertmanager, "connect"},
		{"prometheus timeout", blocking.URL, Prometheus, "deadline exceeded"},
		{"alertmanager timeout", blocking.URL, Alertmanager, "deadline exceeded"},
		{"prometheus 503", promError.URL, Prometheus, "503"},
		{"alertmanager 500", amError.URL, Alertmanager, "500"},
		{"prometheus not JSON", garbage.URL, Prometheus, "Prometheus"},
		{"alertmanager not JSON", garbage.URL, Alertmanager, "Alertmanager"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{URL: tc.url, API: tc.api, Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = c.Alerts(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
			if took := time.Since(start); took > timeout+2*time.Second {
				t.Errorf("took %s with a timeout of %s", took, timeout)
			}
		})
	}
}

func TestDetectAPI(t *testing.T) {
	for in, want := range map[string]API{
		"https://thanos-querier.openshift-monitoring.svc:9091":               Prometheus,
		"https://thanos-querier.openshift-monitoring.svc:9091/api/v1/alerts": Prometheus,
		"https://alertmanager-main.openshift-monitoring.svc:9094":            Prometheus, // not said, not in the path
		"https://alertmanager-main.openshift-monitoring.svc:9094/api/v2":     Alertmanager,
		"http://am.example/prefix/api/v2/alerts/":                            Alertmanager,
		"http://[::1]:namedport":                                             Prometheus, // unparsable: the default
	} {
		if got := DetectAPI(in); got != want {
			t.Errorf("DetectAPI(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string // "" valid
	}{
		{Config{URL: "https://thanos:9091"}, ""},
		{Config{URL: "http://am:9093", API: Alertmanager, Timeout: time.Second}, ""},
		{Config{URL: "thanos:9091"}, "want http(s)"},
		{Config{URL: "ftp://thanos"}, "want http(s)"},
		{Config{URL: "https://"}, "want http(s)"},
		{Config{URL: "https://thanos", API: "thanos"}, "must be prometheus or alertmanager"},
		{Config{URL: "https://thanos", Timeout: -time.Second}, "must not be negative"},
	} {
		err := tc.c.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: err = %v, want %q", tc.c, err, tc.want)
		}
	}
	if _, err := New(Config{URL: "https://thanos", CAFile: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("a missing CA file is not an error")
	}
	notPEM := filepath.Join(t.TempDir(), "ca")
	if err := os.WriteFile(notPEM, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{URL: "https://thanos", CAFile: notPEM}); err == nil || !strings.Contains(err.Error(), "no PEM") {
		t.Errorf("a CA file without certificates: err = %v", err)
	}
}

// MUO's query of the alerts of an upgrade, in its words (its AlertsFromUpgrade).
func TestFiredCriticalQuery(t *testing.T) {
	got := FiredCriticalQuery([]string{"UpgradeNodeDrainFailedSRE", "UpgradeClusterCheckFailedSRE"}, 95*time.Minute, 30*time.Second)
	want := `sum by (alertname) (max_over_time(ALERTS{alertstate="firing",severity="critical",alertname=~"UpgradeNodeDrainFailedSRE|UpgradeClusterCheckFailedSRE"}[1h35m] offset 30s))`
	if got != want {
		t.Fatalf("query\n%s\nwant\n%s", got, want)
	}
}

// The query goes to /api/v1/query, evaluated now; the answer is a vector
// as Prometheus's HTTP API documents it.
func TestFiredCritical(t *testing.T) {
	var queries []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		_ = r.ParseForm()
		queries = append(queries, r.Form.Get("query"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[
 {"metric":{"alertname":"UpgradeNodeDrainFailedSRE"},"value":[1764600000,"1"]},
 {"metric":{"alertname":"UpgradeClusterCheckFailedSRE"},"value":[1764600000,"2"]}]}}`))
	}))
	defer s.Close()
	c, err := New(Config{URL: s.URL, API: Prometheus})
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(-time.Hour)
	got, err := c.(History).FiredCritical(context.Background(), []string{"A", "B"}, end.Add(-2*time.Hour), end)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"UpgradeNodeDrainFailedSRE", "UpgradeClusterCheckFailedSRE"}; !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if len(queries) != 1 || !strings.HasPrefix(queries[0], `sum by (alertname) (max_over_time(ALERTS{alertstate="firing",severity="critical",alertname=~"A|B"}[2h] offset 1h`) {
		t.Fatalf("queries %q", queries)
	}
	am, err := New(Config{URL: s.URL, API: Alertmanager})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := am.(History); ok {
		t.Fatal("Alertmanager keeps no history of alerts")
	}
}

// Every request carries the configured agent, reads through New and writes
// through HTTPClient alike; without one, Go's default.
func TestUserAgent(t *testing.T) {
	var agents []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agents = append(agents, r.UserAgent())
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[]`))
	}))
	defer s.Close()
	for _, ua := range []string{"upshift-node-gate/v1.2.3 (ngate-0)", ""} {
		agents = nil
		cfg := Config{URL: s.URL, API: Alertmanager, UserAgent: ua}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Alerts(context.Background()); err != nil {
			t.Fatal(err)
		}
		hc, err := HTTPClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := hc.Post(s.URL+"/api/v2/silences", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		want := ua
		if want == "" {
			want = "Go-http-client/1.1"
		}
		if len(agents) != 2 || agents[0] != want || agents[1] != want {
			t.Errorf("agent %q: the server saw %q", ua, agents)
		}
	}
}
