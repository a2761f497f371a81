// Package generate builds the ControlPlaneMachineSet a cluster without one
// would have, from its control-plane Machines, as the upstream
// control-plane-machine-set operator's generator does: an Inactive set
// named cluster whose template is the newest machine's provider spec and
// whose failure domains are those the machines are in. A person reviews it
// (kubectl upshift cpms generate prints it) and activates it; until then the
// controller's Generator keeps it current. Everything here but the CLI is
// pure: objects in, a set or an error out.
package generate

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1alpha1 "github.com/openshift/api/machine/v1alpha1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/upshift-io/upshift/services/cpms/plan"
	"github.com/upshift-io/upshift/services/cpms/platform"
	"github.com/upshift-io/upshift/services/cpms/validate"
)

// The role label's values that make a machine part of the control plane.
// Installers write "master"; "control-plane" is the newer name, which the
// upstream generator counts too.
var controlPlaneRoles = map[string]bool{"master": true, "control-plane": true}

var (
	// ErrUnsupportedPlatform: the platform has no failure domains or
	// provider spec the set knows. Nothing is generated there, as upstream.
	ErrUnsupportedPlatform = errors.New("unsupported platform")
	// ErrTooFewMachines: a single control-plane machine (single-node
	// OpenShift) has nothing a set could replace it with.
	ErrTooFewMachines = errors.New("too few control-plane machines")
)

// Supported are the platforms a set is generated for.
var Supported = []configv1.PlatformType{
	configv1.AWSPlatformType, configv1.AzurePlatformType, configv1.GCPPlatformType,
	configv1.VSpherePlatformType, configv1.OpenStackPlatformType, configv1.NutanixPlatformType,
}

// IsControlPlane reports whether a Machine's labels make it a control-plane
// machine.
func IsControlPlane(labels map[string]string) bool { return controlPlaneRoles[labels[plan.RoleLabel]] }

// ControlPlane returns the control-plane machines among machines (role label
// master or control-plane) that are not being deleted, newest first (by
// creation, then name, so that the order does not depend on the listing).
// A machine being deleted is on its way out: its provider spec and failure
// domain are not what the control plane is made of.
func ControlPlane(machines []machinev1beta1.Machine) []machinev1beta1.Machine {
	var out []machinev1beta1.Machine
	for _, m := range machines {
		if IsControlPlane(m.Labels) && m.DeletionTimestamp == nil {
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].CreationTimestamp, out[j].CreationTimestamp
		if !a.Equal(&b) {
			return b.Before(&a)
		}
		return out[i].Name > out[j].Name
	})
	return out
}

// Set builds the Inactive ControlPlaneMachineSet `cluster` for machines (the
// Machines of openshift-machine-api; Set picks the control-plane ones) and
// infra (the Infrastructure `cluster`; nil when absent, then the platform is
// the newest machine's provider spec's). The set:
//
//   - selects, and its template labels, the cluster, role and type labels of
//     the newest machine (role and type "master" on every installer);
//   - has the newest machine's provider spec as template (a person who
//     changed one machine by hand most likely wants that change), without
//     the fields the failure domains set;
//   - declares the failure domains of all the machines (platform.Generalize;
//     vSphere and Nutanix by their name in infra);
//   - has 5 replicas when the machines use five indexes, else 3 (the
//     upstream generator always writes 3, which a five-machine control
//     plane could not be activated with);
//   - is RollingUpdate and Inactive.
//
// Errors say why no set can be made: ErrUnsupportedPlatform, ErrTooFewMachines,
// a machine whose name carries no index (the controller could not place
// it), a machine outside the failure domains the Infrastructure defines,
// inconsistent machines, or a set the webhook would refuse.
func Set(machines []machinev1beta1.Machine, infra *configv1.Infrastructure) (*machinev1.ControlPlaneMachineSet, error) {
	cp := ControlPlane(machines)
	if len(cp) < 2 {
		return nil, fmt.Errorf("%w: %d (a set needs at least 2; single-node control planes are not managed)", ErrTooFewMachines, len(cp))
	}
	newest := cp[0]
	for _, m := range cp {
		if m.Spec.ProviderSpec.Value == nil || len(m.Spec.ProviderSpec.Value.Raw) == 0 {
			return nil, fmt.Errorf("machine %s has no providerSpec.value", m.Name)
		}
	}
	spec := newest.Spec.ProviderSpec.Value.Raw
	pt, err := platformType(infra, spec)
	if err != nil {
		return nil, err
	}
	p, err := platform.Detect(&machinev1.FailureDomains{Platform: pt}, spec)
	if err != nil {
		return nil, fmt.Errorf("newest control-plane machine %s: %w", newest.Name, err)
	}
	if p.Type() != pt {
		return nil, fmt.Errorf("newest control-plane machine %s: its providerSpec is not a %s provider spec", newest.Name, pt)
	}

	var unindexed []string
	indexes := map[int]bool{}
	for _, m := range cp {
		i, ok := platform.IndexFromName(m.Name)
		if !ok {
			unindexed = append(unindexed, m.Name)
		}
		indexes[i] = true
	}
	if len(unindexed) > 0 {
		sort.Strings(unindexed)
		return nil, fmt.Errorf("control-plane machine names without an index (a number after the last \"-\"): %s; the set places machines by that index", strings.Join(unindexed, ", "))
	}

	observed, err := failureDomains(p, cp, infra)
	if err != nil {
		return nil, err
	}
	if err := consistent(p, cp); err != nil {
		return nil, err
	}
	declared := platform.Generalize(observed)
	fds, err := platform.Declare(declared)
	if err != nil {
		return nil, err
	}
	template, err := platform.Strip(p, spec, declared)
	if err != nil {
		return nil, fmt.Errorf("newest control-plane machine %s: %w", newest.Name, err)
	}

	labels, err := setLabels(newest, infra)
	if err != nil {
		return nil, err
	}
	replicas := int32(3)
	if len(indexes) == 5 {
		replicas = 5
	}
	set := &machinev1.ControlPlaneMachineSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: machinev1.GroupVersion.String(), Kind: "ControlPlaneMachineSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: validate.Namespace, Name: validate.Name},
		Spec: machinev1.ControlPlaneMachineSetSpec{
			State:    machinev1.ControlPlaneMachineSetStateInactive,
			Replicas: ptr.To(replicas),
			Strategy: machinev1.ControlPlaneMachineSetStrategy{Type: machinev1.RollingUpdate},
			Selector: metav1.LabelSelector{MatchLabels: labels},
			Template: machinev1.ControlPlaneMachineSetTemplate{
				MachineType: machinev1.OpenShiftMachineV1Beta1MachineType,
				OpenShiftMachineV1Beta1Machine: &machinev1.OpenShiftMachineV1Beta1MachineTemplate{
					FailureDomains: fds,
					ObjectMeta:     machinev1.ControlPlaneMachineSetTemplateObjectMeta{Labels: copyLabels(labels)},
					Spec: machinev1beta1.MachineSpec{
						ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: template}},
					},
				},
			},
		},
	}

	var unselected []string
	for _, m := range cp {
		for k, v := range labels {
			if m.Labels[k] != v {
				unselected = append(unselected, fmt.Sprintf("%s (%s=%q)", m.Name, k, m.Labels[k]))
				break
			}
		}
	}
	if len(unselected) > 0 {
		return nil, fmt.Errorf("control-plane machines without the newest machine's labels (%s), which the set would not select: %s", selectorString(labels), strings.Join(unselected, ", "))
	}
	// The set must be one the webhook admits: the generator creates it, and
	// a person reviewing the CLI's output should not find out on apply.
	if _, errs := validate.Set(nil, set, machines, infra); len(errs) > 0 {
		return nil, fmt.Errorf("the generated set would be refused: %w", errs.ToAggregate())
	}
	return set, nil
}

// platformType is the Infrastructure's platform, or without one the newest
// machine's provider spec's. Only supported platforms pass.
func platformType(infra *configv1.Infrastructure, spec []byte) (configv1.PlatformType, error) {
	var pt configv1.PlatformType
	if infra != nil {
		switch {
		case infra.Status.PlatformStatus != nil && infra.Status.PlatformStatus.Type != "":
			pt = infra.Status.PlatformStatus.Type
		default:
			pt = infra.Spec.PlatformSpec.Type
		}
	}
	if pt == "" {
		p, err := platform.Detect(nil, spec)
		if err != nil {
			return "", err
		}
		if pt = p.Type(); pt == "" {
			return "", fmt.Errorf("%w: no Infrastructure %s names the platform and the newest control-plane machine's provider spec is of no supported kind", ErrUnsupportedPlatform, platform.InfrastructureName)
		}
	}
	for _, s := range Supported {
		if pt == s {
			return pt, nil
		}
	}
	return "", fmt.Errorf("%w %s: sets are generated on %s", ErrUnsupportedPlatform, pt, supportedList())
}

func supportedList() string {
	s := make([]string, len(Supported))
	for i, p := range Supported {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// failureDomains reads each machine's failure domain. vSphere and Nutanix
// ones are named by the Infrastructure's failure domain they are in: a set
// declares only names. Without failure domains in the Infrastructure there
// are none to declare, and the template keeps the newest machine's
// placement. Every machine must be in one, or none may be: a set cannot
// both place machines and leave one where its template puts it.
func failureDomains(p platform.Platform, cp []machinev1beta1.Machine, infra *configv1.Infrastructure) ([]platform.FailureDomain, error) {
	pt := p.Type()
	var named []platform.FailureDomain
	if pt == configv1.VSpherePlatformType || pt == configv1.NutanixPlatformType {
		var err error
		if named, err = platform.InfrastructureFailureDomains(pt, infra); err != nil {
			return nil, fmt.Errorf("failure domains of the Infrastructure %s: %w", platform.InfrastructureName, err)
		}
	}
	out := make([]platform.FailureDomain, len(cp))
	var zero, placed []string
	for i, m := range cp {
		fd, err := p.FailureDomain(m.Spec.ProviderSpec.Value.Raw)
		if err != nil {
			return nil, fmt.Errorf("machine %s: providerSpec does not decode as %s: %w", m.Name, pt, err)
		}
		if pt == configv1.VSpherePlatformType || pt == configv1.NutanixPlatformType {
			fd, err = nameFailureDomain(m.Name, fd, named, pt == configv1.NutanixPlatformType)
			if err != nil {
				return nil, err
			}
		}
		out[i] = fd
		if fd.IsZero() {
			zero = append(zero, m.Name)
		} else {
			placed = append(placed, fmt.Sprintf("%s in %s", m.Name, fd))
		}
	}
	if len(zero) > 0 && len(placed) > 0 {
		sort.Strings(zero)
		sort.Strings(placed)
		return nil, fmt.Errorf("machines %s name no failure domain while %s: a set cannot declare both", strings.Join(zero, ", "), strings.Join(placed, ", "))
	}
	return out, nil
}

// nameFailureDomain finds the Infrastructure's failure domain the machine is
// in. With none defined there is nothing to name (zero), except for a
// Nutanix machine that records a failure domain name: that name must exist.
func nameFailureDomain(machine string, observed platform.FailureDomain, named []platform.FailureDomain, nutanix bool) (platform.FailureDomain, error) {
	if len(named) == 0 {
		if nutanix && observed.Nutanix != nil && observed.Nutanix.Name != "" {
			return platform.FailureDomain{}, fmt.Errorf("machine %s is in Nutanix failure domain %q, which the Infrastructure %s does not define", machine, observed.Nutanix.Name, platform.InfrastructureName)
		}
		return platform.FailureDomain{}, nil
	}
	if observed.IsZero() {
		return platform.FailureDomain{}, nil
	}
	for _, fd := range named {
		if fd.Matches(observed) {
			return fd, nil
		}
	}
	return platform.FailureDomain{}, fmt.Errorf("machine %s is in %s, which none of the failure domains of the Infrastructure %s is: define it there, or move the machine", machine, observed, platform.InfrastructureName)
}

// consistent refuses machines that cannot share one template. OpenStack: all
// in the server group of the newest, as upstream requires — a set replacing
// them would move each into the newest's group, and anti-affinity holds
// only within one group.
func consistent(p platform.Platform, cp []machinev1beta1.Machine) error {
	if p.Type() != configv1.OpenStackPlatformType {
		return nil
	}
	group := func(m machinev1beta1.Machine) (string, error) {
		var c machinev1alpha1.OpenstackProviderSpec
		if err := json.Unmarshal(m.Spec.ProviderSpec.Value.Raw, &c); err != nil {
			return "", fmt.Errorf("machine %s: providerSpec does not decode as OpenStack: %w", m.Name, err)
		}
		return c.ServerGroupName, nil
	}
	want, err := group(cp[0])
	if err != nil {
		return err
	}
	for _, m := range cp[1:] {
		got, err := group(m)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("machine %s is in server group %q but the newest control-plane machine %s in %q: put every control-plane machine in one server group first", m.Name, got, cp[0].Name, want)
		}
	}
	return nil
}

// setLabels are the selector's and the template's labels: the newest
// machine's cluster, role and type.
func setLabels(newest machinev1beta1.Machine, infra *configv1.Infrastructure) (map[string]string, error) {
	cluster := newest.Labels[plan.ClusterIDLabel]
	if cluster == "" && infra != nil {
		cluster = infra.Status.InfrastructureName
	}
	if cluster == "" {
		return nil, fmt.Errorf("newest control-plane machine %s has no %s label and the Infrastructure %s no infrastructureName: the set could not select this cluster's machines only", newest.Name, plan.ClusterIDLabel, platform.InfrastructureName)
	}
	role := newest.Labels[plan.RoleLabel]
	typ := newest.Labels[plan.TypeLabel]
	if typ == "" {
		typ = role
	}
	return map[string]string{plan.ClusterIDLabel: cluster, plan.RoleLabel: role, plan.TypeLabel: typ}, nil
}

func copyLabels(l map[string]string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

func selectorString(l map[string]string) string {
	parts := make([]string, 0, len(l))
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
