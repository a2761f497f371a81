package platform

import (
	"encoding/json"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// aws: the failure domain is placement.availabilityZone plus, when the
// ControlPlaneMachineSet names one, the subnet. The AMI is ignored when
// comparing: boot images move on with releases while running machines have
// long since updated their OS in place, so a new AMI is no reason to replace.
type aws struct{}

func (aws) Type() configv1.PlatformType { return configv1.AWSPlatformType }

func (aws) FailureDomain(spec []byte) (FailureDomain, error) {
	var c machinev1beta1.AWSMachineProviderConfig
	if err := json.Unmarshal(spec, &c); err != nil {
		return FailureDomain{}, err
	}
	fd := &machinev1.AWSFailureDomain{Placement: machinev1.AWSFailureDomainPlacement{AvailabilityZone: c.Placement.AvailabilityZone}}
	fd.Subnet = subnetToFailureDomain(c.Subnet)
	if fd.Subnet == nil && fd.Placement.AvailabilityZone == "" {
		return FailureDomain{}, nil
	}
	return FailureDomain{Platform: configv1.AWSPlatformType, AWS: fd}, nil
}

func subnetToFailureDomain(r machinev1beta1.AWSResourceReference) *machinev1.AWSResourceReference {
	switch {
	case r.ID != nil:
		return &machinev1.AWSResourceReference{Type: machinev1.AWSIDReferenceType, ID: r.ID}
	case r.ARN != nil:
		return &machinev1.AWSResourceReference{Type: machinev1.AWSARNReferenceType, ARN: r.ARN}
	case len(r.Filters) > 0:
		fs := make([]machinev1.AWSResourceFilter, 0, len(r.Filters))
		for _, f := range r.Filters {
			fs = append(fs, machinev1.AWSResourceFilter{Name: f.Name, Values: f.Values})
		}
		return &machinev1.AWSResourceReference{Type: machinev1.AWSFiltersReferenceType, Filters: &fs}
	}
	return nil
}

// subnetToProviderSpec renders a failure domain's subnet the way the provider
// spec spells it (no type discriminator; filters as a plain list).
func subnetToProviderSpec(r *machinev1.AWSResourceReference) map[string]any {
	out := map[string]any{}
	switch {
	case r.ID != nil:
		out["id"] = *r.ID
	case r.ARN != nil:
		out["arn"] = *r.ARN
	case r.Filters != nil:
		fs := []any{}
		for _, f := range *r.Filters {
			vs := []any{}
			for _, v := range f.Values {
				vs = append(vs, v)
			}
			fs = append(fs, map[string]any{"name": f.Name, "values": vs})
		}
		out["filters"] = fs
	}
	return out
}

func (aws) Inject(spec []byte, fd FailureDomain) ([]byte, error) {
	if fd.AWS == nil {
		return spec, nil
	}
	return injectInto(spec, func(tree map[string]any) error {
		if az := fd.AWS.Placement.AvailabilityZone; az != "" {
			setPath(tree, az, "placement", "availabilityZone")
		}
		if fd.AWS.Subnet != nil {
			// The subnet is replaced whole: an ID in the template must not
			// survive next to filters from the failure domain.
			tree["subnet"] = subnetToProviderSpec(fd.AWS.Subnet)
		}
		return nil
	})
}

func (aws) canonical(spec []byte) (map[string]any, []string, error) {
	var c machinev1beta1.AWSMachineProviderConfig
	return typedCanonical(spec, &c, func() { c.AMI = machinev1beta1.AWSResourceReference{} })
}
