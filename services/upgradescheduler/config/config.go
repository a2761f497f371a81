// Package config reads the upgrade-scheduler's configuration from MUO's
// ConfigMap (managed-upgrade-operator-config, key config.yaml) with MUO's keys,
// so that an existing deployment's configuration works unchanged.
//
// Unlike MUO, which declares defaults in struct tags that nothing applies (a
// missing key becomes zero, and several zeros then fail validation), Parse
// applies the documented defaults to every missing key and validates every
// value at load, with errors that name the key. A zero written explicitly
// keeps MUO's meaning where MUO gives it one (upgradeWindow.timeOut: 0 turns
// the start deadline off, upgradeWindow.delayTrigger: 0 turns the delayed
// notice off) and is an error where MUO could not run with it.
//
// Parse is pure: the reconciler reads the ConfigMap, calls Parse, and keeps
// the last good Config when a new one is invalid.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// MUO's ConfigMap name and key.
const (
	ConfigMapName = "managed-upgrade-operator-config"
	ConfigKey     = "config.yaml"
)

// Defaults, in minutes unless said otherwise. MUO's documentation and its
// struct tags disagree on maintenance.controlPlaneTime (docs 90, tag 60); 90 is
// what every production configuration uses. MUO documents no default for
// nodeDrain.timeOut; 45 is the production value.
const (
	DefaultWatchInterval         = 1
	DefaultControlPlaneTime      = 90
	DefaultScaleTimeOut          = 30
	DefaultUpgradeWindowTimeOut  = 120
	DefaultDelayTrigger          = 30
	DefaultNodeDrainTimeOut      = 45
	DefaultExpectedNodeDrainTime = 8
	DefaultHTTPTimeoutSeconds    = 15
	DefaultPostCheckMinutes      = 60
)

// Feature gates MUO knows.
const (
	FeatureGatePreHealthCheck         = "PreHealthCheck"
	FeatureGateServiceLogNotification = "ServiceLogNotification"
)

// OCMAgentHost is the in-cluster ocm-agent service MUO talks to instead of
// OCM when ocmBaseUrl names it.
const OCMAgentHost = "ocm-agent.openshift-ocm-agent-operator.svc.cluster.local:8081"

// Health checks (their names in status.preflight). As MUO, the scheduler
// holds an upgrade only on critical alerts and on degraded or unavailable
// ClusterOperators; Upshift's other checks are advisory: reported in
// status, Events and metrics, and blocking only when blockingHealthChecks
// names them.
const (
	CheckCriticalAlerts       = "CriticalAlerts"
	CheckClusterOperators     = "ClusterOperators"
	CheckClusterVersion       = "ClusterVersion"
	CheckMachineConfigPools   = "MachineConfigPools"
	CheckNodes                = "Nodes"
	CheckPodDisruptionBudgets = "PodDisruptionBudgets"
	CheckExternalDeps         = "ExternalDependencies"
)

// AdvisoryHealthChecks are the checks that do not block unless promoted.
var AdvisoryHealthChecks = []string{CheckClusterVersion, CheckMachineConfigPools, CheckNodes, CheckPodDisruptionBudgets}

// Config is the validated configuration, every default applied.
type Config struct {
	// UpgradeType is the type the OCM provider gives UpgradeConfigs (ARO when
	// the key is empty, as in MUO).
	UpgradeType upgradev1alpha1.UpgradeType
	// Source is OCM, LOCAL or empty (no provider configured).
	Source           string
	OCMBaseURL       string
	LocalConfigName  string
	WatchInterval    time.Duration
	ControlPlaneTime time.Duration
	// ControlPlaneCriticals are the critical alerts silenced during the
	// control-plane upgrade.
	ControlPlaneCriticals []string
	ScaleTimeOut          time.Duration
	// ScaleLeadTime (Upshift) is how long before the scheduled start the
	// temporary machines are requested, so that they are ready when the
	// upgrade starts instead of holding it; 0 requests them in their step,
	// as MUO does.
	ScaleLeadTime     time.Duration
	ExtraMachinePools []string
	// UpgradeWindowTimeOut bounds the time from the scheduled start to
	// commencement; 0 turns it off.
	UpgradeWindowTimeOut time.Duration
	// DelayTrigger is when a not-yet-commenced upgrade counts as delayed; 0
	// turns the notice off.
	DelayTrigger             time.Duration
	NodeDrainTimeOut         time.Duration
	ExpectedNodeDrainTime    time.Duration
	DisableDrainStrategies   bool
	IgnoredNamespacePatterns []*regexp.Regexp
	IgnoredCriticals         []string
	IgnoredNamespaces        []string
	HTTPCheckURLs            []string
	HTTPCheckTimeout         time.Duration
	FedRAMP                  bool
	Cincinnati               bool
	FeatureGates             map[string]bool
	// BlockingChecks are the advisory health checks promoted to block the
	// upgrade (blockingHealthChecks).
	BlockingChecks map[string]bool
	// Deadlines are the per-deadline defaults an UpgradeConfig's
	// spec.deadlines override, per upgrade type.
	Deadlines map[upgradev1alpha1.UpgradeType]Deadlines
	// OCMAgent: ocmBaseUrl names the in-cluster ocm-agent (OCMAgentHost),
	// which MUO talks to instead of OCM.
	OCMAgent bool
	// Warnings lists what was accepted but ignored (unknown keys).
	Warnings []string
}

// Deadline is a resolved deadline. Zero After means off.
type Deadline struct {
	After  time.Duration
	Policy upgradev1alpha1.DeadlinePolicy
}

// Deadlines are the resolved deadlines of one upgrade. Workers with After
// zero and Computed true is sized from the worker count when the workers
// start (MUO's worker window: per pending node, the longer of the PDB drain
// timeout and nodeDrain.timeOut, plus nodeDrain.expectedNodeDrainTime).
type Deadlines struct {
	Start, ControlPlane, Workers, PostCheck Deadline
	WorkersComputed                         bool
}

// file is the YAML shape. Pointers tell a missing key from an explicit zero.
type file struct {
	UpgradeType   *string `json:"upgradeType"`
	ConfigManager struct {
		Source          *string `json:"source"`
		OCMBaseURL      *string `json:"ocmBaseUrl"`
		LocalConfigName *string `json:"localConfigName"`
		WatchInterval   *int    `json:"watchInterval"`
	} `json:"configManager"`
	Maintenance struct {
		ControlPlaneTime *int `json:"controlPlaneTime"`
		IgnoredAlerts    struct {
			ControlPlaneCriticals []string `json:"controlPlaneCriticals"`
		} `json:"ignoredAlerts"`
	} `json:"maintenance"`
	Scale struct {
		TimeOut           *int     `json:"timeOut"`
		LeadTime          *int     `json:"leadTime"`
		ExtraMachinePools []string `json:"extraMachinePools"`
	} `json:"scale"`
	UpgradeWindow struct {
		TimeOut      *int `json:"timeOut"`
		DelayTrigger *int `json:"delayTrigger"`
	} `json:"upgradeWindow"`
	NodeDrain struct {
		TimeOut                  *int     `json:"timeOut"`
		ExpectedNodeDrainTime    *int     `json:"expectedNodeDrainTime"`
		DisableDrainStrategies   bool     `json:"disableDrainStrategies"`
		IgnoredNamespacePatterns []string `json:"ignoredNamespacePatterns"`
	} `json:"nodeDrain"`
	HealthCheck struct {
		IgnoredCriticals  []string `json:"ignoredCriticals"`
		IgnoredNamespaces []string `json:"ignoredNamespaces"`
	} `json:"healthCheck"`
	ExtDependencyAvailabilityChecks struct {
		HTTP struct {
			URLs    []string `json:"urls"`
			Timeout *int     `json:"timeout"`
		} `json:"http"`
	} `json:"extDependencyAvailabilityChecks"`
	Environment struct {
		FedRAMP bool `json:"fedramp"`
	} `json:"environment"`
	Validation struct {
		Cincinnati bool `json:"cincinnati"`
	} `json:"validation"`
	FeatureGate struct {
		Enabled []string `json:"enabled"`
	} `json:"featureGate"`
	// BlockingHealthChecks is Upshift's addition: the advisory health checks
	// (AdvisoryHealthChecks) that hold the upgrade like MUO's own.
	BlockingHealthChecks []string `json:"blockingHealthChecks"`
	// Deadlines is Upshift's addition: default policies (and, for workers and
	// postCheck, which MUO has no key for, minutes) of every deadline.
	Deadlines struct {
		Start        deadlineFile `json:"start"`
		ControlPlane deadlineFile `json:"controlPlane"`
		Workers      deadlineFile `json:"workers"`
		PostCheck    deadlineFile `json:"postCheck"`
	} `json:"deadlines"`
}

type deadlineFile struct {
	Minutes *int    `json:"minutes"`
	Policy  *string `json:"policy"`
}

// FromConfigMapData parses the config.yaml entry of the ConfigMap's data.
func FromConfigMapData(data map[string]string) (*Config, error) {
	raw, ok := data[ConfigKey]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s has no key %s", ConfigMapName, ConfigKey)
	}
	return Parse([]byte(raw))
}

// Parse parses and validates config.yaml. The error lists every invalid key.
func Parse(data []byte) (*Config, error) {
	// MUO reads config.yaml with gopkg.in/yaml.v2: a key counts only when
	// spelled exactly (configManager, not ConfigManager). The JSON decoder
	// behind sigs.k8s.io/yaml would match it regardless of case; the
	// case-sensitive decoder Kubernetes uses for its own objects does not.
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ConfigKey, err)
	}
	var f file
	strict, err := sigsjson.UnmarshalStrict(j, &f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ConfigKey, err)
	}
	c := &Config{FeatureGates: map[string]bool{}, BlockingChecks: map[string]bool{}}
	// MUO ignores keys it does not know (a key spelled in another case
	// included), and so do we (a newer MUO's keys must not break the
	// scheduler), but we say so.
	for _, e := range strict {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s: %s (ignored, as MUO ignores it)", ConfigKey, e))
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	// minutes reads a duration key: default when missing; below min is an error.
	minutes := func(key string, v *int, def, min int) time.Duration {
		if v == nil {
			return time.Duration(def) * time.Minute
		}
		if *v < min {
			if min == 0 {
				bad(key, "must not be negative, got %d", *v)
			} else {
				bad(key, "must be at least %d minute(s), got %d", min, *v)
			}
		}
		return time.Duration(*v) * time.Minute
	}

	switch t := deref(f.UpgradeType); t {
	case "", string(upgradev1alpha1.ARO):
		c.UpgradeType = upgradev1alpha1.ARO
	case string(upgradev1alpha1.OSD):
		c.UpgradeType = upgradev1alpha1.OSD
	default:
		bad("upgradeType", "must be OSD or ARO, got %q", t)
	}

	c.Source = strings.ToUpper(deref(f.ConfigManager.Source))
	switch c.Source {
	case "", "OCM", "LOCAL":
	default:
		bad("configManager.source", "must be OCM or LOCAL, got %q", deref(f.ConfigManager.Source))
	}
	c.OCMBaseURL = deref(f.ConfigManager.OCMBaseURL)
	if c.Source == "OCM" || c.OCMBaseURL != "" {
		if u, err := url.Parse(c.OCMBaseURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("configManager.ocmBaseUrl", "must be an http(s) URL, got %q", c.OCMBaseURL)
		} else if u.Host == OCMAgentHost {
			// MUO switches to the in-cluster ocm-agent on this URL: the
			// same policies and states, through the agent's own routes.
			c.OCMAgent = true
		}
	}
	c.LocalConfigName = deref(f.ConfigManager.LocalConfigName)
	if c.Source == "LOCAL" && c.LocalConfigName == "" {
		bad("configManager.localConfigName", "must name the UpgradeConfig when source is LOCAL")
	}
	c.WatchInterval = minutes("configManager.watchInterval", f.ConfigManager.WatchInterval, DefaultWatchInterval, 1)

	c.ControlPlaneTime = minutes("maintenance.controlPlaneTime", f.Maintenance.ControlPlaneTime, DefaultControlPlaneTime, 1)
	c.ControlPlaneCriticals = nonEmpty("maintenance.ignoredAlerts.controlPlaneCriticals", f.Maintenance.IgnoredAlerts.ControlPlaneCriticals, bad)

	c.ScaleTimeOut = minutes("scale.timeOut", f.Scale.TimeOut, DefaultScaleTimeOut, 1)
	c.ScaleLeadTime = minutes("scale.leadTime", f.Scale.LeadTime, 0, 0)
	for i, g := range f.Scale.ExtraMachinePools {
		if _, err := path.Match(g, ""); err != nil || g == "" {
			bad(fmt.Sprintf("scale.extraMachinePools[%d]", i), "%q is not a valid glob", g)
		}
	}
	c.ExtraMachinePools = f.Scale.ExtraMachinePools

	c.UpgradeWindowTimeOut = minutes("upgradeWindow.timeOut", f.UpgradeWindow.TimeOut, DefaultUpgradeWindowTimeOut, 0)
	c.DelayTrigger = minutes("upgradeWindow.delayTrigger", f.UpgradeWindow.DelayTrigger, DefaultDelayTrigger, 0)

	c.NodeDrainTimeOut = minutes("nodeDrain.timeOut", f.NodeDrain.TimeOut, DefaultNodeDrainTimeOut, 1)
	c.ExpectedNodeDrainTime = minutes("nodeDrain.expectedNodeDrainTime", f.NodeDrain.ExpectedNodeDrainTime, DefaultExpectedNodeDrainTime, 1)
	c.DisableDrainStrategies = f.NodeDrain.DisableDrainStrategies
	for i, p := range f.NodeDrain.IgnoredNamespacePatterns {
		re, err := regexp.Compile(p)
		if err != nil {
			// MUO compiles these with MustCompile while draining, and panics.
			bad(fmt.Sprintf("nodeDrain.ignoredNamespacePatterns[%d]", i), "%q is not a valid regular expression: %v", p, err)
			continue
		}
		c.IgnoredNamespacePatterns = append(c.IgnoredNamespacePatterns, re)
	}

	c.IgnoredCriticals = nonEmpty("healthCheck.ignoredCriticals", f.HealthCheck.IgnoredCriticals, bad)
	c.IgnoredNamespaces = nonEmpty("healthCheck.ignoredNamespaces", f.HealthCheck.IgnoredNamespaces, bad)

	h := f.ExtDependencyAvailabilityChecks.HTTP
	for i, raw := range h.URLs {
		if u, err := url.Parse(raw); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad(fmt.Sprintf("extDependencyAvailabilityChecks.http.urls[%d]", i), "must be an http(s) URL, got %q", raw)
		}
	}
	c.HTTPCheckURLs = h.URLs
	timeout := DefaultHTTPTimeoutSeconds
	if h.Timeout != nil {
		timeout = *h.Timeout
	}
	if timeout < 1 || timeout > 60 {
		bad("extDependencyAvailabilityChecks.http.timeout", "must be 1 to 60 seconds, got %d", timeout)
	}
	c.HTTPCheckTimeout = time.Duration(timeout) * time.Second

	c.FedRAMP = f.Environment.FedRAMP
	c.Cincinnati = f.Validation.Cincinnati
	for i, g := range f.FeatureGate.Enabled {
		if g != FeatureGatePreHealthCheck && g != FeatureGateServiceLogNotification {
			// MUO looks its gates up in the list and passes over the
			// others: a gate of a newer MUO, or a misspelt one, turns
			// nothing on and stops nothing. Said, not refused.
			c.Warnings = append(c.Warnings, fmt.Sprintf("featureGate.enabled[%d]: unknown feature gate %q ignored (known: %s, %s)",
				i, g, FeatureGatePreHealthCheck, FeatureGateServiceLogNotification))
			continue
		}
		if g == FeatureGateServiceLogNotification && c.OCMAgent {
			// The agent proxies policies and their states only: a
			// service log has no way through it.
			c.Warnings = append(c.Warnings, fmt.Sprintf("featureGate.enabled[%d]: %s ignored: the ocm-agent (%s) has no service-log route, so no service log is sent",
				i, g, OCMAgentHost))
			continue
		}
		c.FeatureGates[g] = true
	}

	for i, name := range f.BlockingHealthChecks {
		if !slices.Contains(AdvisoryHealthChecks, name) {
			bad(fmt.Sprintf("blockingHealthChecks[%d]", i), "%q is not an advisory health check (one of %s; CriticalAlerts and ClusterOperators always block)",
				name, strings.Join(AdvisoryHealthChecks, ", "))
			continue
		}
		c.BlockingChecks[name] = true
	}

	if f.Deadlines.Start.Minutes != nil || f.Deadlines.ControlPlane.Minutes != nil {
		bad("deadlines", "start and controlPlane take their minutes from upgradeWindow.timeOut and maintenance.controlPlaneTime; set only their policy here")
	}
	common := Deadlines{
		Start:           Deadline{After: c.UpgradeWindowTimeOut},
		ControlPlane:    Deadline{After: c.ControlPlaneTime, Policy: policy("deadlines.controlPlane.policy", f.Deadlines.ControlPlane.Policy, upgradev1alpha1.DeadlineAlert, bad)},
		Workers:         Deadline{After: minutes("deadlines.workers.minutes", f.Deadlines.Workers.Minutes, 0, 0), Policy: policy("deadlines.workers.policy", f.Deadlines.Workers.Policy, upgradev1alpha1.DeadlineAlert, bad)},
		PostCheck:       Deadline{After: minutes("deadlines.postCheck.minutes", f.Deadlines.PostCheck.Minutes, DefaultPostCheckMinutes, 0), Policy: policy("deadlines.postCheck.policy", f.Deadlines.PostCheck.Policy, upgradev1alpha1.DeadlineAlert, bad)},
		WorkersComputed: f.Deadlines.Workers.Minutes == nil,
	}
	// MUO fails an OSD upgrade that does not commence within the window, and
	// never fails an ARO one; everything else only raises a metric there.
	osd, aro := common, common
	osd.Start.Policy = policy("deadlines.start.policy", f.Deadlines.Start.Policy, upgradev1alpha1.DeadlineFail, bad)
	aro.Start.Policy = osd.Start.Policy
	if f.Deadlines.Start.Policy == nil {
		aro.Start.Policy = upgradev1alpha1.DeadlineAlert
	}
	c.Deadlines = map[upgradev1alpha1.UpgradeType]Deadlines{upgradev1alpha1.OSD: osd, upgradev1alpha1.ARO: aro}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

func policy(key string, v *string, def upgradev1alpha1.DeadlinePolicy, bad func(string, string, ...any)) upgradev1alpha1.DeadlinePolicy {
	if v == nil {
		return def
	}
	switch p := upgradev1alpha1.DeadlinePolicy(*v); p {
	case upgradev1alpha1.DeadlineAlert, upgradev1alpha1.DeadlinePause, upgradev1alpha1.DeadlineFail:
		return p
	}
	bad(key, "must be alert, pause or fail, got %q", *v)
	return def
}

func nonEmpty(key string, in []string, bad func(string, string, ...any)) []string {
	for i, s := range in {
		if strings.TrimSpace(s) == "" {
			bad(fmt.Sprintf("%s[%d]", key, i), "must not be empty")
		}
	}
	return in
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// DeadlinesFor resolves the deadlines of an UpgradeConfig: its spec.deadlines
// field by field over the configuration's defaults for its type.
func (c *Config) DeadlinesFor(spec upgradev1alpha1.UpgradeConfigSpec) Deadlines {
	d := c.Deadlines[spec.Type]
	if _, ok := c.Deadlines[spec.Type]; !ok {
		d = c.Deadlines[upgradev1alpha1.OSD]
	}
	if spec.Deadlines == nil {
		return d
	}
	override := func(dst *Deadline, src *upgradev1alpha1.Deadline) bool {
		if src == nil {
			return false
		}
		if src.Policy != "" {
			dst.Policy = src.Policy
		}
		if src.Minutes != nil {
			dst.After = time.Duration(*src.Minutes) * time.Minute
			return true
		}
		return false
	}
	override(&d.Start, spec.Deadlines.Start)
	override(&d.ControlPlane, spec.Deadlines.ControlPlane)
	if override(&d.Workers, spec.Deadlines.Workers) {
		d.WorkersComputed = false
	}
	override(&d.PostCheck, spec.Deadlines.PostCheck)
	return d
}
