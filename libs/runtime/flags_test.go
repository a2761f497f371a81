package runtime

import (
	"bytes"
	"strings"
	"testing"
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
		{[]string{"--graceful-shutdown-timeout=-1s"}, "--graceful-shutdown-timeout"},
		{[]string{"--leader-elect=maybe"}, "-leader-elect"},
		{[]string{"--no-such-flag"}, "-no-such-flag"},
		{[]string{"--kube-api-qps=0"}, "--kube-api-qps"},
		{[]string{"--kube-api-burst=0"}, "--kube-api-burst"},
		{[]string{"stray"}, `"stray"`},
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
	if !f.LeaderElect || f.LogFormat != "json" || f.LogLevel != "info" || f.MetricsBindAddress != ":8080" {
		t.Errorf("unexpected defaults: %+v", f)
	}
	f, err = ParseFlags("x", []string{"--leader-elect=false", "--log-level=3", "--log-format=console",
		"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0"}, &bytes.Buffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.LeaderElect || f.LogLevel != "3" || f.LogFormat != "console" || f.MetricsBindAddress != "0" {
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
