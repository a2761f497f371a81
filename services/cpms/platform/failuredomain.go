package platform

import (
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
)

// FailureDomain is one failure domain of a platform, in the shape the
// ControlPlaneMachineSet declares it. The zero value means "no failure
// domain" (a platform without them, or a spec that names none).
type FailureDomain struct {
	Platform configv1.PlatformType
	AWS      *machinev1.AWSFailureDomain
	Azure    *machinev1.AzureFailureDomain
	GCP      *machinev1.GCPFailureDomain
}

// IsZero reports whether f names no failure domain.
func (f FailureDomain) IsZero() bool { return f.AWS == nil && f.Azure == nil && f.GCP == nil }

// String is a stable, human-readable form. Two failure domains are equal
// exactly when their strings are, so it is also the sort and map key.
func (f FailureDomain) String() string {
	switch {
	case f.AWS != nil:
		parts := []string{}
		if f.AWS.Placement.AvailabilityZone != "" {
			parts = append(parts, "availabilityZone="+f.AWS.Placement.AvailabilityZone)
		}
		if f.AWS.Subnet != nil {
			parts = append(parts, "subnet="+awsRefString(f.AWS.Subnet))
		}
		return "AWS{" + strings.Join(parts, ", ") + "}"
	case f.Azure != nil:
		s := "Azure{zone=" + f.Azure.Zone
		if f.Azure.Subnet != "" {
			s += ", subnet=" + f.Azure.Subnet
		}
		return s + "}"
	case f.GCP != nil:
		return "GCP{zone=" + f.GCP.Zone + "}"
	}
	return "<none>"
}

func awsRefString(r *machinev1.AWSResourceReference) string {
	switch {
	case r == nil:
		return ""
	case r.ID != nil:
		return "id:" + *r.ID
	case r.ARN != nil:
		return "arn:" + *r.ARN
	case r.Filters != nil:
		fs := make([]string, 0, len(*r.Filters))
		for _, f := range *r.Filters {
			vs := append([]string(nil), f.Values...)
			sort.Strings(vs)
			fs = append(fs, f.Name+"="+strings.Join(vs, "|"))
		}
		sort.Strings(fs)
		return "filters:[" + strings.Join(fs, ";") + "]"
	}
	return "<empty>"
}

// Matches reports whether a machine observed in failure domain observed is in
// the declared failure domain f. Only the fields f sets are compared: a
// ControlPlaneMachineSet that names only a zone accepts any subnet.
func (f FailureDomain) Matches(observed FailureDomain) bool {
	switch {
	case f.AWS != nil:
		if observed.AWS == nil {
			return false
		}
		if az := f.AWS.Placement.AvailabilityZone; az != "" && az != observed.AWS.Placement.AvailabilityZone {
			return false
		}
		if f.AWS.Subnet != nil && awsRefString(f.AWS.Subnet) != awsRefString(observed.AWS.Subnet) {
			return false
		}
		return true
	case f.Azure != nil:
		if observed.Azure == nil || f.Azure.Zone != observed.Azure.Zone {
			return false
		}
		return f.Azure.Subnet == "" || f.Azure.Subnet == observed.Azure.Subnet
	case f.GCP != nil:
		return observed.GCP != nil && f.GCP.Zone == observed.GCP.Zone
	}
	return observed.IsZero()
}

// FromSpec lists the failure domains a ControlPlaneMachineSet declares,
// deduplicated and sorted by String so that every later decision is
// independent of the order they were written in. nil or an empty list means
// the set does not spread machines over failure domains.
func FromSpec(fds *machinev1.FailureDomains) ([]FailureDomain, error) {
	if fds == nil {
		return nil, nil
	}
	var out []FailureDomain
	switch fds.Platform {
	case configv1.AWSPlatformType:
		if fds.AWS != nil {
			for i := range *fds.AWS {
				out = append(out, FailureDomain{Platform: fds.Platform, AWS: &(*fds.AWS)[i]})
			}
		}
	case configv1.AzurePlatformType:
		if fds.Azure != nil {
			for i := range *fds.Azure {
				out = append(out, FailureDomain{Platform: fds.Platform, Azure: &(*fds.Azure)[i]})
			}
		}
	case configv1.GCPPlatformType:
		if fds.GCP != nil {
			for i := range *fds.GCP {
				out = append(out, FailureDomain{Platform: fds.Platform, GCP: &(*fds.GCP)[i]})
			}
		}
	case "":
		return nil, nil
	default:
		if len(fds.VSphere)+len(fds.OpenStack)+len(fds.Nutanix) == 0 {
			return nil, nil
		}
		return nil, fmt.Errorf("failure domains for platform %s are not supported", fds.Platform)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	dedup := out[:0]
	for i, f := range out {
		if i == 0 || f.String() != out[i-1].String() {
			dedup = append(dedup, f)
		}
	}
	return dedup, nil
}
