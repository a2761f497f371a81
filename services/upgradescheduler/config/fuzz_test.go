package config

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// FuzzParse feeds config.yaml as anyone with write access to the ConfigMap
// might write it. Parsing never panics; a configuration it accepts parses
// the same way twice and keeps the bounds the scheduler relies on (every
// period positive, the HTTP check timeout within MUO's 1-60 s, only known
// feature gates and advisory checks turned on).
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		osdConfig,
		"",
		"upgradeType: OSD\nconfigManager:\n  source: LOCAL\n  localConfigName: managed-upgrade-config\n",
		"blockingHealthChecks: [Nodes, PodDisruptionBudgets]\n",
		"deadlines:\n  workers:\n    minutes: 0\n    policy: pause\n",
		"nodeDrain:\n  timeOut: -1\n  ignoredNamespacePatterns: ['(']\n",
		"maintenance: [1, 2]\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		c, err := Parse([]byte(data))
		if err != nil {
			return
		}
		again, err := Parse([]byte(data))
		if err != nil || !reflect.DeepEqual(c, again) {
			t.Fatalf("parsed twice, differently: %v\n%+v\n%+v", err, c, again)
		}
		for name, d := range map[string]time.Duration{
			"watchInterval": c.WatchInterval, "controlPlaneTime": c.ControlPlaneTime, "scale.timeOut": c.ScaleTimeOut,
		} {
			if d < time.Minute {
				t.Fatalf("%s accepted as %s", name, d)
			}
		}
		if c.HTTPCheckTimeout < time.Second || c.HTTPCheckTimeout > time.Minute {
			t.Fatalf("http timeout accepted as %s", c.HTTPCheckTimeout)
		}
		for g := range c.FeatureGates {
			if g != FeatureGatePreHealthCheck && g != FeatureGateServiceLogNotification {
				t.Fatalf("unknown feature gate %q turned on", g)
			}
		}
		for name := range c.BlockingChecks {
			if !slices.Contains(AdvisoryHealthChecks, name) {
				t.Fatalf("%q promoted to blocking", name)
			}
		}
	})
}
