package platform

import (
	"encoding/json"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
)

func azureFD(zone, subnet string) FailureDomain {
	return FailureDomain{Platform: configv1.AzurePlatformType, Azure: &machinev1.AzureFailureDomain{Zone: zone, Subnet: subnet}}
}

func TestGeneralize(t *testing.T) {
	gcpFD := func(z string) FailureDomain {
		return FailureDomain{Platform: configv1.GCPPlatformType, GCP: &machinev1.GCPFailureDomain{Zone: z}}
	}
	for _, tc := range []struct {
		name     string
		observed []FailureDomain
		want     string
	}{
		{"distinct, sorted, zero ones left out", []FailureDomain{gcpFD("b"), {}, gcpFD("a"), gcpFD("b")}, "GCP{zone=a} GCP{zone=b}"},
		{"one GCP zone is declared", []FailureDomain{gcpFD("a"), gcpFD("a")}, "GCP{zone=a}"},
		{"one Azure failure domain is the template's", []FailureDomain{azureFD("1", "s"), azureFD("1", "s")}, ""},
		{"Azure: a shared subnet stays in the template", []FailureDomain{azureFD("2", "s"), azureFD("1", "s"), azureFD("1", "s")}, "Azure{zone=1} Azure{zone=2}"},
		{"Azure: subnets that differ are declared", []FailureDomain{azureFD("1", "s"), azureFD("1", "t")}, "Azure{zone=1, subnet=s} Azure{zone=1, subnet=t}"},
		{"Azure without zones, subnets that differ", []FailureDomain{azureFD("", "s"), azureFD("", "t")}, "Azure{zone=, subnet=s} Azure{zone=, subnet=t}"},
	} {
		var got []string
		for _, fd := range Generalize(tc.observed) {
			got = append(got, fd.String())
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, got, tc.want)
		}
	}
}

func TestDeclare(t *testing.T) {
	if fds, err := Declare(nil); fds != nil || err != nil {
		t.Errorf("none: %v, %v", fds, err)
	}
	fds, err := Declare([]FailureDomain{azureFD("1", ""), azureFD("2", "")})
	if err != nil || fds.Platform != configv1.AzurePlatformType || len(*fds.Azure) != 2 || (*fds.Azure)[1].Zone != "2" {
		t.Errorf("Azure: %+v, %v", fds, err)
	}
	if _, err := Declare([]FailureDomain{{Platform: configv1.VSpherePlatformType, VSphere: &VSphereFailureDomain{}}}); err == nil || !strings.Contains(err.Error(), "has no name") {
		t.Errorf("vSphere without a name: %v", err)
	}
	if _, err := Declare([]FailureDomain{azureFD("1", ""), {Platform: configv1.GCPPlatformType, GCP: &machinev1.GCPFailureDomain{Zone: "a"}}}); err == nil {
		t.Error("two platforms declared together")
	}
}

// Strip removes what the failure domains set and keeps every other field,
// unknown ones included.
func TestStrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Platform
		spec string
		fds  []FailureDomain
		want string
	}{{
		name: "AWS: zone and subnet; the region and an unknown field stay",
		p:    aws{},
		spec: `{"kind":"AWSMachineProviderConfig","placement":{"availabilityZone":"a","region":"r"},"subnet":{"id":"s"},"future":1}`,
		fds:  []FailureDomain{{Platform: configv1.AWSPlatformType, AWS: &machinev1.AWSFailureDomain{Placement: machinev1.AWSFailureDomainPlacement{AvailabilityZone: "a"}, Subnet: &machinev1.AWSResourceReference{Type: machinev1.AWSIDReferenceType}}}},
		want: `{"future":1,"kind":"AWSMachineProviderConfig","placement":{"region":"r"}}`,
	}, {
		name: "AWS: a zone alone leaves the subnet; an emptied placement goes",
		p:    aws{},
		spec: `{"placement":{"availabilityZone":"a"},"subnet":{"id":"s"}}`,
		fds:  []FailureDomain{{Platform: configv1.AWSPlatformType, AWS: &machinev1.AWSFailureDomain{Placement: machinev1.AWSFailureDomainPlacement{AvailabilityZone: "a"}}}},
		want: `{"subnet":{"id":"s"}}`,
	}, {
		name: "Azure: the zone; a subnet only when declared",
		p:    azure{},
		spec: `{"zone":"1","subnet":"s","vmSize":"v"}`,
		fds:  []FailureDomain{azureFD("1", "")},
		want: `{"subnet":"s","vmSize":"v"}`,
	}, {
		name: "OpenStack: the zones, not the root volume's size",
		p:    openstack{},
		spec: `{"availabilityZone":"n","rootVolume":{"availabilityZone":"c","volumeType":"t","diskSize":100}}`,
		fds:  []FailureDomain{{Platform: configv1.OpenStackPlatformType, OpenStack: &machinev1.OpenStackFailureDomain{AvailabilityZone: "n", RootVolume: &machinev1.RootVolume{AvailabilityZone: "c", VolumeType: "t"}}}},
		want: `{"rootVolume":{"diskSize":100}}`,
	}, {
		name: "vSphere: workspace, template and port groups; pooled devices stay, unnamed",
		p:    vsphere{},
		spec: `{"workspace":{"server":"v","datacenter":"d","future":"x"},"template":"t","network":{"devices":[{"networkName":"n1","ipAddrs":["10.0.0.2/24"],"gateway":"10.0.0.1"},{"networkName":"n2","addressesFromPools":[{"group":"g","resource":"r","name":"p"}],"nameservers":["1.1.1.1"]}]},"numCPUs":4}`,
		fds:  []FailureDomain{{Platform: configv1.VSpherePlatformType, VSphere: &VSphereFailureDomain{Name: "a", Networks: []string{"n1"}, Template: "t"}}},
		want: `{"network":{"devices":[{"addressesFromPools":[{"group":"g","name":"p","resource":"r"}],"nameservers":["1.1.1.1"]}]},"numCPUs":4,"workspace":{"future":"x"}}`,
	}, {
		name: "Nutanix: the failure domain's name, cluster and subnets",
		p:    nutanix{},
		spec: `{"failureDomain":{"name":"a"},"cluster":{"type":"uuid","uuid":"c"},"subnets":[{"type":"uuid","uuid":"s"}],"vcpuSockets":2}`,
		fds:  []FailureDomain{{Platform: configv1.NutanixPlatformType, Nutanix: &NutanixFailureDomain{Name: "a", Cluster: machinev1.NutanixResourceIdentifier{Type: machinev1.NutanixIdentifierUUID, UUID: ptrTo("c")}, Subnets: []machinev1.NutanixResourceIdentifier{{Type: machinev1.NutanixIdentifierUUID, UUID: ptrTo("s")}}}}},
		want: `{"vcpuSockets":2}`,
	}, {
		name: "no failure domains: unchanged",
		p:    gcp{},
		spec: `{"zone":"a"}`,
		want: `{"zone":"a"}`,
	}} {
		got, err := Strip(tc.p, []byte(tc.spec), tc.fds)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var a, b any
		_ = json.Unmarshal(got, &a)
		_ = json.Unmarshal([]byte(tc.want), &b)
		ga, _ := json.Marshal(a)
		gb, _ := json.Marshal(b)
		if string(ga) != string(gb) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, ga, gb)
		}
	}
	if _, err := Strip(aws{}, []byte(`{}`), []FailureDomain{azureFD("1", "")}); err == nil {
		t.Error("a failure domain of another platform stripped")
	}
}

func ptrTo[T any](v T) *T { return &v }
