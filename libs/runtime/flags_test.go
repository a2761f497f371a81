package runtime

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/upshift-io/upshift/libs/buildinfo"
)

func TestParseFlagsErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-level=loud"}, "--log-level"},
		{[]string{"--log-level=11"}, "--log-level"},
		{[]string{"--log-format=xml"}, "--log-format"},
		{[]string{"--metrics-bind-address=8080"}, "--metrics-bind-address"},
		{[]string{"--health-probe-bind-address=:99999"}, "--health-probe-bind-address"},
		{[]string{"--pprof-bind-address=localhost"}, "--pprof-bind-address"},
		{[]string{"--graceful-shutdown-timeout=-1s"}, "--graceful-shutdown-timeout"},
		{[]string{"--leader-elect=maybe"}, "-leader-elect"},
		{[]string{"--no-such-flag"}, "-no-such-flag"},
		{[]string{"--kube-api-qps=0"}, "--kube-api-qps"},
		{[]string{"--kube-api-burst=0"}, "--kube-api-burst"},
		{[]string{"stray"}, `"stray"`},
		{[]string{"--metrics-secure=false", "--metrics-cert-dir=/certs"}, "--metrics-cert-dir"},
		// client-go's own rules: lease > renew deadline > 1.2 × retry > 0.
		{[]string{"--leader-elect-retry-period=0s"}, "--leader-elect-retry-period"},
		{[]string{"--leader-elect-renew-deadline=2400ms"}, "--leader-elect-renew-deadline"},
		{[]string{"--leader-elect-lease-duration=10s"}, "--leader-elect-lease-duration"},
		{[]string{"--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=2s"}, "--leader-elect-renew-deadline"},
	} {
		_, err := ParseFlags("x", tc.args, &bytes.Buffer{}, nil)
		if err == nil {
			t.Errorf("%v: no error", tc.args)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("%v: error %q should be one line naming %s", tc.args, msg, tc.want)
		}
	}
}

func TestParseFlagsDefaultsAndValues(t *testing.T) {
	f, err := ParseFlags("x", nil, &bytes.Buffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !f.LeaderElect || f.LogFormat != "json" || f.LogLevel != "info" || f.MetricsBindAddress != ":8080" ||
		!f.MetricsSecure || f.MetricsCertDir != "" ||
		f.LeaseDuration != 15*time.Second || f.RenewDeadline != 10*time.Second || f.RetryPeriod != 2*time.Second {
		t.Errorf("unexpected defaults: %+v", f)
	}
	f, err = ParseFlags("x", []string{"--leader-elect=false", "--log-level=3", "--log-format=console",
		"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0",
		"--leader-elect-lease-duration=2s", "--leader-elect-renew-deadline=1500ms", "--leader-elect-retry-period=250ms"}, &bytes.Buffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.LeaderElect || f.LogLevel != "3" || f.LogFormat != "console" || f.MetricsBindAddress != "0" ||
		f.LeaseDuration != 2*time.Second || f.RenewDeadline != 1500*time.Millisecond || f.RetryPeriod != 250*time.Millisecond {
		t.Errorf("values not parsed: %+v", f)
	}
}

func TestLogLevels(t *testing.T) {
	for in, want := range map[string]int8{"debug": -1, "info": 0, "warn": 1, "error": 2, "0": 0, "4": -4} {
		got, err := parseLevel(in)
		if err != nil || int8(got) != want {
			t.Errorf("parseLevel(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestLoggerCarriesComponent(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLogger("my-component", &Flags{LogLevel: "info", LogFormat: "json"}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	log.V(1).Info("hidden at info")
	log.Info("hello", "key", "value")
	out := buf.String()
	if !strings.Contains(out, `"component":"my-component"`) || !strings.Contains(out, `"key":"value"`) {
		t.Errorf("log line lacks fields: %s", out)
	}
	if strings.Contains(out, "hidden") {
		t.Errorf("V(1) logged at --log-level=info: %s", out)
	}
}

func TestMetricsOptions(t *testing.T) {
	opts, err := MetricsOptions(&Flags{MetricsBindAddress: ":1", MetricsSecure: true})
	if err != nil || !opts.SecureServing || opts.FilterProvider == nil || opts.CertDir != "" {
		t.Errorf("secure by default, self-signed: got %+v, %v", opts, err)
	}
	opts, err = MetricsOptions(&Flags{MetricsBindAddress: ":1"})
	if err != nil || opts.SecureServing || opts.FilterProvider != nil {
		t.Errorf("--metrics-secure=false: got %+v, %v", opts, err)
	}
	// A named folder without the files is an error, not a silent
	// self-signed fallback.
	dir := t.TempDir()
	if _, err := MetricsOptions(&Flags{MetricsSecure: true, MetricsCertDir: dir}); err == nil ||
		!strings.Contains(err.Error(), "--metrics-cert-dir") {
		t.Errorf("empty --metrics-cert-dir: want an error naming the flag, got %v", err)
	}
	for _, name := range []string{MetricsCertName, MetricsKeyName} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts, err = MetricsOptions(&Flags{MetricsSecure: true, MetricsCertDir: dir})
	if err != nil || opts.CertDir != dir || opts.CertName != "tls.crt" || opts.KeyName != "tls.key" {
		t.Errorf("--metrics-cert-dir: got %+v, %v", opts, err)
	}
}

func TestUserAgentNamesThePod(t *testing.T) {
	for _, tc := range []struct{ pod, want string }{
		{"", "node-gate/" + buildinfo.Version()},
		{"node-gate-7d9f-x2k4p", "node-gate/" + buildinfo.Version() + " (node-gate-7d9f-x2k4p)"},
	} {
		if got := UserAgent("node-gate", tc.pod); got != tc.want {
			t.Errorf("UserAgent(node-gate, %q) = %q, want %q", tc.pod, got, tc.want)
		}
	}
}
