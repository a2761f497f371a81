package serviceendpoints

import (
	"errors"
	"reflect"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

func endpoint(svc string, state armnetwork.ProvisioningState) *armnetwork.ServiceEndpointPropertiesFormat {
	return &armnetwork.ServiceEndpointPropertiesFormat{Service: to.Ptr(svc), Locations: []*string{to.Ptr("*")}, ProvisioningState: to.Ptr(state)}
}

func TestMissingAndAdd(t *testing.T) {
	s := armnetwork.Subnet{Properties: &armnetwork.SubnetPropertiesFormat{ServiceEndpoints: []*armnetwork.ServiceEndpointPropertiesFormat{
		endpoint("microsoft.storage", armnetwork.ProvisioningStateSucceeded), // case-insensitive, as ARO
		endpoint("Microsoft.ContainerRegistry", armnetwork.ProvisioningStateUpdating),
		endpoint("Microsoft.KeyVault", armnetwork.ProvisioningStateSucceeded),
	}}}
	if got := Missing(s); !reflect.DeepEqual(got, []string{"Microsoft.ContainerRegistry"}) {
		t.Fatalf("Missing = %v: only a provisioned endpoint counts", got)
	}
	Add(&s, Missing(s))
	eps := s.Properties.ServiceEndpoints
	if len(eps) != 4 || *eps[3].Service != "Microsoft.ContainerRegistry" || *eps[3].Locations[0] != "*" || *eps[2].Service != "Microsoft.KeyVault" {
		t.Fatalf("Add kept the others and appended: %+v", eps)
	}
	if got := Missing(armnetwork.Subnet{}); !reflect.DeepEqual(got, Services) {
		t.Fatalf("a subnet without properties lacks both: %v", got)
	}
}

func TestCondition(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     Mode
		findings []Finding
		status   string
		reason   string
		message  string
	}{
		{"off", Off, nil, "Unknown", ReasonDisabled, "not managed: aro.azuresubnets.serviceendpoint.managed is false"},
		{"all present", Remediate, []Finding{{Subnet: "master"}, {Subnet: "worker"}}, "True", ReasonAllPresent,
			"every cluster subnet has Microsoft.ContainerRegistry, Microsoft.Storage"},
		{"added", Remediate, []Finding{{Subnet: "master"}, {Subnet: "worker", Missing: []string{"Microsoft.Storage"}, Added: true}}, "True", ReasonAdded,
			"added Microsoft.Storage to subnet worker"},
		{"failed", Remediate, []Finding{{Subnet: "worker", Missing: Services, Err: errors.New("403 AuthorizationFailed")}}, "False", ReasonAddFailed,
			"adding Microsoft.ContainerRegistry, Microsoft.Storage to subnet worker: 403 AuthorizationFailed"},
		{"observed", Observe, []Finding{{Subnet: "worker", Missing: []string{"Microsoft.Storage"}}}, "False", ReasonMissing,
			"subnet worker lacks Microsoft.Storage: reported only (ARO's subnet controller runs, or spec.nsg.mode is Observe)"},
		{"unread", Remediate, []Finding{{Subnet: "master"}, {Subnet: "worker", Unread: true}}, "Unknown", ReasonUnread, "could not read subnet worker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := "aro.azuresubnets.serviceendpoint.managed is false"
			c := Condition(tc.mode, why, tc.findings)
			if string(c.Status) != tc.status || c.Reason != tc.reason || c.Message != tc.message || c.Type != "SubnetServiceEndpoints" {
				t.Errorf("Condition = %+v, want %s %s %q", c, tc.status, tc.reason, tc.message)
			}
		})
	}
}
