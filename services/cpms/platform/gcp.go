package platform

import (
	"encoding/json"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// gcp: the failure domain is the zone. Disk images are ignored when
// comparing, for the same reason as AWS's AMI.
type gcp struct{}

func (gcp) Type() configv1.PlatformType { return configv1.GCPPlatformType }

func (gcp) FailureDomain(spec []byte) (FailureDomain, error) {
	var c machinev1beta1.GCPMachineProviderSpec
	if err := json.Unmarshal(spec, &c); err != nil {
		return FailureDomain{}, err
	}
	if c.Zone == "" {
		return FailureDomain{}, nil
	}
	return FailureDomain{Platform: configv1.GCPPlatformType, GCP: &machinev1.GCPFailureDomain{Zone: c.Zone}}, nil
}

func (gcp) Inject(spec []byte, fd FailureDomain) ([]byte, error) {
	if fd.GCP == nil {
		return spec, nil
	}
	return injectInto(spec, func(tree map[string]any) error {
		tree["zone"] = fd.GCP.Zone
		return nil
	})
}

func (gcp) canonical(spec []byte) (map[string]any, []string, error) {
	var c machinev1beta1.GCPMachineProviderSpec
	return typedCanonical(spec, &c, func() {
		for _, d := range c.Disks {
			if d != nil {
				d.Image = ""
			}
		}
	})
}
