package platform

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
)

func ptr[T any](v T) *T { return &v }

// awsSpec is an AWS control-plane provider spec as the installer writes it
// (trimmed), in the shape the openshift docs show.
const awsSpec = `{
  "apiVersion": "machine.openshift.io/v1beta1",
  "kind": "AWSMachineProviderConfig",
  "ami": {"id": "ami-0123"},
  "instanceType": "m6i.xlarge",
  "deviceIndex": 0,
  "placement": {"availabilityZone": "us-east-1a", "region": "us-east-1"},
  "subnet": {"filters": [{"name": "tag:Name", "values": ["c1-private-us-east-1a"]}]},
  "securityGroups": [{"filters": [{"name": "tag:Name", "values": ["c1-master-sg"]}]}],
  "loadBalancers": [{"name": "c1-int", "type": "network"}],
  "userDataSecret": {"name": "master-user-data"},
  "credentialsSecret": {"name": "aws-cloud-credentials"},
  "metadata": {"creationTimestamp": null}
}`

func edit(t *testing.T, spec string, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(spec), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, _ := json.Marshal(m)
	return b
}

func TestDetect(t *testing.T) {
	cases := []struct {
		name    string
		fds     *machinev1.FailureDomains
		spec    string
		want    configv1.PlatformType
		wantErr bool
	}{
		{"aws by kind", nil, awsSpec, configv1.AWSPlatformType, false},
		{"azure by kind", nil, `{"kind":"AzureMachineProviderSpec"}`, configv1.AzurePlatformType, false},
		{"gcp by kind", nil, `{"kind":"GCPMachineProviderSpec"}`, configv1.GCPPlatformType, false},
		{"vsphere by kind", nil, `{"kind":"VSphereMachineProviderSpec"}`, configv1.VSpherePlatformType, false},
		{"openstack by kind", nil, `{"kind":"OpenstackProviderSpec"}`, configv1.OpenStackPlatformType, false},
		{"nutanix by kind", nil, `{"kind":"NutanixMachineProviderConfig"}`, configv1.NutanixPlatformType, false},
		{"unknown kind is generic", nil, `{"kind":"BareMetalMachineProviderSpec"}`, "", false},
		{"vsphere failure domains agree", &machinev1.FailureDomains{Platform: configv1.VSpherePlatformType}, `{"kind":"VSphereMachineProviderSpec"}`, configv1.VSpherePlatformType, false},
		{"vsphere failure domains over a nutanix spec", &machinev1.FailureDomains{Platform: configv1.VSpherePlatformType}, `{"kind":"NutanixMachineProviderConfig"}`, "", true},
		{"openstack failure domains over a generic spec", &machinev1.FailureDomains{Platform: configv1.OpenStackPlatformType}, `{"kind":"BareMetalMachineProviderSpec"}`, "", true},
		{"failure domains agree", &machinev1.FailureDomains{Platform: configv1.AWSPlatformType}, awsSpec, configv1.AWSPlatformType, false},
		{"failure domains disagree", &machinev1.FailureDomains{Platform: configv1.GCPPlatformType}, awsSpec, "", true},
		{"not an object", nil, `[1]`, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Detect(c.fds, []byte(c.spec))
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, c.wantErr)
			}
			if err == nil && p.Type() != c.want {
				t.Fatalf("platform %q, want %q", p.Type(), c.want)
			}
		})
	}
}

func TestFromSpecSortsAndDeduplicates(t *testing.T) {
	fds, err := FromSpec(&machinev1.FailureDomains{Platform: configv1.GCPPlatformType, GCP: &[]machinev1.GCPFailureDomain{
		{Zone: "us-central1-c"}, {Zone: "us-central1-a"}, {Zone: "us-central1-c"}, {Zone: "us-central1-b"},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fds {
		got = append(got, f.String())
	}
	want := []string{"GCP{zone=us-central1-a}", "GCP{zone=us-central1-b}", "GCP{zone=us-central1-c}"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if _, err := FromSpec(&machinev1.FailureDomains{Platform: configv1.VSpherePlatformType, VSphere: []machinev1.VSphereFailureDomain{{Name: "a"}}}, nil); !errors.Is(err, ErrNoInfrastructure) {
		t.Fatalf("vSphere failure domains are defined in the Infrastructure; without it: %v, want ErrNoInfrastructure", err)
	}
	if _, err := FromSpec(&machinev1.FailureDomains{Platform: "BareMetal", GCP: &[]machinev1.GCPFailureDomain{{Zone: "a"}}}, nil); err == nil || !strings.Contains(err.Error(), "failure domains for platform BareMetal are not supported") {
		t.Fatalf("a platform without failure domains that lists some: %v", err)
	}
	if fds, err := FromSpec(nil, nil); fds != nil || err != nil {
		t.Fatalf("nil: %v %v", fds, err)
	}
}

func TestFailureDomainFromProviderSpec(t *testing.T) {
	cases := []struct {
		name string
		spec string
		want string
	}{
		{"aws zone and subnet filters", awsSpec, "AWS{availabilityZone=us-east-1a, subnet=filters:[tag:Name=c1-private-us-east-1a]}"},
		{"aws subnet id", `{"kind":"AWSMachineProviderConfig","placement":{"availabilityZone":"eu-west-1b"},"subnet":{"id":"subnet-9"}}`, "AWS{availabilityZone=eu-west-1b, subnet=id:subnet-9}"},
		{"azure zone and subnet", `{"kind":"AzureMachineProviderSpec","zone":"2","subnet":"c1-master-subnet"}`, "Azure{zone=2, subnet=c1-master-subnet}"},
		{"gcp zone", `{"kind":"GCPMachineProviderSpec","zone":"us-central1-f"}`, "GCP{zone=us-central1-f}"},
		{"gcp without zone", `{"kind":"GCPMachineProviderSpec"}`, "<none>"},
		{"generic", `{"kind":"BareMetalMachineProviderSpec","image":{"url":"http://x"}}`, "<none>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Detect(nil, []byte(c.spec))
			if err != nil {
				t.Fatal(err)
			}
			fd, err := p.FailureDomain([]byte(c.spec))
			if err != nil {
				t.Fatal(err)
			}
			if fd.String() != c.want {
				t.Fatalf("got %s want %s", fd, c.want)
			}
		})
	}
}

func TestMatchesComparesOnlyDeclaredFields(t *testing.T) {
	zoneOnly := FailureDomain{Platform: configv1.AWSPlatformType, AWS: &machinev1.AWSFailureDomain{Placement: machinev1.AWSFailureDomainPlacement{AvailabilityZone: "us-east-1a"}}}
	withSubnet := FailureDomain{Platform: configv1.AWSPlatformType, AWS: &machinev1.AWSFailureDomain{
		Placement: machinev1.AWSFailureDomainPlacement{AvailabilityZone: "us-east-1a"},
		Subnet:    &machinev1.AWSResourceReference{Type: machinev1.AWSIDReferenceType, ID: ptr("subnet-1")},
	}}
	observed, _ := aws{}.FailureDomain([]byte(`{"placement":{"availabilityZone":"us-east-1a"},"subnet":{"id":"subnet-2"}}`))
	if !zoneOnly.Matches(observed) {
		t.Error("a zone-only failure domain must accept any subnet")
	}
	if withSubnet.Matches(observed) {
		t.Error("a failure domain naming subnet-1 must not match a machine in subnet-2")
	}
	azureZone := FailureDomain{Platform: configv1.AzurePlatformType, Azure: &machinev1.AzureFailureDomain{Zone: "1"}}
	if !azureZone.Matches(FailureDomain{Azure: &machinev1.AzureFailureDomain{Zone: "1", Subnet: "s"}}) || azureZone.Matches(FailureDomain{Azure: &machinev1.AzureFailureDomain{Zone: "2"}}) {
		t.Error("azure zone matching")
	}
}

func TestInjectKeepsEveryOtherField(t *testing.T) {
	fd := FailureDomain{Platform: configv1.AWSPlatformType, AWS: &machinev1.AWSFailureDomain{
		Placement: machinev1.AWSFailureDomainPlacement{AvailabilityZone: "us-east-1c"},
		Subnet:    &machinev1.AWSResourceReference{Type: machinev1.AWSIDReferenceType, ID: ptr("subnet-c")},
	}}
	spec := edit(t, awsSpec, func(m map[string]any) { m["futureField"] = map[string]any{"x": 1} })
	out, err := aws{}.Inject(spec, fd)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(out, &m)
	if m["placement"].(map[string]any)["availabilityZone"] != "us-east-1c" || m["placement"].(map[string]any)["region"] != "us-east-1" {
		t.Errorf("placement %v", m["placement"])
	}
	if !reflect.DeepEqual(m["subnet"], map[string]any{"id": "subnet-c"}) {
		t.Errorf("subnet %v: the failure domain's subnet replaces the template's whole", m["subnet"])
	}
	if m["futureField"] == nil || m["instanceType"] != "m6i.xlarge" {
		t.Errorf("fields the type does not know, or that the failure domain does not own, must survive: %s", out)
	}
	got, _ := aws{}.FailureDomain(out)
	if !fd.Matches(got) {
		t.Errorf("injected %s, read back %s", fd, got)
	}

	az, _ := azure{}.Inject([]byte(`{"kind":"AzureMachineProviderSpec","vmSize":"D8s","zone":"1","subnet":"a"}`), FailureDomain{Azure: &machinev1.AzureFailureDomain{Zone: "3"}})
	if !strings.Contains(string(az), `"zone":"3"`) || !strings.Contains(string(az), `"subnet":"a"`) {
		t.Errorf("azure zone-only injection keeps the template subnet: %s", az)
	}
	g, _ := gcp{}.Inject([]byte(`{"kind":"GCPMachineProviderSpec","zone":"a"}`), FailureDomain{GCP: &machinev1.GCPFailureDomain{Zone: "b"}})
	if !strings.Contains(string(g), `"zone":"b"`) {
		t.Errorf("gcp: %s", g)
	}
}

func TestCompare(t *testing.T) {
	cases := []struct {
		name        string
		desired     []byte
		actual      []byte
		wantDiff    []string
		wantUnknown []string
	}{
		{
			name:    "aws identical",
			desired: []byte(awsSpec), actual: []byte(awsSpec),
		},
		{
			name:     "aws instance type",
			desired:  edit(t, awsSpec, func(m map[string]any) { m["instanceType"] = "m6i.2xlarge" }),
			actual:   []byte(awsSpec),
			wantDiff: []string{`instanceType: "m6i.xlarge" -> "m6i.2xlarge"`},
		},
		{
			name:    "aws boot image is not a reason to replace",
			desired: edit(t, awsSpec, func(m map[string]any) { m["ami"] = map[string]any{"id": "ami-new"} }),
			actual:  []byte(awsSpec),
		},
		{
			name:    "aws zero value written or left out",
			desired: edit(t, awsSpec, func(m map[string]any) { delete(m, "deviceIndex"); delete(m, "metadata") }),
			actual:  []byte(awsSpec),
		},
		{
			name:    "aws provider config api group of older installers",
			desired: []byte(awsSpec),
			actual:  edit(t, awsSpec, func(m map[string]any) { m["apiVersion"] = "awsproviderconfig.openshift.io/v1beta1" }),
		},
		{
			name:     "aws zone moved",
			desired:  edit(t, awsSpec, func(m map[string]any) { m["placement"].(map[string]any)["availabilityZone"] = "us-east-1b" }),
			actual:   []byte(awsSpec),
			wantDiff: []string{`placement.availabilityZone: "us-east-1a" -> "us-east-1b"`},
		},
		{
			name:        "aws unknown field is reported, not compared",
			desired:     edit(t, awsSpec, func(m map[string]any) { m["newKnob"] = true }),
			actual:      []byte(awsSpec),
			wantUnknown: []string{"newKnob"},
		},
		{
			name:     "azure vm size changes, image does not count",
			desired:  []byte(`{"kind":"AzureMachineProviderSpec","vmSize":"Standard_D16s_v3","image":{"resourceID":"/new"},"osDisk":{"diskSizeGB":1024}}`),
			actual:   []byte(`{"kind":"AzureMachineProviderSpec","vmSize":"Standard_D8s_v3","image":{"resourceID":"/old"},"osDisk":{"diskSizeGB":1024}}`),
			wantDiff: []string{`vmSize: "Standard_D8s_v3" -> "Standard_D16s_v3"`},
		},
		{
			name:     "gcp disk size changes, disk image does not count",
			desired:  []byte(`{"kind":"GCPMachineProviderSpec","machineType":"n2-standard-4","disks":[{"boot":true,"sizeGb":200,"image":"rhcos-new"}]}`),
			actual:   []byte(`{"kind":"GCPMachineProviderSpec","machineType":"n2-standard-4","disks":[{"boot":true,"sizeGb":128,"image":"rhcos-old"}]}`),
			wantDiff: []string{`disks[0].sizeGb: 128 -> 200`},
		},
		{
			name:    "generic ignores key order and empty values",
			desired: []byte(`{"kind":"BareMetalMachineProviderSpec","image":{"url":"http://x","checksum":"y"},"hostSelector":null}`),
			actual:  []byte(`{"image":{"checksum":"y","url":"http://x"},"kind":"BareMetalMachineProviderSpec","extra":{}}`),
		},
		{
			name:     "generic sees every value",
			desired:  []byte(`{"kind":"BareMetalMachineProviderSpec","image":{"url":"http://y"},"userData":{"name":"master-user-data"}}`),
			actual:   []byte(`{"kind":"BareMetalMachineProviderSpec","image":{"url":"http://x"}}`),
			wantDiff: []string{`image.url: "http://x" -> "http://y"`, `userData: <absent> -> {"name":"master-user-data"}`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Detect(nil, c.desired)
			if err != nil {
				t.Fatal(err)
			}
			d, unknown, err := Compare(p, c.desired, c.actual)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ch := range d {
				got = append(got, ch.String())
			}
			if !reflect.DeepEqual(got, c.wantDiff) {
				t.Errorf("diff\n got %q\nwant %q", got, c.wantDiff)
			}
			if !reflect.DeepEqual(unknown, c.wantUnknown) {
				t.Errorf("unknown %q, want %q", unknown, c.wantUnknown)
			}
		})
	}
}

func TestDiffSummary(t *testing.T) {
	d := Diff{{Path: "a", Got: "1", Want: "2"}, {Path: "b", Got: "3", Want: "4"}, {Path: "c", Got: "5", Want: "6"}}
	if got := d.Summary(2); got != "a: 1 -> 2; b: 3 -> 4; and 1 more" {
		t.Fatal(got)
	}
	if got := (Diff{}).Summary(2); got != "no changes" {
		t.Fatal(got)
	}
}
