package platform

import (
	"encoding/json"
	"fmt"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
)

// NutanixFailureDomain is a Nutanix failure domain: a Prism Element cluster
// and its subnets. The set declares only its name; FromSpec resolves the
// name in the Infrastructure. Read from a provider spec it carries the name
// the spec records in failureDomain (when any) and the spec's cluster and
// subnets.
type NutanixFailureDomain struct {
	Name    string
	Cluster machinev1.NutanixResourceIdentifier
	Subnets []machinev1.NutanixResourceIdentifier
}

func (n *NutanixFailureDomain) String() string {
	if n.Name != "" {
		return "Nutanix{name=" + n.Name + "}"
	}
	subnets := make([]string, len(n.Subnets))
	for i, s := range n.Subnets {
		subnets[i] = nutanixIDString(s)
	}
	return "Nutanix{cluster=" + nutanixIDString(n.Cluster) + ", subnets=[" + strings.Join(subnets, ", ") + "]}"
}

// matches: by name when both have one, as upstream (a machine records the
// failure domain it was made in). A machine made before failure domains has
// no name and is placed by its cluster and subnets, so adopting a set keeps
// it where it is.
func (n *NutanixFailureDomain) matches(observed *NutanixFailureDomain) bool {
	if n.Name != "" && observed.Name != "" {
		return n.Name == observed.Name
	}
	if !nutanixIDZero(n.Cluster) && nutanixIDString(n.Cluster) != nutanixIDString(observed.Cluster) {
		return false
	}
	if len(n.Subnets) > 0 {
		if len(n.Subnets) != len(observed.Subnets) {
			return false
		}
		for i := range n.Subnets {
			if nutanixIDString(n.Subnets[i]) != nutanixIDString(observed.Subnets[i]) {
				return false
			}
		}
	}
	return true
}

func nutanixIDZero(id machinev1.NutanixResourceIdentifier) bool {
	return id.Type == "" && id.Name == nil && id.UUID == nil
}

// nutanixIDString is "name:<name>" or "uuid:<uuid>" for a well-formed
// identifier, and spells out every field of any other, so that two
// identifiers are equal exactly when their strings are.
func nutanixIDString(id machinev1.NutanixResourceIdentifier) string {
	switch {
	case id.Type == machinev1.NutanixIdentifierName && id.Name != nil && id.UUID == nil:
		return "name:" + *id.Name
	case id.Type == machinev1.NutanixIdentifierUUID && id.UUID != nil && id.Name == nil:
		return "uuid:" + *id.UUID
	}
	parts := []string{"type=" + string(id.Type)}
	if id.Name != nil {
		parts = append(parts, "name="+*id.Name)
	}
	if id.UUID != nil {
		parts = append(parts, "uuid="+*id.UUID)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// nutanixID converts the Infrastructure's identifier to the provider spec's:
// the same identity, but the enum is spelled "Name"/"UUID" there and
// "name"/"uuid" here.
func nutanixID(id configv1.NutanixResourceIdentifier) (machinev1.NutanixResourceIdentifier, error) {
	out := machinev1.NutanixResourceIdentifier{Name: id.Name, UUID: id.UUID}
	switch id.Type {
	case configv1.NutanixIdentifierName:
		out.Type = machinev1.NutanixIdentifierName
	case configv1.NutanixIdentifierUUID:
		out.Type = machinev1.NutanixIdentifierUUID
	default:
		return out, fmt.Errorf("identifier type %q is neither %s nor %s", id.Type, configv1.NutanixIdentifierName, configv1.NutanixIdentifierUUID)
	}
	return out, nil
}

// resolveNutanix builds the failure domain named name from the
// Infrastructure, or returns nil when infra does not define it.
func resolveNutanix(infra *configv1.Infrastructure, name string) (*FailureDomain, error) {
	if infra.Spec.PlatformSpec.Nutanix == nil {
		return nil, nil
	}
	for _, d := range infra.Spec.PlatformSpec.Nutanix.FailureDomains {
		if d.Name != name {
			continue
		}
		cluster, err := nutanixID(d.Cluster)
		if err != nil {
			return nil, fmt.Errorf("failure domain %q of the Infrastructure: cluster: %w", name, err)
		}
		fd := &NutanixFailureDomain{Name: name, Cluster: cluster}
		for i, s := range d.Subnets {
			subnet, err := nutanixID(s)
			if err != nil {
				return nil, fmt.Errorf("failure domain %q of the Infrastructure: subnets[%d]: %w", name, i, err)
			}
			fd.Subnets = append(fd.Subnets, subnet)
		}
		return &FailureDomain{Platform: configv1.NutanixPlatformType, Nutanix: fd}, nil
	}
	return nil, nil
}

// nutanix: the failure domain is failureDomain.name, the cluster and the
// subnets. Nothing is ignored when comparing, as upstream: the image is named
// after the cluster, not the release.
type nutanix struct{}

func (nutanix) Type() configv1.PlatformType { return configv1.NutanixPlatformType }

func (nutanix) FailureDomain(spec []byte) (FailureDomain, error) {
	var c machinev1.NutanixMachineProviderConfig
	if err := json.Unmarshal(spec, &c); err != nil {
		return FailureDomain{}, err
	}
	fd := &NutanixFailureDomain{Cluster: c.Cluster, Subnets: c.Subnets}
	if c.FailureDomain != nil {
		fd.Name = c.FailureDomain.Name
	}
	if fd.Name == "" && nutanixIDZero(fd.Cluster) && len(fd.Subnets) == 0 {
		return FailureDomain{}, nil
	}
	return FailureDomain{Platform: configv1.NutanixPlatformType, Nutanix: fd}, nil
}

func nutanixIDTree(id machinev1.NutanixResourceIdentifier) map[string]any {
	out := map[string]any{"type": string(id.Type)}
	if id.Name != nil {
		out["name"] = *id.Name
	}
	if id.UUID != nil {
		out["uuid"] = *id.UUID
	}
	return out
}

func (nutanix) Inject(spec []byte, fd FailureDomain) ([]byte, error) {
	if fd.Nutanix == nil {
		return spec, nil
	}
	return injectInto(spec, func(tree map[string]any) error {
		// The failure domain's name is recorded on the machine, so that
		// its failure domain is known by name later (as upstream).
		if fd.Nutanix.Name != "" {
			tree["failureDomain"] = map[string]any{"name": fd.Nutanix.Name}
		}
		// The cluster and the subnets are replaced whole: a UUID in the
		// template must not survive next to a name from the failure domain.
		if !nutanixIDZero(fd.Nutanix.Cluster) {
			tree["cluster"] = nutanixIDTree(fd.Nutanix.Cluster)
		}
		if len(fd.Nutanix.Subnets) > 0 {
			subnets := make([]any, len(fd.Nutanix.Subnets))
			for i, s := range fd.Nutanix.Subnets {
				subnets[i] = nutanixIDTree(s)
			}
			tree["subnets"] = subnets
		}
		return nil
	})
}

func (nutanix) canonical(spec []byte) (map[string]any, []string, error) {
	var c machinev1.NutanixMachineProviderConfig
	return typedCanonical(spec, &c, func() {})
}
