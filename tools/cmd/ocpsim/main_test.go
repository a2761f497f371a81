package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func TestBadFlagsAreOneLineUsageErrors(t *testing.T) {
	cases := map[string][]string{
		"no command":        {},
		"unknown command":   {"fly"},
		"unknown flag":      {"seed", "--bogus"},
		"bad masters":       {"seed", "--masters", "x", "--dry-run"},
		"zero masters":      {"seed", "--masters", "0", "--dry-run"},
		"bad version":       {"seed", "--version", "four", "--dry-run"},
		"bad max":           {"seed", "--worker-max-unavailable", "lots", "--dry-run"},
		"bad pool":          {"seed", "--custom-pool", "infra", "--dry-run"},
		"bad workload":      {"seed", "--workload", "web:many", "--dry-run"},
		"missing config":    {"seed", "--config", "/nonexistent.yaml", "--dry-run"},
		"bad scale":         {"run", "--time-scale", "fast"},
		"bad fault":         {"run", "--fault", "node/x=Sleepy"},
		"fault wrong kind":  {"fault", "machine/x=NeverReady"},
		"fault no args":     {"fault"},
		"bad log format":    {"run", "--log-format", "xml"},
		"stray arg to seed": {"seed", "extra", "--dry-run"},
	}
	for name, args := range cases {
		var out, errb bytes.Buffer
		err := run(context.Background(), args, &out, &errb)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%s: got %v, want a usage error", name, err)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error is not one line: %q", name, err)
		}
	}
}

func TestSeedDryRun(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"seed", "--dry-run", "--masters", "3", "--workers", "6", "--custom-pool", "infra:2:1", "--workload", "web:3:1"}, &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"masters: 3", "workers: 6", "name: infra", "pdbMaxUnavailable: \"1\"", "channel: stable-4.16"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out.String())
		}
	}
}
