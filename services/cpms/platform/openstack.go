package platform

import (
	"encoding/json"
	"fmt"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1alpha1 "github.com/openshift/api/machine/v1alpha1"
)

// openstack: the failure domain is the Nova availability zone and the root
// volume's Cinder availability zone and volume type, each when declared.
// Nothing is ignored when comparing, as upstream: the installer names the
// image after the cluster (<infrastructure name>-rhcos), not the release, so
// it does not move on with updates the way a cloud image ID does.
type openstack struct{}

func (openstack) Type() configv1.PlatformType { return configv1.OpenStackPlatformType }

func (openstack) FailureDomain(spec []byte) (FailureDomain, error) {
	var c machinev1alpha1.OpenstackProviderSpec
	if err := json.Unmarshal(spec, &c); err != nil {
		return FailureDomain{}, err
	}
	fd := &machinev1.OpenStackFailureDomain{AvailabilityZone: c.AvailabilityZone}
	// A root volume without a zone or type says nothing about where the
	// machine is: it counts as no root-volume failure domain.
	if rv := c.RootVolume; rv != nil && (rv.Zone != "" || rv.VolumeType != "") {
		fd.RootVolume = &machinev1.RootVolume{AvailabilityZone: rv.Zone, VolumeType: rv.VolumeType}
	}
	if fd.AvailabilityZone == "" && fd.RootVolume == nil {
		return FailureDomain{}, nil
	}
	return FailureDomain{Platform: configv1.OpenStackPlatformType, OpenStack: fd}, nil
}

func (openstack) Inject(spec []byte, fd FailureDomain) ([]byte, error) {
	if fd.OpenStack == nil {
		return spec, nil
	}
	rv := fd.OpenStack.RootVolume
	setsRootVolume := rv != nil && (rv.AvailabilityZone != "" || rv.VolumeType != "")
	if setsRootVolume {
		// The failure domain only places a root volume; its size and
		// source come from the template. Without one the machine would
		// boot from the image, outside the declared failure domain, and
		// never match it: refuse rather than replace machines forever.
		// (The upstream operator silently skips the root volume here.)
		var c machinev1alpha1.OpenstackProviderSpec
		if err := json.Unmarshal(specOrEmpty(spec), &c); err != nil {
			return nil, err
		}
		if c.RootVolume == nil {
			return nil, fmt.Errorf("failure domain %s sets a root volume but the template providerSpec has no rootVolume to place: set rootVolume (its diskSize) in the template or remove rootVolume from the failure domain", openstackString(fd.OpenStack))
		}
	}
	return injectInto(spec, func(tree map[string]any) error {
		if az := fd.OpenStack.AvailabilityZone; az != "" {
			tree["availabilityZone"] = az
		}
		if setsRootVolume {
			if rv.AvailabilityZone != "" {
				setPath(tree, rv.AvailabilityZone, "rootVolume", "availabilityZone")
			}
			if rv.VolumeType != "" {
				setPath(tree, rv.VolumeType, "rootVolume", "volumeType")
			}
		}
		return nil
	})
}

func (openstack) canonical(spec []byte) (map[string]any, []string, error) {
	var c machinev1alpha1.OpenstackProviderSpec
	return typedCanonical(spec, &c, func() {})
}

func specOrEmpty(spec []byte) []byte {
	if len(spec) == 0 {
		return []byte("{}")
	}
	return spec
}

func openstackString(fd *machinev1.OpenStackFailureDomain) string {
	var parts []string
	if fd.AvailabilityZone != "" {
		parts = append(parts, "availabilityZone="+fd.AvailabilityZone)
	}
	if rv := fd.RootVolume; rv != nil {
		var rvParts []string
		if rv.AvailabilityZone != "" {
			rvParts = append(rvParts, "availabilityZone="+rv.AvailabilityZone)
		}
		if rv.VolumeType != "" {
			rvParts = append(rvParts, "volumeType="+rv.VolumeType)
		}
		parts = append(parts, "rootVolume={"+strings.Join(rvParts, ", ")+"}")
	}
	return "OpenStack{" + strings.Join(parts, ", ") + "}"
}

// openstackMatches compares the fields the declared failure domain sets: one
// that names only a root volume accepts any compute zone, as the upstream
// operator completes a partial failure domain from the template's.
func openstackMatches(declared, observed *machinev1.OpenStackFailureDomain) bool {
	if declared.AvailabilityZone != "" && declared.AvailabilityZone != observed.AvailabilityZone {
		return false
	}
	if rv := declared.RootVolume; rv != nil {
		got := observed.RootVolume
		if got == nil {
			got = &machinev1.RootVolume{}
		}
		if rv.AvailabilityZone != "" && rv.AvailabilityZone != got.AvailabilityZone {
			return false
		}
		if rv.VolumeType != "" && rv.VolumeType != got.VolumeType {
			return false
		}
	}
	return true
}
