package config

import (
	"strings"
	"testing"
	"time"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// osdConfig has the shape and values of the OSD production ConfigMap MUO
// documents: every key set.
const osdConfig = `
configManager:
  source: OCM
  ocmBaseUrl: https://api.openshift.com
  watchInterval: 60
maintenance:
  controlPlaneTime: 90
  ignoredAlerts:
    controlPlaneCriticals:
    - ClusterOperatorDown
    - ClusterOperatorDegraded
upgradeWindow:
  delayTrigger: 30
  timeOut: 120
nodeDrain:
  timeOut: 45
  expectedNodeDrainTime: 8
scale:
  timeOut: 30
healthCheck:
  ignoredCriticals:
  - DNSErrors05MinSRE
  - MetricsClientSendFailingSRE
  ignoredNamespaces:
  - openshift-logging
  - openshift-operators
extDependencyAvailabilityChecks:
  http:
    timeout: 10
    urls:
    - https://api.openshift.com
featureGate:
  enabled:
  - PreHealthCheck
`

func TestParseFullConfig(t *testing.T) {
	c, err := Parse([]byte(osdConfig))
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != "OCM" || c.WatchInterval != time.Hour || c.ControlPlaneTime != 90*time.Minute ||
		c.UpgradeWindowTimeOut != 120*time.Minute || c.DelayTrigger != 30*time.Minute ||
		c.NodeDrainTimeOut != 45*time.Minute || c.ExpectedNodeDrainTime != 8*time.Minute ||
		c.ScaleTimeOut != 30*time.Minute || c.HTTPCheckTimeout != 10*time.Second ||
		len(c.ControlPlaneCriticals) != 2 || len(c.IgnoredCriticals) != 2 || len(c.IgnoredNamespaces) != 2 ||
		!c.FeatureGates[FeatureGatePreHealthCheck] || c.FeatureGates[FeatureGateServiceLogNotification] {
		t.Fatalf("parsed wrongly: %+v", c)
	}
	// upgradeType is absent: MUO's OCM provider then writes ARO.
	if c.UpgradeType != upgradev1alpha1.ARO {
		t.Errorf("UpgradeType = %s, want ARO", c.UpgradeType)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings for a config with only MUO's keys: %v", c.Warnings)
	}
}

// TestDefaults: an empty ConfigMap gets the documented defaults, where MUO
// would have zeros (and then refuse to build its upgrader).
func TestDefaults(t *testing.T) {
	c, err := Parse([]byte(""))
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][2]time.Duration{
		"watchInterval":         {c.WatchInterval, time.Minute},
		"controlPlaneTime":      {c.ControlPlaneTime, 90 * time.Minute},
		"scale.timeOut":         {c.ScaleTimeOut, 30 * time.Minute},
		"scale.leadTime":        {c.ScaleLeadTime, 0},
		"upgradeWindow.timeOut": {c.UpgradeWindowTimeOut, 120 * time.Minute},
		"delayTrigger":          {c.DelayTrigger, 30 * time.Minute},
		"nodeDrain.timeOut":     {c.NodeDrainTimeOut, 45 * time.Minute},
		"expectedNodeDrainTime": {c.ExpectedNodeDrainTime, 8 * time.Minute},
		"http.timeout":          {c.HTTPCheckTimeout, 15 * time.Second},
	} {
		if got[0] != got[1] {
			t.Errorf("%s = %v, want %v", name, got[0], got[1])
		}
	}
	osd, aro := c.Deadlines[upgradev1alpha1.OSD], c.Deadlines[upgradev1alpha1.ARO]
	if osd.Start != (Deadline{120 * time.Minute, upgradev1alpha1.DeadlineFail}) ||
		aro.Start != (Deadline{120 * time.Minute, upgradev1alpha1.DeadlineAlert}) ||
		osd.ControlPlane != (Deadline{90 * time.Minute, upgradev1alpha1.DeadlineAlert}) ||
		osd.PostCheck != (Deadline{60 * time.Minute, upgradev1alpha1.DeadlineAlert}) ||
		!osd.WorkersComputed || osd.Workers.Policy != upgradev1alpha1.DeadlineAlert {
		t.Errorf("default deadlines: OSD %+v ARO %+v", osd, aro)
	}
}

func TestExplicitZeroKeepsMUOMeaning(t *testing.T) {
	c, err := Parse([]byte("upgradeWindow:\n  timeOut: 0\n  delayTrigger: 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.UpgradeWindowTimeOut != 0 || c.DelayTrigger != 0 || c.Deadlines[upgradev1alpha1.OSD].Start.After != 0 {
		t.Errorf("explicit zeros must turn the window and the delay notice off: %+v", c)
	}
}

func TestInvalidValuesNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want []string
	}{
		{"maintenance:\n  controlPlaneTime: 0\n", []string{"maintenance.controlPlaneTime: must be at least 1 minute(s), got 0"}},
		{"scale:\n  timeOut: -5\n", []string{"scale.timeOut: must be at least 1 minute(s), got -5"}},
		{"scale:\n  leadTime: -1\n", []string{"scale.leadTime: must not be negative, got -1"}},
		{"upgradeWindow:\n  timeOut: -1\n", []string{"upgradeWindow.timeOut: must not be negative, got -1"}},
		{"nodeDrain:\n  timeOut: 0\n  expectedNodeDrainTime: 0\n", []string{"nodeDrain.timeOut: must be at least 1", "nodeDrain.expectedNodeDrainTime: must be at least 1"}},
		{"nodeDrain:\n  ignoredNamespacePatterns: ['^openshift-(']\n", []string{"nodeDrain.ignoredNamespacePatterns[0]: \"^openshift-(\" is not a valid regular expression"}},
		{"scale:\n  extraMachinePools: ['infra-[']\n", []string{"scale.extraMachinePools[0]: \"infra-[\" is not a valid glob"}},
		{"extDependencyAvailabilityChecks:\n  http:\n    timeout: 61\n", []string{"extDependencyAvailabilityChecks.http.timeout: must be 1 to 60 seconds, got 61"}},
		{"extDependencyAvailabilityChecks:\n  http:\n    urls: ['api.openshift.com']\n", []string{"extDependencyAvailabilityChecks.http.urls[0]: must be an http(s) URL"}},
		{"upgradeType: GKE\n", []string{"upgradeType: must be OSD or ARO, got \"GKE\""}},
		{"blockingHealthChecks: [Nodes, ClusterOperators]\n", []string{"blockingHealthChecks[1]: \"ClusterOperators\" is not an advisory health check (one of ClusterVersion, MachineConfigPools, Nodes, PodDisruptionBudgets; CriticalAlerts and ClusterOperators always block)"}},
		{"configManager:\n  source: S3\n", []string{"configManager.source: must be OCM or LOCAL, got \"S3\""}},
		{"configManager:\n  source: ocm\n", []string{"configManager.ocmBaseUrl: must be an http(s) URL, got \"\""}},
		{"configManager:\n  source: LOCAL\n", []string{"configManager.localConfigName: must name the UpgradeConfig"}},
		{"configManager:\n  watchInterval: 0\n", []string{"configManager.watchInterval: must be at least 1 minute(s), got 0"}},
		{"healthCheck:\n  ignoredCriticals: ['']\n", []string{"healthCheck.ignoredCriticals[0]: must not be empty"}},
		{"deadlines:\n  workers:\n    policy: retry\n", []string{"deadlines.workers.policy: must be alert, pause or fail, got \"retry\""}},
		{"deadlines:\n  start:\n    minutes: 10\n", []string{"deadlines: start and controlPlane take their minutes from"}},
		{"maintenance: [1, 2]\n", []string{"config.yaml: "}},
		// Several problems are all reported at once.
		{"scale:\n  timeOut: 0\nupgradeType: x\n", []string{"scale.timeOut", "upgradeType"}},
	} {
		_, err := Parse([]byte(tc.yaml))
		if err == nil {
			t.Errorf("Parse(%q) accepted", tc.yaml)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(%q) = %q, want it to contain %q", tc.yaml, err, w)
			}
		}
	}
}

func TestSourceIsCaseInsensitiveAndUnknownKeysWarn(t *testing.T) {
	c, err := Parse([]byte("configManager:\n  source: local\n  localConfigName: managed-upgrade-config\nsomethingNew: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != "LOCAL" || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "somethingNew") {
		t.Errorf("source %q warnings %v", c.Source, c.Warnings)
	}
}

// An unknown feature gate is passed over, as MUO passes over it, and said;
// the known ones in the same list still count.
func TestUnknownFeatureGateWarns(t *testing.T) {
	c, err := Parse([]byte("featureGate:\n  enabled: [PreHealthChecks, ServiceLogNotification]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], `featureGate.enabled[0]: unknown feature gate "PreHealthChecks" ignored`) {
		t.Errorf("warnings %v", c.Warnings)
	}
	if c.FeatureGates[FeatureGatePreHealthCheck] || !c.FeatureGates[FeatureGateServiceLogNotification] {
		t.Errorf("gates %v", c.FeatureGates)
	}
}

// ocmBaseUrl naming the in-cluster ocm-agent is MUO's agent mode: accepted,
// with ServiceLogNotification said to be ignored, since the agent has no
// service-log route. Any other URL is OCM itself.
func TestOCMAgentMode(t *testing.T) {
	c, err := Parse([]byte("configManager:\n  source: OCM\n  ocmBaseUrl: http://ocm-agent.openshift-ocm-agent-operator.svc.cluster.local:8081\n" +
		"featureGate:\n  enabled: [PreHealthCheck, ServiceLogNotification]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.OCMAgent || c.OCMBaseURL != "http://ocm-agent.openshift-ocm-agent-operator.svc.cluster.local:8081" {
		t.Errorf("agent %v, URL %q", c.OCMAgent, c.OCMBaseURL)
	}
	if !c.FeatureGates[FeatureGatePreHealthCheck] || c.FeatureGates[FeatureGateServiceLogNotification] {
		t.Errorf("gates %v", c.FeatureGates)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "featureGate.enabled[1]: ServiceLogNotification ignored: the ocm-agent") {
		t.Errorf("warnings %v", c.Warnings)
	}
	c, err = Parse([]byte("configManager:\n  source: OCM\n  ocmBaseUrl: https://api.openshift.com\n"))
	if err != nil || c.OCMAgent {
		t.Errorf("OCM itself: agent %v, %v", c.OCMAgent, err)
	}
}

func TestFromConfigMapData(t *testing.T) {
	if _, err := FromConfigMapData(map[string]string{"other": ""}); err == nil || !strings.Contains(err.Error(), "has no key config.yaml") {
		t.Errorf("missing key: %v", err)
	}
	if _, err := FromConfigMapData(map[string]string{ConfigKey: osdConfig}); err != nil {
		t.Error(err)
	}
}

func TestDeadlinesFor(t *testing.T) {
	c, err := Parse([]byte("deadlines:\n  workers:\n    minutes: 300\n"))
	if err != nil {
		t.Fatal(err)
	}
	ten, zero := int32(10), int32(0)
	for _, tc := range []struct {
		name string
		spec upgradev1alpha1.UpgradeConfigSpec
		want Deadlines
	}{
		{"OSD defaults", upgradev1alpha1.UpgradeConfigSpec{Type: upgradev1alpha1.OSD}, Deadlines{
			Start: Deadline{120 * time.Minute, "fail"}, ControlPlane: Deadline{90 * time.Minute, "alert"},
			Workers: Deadline{300 * time.Minute, "alert"}, PostCheck: Deadline{60 * time.Minute, "alert"}}},
		{"ARO never fails by default", upgradev1alpha1.UpgradeConfigSpec{Type: upgradev1alpha1.ARO}, Deadlines{
			Start: Deadline{120 * time.Minute, "alert"}, ControlPlane: Deadline{90 * time.Minute, "alert"},
			Workers: Deadline{300 * time.Minute, "alert"}, PostCheck: Deadline{60 * time.Minute, "alert"}}},
		{"spec overrides field by field", upgradev1alpha1.UpgradeConfigSpec{Type: upgradev1alpha1.OSD, Deadlines: &upgradev1alpha1.Deadlines{
			Start:        &upgradev1alpha1.Deadline{Minutes: &ten},
			ControlPlane: &upgradev1alpha1.Deadline{Policy: "pause"},
			PostCheck:    &upgradev1alpha1.Deadline{Minutes: &zero, Policy: "fail"},
		}}, Deadlines{
			Start: Deadline{10 * time.Minute, "fail"}, ControlPlane: Deadline{90 * time.Minute, "pause"},
			Workers: Deadline{300 * time.Minute, "alert"}, PostCheck: Deadline{0, "fail"}}},
	} {
		if got := c.DeadlinesFor(tc.spec); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// Keys count only when spelled exactly, as MUO's YAML decoder (yaml.v2)
// reads them: one in another case is unknown, ignored and said.
func TestKeysAreCaseSensitive(t *testing.T) {
	c, err := Parse([]byte("ConfigManager:\n  source: LOCAL\n  localConfigName: managed-upgrade-config\nupgradeWindow:\n  TimeOut: 5\n  delayTrigger: 10\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != "" {
		t.Errorf("ConfigManager read as configManager: source %q", c.Source)
	}
	joined := strings.Join(c.Warnings, "\n")
	if len(c.Warnings) != 2 || !strings.Contains(joined, `"ConfigManager"`) || !strings.Contains(joined, `"upgradeWindow.TimeOut"`) {
		t.Errorf("warnings %q", c.Warnings)
	}
}

// TestScaleLeadTime: Upshift's own scale key, in minutes like MUO's, with no
// warning (it is a key this scheduler knows).
func TestScaleLeadTime(t *testing.T) {
	c, err := Parse([]byte("scale:\n  timeOut: 20\n  leadTime: 15\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ScaleLeadTime != 15*time.Minute || c.ScaleTimeOut != 20*time.Minute || len(c.Warnings) != 0 {
		t.Errorf("scale.leadTime 15: got lead %v, timeOut %v, warnings %v", c.ScaleLeadTime, c.ScaleTimeOut, c.Warnings)
	}
}
