// Package serviceendpoints decides about the service endpoints ARO's subnet
// controller keeps on every cluster subnet: Microsoft.ContainerRegistry and
// Microsoft.Storage, for all locations. An endpoint counts as present, as in
// ARO, only when Azure reports it provisioned (Succeeded); one that is
// missing is added by the same PUT that carries the subnet as read. ARO
// writes no condition about them; aro-monitor reports
// SubnetServiceEndpoints on its MonitorConfig. No I/O.
package serviceendpoints

import (
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	operatorv1 "github.com/openshift/api/operator/v1"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
)

// Services are the endpoints every cluster subnet carries.
var Services = []string{"Microsoft.ContainerRegistry", "Microsoft.Storage"}

// Mode is what is done about a missing endpoint.
type Mode string

const (
	// Off: not managed (ARO's flags, egress lockdown).
	Off Mode = "Off"
	// Observe: reported only (ARO's subnet controller runs, or
	// spec.nsg.mode is Observe).
	Observe Mode = "Observe"
	// Remediate: added.
	Remediate Mode = "Remediate"
)

// Missing lists the services without a provisioned endpoint on s.
func Missing(s armnetwork.Subnet) []string {
	var out []string
	for _, svc := range Services {
		found := false
		if s.Properties != nil {
			for _, e := range s.Properties.ServiceEndpoints {
				if e != nil && e.Service != nil && strings.EqualFold(*e.Service, svc) &&
					e.ProvisioningState != nil && *e.ProvisioningState == armnetwork.ProvisioningStateSucceeded {
					found = true
				}
			}
		}
		if !found {
			out = append(out, svc)
		}
	}
	return out
}

// Add appends an endpoint for every service in missing to s, for all
// locations, as ARO does. An endpoint of the same service that is not
// provisioned yet stays: Azure reconciles the pair as one.
func Add(s *armnetwork.Subnet, missing []string) {
	if s.Properties == nil {
		s.Properties = &armnetwork.SubnetPropertiesFormat{}
	}
	for _, svc := range missing {
		s.Properties.ServiceEndpoints = append(s.Properties.ServiceEndpoints, &armnetwork.ServiceEndpointPropertiesFormat{
			Service: to.Ptr(svc), Locations: []*string{to.Ptr("*")}})
	}
}

// Finding is what one pass found on one subnet.
type Finding struct {
	// Subnet is the subnet's name.
	Subnet  string
	Missing []string
	// Added: a PUT adding Missing succeeded. Err: it failed.
	Added bool
	Err   error
	// Unread: the subnet could not be read.
	Unread bool
}

// Reasons of SubnetServiceEndpoints.
const (
	ReasonDisabled   = "CheckDisabled"
	ReasonAllPresent = "AllPresent"
	ReasonAdded      = "Added"
	ReasonMissing    = "Missing"
	ReasonAddFailed  = "AddFailed"
	ReasonUnread     = "SubnetsUnread"
)

// Condition is SubnetServiceEndpoints after a pass over every subnet in
// findings (offWhy says why when mode is Off).
func Condition(mode Mode, offWhy string, findings []Finding) operatorv1.OperatorCondition {
	c := operatorv1.OperatorCondition{Type: amv1alpha1.SubnetServiceEndpoints}
	if mode == Off {
		c.Status, c.Reason, c.Message = operatorv1.ConditionUnknown, ReasonDisabled, "not managed: "+offWhy
		return c
	}
	var added, missing, failed, unread []string
	for _, f := range findings {
		switch {
		case f.Unread:
			unread = append(unread, f.Subnet)
		case len(f.Missing) == 0:
		case f.Added:
			added = append(added, fmt.Sprintf("added %s to subnet %s", strings.Join(f.Missing, ", "), f.Subnet))
		case f.Err != nil:
			failed = append(failed, fmt.Sprintf("adding %s to subnet %s: %v", strings.Join(f.Missing, ", "), f.Subnet, f.Err))
		default:
			missing = append(missing, fmt.Sprintf("subnet %s lacks %s", f.Subnet, strings.Join(f.Missing, ", ")))
		}
	}
	switch {
	case len(failed) > 0:
		c.Status, c.Reason, c.Message = operatorv1.ConditionFalse, ReasonAddFailed, strings.Join(append(failed, missing...), "; ")
	case len(missing) > 0:
		// Only in Observe mode: Remediate adds them, or fails to.
		c.Status, c.Reason, c.Message = operatorv1.ConditionFalse, ReasonMissing,
			strings.Join(missing, "; ")+": reported only (ARO's subnet controller runs, or spec.nsg.mode is Observe)"
	case len(unread) > 0:
		c.Status, c.Reason, c.Message = operatorv1.ConditionUnknown, ReasonUnread, "could not read subnet "+strings.Join(unread, ", ")
	case len(added) > 0:
		c.Status, c.Reason, c.Message = operatorv1.ConditionTrue, ReasonAdded, strings.Join(added, "; ")
	default:
		c.Status, c.Reason, c.Message = operatorv1.ConditionTrue, ReasonAllPresent,
			fmt.Sprintf("every cluster subnet has %s", strings.Join(Services, ", "))
	}
	return c
}
