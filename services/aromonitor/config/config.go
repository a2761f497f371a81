// Package config computes the settings aro-monitor runs with: its own
// MonitorConfig (or the defaults when there is none), narrowed by ARO's
// operator flags, and the egress targets from the Cluster's spec.
package config

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/utils/ptr"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/flags"
	"github.com/upshift-io/upshift/services/aromonitor/hysteresis"
	"github.com/upshift-io/upshift/services/aromonitor/nsg"
	"github.com/upshift-io/upshift/services/aromonitor/serviceendpoints"
)

// Defaults is the MonitorConfig spec in force when none exists. The CRD's
// defaults are the same values (a test applies an empty object and compares).
func Defaults() amv1alpha1.MonitorConfigSpec {
	return amv1alpha1.MonitorConfigSpec{
		Ownership:   amv1alpha1.OwnershipAuto,
		Internet:    amv1alpha1.InternetConfig{Interval: "5m", Timeout: "10s", FailureThreshold: 3, SuccessThreshold: 2},
		Credentials: amv1alpha1.CredentialsConfig{Interval: "15m", ExpiryWarning: "720h"},
		NSG: amv1alpha1.NSGConfig{Mode: amv1alpha1.NSGRemediate, Interval: "15m", MaxRemediationsPerHour: 3,
			TugOfWarWindow: "10m", SuppressFor: "1h"},
		Machines:      amv1alpha1.MachinesConfig{Interval: "5m", FailureThreshold: 3, SuccessThreshold: 1},
		ClusterConfig: amv1alpha1.ClusterConfigChecks{Interval: "1h", FailureThreshold: 2, SuccessThreshold: 1},
		Workloads: amv1alpha1.WorkloadsConfig{Enabled: ptr.To(true), Namespaces: slices.Clone(MonitoredNamespaces), Interval: "5m",
			RestartThreshold: 10, FailureThreshold: 3, SuccessThreshold: 1},
		ARM: amv1alpha1.ARMConfig{RequestsPerMinute: 30},
	}
}

// MonitoredNamespaces are the namespaces whose DaemonSets and pods the
// Workloads check reads by default: those ARO's resource provider monitors.
var MonitoredNamespaces = []string{
	"openshift-apiserver",
	"openshift-azure-logging",
	"openshift-azure-operator",
	"openshift-etcd",
	"openshift-ingress",
	"openshift-kube-apiserver",
	"openshift-machine-config-operator",
	"openshift-machine-api",
	"openshift-monitoring",
}

// Settings are the parsed, effective settings.
type Settings struct {
	InternetChecks   bool
	CredentialsCheck bool
	NSG              nsg.Policy
	URLs             []string

	InternetInterval, InternetTimeout time.Duration
	Thresholds                        hysteresis.Thresholds
	CredentialsInterval               time.Duration
	ExpiryWarning                     time.Duration
	NSGInterval                       time.Duration
	ARMRequestsPerMinute              int

	// MachineCheck is ARO's aro.machine.enabled; MachinesInterval and
	// MachineThresholds pace and steady MachineValid.
	MachineCheck      bool
	MachinesInterval  time.Duration
	MachineThresholds hysteresis.Thresholds

	// ClusterConfigChecks is ARO's aro.checker.enabled for
	// DefaultIngressCertificate and DefaultClusterDNS.
	ClusterConfigChecks     bool
	ClusterConfigInterval   time.Duration
	ClusterConfigThresholds hysteresis.Thresholds
	// ServiceEndpoints, and why when Off.
	ServiceEndpoints       serviceendpoints.Mode
	ServiceEndpointsOffWhy string

	WorkloadsCheck     bool
	WorkloadNamespaces []string
	WorkloadsInterval  time.Duration
	RestartThreshold   int32
	WorkloadThresholds hysteresis.Thresholds

	// Ownership is how aro-monitor shares the checks with ARO's operator.
	Ownership amv1alpha1.OwnershipPolicy

	// InvalidFlags are ARO flags with unreadable values, which took their default.
	InvalidFlags []string
}

// Compute returns the settings from the MonitorConfig spec (nil for none) and
// the ARO Cluster's spec. An error means the MonitorConfig holds a value the
// CRD should have refused (it was stored before a schema change): the caller
// reports it and keeps the previous settings.
func Compute(mc *amv1alpha1.MonitorConfigSpec, cluster arov1alpha1.ClusterSpec) (Settings, error) {
	spec := Defaults()
	if mc != nil {
		spec = fill(*mc, spec)
	}
	f := flags.Read(cluster.OperatorFlags)
	s := Settings{
		Ownership:               spec.Ownership,
		InternetChecks:          f.Checker,
		CredentialsCheck:        f.Checker,
		Thresholds:              hysteresis.Thresholds{Failures: spec.Internet.FailureThreshold, Successes: spec.Internet.SuccessThreshold},
		ARMRequestsPerMinute:    int(spec.ARM.RequestsPerMinute),
		InvalidFlags:            f.Invalid,
		MachineCheck:            f.Machine,
		MachineThresholds:       hysteresis.Thresholds{Failures: spec.Machines.FailureThreshold, Successes: spec.Machines.SuccessThreshold},
		ClusterConfigChecks:     f.Checker,
		ClusterConfigThresholds: hysteresis.Thresholds{Failures: spec.ClusterConfig.FailureThreshold, Successes: spec.ClusterConfig.SuccessThreshold},
		WorkloadsCheck:          spec.Workloads.Enabled == nil || *spec.Workloads.Enabled,
		WorkloadNamespaces:      slices.Clone(spec.Workloads.Namespaces),
		RestartThreshold:        spec.Workloads.RestartThreshold,
		WorkloadThresholds:      hysteresis.Thresholds{Failures: spec.Workloads.FailureThreshold, Successes: spec.Workloads.SuccessThreshold},
	}
	s.ServiceEndpoints, s.ServiceEndpointsOffWhy = serviceEndpointsMode(f, cluster)
	if s.ServiceEndpoints == serviceendpoints.Remediate && spec.NSG.Mode == amv1alpha1.NSGObserve {
		// Observe changes nothing in Azure.
		s.ServiceEndpoints = serviceendpoints.Observe
	}
	var err error
	parse := func(field, v string) time.Duration {
		d, e := time.ParseDuration(v)
		if e != nil && err == nil {
			err = fmt.Errorf("MonitorConfig %s: %q is not a duration", field, v)
		}
		return d
	}
	s.InternetInterval = parse("spec.internet.interval", spec.Internet.Interval)
	s.InternetTimeout = parse("spec.internet.timeout", spec.Internet.Timeout)
	s.CredentialsInterval = parse("spec.credentials.interval", spec.Credentials.Interval)
	s.ExpiryWarning = parse("spec.credentials.expiryWarning", spec.Credentials.ExpiryWarning)
	s.NSGInterval = parse("spec.nsg.interval", spec.NSG.Interval)
	s.MachinesInterval = parse("spec.machines.interval", spec.Machines.Interval)
	s.ClusterConfigInterval = parse("spec.clusterConfig.interval", spec.ClusterConfig.Interval)
	s.WorkloadsInterval = parse("spec.workloads.interval", spec.Workloads.Interval)
	s.NSG = nsg.Policy{
		Mode:        nsgMode(spec.NSG.Mode, f),
		MaxPerHour:  int(spec.NSG.MaxRemediationsPerHour),
		TugOfWar:    parse("spec.nsg.tugOfWarWindow", spec.NSG.TugOfWarWindow),
		SuppressFor: parse("spec.nsg.suppressFor", spec.NSG.SuppressFor),
	}
	s.URLs = slices.Clone(cluster.InternetChecker.URLs)
	for _, u := range spec.Internet.AdditionalURLs {
		if !slices.Contains(s.URLs, u) {
			s.URLs = append(s.URLs, u)
		}
	}
	return s, err
}

// nsgMode narrows the configured mode by ARO's flags: the subnet controller
// switched off means no check at all; an unmanaged group (a customer's own,
// "preconfigured" NSG) means observe only.
func nsgMode(m amv1alpha1.NSGMode, f flags.Flags) nsg.Mode {
	switch {
	case !f.SubnetsEnabled:
		return nsg.Off
	case !f.NSGManaged || m == amv1alpha1.NSGObserve:
		return nsg.Observe
	}
	return nsg.Remediate
}

// serviceEndpointsMode follows ARO's subnet controller: it adds the
// endpoints while it runs (aro.azuresubnets.enabled) and
// aro.azuresubnets.serviceendpoint.managed is true, except on a cluster with
// egress lockdown (spec.gatewayDomains set), whose storage and registry
// traffic goes through ARO's gateway instead.
func serviceEndpointsMode(f flags.Flags, cluster arov1alpha1.ClusterSpec) (serviceendpoints.Mode, string) {
	switch {
	case !f.SubnetsEnabled:
		return serviceendpoints.Off, flags.SubnetsEnabled + " is false"
	case !f.ServiceEndpointManaged:
		return serviceendpoints.Off, flags.ServiceEndpointManaged + " is false"
	case len(cluster.GatewayDomains) > 0:
		return serviceendpoints.Off, "egress lockdown (spec.gatewayDomains) routes storage and registry traffic through ARO's gateway"
	}
	return serviceendpoints.Remediate, ""
}

// fill gives every unset field of spec its default, for objects stored
// before a default existed.
func fill(spec, d amv1alpha1.MonitorConfigSpec) amv1alpha1.MonitorConfigSpec {
	str := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	num := func(v *int32, def int32) {
		if *v == 0 {
			*v = def
		}
	}
	str(&spec.Internet.Interval, d.Internet.Interval)
	str(&spec.Internet.Timeout, d.Internet.Timeout)
	num(&spec.Internet.FailureThreshold, d.Internet.FailureThreshold)
	num(&spec.Internet.SuccessThreshold, d.Internet.SuccessThreshold)
	str(&spec.Credentials.Interval, d.Credentials.Interval)
	str(&spec.Credentials.ExpiryWarning, d.Credentials.ExpiryWarning)
	if spec.Ownership == "" {
		spec.Ownership = d.Ownership
	}
	if spec.NSG.Mode == "" {
		spec.NSG.Mode = d.NSG.Mode
	}
	str(&spec.NSG.Interval, d.NSG.Interval)
	num(&spec.NSG.MaxRemediationsPerHour, d.NSG.MaxRemediationsPerHour)
	str(&spec.NSG.TugOfWarWindow, d.NSG.TugOfWarWindow)
	str(&spec.NSG.SuppressFor, d.NSG.SuppressFor)
	num(&spec.ARM.RequestsPerMinute, d.ARM.RequestsPerMinute)
	str(&spec.Machines.Interval, d.Machines.Interval)
	num(&spec.Machines.FailureThreshold, d.Machines.FailureThreshold)
	num(&spec.Machines.SuccessThreshold, d.Machines.SuccessThreshold)
	str(&spec.ClusterConfig.Interval, d.ClusterConfig.Interval)
	num(&spec.ClusterConfig.FailureThreshold, d.ClusterConfig.FailureThreshold)
	num(&spec.ClusterConfig.SuccessThreshold, d.ClusterConfig.SuccessThreshold)
	if spec.Workloads.Namespaces == nil {
		spec.Workloads.Namespaces = d.Workloads.Namespaces
	}
	str(&spec.Workloads.Interval, d.Workloads.Interval)
	num(&spec.Workloads.RestartThreshold, d.Workloads.RestartThreshold)
	num(&spec.Workloads.FailureThreshold, d.Workloads.FailureThreshold)
	num(&spec.Workloads.SuccessThreshold, d.Workloads.SuccessThreshold)
	return spec
}

// Status is the effective configuration as published in the MonitorConfig's status.
func (s Settings) Status() *amv1alpha1.EffectiveConfiguration {
	return &amv1alpha1.EffectiveConfiguration{
		InternetChecks:      s.InternetChecks,
		CredentialsCheck:    s.CredentialsCheck,
		MachinesCheck:       s.MachineCheck,
		ClusterConfigChecks: s.ClusterConfigChecks,
		ServiceEndpoints:    string(s.ServiceEndpoints),
		WorkloadsCheck:      s.WorkloadsCheck,
		NSGMode:             string(s.NSG.Mode),
		URLs:                slices.Clone(s.URLs),
		Intervals: map[amv1alpha1.CheckName]string{
			amv1alpha1.CheckInternetMaster:     s.InternetInterval.String(),
			amv1alpha1.CheckInternetWorker:     s.InternetInterval.String(),
			amv1alpha1.CheckCredentials:        s.CredentialsInterval.String(),
			amv1alpha1.CheckNSG:                s.NSGInterval.String(),
			amv1alpha1.CheckMachines:           s.MachinesInterval.String(),
			amv1alpha1.CheckIngressCertificate: s.ClusterConfigInterval.String(),
			amv1alpha1.CheckClusterDNS:         s.ClusterConfigInterval.String(),
			amv1alpha1.CheckDaemonSets:         s.WorkloadsInterval.String(),
			amv1alpha1.CheckPods:               s.WorkloadsInterval.String(),
		},
	}
}
