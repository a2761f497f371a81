package platform

import (
	"encoding/json"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// azure: the failure domain is the zone plus, when the ControlPlaneMachineSet
// names one, the subnet. The image is ignored when comparing, for the same
// reason as AWS's AMI.
type azure struct{}

func (azure) Type() configv1.PlatformType { return configv1.AzurePlatformType }

func (azure) FailureDomain(spec []byte) (FailureDomain, error) {
	var c machinev1beta1.AzureMachineProviderSpec
	if err := json.Unmarshal(spec, &c); err != nil {
		return FailureDomain{}, err
	}
	if c.Zone == "" && c.Subnet == "" {
		return FailureDomain{}, nil
	}
	return FailureDomain{Platform: configv1.AzurePlatformType, Azure: &machinev1.AzureFailureDomain{Zone: c.Zone, Subnet: c.Subnet}}, nil
}

func (azure) Inject(spec []byte, fd FailureDomain) ([]byte, error) {
	if fd.Azure == nil {
		return spec, nil
	}
	return injectInto(spec, func(tree map[string]any) error {
		tree["zone"] = fd.Azure.Zone
		if fd.Azure.Subnet != "" {
			tree["subnet"] = fd.Azure.Subnet
		}
		return nil
	})
}

func (azure) canonical(spec []byte) (map[string]any, []string, error) {
	var c machinev1beta1.AzureMachineProviderSpec
	return typedCanonical(spec, &c, func() { c.Image = machinev1beta1.Image{} })
}
