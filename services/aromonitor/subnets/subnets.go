// Package subnets finds the cluster's subnets and the network security group
// each must be associated with, from Kubernetes objects only: master subnets
// from the master Machines, worker subnets from the worker MachineSets (one
// template per set, so the number of ARM reads does not grow with the number
// of workers).
package subnets

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
)

// MachineRoleLabel is the label MachineSets and Machines carry their role in.
const MachineRoleLabel = "machine.openshift.io/cluster-api-machine-role"

// Subnet is one cluster subnet.
type Subnet struct {
	// ID is the subnet's resource ID as built from the provider spec.
	ID string
	// ResourceGroup, VNet and Name are the parts the ARM client takes.
	ResourceGroup, VNet, Name string
	// Role is master or worker; a subnet used by both is master.
	Role amv1alpha1.Role
	// ExpectedNSG is the cluster group the subnet must be associated with.
	ExpectedNSG string
	// Kind and Object name the Machine or MachineSet it was found through
	// (the first one): the subnet's Events name it as their related object,
	// which also keeps two subnets' Events from folding into one series.
	Kind, Object string
}

// Problem is an object whose provider spec could not be read; it is reported,
// and the other subnets are still checked.
type Problem struct {
	Object string
	Err    error
}

// Discover returns the cluster's subnets, de-duplicated case-insensitively and
// sorted by ID, and the objects it could not read.
func Discover(cluster arov1alpha1.ClusterSpec, machines []machinev1beta1.Machine, sets []machinev1beta1.MachineSet) ([]Subnet, []Problem, error) {
	subscription, err := SubscriptionOf(cluster.ResourceID)
	if err != nil {
		return nil, nil, err
	}
	byKey := map[string]Subnet{}
	var problems []Problem
	add := func(kind, name string, role amv1alpha1.Role, raw []byte) {
		object := kind + " " + name
		var spec machinev1beta1.AzureMachineProviderSpec
		if err := json.Unmarshal(raw, &spec); err != nil {
			problems = append(problems, Problem{object, fmt.Errorf("provider spec is not an Azure machine spec: %w", err)})
			return
		}
		if spec.Subnet == "" || spec.Vnet == "" || spec.NetworkResourceGroup == "" {
			problems = append(problems, Problem{object, fmt.Errorf("provider spec names no subnet (subnet %q, vnet %q, networkResourceGroup %q)", spec.Subnet, spec.Vnet, spec.NetworkResourceGroup)})
			return
		}
		s := Subnet{
			ID: fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/%s/subnets/%s",
				subscription, spec.NetworkResourceGroup, spec.Vnet, spec.Subnet),
			ResourceGroup: spec.NetworkResourceGroup, VNet: spec.Vnet, Name: spec.Subnet, Role: role,
			ExpectedNSG: ExpectedNSG(cluster, role), Kind: kind, Object: name,
		}
		k := strings.ToLower(s.ID)
		// The first object naming a subnet gives its spelling; masters
		// come first, so a subnet shared by both roles is a master subnet.
		if _, ok := byKey[k]; ok {
			return
		}
		byKey[k] = s
	}
	for _, m := range machines {
		if m.Labels[MachineRoleLabel] != "master" || m.DeletionTimestamp != nil {
			continue
		}
		if m.Spec.ProviderSpec.Value == nil {
			problems = append(problems, Problem{"Machine " + m.Name, fmt.Errorf("no provider spec")})
			continue
		}
		add("Machine", m.Name, amv1alpha1.RoleMaster, m.Spec.ProviderSpec.Value.Raw)
	}
	for _, ms := range sets {
		if ms.Labels[MachineRoleLabel] == "master" || ms.DeletionTimestamp != nil {
			continue
		}
		if ms.Spec.Template.Spec.ProviderSpec.Value == nil {
			problems = append(problems, Problem{"MachineSet " + ms.Name, fmt.Errorf("no provider spec")})
			continue
		}
		add("MachineSet", ms.Name, amv1alpha1.RoleWorker, ms.Spec.Template.Spec.ProviderSpec.Value.Raw)
	}
	out := make([]Subnet, 0, len(byKey))
	for _, s := range byKey {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i].ID) < strings.ToLower(out[j].ID) })
	return out, problems, nil
}

// ExpectedNSG is the group ARO creates for the cluster: one `<infraId>-nsg`
// on architecture version 1, or separate control-plane and node groups on
// version 0.
func ExpectedNSG(cluster arov1alpha1.ClusterSpec, role amv1alpha1.Role) string {
	name := cluster.InfraID + "-nsg"
	if cluster.ArchitectureVersion == 0 {
		name = cluster.InfraID + "-node-nsg"
		if role == amv1alpha1.RoleMaster {
			name = cluster.InfraID + "-controlplane-nsg"
		}
	}
	return strings.TrimSuffix(cluster.ClusterResourceGroupID, "/") + "/providers/Microsoft.Network/networkSecurityGroups/" + name
}

// SubscriptionOf parses the subscription ID out of an Azure resource ID.
func SubscriptionOf(resourceID string) (string, error) {
	parts := strings.Split(strings.Trim(resourceID, "/"), "/")
	if len(parts) < 2 || !strings.EqualFold(parts[0], "subscriptions") || parts[1] == "" {
		return "", fmt.Errorf("spec.resourceId %q is not an Azure resource ID (/subscriptions/<id>/...)", resourceID)
	}
	return parts[1], nil
}

// MachineAnnotation on a Node names its Machine, "<namespace>/<name>": how a
// worker agent finds, from the Node it runs on, the subnet it probes from.
const MachineAnnotation = "machine.openshift.io/machine"

// OfMachine is the name of the subnet a Machine's Azure provider spec puts
// it in.
func OfMachine(m *machinev1beta1.Machine) (string, error) {
	if m.Spec.ProviderSpec.Value == nil {
		return "", fmt.Errorf("machine %s/%s has no provider spec", m.Namespace, m.Name)
	}
	var spec machinev1beta1.AzureMachineProviderSpec
	if err := json.Unmarshal(m.Spec.ProviderSpec.Value.Raw, &spec); err != nil {
		return "", fmt.Errorf("machine %s/%s: provider spec is not an Azure machine spec: %w", m.Namespace, m.Name, err)
	}
	if spec.Subnet == "" {
		return "", fmt.Errorf("machine %s/%s: provider spec names no subnet", m.Namespace, m.Name)
	}
	return spec.Subnet, nil
}

// Canonical is a subnet's name as aro-monitor keys it: Azure compares
// subnet names case-insensitively, so Worker-A and worker-a are one subnet
// and must share one Lease, one vantage point and one field manager.
func Canonical(subnet string) string { return strings.ToLower(subnet) }

// AgentLeaseName is the Lease the worker agents of one subnet elect their
// prober with. Azure allows underscores, periods and upper case in subnet
// names and up to 80 characters; a Lease name is a lower-case DNS subdomain
// of at most 253. The name is made canonical (lower case) first, so every
// spelling of one subnet gets one Lease; names whose canonical form still
// had to change get a hash of that form, so two subnets never share one.
func AgentLeaseName(subnet string) string {
	const prefix = "upshift-aro-monitor-worker-"
	canonical := Canonical(subnet)
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '-'
	}, canonical)
	clean = strings.Trim(clean, "-.")
	if clean != canonical {
		h := fnv.New32a()
		_, _ = h.Write([]byte(canonical))
		clean = fmt.Sprintf("%s-%08x", clean, h.Sum32())
		clean = strings.TrimPrefix(clean, "-")
	}
	return prefix + clean
}
