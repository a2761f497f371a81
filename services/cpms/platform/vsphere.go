package platform

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// VSphereFailureDomain is a vSphere failure domain. The set declares only its
// name; FromSpec resolves the name in the Infrastructure into what a machine
// in it is made with, which is what Inject writes. Read from a provider spec
// it has no name (a machine's spec does not carry it) and only the workspace:
// that is where the machine is, while its networks and template are
// configuration, compared like any other field.
type VSphereFailureDomain struct {
	// Name is the failure domain's name in the Infrastructure; empty when
	// read from a provider spec.
	Name string
	// Workspace places the machine: vCenter, datacenter, datastore,
	// resource pool, folder and VM group.
	Workspace machinev1beta1.Workspace
	// Networks are the port groups of the machine's network devices, in
	// order. Declared failure domains only.
	Networks []string
	// Template is the name of the VM template to clone. Declared failure
	// domains only.
	Template string
}

func (v *VSphereFailureDomain) String() string {
	if v.Name != "" {
		return "VSphere{name=" + v.Name + "}"
	}
	w := v.Workspace
	var parts []string
	for _, kv := range [][2]string{
		{"server", w.Server}, {"datacenter", w.Datacenter}, {"datastore", w.Datastore},
		{"resourcePool", w.ResourcePool}, {"folder", w.Folder}, {"vmGroup", w.VMGroup},
	} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	return "VSphere{" + strings.Join(parts, ", ") + "}"
}

// matches: by name when both have one, else by the placement the upstream
// operator identifies a failure domain by — vCenter, datacenter, datastore,
// VM group and resource pool (as a clean path). The folder, networks and
// template do not move a machine out of its failure domain; a difference
// there is a change to roll out like any other.
func (v *VSphereFailureDomain) matches(observed *VSphereFailureDomain) bool {
	if v.Name != "" && observed.Name != "" {
		return v.Name == observed.Name
	}
	a, b := v.Workspace, observed.Workspace
	return a.Server == b.Server && a.Datacenter == b.Datacenter && a.Datastore == b.Datastore &&
		a.VMGroup == b.VMGroup && cleanPath(a.ResourcePool) == cleanPath(b.ResourcePool)
}

func cleanPath(p string) string {
	if p == "" {
		return ""
	}
	return path.Clean(p)
}

// templateName is a template's name without its inventory path: the
// installer writes "/<datacenter>/vm/<name>" on the machines it creates while
// a failure domain gives the name alone, and both clone the same template.
func templateName(t string) string {
	return t[strings.LastIndex(t, "/")+1:]
}

// resolveVSphere builds the failure domain named name from the Infrastructure
// the way the upstream operator does, or returns nil when infra does not
// define it.
func resolveVSphere(infra *configv1.Infrastructure, name string) (*FailureDomain, error) {
	if infra.Spec.PlatformSpec.VSphere == nil {
		return nil, nil
	}
	for _, d := range infra.Spec.PlatformSpec.VSphere.FailureDomains {
		if d.Name != name {
			continue
		}
		t := d.Topology
		ws := machinev1beta1.Workspace{Server: d.Server, Datacenter: t.Datacenter, Datastore: t.Datastore, Folder: t.Folder, ResourcePool: t.ResourcePool}
		if ws.ResourcePool == "" && t.ComputeCluster != "" {
			// Without a resource pool, the cluster's root pool, which
			// vCenter always names Resources.
			ws.ResourcePool = path.Clean("/" + t.ComputeCluster + "/Resources")
		}
		if za := d.ZoneAffinity; za != nil && za.HostGroup != nil {
			ws.VMGroup = za.HostGroup.VMGroup
		}
		template := templateName(t.Template)
		if ws.Folder == "" || template == "" {
			// The installer's defaults: the cluster's folder, and the
			// template it uploads per region and zone; both carry the
			// infrastructure name.
			id := infra.Status.InfrastructureName
			if id == "" {
				return nil, fmt.Errorf("vSphere failure domain %q leaves the folder or template to the defaults, which need the Infrastructure's status.infrastructureName, and it is empty", name)
			}
			if ws.Folder == "" {
				ws.Folder = fmt.Sprintf("/%s/vm/%s", t.Datacenter, id)
			}
			if template == "" {
				template = fmt.Sprintf("%s-rhcos-%s-%s", id, d.Region, d.Zone)
			}
		}
		fd := &VSphereFailureDomain{Name: name, Workspace: ws, Networks: append([]string(nil), t.Networks...), Template: template}
		return &FailureDomain{Platform: configv1.VSpherePlatformType, VSphere: fd}, nil
	}
	return nil, nil
}

// vsphere: the failure domain is the workspace, the network devices' port
// groups and the template (see VSphereFailureDomain). When comparing, as
// upstream: the template counts by its name alone (with or without its
// inventory path), and a network device counts only by its port group, plus
// its IP pools and name servers when it takes its addresses from pools — the
// installer gives each machine its own static addresses (ipAddrs, gateway),
// which no template can repeat. The resource pool is compared as a clean
// path, as the upstream operator compares it when placing machines.
type vsphere struct{}

func (vsphere) Type() configv1.PlatformType { return configv1.VSpherePlatformType }

func (vsphere) FailureDomain(spec []byte) (FailureDomain, error) {
	var c machinev1beta1.VSphereMachineProviderSpec
	if err := json.Unmarshal(spec, &c); err != nil {
		return FailureDomain{}, err
	}
	if c.Workspace == nil || *c.Workspace == (machinev1beta1.Workspace{}) {
		return FailureDomain{}, nil
	}
	return FailureDomain{Platform: configv1.VSpherePlatformType, VSphere: &VSphereFailureDomain{Workspace: *c.Workspace}}, nil
}

func (vsphere) Inject(spec []byte, fd FailureDomain) ([]byte, error) {
	if fd.VSphere == nil {
		return spec, nil
	}
	var c machinev1beta1.VSphereMachineProviderSpec
	if err := json.Unmarshal(specOrEmpty(spec), &c); err != nil {
		return nil, err
	}
	pools := false
	for _, d := range c.Network.Devices {
		pools = pools || len(d.AddressesFromPools) > 0
	}
	return injectInto(spec, func(tree map[string]any) error {
		// The failure domain owns every workspace field the type knows: one
		// it leaves empty must not survive from the template (the upstream
		// operator replaces the workspace whole). Fields we do not know stay.
		ws, ok := tree["workspace"].(map[string]any)
		if !ok {
			ws = map[string]any{}
		}
		w := fd.VSphere.Workspace
		for key, value := range map[string]string{
			"server": w.Server, "datacenter": w.Datacenter, "datastore": w.Datastore,
			"resourcePool": w.ResourcePool, "folder": w.Folder, "vmGroup": w.VMGroup,
		} {
			if value == "" {
				delete(ws, key)
			} else {
				ws[key] = value
			}
		}
		tree["workspace"] = ws
		if len(fd.VSphere.Networks) > 0 {
			tree["network"] = injectNetworks(tree["network"], fd.VSphere.Networks, pools)
		}
		if fd.VSphere.Template != "" {
			tree["template"] = fd.VSphere.Template
		}
		return nil
	})
}

// injectNetworks gives device i the failure domain's port group i. When a
// device takes its addresses from IP pools, the template's devices are kept
// (with their pools) and only named; otherwise they are replaced by one
// device per port group, as upstream: a static address written in the
// template would be given to every machine.
func injectNetworks(network any, networks []string, keepDevices bool) map[string]any {
	net, ok := network.(map[string]any)
	if !ok {
		net = map[string]any{}
	}
	var devices []any
	if list, ok := net["devices"].([]any); ok && keepDevices {
		devices = list
	}
	for i, name := range networks {
		if i >= len(devices) {
			devices = append(devices, map[string]any{})
		}
		d, ok := devices[i].(map[string]any)
		if !ok {
			d = map[string]any{}
			devices[i] = d
		}
		d["networkName"] = name
	}
	net["devices"] = devices
	return net
}

func (vsphere) canonical(spec []byte) (map[string]any, []string, error) {
	var c machinev1beta1.VSphereMachineProviderSpec
	return typedCanonical(spec, &c, func() {
		c.Template = templateName(c.Template)
		for i, d := range c.Network.Devices {
			kept := machinev1beta1.NetworkDeviceSpec{NetworkName: d.NetworkName}
			if len(d.AddressesFromPools) > 0 {
				kept.AddressesFromPools = d.AddressesFromPools
				kept.Nameservers = d.Nameservers
			}
			c.Network.Devices[i] = kept
		}
		if c.Workspace != nil {
			c.Workspace.ResourcePool = cleanPath(c.Workspace.ResourcePool)
		}
	})
}
