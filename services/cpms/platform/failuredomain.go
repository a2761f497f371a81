package platform

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
)

// FailureDomain is one failure domain of a platform, in the shape the
// ControlPlaneMachineSet declares it (vSphere and Nutanix: resolved from the
// Infrastructure, see FromSpec). The zero value means "no failure domain" (a
// platform without them, or a spec that names none).
type FailureDomain struct {
	Platform  configv1.PlatformType
	AWS       *machinev1.AWSFailureDomain
	Azure     *machinev1.AzureFailureDomain
	GCP       *machinev1.GCPFailureDomain
	OpenStack *machinev1.OpenStackFailureDomain
	VSphere   *VSphereFailureDomain
	Nutanix   *NutanixFailureDomain
}

// IsZero reports whether f names no failure domain.
func (f FailureDomain) IsZero() bool {
	return f.AWS == nil && f.Azure == nil && f.GCP == nil && f.OpenStack == nil && f.VSphere == nil && f.Nutanix == nil
}

// String is a stable, human-readable form. Two failure domains are equal
// exactly when their strings are, so it is also the sort and map key. A
// declared vSphere or Nutanix failure domain is known by its name (the
// Infrastructure defines each name once); one read from a provider spec
// without a name shows where the spec places the machine.
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
	case f.OpenStack != nil:
		return openstackString(f.OpenStack)
	case f.VSphere != nil:
		return f.VSphere.String()
	case f.Nutanix != nil:
		return f.Nutanix.String()
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
	case f.OpenStack != nil:
		return observed.OpenStack != nil && openstackMatches(f.OpenStack, observed.OpenStack)
	case f.VSphere != nil:
		return observed.VSphere != nil && f.VSphere.matches(observed.VSphere)
	case f.Nutanix != nil:
		return observed.Nutanix != nil && f.Nutanix.matches(observed.Nutanix)
	}
	return observed.IsZero()
}

// FromSpec lists the failure domains a ControlPlaneMachineSet declares,
// deduplicated and sorted by String so that every later decision is
// independent of the order they were written in. nil or an empty list means
// the set does not spread machines over failure domains.
//
// vSphere and Nutanix failure domains are only names in the set: what they
// stand for is defined in infra (the Infrastructure "cluster",
// spec.platformSpec.<platform>.failureDomains), and FromSpec resolves every
// name there. A name infra does not define is an
// UndefinedFailureDomainsError naming each; a nil infra is an error too. The
// other platforms ignore infra.
func FromSpec(fds *machinev1.FailureDomains, infra *configv1.Infrastructure) ([]FailureDomain, error) {
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
	case configv1.OpenStackPlatformType:
		for i := range fds.OpenStack {
			out = append(out, FailureDomain{Platform: fds.Platform, OpenStack: &fds.OpenStack[i]})
		}
	case configv1.VSpherePlatformType:
		names := make([]string, len(fds.VSphere))
		for i, ref := range fds.VSphere {
			names[i] = ref.Name
		}
		var err error
		if out, err = resolveNames(fds.Platform, names, infra, resolveVSphere); err != nil {
			return nil, err
		}
	case configv1.NutanixPlatformType:
		names := make([]string, len(fds.Nutanix))
		for i, ref := range fds.Nutanix {
			names[i] = ref.Name
		}
		var err error
		if out, err = resolveNames(fds.Platform, names, infra, resolveNutanix); err != nil {
			return nil, err
		}
	case "":
		return nil, nil
	default:
		if fds.AWS == nil && fds.Azure == nil && fds.GCP == nil && len(fds.VSphere)+len(fds.OpenStack)+len(fds.Nutanix) == 0 {
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

// InfrastructureName is the name of the cluster's one Infrastructure.
const InfrastructureName = "cluster"

// ErrNoInfrastructure: failure domains that are only names cannot be
// resolved without the Infrastructure.
var ErrNoInfrastructure = errors.New("the Infrastructure " + InfrastructureName + " (config.openshift.io/v1) defines them and was not available")

// UndefinedFailureDomain is a failure domain the set names that the
// Infrastructure does not define.
type UndefinedFailureDomain struct {
	Platform configv1.PlatformType
	// Index is its position in failureDomains.<platform>, as written.
	Index int
	Name  string
}

func (u UndefinedFailureDomain) Error() string {
	return fmt.Sprintf("the failure domain with name %q is not defined in the infrastructure resource (Infrastructure %s, spec.platformSpec.%s.failureDomains)",
		u.Name, InfrastructureName, strings.ToLower(string(u.Platform)))
}

// UndefinedFailureDomainsError lists every name the Infrastructure does not
// define, so that each can be reported at its own field.
type UndefinedFailureDomainsError []UndefinedFailureDomain

func (e UndefinedFailureDomainsError) Error() string {
	parts := make([]string, len(e))
	for i, u := range e {
		parts[i] = u.Error()
	}
	return strings.Join(parts, "; ")
}

// resolveNames resolves each declared name with resolve, which returns
// (nil, nil) for a name infra does not define.
func resolveNames(p configv1.PlatformType, names []string, infra *configv1.Infrastructure,
	resolve func(*configv1.Infrastructure, string) (*FailureDomain, error)) ([]FailureDomain, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if infra == nil {
		return nil, fmt.Errorf("failure domains for platform %s are names: %w", p, ErrNoInfrastructure)
	}
	var out []FailureDomain
	var undefined UndefinedFailureDomainsError
	for i, name := range names {
		fd, err := resolve(infra, name)
		switch {
		case err != nil:
			return nil, err
		case fd == nil:
			undefined = append(undefined, UndefinedFailureDomain{Platform: p, Index: i, Name: name})
		default:
			out = append(out, *fd)
		}
	}
	if len(undefined) > 0 {
		return nil, undefined
	}
	return out, nil
}
