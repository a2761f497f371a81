package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/upshift-io/upshift/services/cpms/plan"
)

func TestValidateNamesTheFlag(t *testing.T) {
	certs := t.TempDir()
	for _, name := range []string{webhookCertName, webhookKeyName} {
		if err := os.WriteFile(filepath.Join(certs, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ok := plan.DefaultConfig()
	if err := validate("openshift-machine-api", ok, 9443, certs); err != nil {
		t.Fatalf("the chart's flags: %v", err)
	}
	if err := validate("openshift-machine-api", ok, 0, ""); err != nil {
		t.Fatalf("no webhook needs no certificates: %v", err)
	}
	negative := func(mut func(*plan.Config)) plan.Config { c := plan.DefaultConfig(); mut(&c); return c }
	for _, tc := range []struct {
		namespace string
		cfg       plan.Config
		port      int
		dir       string
		want      string
	}{
		{"upshift", ok, 9443, certs, "--namespace"},
		{"openshift-machine-api", negative(func(c *plan.Config) { c.ProgressDeadline = -time.Second }), 9443, certs, "--progress-deadline"},
		{"openshift-machine-api", negative(func(c *plan.Config) { c.NodeGracePeriod = -time.Second }), 9443, certs, "--node-grace-period"},
		{"openshift-machine-api", negative(func(c *plan.Config) { c.Remediation.RetryPeriod = -time.Second }), 9443, certs, "--remediation-retry-period"},
		{"openshift-machine-api", negative(func(c *plan.Config) { c.Remediation.MaxRetries = -1 }), 9443, certs, "--remediation-max-retries"},
		{"openshift-machine-api", ok, 70000, certs, "--webhook-port"},
		{"openshift-machine-api", ok, 9443, "", "--webhook-cert-dir"},
		// A folder without the files is an error, not controller-runtime's
		// silent failure at the first TLS handshake.
		{"openshift-machine-api", ok, 9443, t.TempDir(), "--webhook-cert-dir"},
	} {
		err := validate(tc.namespace, tc.cfg, tc.port, tc.dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming %s", tc.want, err, tc.want)
		}
	}
}
