// Package flags reads the ARO operator flags (the Cluster's
// spec.operatorflags) that switch aro-monitor's checks on and off.
//
// ARO treats a missing flag as "false", so a flag added after a cluster was
// created stays off until someone resets the flags. aro-monitor gives a
// missing or unreadable flag its documented default instead, and reports the
// unreadable ones so a typo is visible rather than silently disabling a check.
package flags

import (
	"fmt"
	"sort"
	"strings"
)

// The flags aro-monitor honours, with ARO's names.
const (
	// CheckerEnabled switches every ARO checker, including the egress and
	// credential checks.
	CheckerEnabled = "aro.checker.enabled"
	// SubnetsEnabled is the master switch of ARO's subnet controller.
	SubnetsEnabled = "aro.azuresubnets.enabled"
	// NSGManaged allows re-associating the cluster's network security group;
	// ARO's resource provider sets it false for customer-supplied groups.
	NSGManaged = "aro.azuresubnets.nsg.managed"
	// MachineEnabled switches ARO's Machine controller (MachineValid).
	MachineEnabled = "aro.machine.enabled"
	// ServiceEndpointManaged lets ARO's subnet controller add the
	// Microsoft.ContainerRegistry and Microsoft.Storage service endpoints
	// to the cluster's subnets.
	ServiceEndpointManaged = "aro.azuresubnets.serviceendpoint.managed"
)

// Defaults are ARO's documented defaults for the flags above.
var Defaults = map[string]bool{
	CheckerEnabled:         true,
	SubnetsEnabled:         true,
	NSGManaged:             true,
	MachineEnabled:         true,
	ServiceEndpointManaged: true,
}

// Flags is the effective value of each flag aro-monitor honours.
type Flags struct {
	Checker        bool
	SubnetsEnabled bool
	NSGManaged     bool
	Machine        bool
	// ServiceEndpointManaged is aro.azuresubnets.serviceendpoint.managed.
	ServiceEndpointManaged bool
	// Invalid lists flags present with a value that is neither true nor false
	// (any case), as "key=value", sorted; they take their default.
	Invalid []string
}

// Read returns the effective flags from an ARO operatorflags map.
func Read(m map[string]string) Flags {
	var invalid []string
	get := func(key string) bool {
		v, ok := m[key]
		if !ok {
			return Defaults[key]
		}
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return true
		case "false":
			return false
		}
		invalid = append(invalid, fmt.Sprintf("%s=%s", key, v))
		return Defaults[key]
	}
	f := Flags{
		Checker:                get(CheckerEnabled),
		SubnetsEnabled:         get(SubnetsEnabled),
		NSGManaged:             get(NSGManaged),
		Machine:                get(MachineEnabled),
		ServiceEndpointManaged: get(ServiceEndpointManaged),
	}
	sort.Strings(invalid)
	f.Invalid = invalid
	return f
}
