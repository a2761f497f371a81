package platform

import (
	"fmt"
	"sort"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
)

// What a ControlPlaneMachineSet generated from existing machines declares
// (package generate): the failure domains the machines are in, and a
// template that is the newest machine's provider spec without the fields
// those failure domains set. Injecting a machine's own failure domain into
// that template gives the machine's spec back, so activating the set moves
// nothing that was already where it belongs.

// Generalize returns the failure domains a set generated from machines
// observed in observed declares: each distinct one once, sorted by String,
// zero ones left out. On Azure a single failure domain is left to the
// template (none is returned), and a subnet that every machine shares stays
// in the template rather than being repeated in each failure domain, as
// the upstream generator writes them. The zone always stays in Azure's
// failure domains: Inject writes it whether set or empty.
func Generalize(observed []FailureDomain) []FailureDomain {
	seen := map[string]bool{}
	var out []FailureDomain
	for _, fd := range observed {
		if fd.IsZero() || seen[fd.String()] {
			continue
		}
		seen[fd.String()] = true
		out = append(out, fd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	if len(out) == 0 || out[0].Azure == nil {
		return out
	}
	if len(out) == 1 {
		return nil
	}
	subnets := map[string]bool{}
	for _, fd := range out {
		subnets[fd.Azure.Subnet] = true
	}
	if len(subnets) > 1 {
		return out
	}
	// The same subnet everywhere: the failure domains differ by zone alone.
	zones := out[:0]
	for _, fd := range out {
		z := FailureDomain{Platform: fd.Platform, Azure: &machinev1.AzureFailureDomain{Zone: fd.Azure.Zone}}
		if len(zones) == 0 || zones[len(zones)-1].String() != z.String() {
			zones = append(zones, z)
		}
	}
	return zones
}

// Declare writes fds the way a ControlPlaneMachineSet declares them (nil
// for none). vSphere and Nutanix failure domains are declared by their name
// in the Infrastructure, so each must have one (FromSpec resolves names;
// one read from a provider spec may lack it). All must be of one platform.
func Declare(fds []FailureDomain) (*machinev1.FailureDomains, error) {
	if len(fds) == 0 {
		return nil, nil
	}
	out := &machinev1.FailureDomains{Platform: fds[0].Platform}
	for _, fd := range fds {
		if fd.Platform != out.Platform {
			return nil, fmt.Errorf("failure domains of two platforms, %s and %s, cannot be declared together", out.Platform, fd.Platform)
		}
		switch {
		case fd.AWS != nil:
			if out.AWS == nil {
				out.AWS = &[]machinev1.AWSFailureDomain{}
			}
			*out.AWS = append(*out.AWS, *fd.AWS)
		case fd.Azure != nil:
			if out.Azure == nil {
				out.Azure = &[]machinev1.AzureFailureDomain{}
			}
			*out.Azure = append(*out.Azure, *fd.Azure)
		case fd.GCP != nil:
			if out.GCP == nil {
				out.GCP = &[]machinev1.GCPFailureDomain{}
			}
			*out.GCP = append(*out.GCP, *fd.GCP)
		case fd.OpenStack != nil:
			out.OpenStack = append(out.OpenStack, *fd.OpenStack)
		case fd.VSphere != nil:
			if fd.VSphere.Name == "" {
				return nil, fmt.Errorf("the vSphere failure domain %s has no name: a set declares only names the Infrastructure defines", fd)
			}
			out.VSphere = append(out.VSphere, machinev1.VSphereFailureDomain{Name: fd.VSphere.Name})
		case fd.Nutanix != nil:
			if fd.Nutanix.Name == "" {
				return nil, fmt.Errorf("the Nutanix failure domain %s has no name: a set declares only names the Infrastructure defines", fd)
			}
			out.Nutanix = append(out.Nutanix, machinev1.NutanixFailureDomainReference{Name: fd.Nutanix.Name})
		default:
			return nil, fmt.Errorf("an empty failure domain cannot be declared")
		}
	}
	return out, nil
}

// Strip removes from spec the fields that injecting any of fds sets, and
// keeps every other field, known to us or not. A template with those fields
// left in would show one machine's placement as every machine's, and the
// webhook refuses some of them next to failure domains (vSphere). With no
// fds, spec is returned as it is: the template then places every machine.
func Strip(p Platform, spec []byte, fds []FailureDomain) ([]byte, error) {
	if len(fds) == 0 {
		return spec, nil
	}
	for _, fd := range fds {
		if fd.Platform != p.Type() {
			return nil, fmt.Errorf("failure domain %s is not of the template's platform %s", fd, p.Type())
		}
	}
	switch p.(type) {
	case aws:
		return injectInto(spec, func(tree map[string]any) error {
			for _, fd := range fds {
				if fd.AWS.Placement.AvailabilityZone != "" {
					deletePath(tree, "placement", "availabilityZone")
				}
				if fd.AWS.Subnet != nil {
					delete(tree, "subnet")
				}
			}
			return nil
		})
	case azure:
		return injectInto(spec, func(tree map[string]any) error {
			delete(tree, "zone")
			for _, fd := range fds {
				if fd.Azure.Subnet != "" {
					delete(tree, "subnet")
				}
			}
			return nil
		})
	case gcp:
		return injectInto(spec, func(tree map[string]any) error {
			delete(tree, "zone")
			return nil
		})
	case openstack:
		return injectInto(spec, func(tree map[string]any) error {
			for _, fd := range fds {
				if fd.OpenStack.AvailabilityZone != "" {
					delete(tree, "availabilityZone")
				}
				// The root volume itself stays: its size and source are
				// the template's, and Inject needs it to place one.
				if rv := fd.OpenStack.RootVolume; rv != nil {
					if rv.AvailabilityZone != "" {
						deletePath(tree, "rootVolume", "availabilityZone")
					}
					if rv.VolumeType != "" {
						deletePath(tree, "rootVolume", "volumeType")
					}
				}
			}
			return nil
		})
	case vsphere:
		return injectInto(spec, stripVSphere)
	case nutanix:
		return injectInto(spec, func(tree map[string]any) error {
			delete(tree, "failureDomain")
			for _, fd := range fds {
				if !nutanixIDZero(fd.Nutanix.Cluster) {
					delete(tree, "cluster")
				}
				if len(fd.Nutanix.Subnets) > 0 {
					delete(tree, "subnets")
				}
			}
			return nil
		})
	}
	return nil, fmt.Errorf("platform %s has no failure domains to strip", p.Type())
}

// stripVSphere removes what a declared vSphere failure domain writes: every
// workspace field the type knows (Inject clears those the failure domain
// leaves empty), the template, and the port groups of the network devices.
// Devices that take their addresses from IP pools stay, without their port
// group and static addresses, since Inject names them in place; the others
// go, since Inject makes one per port group.
func stripVSphere(tree map[string]any) error {
	if ws, ok := tree["workspace"].(map[string]any); ok {
		for _, k := range []string{"server", "datacenter", "datastore", "resourcePool", "folder", "vmGroup"} {
			delete(ws, k)
		}
		if len(ws) == 0 {
			delete(tree, "workspace")
		}
	}
	delete(tree, "template")
	network, ok := tree["network"].(map[string]any)
	if !ok {
		return nil
	}
	devices, _ := network["devices"].([]any)
	var kept []any
	for _, d := range devices {
		dev, ok := d.(map[string]any)
		if !ok {
			continue
		}
		if pools, _ := dev["addressesFromPools"].([]any); len(pools) == 0 {
			continue
		}
		for _, k := range []string{"networkName", "ipAddrs", "gateway"} {
			delete(dev, k)
		}
		kept = append(kept, dev)
	}
	if len(kept) > 0 {
		network["devices"] = kept
	} else {
		delete(network, "devices")
	}
	if len(network) == 0 {
		delete(tree, "network")
	}
	return nil
}

// deletePath deletes tree[path...] and the objects on the way that it
// leaves empty.
func deletePath(tree map[string]any, path ...string) {
	if len(path) == 1 {
		delete(tree, path[0])
		return
	}
	next, ok := tree[path[0]].(map[string]any)
	if !ok {
		return
	}
	deletePath(next, path[1:]...)
	if len(next) == 0 {
		delete(tree, path[0])
	}
}

// InfrastructureFailureDomains resolves every failure domain the
// Infrastructure defines for platform p (vSphere and Nutanix; nil for the
// others, whose failure domains are not named there).
func InfrastructureFailureDomains(p configv1.PlatformType, infra *configv1.Infrastructure) ([]FailureDomain, error) {
	if infra == nil {
		return nil, nil
	}
	fds := &machinev1.FailureDomains{Platform: p}
	switch p {
	case configv1.VSpherePlatformType:
		if infra.Spec.PlatformSpec.VSphere == nil {
			return nil, nil
		}
		for _, d := range infra.Spec.PlatformSpec.VSphere.FailureDomains {
			fds.VSphere = append(fds.VSphere, machinev1.VSphereFailureDomain{Name: d.Name})
		}
	case configv1.NutanixPlatformType:
		if infra.Spec.PlatformSpec.Nutanix == nil {
			return nil, nil
		}
		for _, d := range infra.Spec.PlatformSpec.Nutanix.FailureDomains {
			fds.Nutanix = append(fds.Nutanix, machinev1.NutanixFailureDomainReference{Name: d.Name})
		}
	default:
		return nil, nil
	}
	return FromSpec(fds, infra)
}
