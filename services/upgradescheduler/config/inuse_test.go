package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// The configurations MUO runs with today, as their repositories hold them:
// MUO's own test deployment, ARO's (the ARO operator installs it), OSD's and
// the HyperShift management clusters' (managed-cluster-config; its template
// parameter ${OCM_BASE_URL} filled in as the template fills it). Each must
// parse without a warning, every key with MUO's meaning.
var inUse = map[string]string{
	"MUO test/deploy": `
upgradeType: OSD
configManager:
  source: LOCAL
  localConfigName: managed-upgrade-config
  watchInterval: 60
maintenance:
  controlPlaneTime: 90
  ignoredAlerts:
    controlPlaneCriticals:
    - etcdMembersDown
    - KubeDeploymentReplicasMismatch
    - ClusterOperatorDown
    - MachineWithNoRunningPhase
    - ClusterOperatorDegraded
scale:
  timeOut: 30
upgradeWindow:
  delayTrigger: 30
  timeOut: 120
nodeDrain:
  timeOut: 45
  expectedNodeDrainTime: 8
healthCheck:
  ignoredCriticals:
  - DNSErrors05MinSRE
  - MetricsClientSendFailingSRE
  - UpgradeNodeScalingFailedSRE
  - UpgradeClusterCheckFailedSRE
  ignoredNamespaces:
  - openshift-logging
  - openshift-customer-monitoring
  - openshift-operators
  - openshift-redhat-marketplace
environment:
  fedramp: false
`,
	"ARO-RP muo/staticresources": `
configManager:
  source: LOCAL
  localConfigName: managed-upgrade-config
  watchInterval: 15
maintenance:
  controlPlaneTime: 90
  ignoredAlerts:
    controlPlaneCriticals:
    - ClusterOperatorDown
    - ClusterOperatorDegraded
upgradeType: ARO
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
  - PrometheusRuleFailures
  - CannotRetrieveUpdates
  - FluentdNodeDown
  ignoredNamespaces:
  - openshift-logging
  - openshift-redhat-marketplace
  - openshift-operators
  - openshift-user-workload-monitoring
  - openshift-pipelines
  - openshift-azure-logging
`,
	"managed-cluster-config OSD": `
configManager:
  source: OCM
  ocmBaseUrl: https://api.openshift.com
  watchInterval: 60
maintenance:
  controlPlaneTime: 90
  ignoredAlerts:
    controlPlaneCriticals:
    # ClusterOperatorDown - OSD-6330
    - ClusterOperatorDown
    # ClusterOperatorDegraded - OSD-6330
    - ClusterOperatorDegraded
scale:
  timeOut: 30
upgradeWindow:
  delayTrigger: 30
  timeOut: 120
nodeDrain:
  timeOut: 45
  expectedNodeDrainTime: 8
healthCheck:
  ignoredCriticals:
  - DNSErrors05MinSRE
  - MetricsClientSendFailingSRE
  - UpgradeNodeScalingFailedSRE
  - UpgradeClusterCheckFailedSRE
  - PrometheusRuleFailures
  - CannotRetrieveUpdates
  - FluentdNodeDown
  ignoredNamespaces:
  - openshift-logging
  - openshift-redhat-marketplace
  - openshift-operators
  - openshift-customer-monitoring
  - openshift-route-monitoring-operator
  - openshift-user-workload-monitoring
  - openshift-pipelines
extDependencyAvailabilityChecks:
  http:
    timeout: 10
    urls:
      - https://api.openshift.com
`,
	"managed-cluster-config hypershift-mc": `
upgradeType: OSD
configManager:
  source: OCM
  ocmBaseUrl: http://ocm-agent.openshift-ocm-agent-operator.svc.cluster.local:8081
  watchInterval: 60
maintenance:
  controlPlaneTime: 130
  ignoredAlerts:
    controlPlaneCriticals:
    - ClusterOperatorDown
    - KubeletDown
scale:
  timeOut: 30
upgradeWindow:
  delayTrigger: 30
  timeOut: 120
nodeDrain:
  timeOut: 45
  expectedNodeDrainTime: 8
  disableDrainStrategies: true
healthCheck:
  ignoredCriticals:
  - DNSErrors05MinSRE
  - PruningCronjobErrorSRE
  ignoredNamespaces:
  - openshift-logging
  - openshift-cnv
extDependencyAvailabilityChecks:
  http:
    timeout: 10
    urls:
      - https://api.openshift.com
`,
}

// parsed is what a test reads of a Config, key by key.
type parsed struct {
	UpgradeType                            upgradev1alpha1.UpgradeType
	Source, OCMBaseURL, LocalConfigName    string
	OCMAgent                               bool
	WatchInterval, ControlPlaneTime        time.Duration
	ControlPlaneCriticals                  int
	ScaleTimeOut                           time.Duration
	UpgradeWindowTimeOut, DelayTrigger     time.Duration
	NodeDrainTimeOut, ExpectedDrain        time.Duration
	DisableDrainStrategies                 bool
	IgnoredCriticals, IgnoredNamespaces    int
	HTTPCheckURLs                          string
	HTTPCheckTimeout                       time.Duration
	FedRAMP                                bool
	PreHealthCheck, ServiceLogNotification bool
}

func TestMUOConfigsInUse(t *testing.T) {
	m := time.Minute
	want := map[string]parsed{
		// LOCAL: the UpgradeConfig on the cluster is the source; watched
		// every hour (watchInterval is minutes); the ignore lists as given.
		"MUO test/deploy": {UpgradeType: upgradev1alpha1.OSD, Source: "LOCAL", LocalConfigName: "managed-upgrade-config",
			WatchInterval: 60 * m, ControlPlaneTime: 90 * m, ControlPlaneCriticals: 5, ScaleTimeOut: 30 * m,
			UpgradeWindowTimeOut: 120 * m, DelayTrigger: 30 * m, NodeDrainTimeOut: 45 * m, ExpectedDrain: 8 * m,
			IgnoredCriticals: 4, IgnoredNamespaces: 4, HTTPCheckTimeout: DefaultHTTPTimeoutSeconds * time.Second},
		"ARO-RP muo/staticresources": {UpgradeType: upgradev1alpha1.ARO, Source: "LOCAL", LocalConfigName: "managed-upgrade-config",
			WatchInterval: 15 * m, ControlPlaneTime: 90 * m, ControlPlaneCriticals: 2, ScaleTimeOut: 30 * m,
			UpgradeWindowTimeOut: 120 * m, DelayTrigger: 30 * m, NodeDrainTimeOut: 45 * m, ExpectedDrain: 8 * m,
			IgnoredCriticals: 3, IgnoredNamespaces: 6, HTTPCheckTimeout: DefaultHTTPTimeoutSeconds * time.Second},
		// OCM without upgradeType: MUO's OCM provider writes ARO into the
		// UpgradeConfigs it makes (its default), as OSD lives with today;
		// the external check of OCM itself, ten seconds.
		"managed-cluster-config OSD": {UpgradeType: upgradev1alpha1.ARO, Source: "OCM", OCMBaseURL: "https://api.openshift.com",
			WatchInterval: 60 * m, ControlPlaneTime: 90 * m, ControlPlaneCriticals: 2, ScaleTimeOut: 30 * m,
			UpgradeWindowTimeOut: 120 * m, DelayTrigger: 30 * m, NodeDrainTimeOut: 45 * m, ExpectedDrain: 8 * m,
			IgnoredCriticals: 7, IgnoredNamespaces: 7, HTTPCheckURLs: "https://api.openshift.com", HTTPCheckTimeout: 10 * time.Second},
		// The in-cluster ocm-agent, no credential; drains only timed, never
		// forced (management clusters).
		"managed-cluster-config hypershift-mc": {UpgradeType: upgradev1alpha1.OSD, Source: "OCM",
			OCMBaseURL: "http://ocm-agent.openshift-ocm-agent-operator.svc.cluster.local:8081", OCMAgent: true,
			WatchInterval: 60 * m, ControlPlaneTime: 130 * m, ControlPlaneCriticals: 2, ScaleTimeOut: 30 * m,
			UpgradeWindowTimeOut: 120 * m, DelayTrigger: 30 * m, NodeDrainTimeOut: 45 * m, ExpectedDrain: 8 * m,
			DisableDrainStrategies: true, IgnoredCriticals: 2, IgnoredNamespaces: 2,
			HTTPCheckURLs: "https://api.openshift.com", HTTPCheckTimeout: 10 * time.Second},
	}
	for name, yaml := range inUse {
		t.Run(name, func(t *testing.T) {
			c, err := Parse([]byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Warnings) > 0 {
				t.Errorf("warnings: %v", c.Warnings)
			}
			got := parsed{UpgradeType: c.UpgradeType, Source: c.Source, OCMBaseURL: c.OCMBaseURL, LocalConfigName: c.LocalConfigName,
				OCMAgent: c.OCMAgent, WatchInterval: c.WatchInterval, ControlPlaneTime: c.ControlPlaneTime,
				ControlPlaneCriticals: len(c.ControlPlaneCriticals), ScaleTimeOut: c.ScaleTimeOut,
				UpgradeWindowTimeOut: c.UpgradeWindowTimeOut, DelayTrigger: c.DelayTrigger,
				NodeDrainTimeOut: c.NodeDrainTimeOut, ExpectedDrain: c.ExpectedNodeDrainTime, DisableDrainStrategies: c.DisableDrainStrategies,
				IgnoredCriticals: len(c.IgnoredCriticals), IgnoredNamespaces: len(c.IgnoredNamespaces),
				HTTPCheckURLs: strings.Join(c.HTTPCheckURLs, ","), HTTPCheckTimeout: c.HTTPCheckTimeout, FedRAMP: c.FedRAMP,
				PreHealthCheck: c.FeatureGates[FeatureGatePreHealthCheck], ServiceLogNotification: c.FeatureGates[FeatureGateServiceLogNotification]}
			if !reflect.DeepEqual(got, want[name]) {
				t.Errorf("parsed\n%+v\nwant\n%+v", got, want[name])
			}
		})
	}
}
