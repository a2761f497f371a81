package platform

import (
	"reflect"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
)

// openstackSpec is a control-plane machine on OpenStack as the installer
// writes it (the OpenShift documentation's OpenStack control plane machine
// set example), booting from a root volume in nova-az0 / cinder-az0.
const openstackSpec = `{
  "apiVersion": "machine.openshift.io/v1alpha1",
  "kind": "OpenstackProviderSpec",
  "availabilityZone": "nova-az0",
  "cloudName": "openstack",
  "cloudsSecret": {"name": "openstack-cloud-credentials", "namespace": "openshift-machine-api"},
  "flavor": "m1.xlarge",
  "image": "ocp1-2g2xs-rhcos",
  "metadata": {"creationTimestamp": null},
  "networks": [{"filter": {}, "subnets": [{"filter": {"name": "ocp1-2g2xs-nodes", "tags": "openshiftClusterID=ocp1-2g2xs"}}]}],
  "rootVolume": {"availabilityZone": "cinder-az0", "diskSize": 100, "volumeType": "fast-az0"},
  "securityGroups": [{"filter": {}, "name": "ocp1-2g2xs-master"}],
  "serverGroupName": "ocp1-2g2xs-master",
  "serverMetadata": {"Name": "ocp1-2g2xs-master", "openshiftClusterID": "ocp1-2g2xs"},
  "tags": ["openshiftClusterID=ocp1-2g2xs"],
  "trunk": true,
  "userDataSecret": {"name": "master-user-data"}
}`

func osFD(az, rvZone, rvType string) FailureDomain {
	fd := &machinev1.OpenStackFailureDomain{AvailabilityZone: az}
	if rvZone != "" || rvType != "" {
		fd.RootVolume = &machinev1.RootVolume{AvailabilityZone: rvZone, VolumeType: rvType}
	}
	return FailureDomain{Platform: configv1.OpenStackPlatformType, OpenStack: fd}
}

func TestOpenStackFailureDomain(t *testing.T) {
	cases := []struct {
		name, spec, want string
	}{
		{"zone and root volume", openstackSpec, "OpenStack{availabilityZone=nova-az0, rootVolume={availabilityZone=cinder-az0, volumeType=fast-az0}}"},
		{"zone only", `{"kind":"OpenstackProviderSpec","availabilityZone":"nova-az1","flavor":"m1.xlarge"}`, "OpenStack{availabilityZone=nova-az1}"},
		// A root volume with only a size says nothing about placement.
		{"sized root volume only", `{"kind":"OpenstackProviderSpec","rootVolume":{"diskSize":30}}`, "<none>"},
		{"nothing", `{"kind":"OpenstackProviderSpec","flavor":"m1.xlarge"}`, "<none>"},
	}
	for _, c := range cases {
		fd, err := openstack{}.FailureDomain([]byte(c.spec))
		if err != nil || fd.String() != c.want {
			t.Errorf("%s: got %s (%v), want %s", c.name, fd, err, c.want)
		}
	}
	fds, err := FromSpec(&machinev1.FailureDomains{Platform: configv1.OpenStackPlatformType, OpenStack: []machinev1.OpenStackFailureDomain{
		{AvailabilityZone: "nova-az2"}, {AvailabilityZone: "nova-az1", RootVolume: &machinev1.RootVolume{AvailabilityZone: "cinder-az1", VolumeType: "fast"}}, {AvailabilityZone: "nova-az2"},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fds {
		got = append(got, f.String())
	}
	if want := []string{"OpenStack{availabilityZone=nova-az1, rootVolume={availabilityZone=cinder-az1, volumeType=fast}}", "OpenStack{availabilityZone=nova-az2}"}; !reflect.DeepEqual(got, want) {
		t.Errorf("FromSpec %q want %q", got, want)
	}
}

func TestOpenStackInject(t *testing.T) {
	cases := []struct {
		name    string
		spec    []byte
		fd      FailureDomain
		want    map[string]any // fields of the result
		wantErr string
	}{
		{name: "zone and root volume", spec: []byte(openstackSpec), fd: osFD("nova-az1", "cinder-az1", "fast-az1"),
			want: map[string]any{"availabilityZone": "nova-az1", "rootVolume": map[string]any{"availabilityZone": "cinder-az1", "diskSize": 100.0, "volumeType": "fast-az1"}, "flavor": "m1.xlarge"}},
		{name: "zone only keeps the template's root volume", spec: []byte(openstackSpec), fd: osFD("nova-az1", "", ""),
			want: map[string]any{"availabilityZone": "nova-az1", "rootVolume": map[string]any{"availabilityZone": "cinder-az0", "diskSize": 100.0, "volumeType": "fast-az0"}}},
		{name: "root volume only keeps the template's zone", spec: []byte(openstackSpec), fd: osFD("", "cinder-az2", "fast-az2"),
			want: map[string]any{"availabilityZone": "nova-az0", "rootVolume": map[string]any{"availabilityZone": "cinder-az2", "diskSize": 100.0, "volumeType": "fast-az2"}}},
		{name: "fields we do not know stay", spec: edit(t, openstackSpec, func(m map[string]any) { m["futureField"] = "x" }), fd: osFD("nova-az1", "", ""),
			want: map[string]any{"availabilityZone": "nova-az1", "futureField": "x"}},
		{name: "a root volume failure domain over a template that boots from the image",
			spec: edit(t, openstackSpec, func(m map[string]any) { delete(m, "rootVolume") }), fd: osFD("nova-az1", "cinder-az1", "fast-az1"),
			wantErr: "failure domain OpenStack{availabilityZone=nova-az1, rootVolume={availabilityZone=cinder-az1, volumeType=fast-az1}} sets a root volume but the template providerSpec has no rootVolume"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := openstack{}.Inject(c.spec, c.fd)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := decodeMap(t, out)
			for k, v := range c.want {
				if !reflect.DeepEqual(m[k], v) {
					t.Errorf("%s = %v, want %v", k, m[k], v)
				}
			}
			back, _ := openstack{}.FailureDomain(out)
			if !c.fd.Matches(back) {
				t.Errorf("injected %s, read back %s", c.fd, back)
			}
		})
	}
}

// TestOpenStackCompare: as upstream, OpenStack ignores nothing.
func TestOpenStackCompare(t *testing.T) {
	cases := []struct {
		name     string
		desired  []byte
		wantDiff []string
	}{
		{name: "identical", desired: []byte(openstackSpec)},
		{name: "zero values written or left out", desired: edit(t, openstackSpec, func(m map[string]any) { m["keyName"] = ""; m["configDrive"] = nil; delete(m, "metadata") })},
		{name: "flavor", desired: edit(t, openstackSpec, func(m map[string]any) { m["flavor"] = "m1.2xlarge" }),
			wantDiff: []string{`flavor: "m1.xlarge" -> "m1.2xlarge"`}},
		{name: "the image counts", desired: edit(t, openstackSpec, func(m map[string]any) { m["image"] = "ocp1-2g2xs-rhcos-new" }),
			wantDiff: []string{`image: "ocp1-2g2xs-rhcos" -> "ocp1-2g2xs-rhcos-new"`}},
		{name: "root volume type", desired: edit(t, openstackSpec, func(m map[string]any) { m["rootVolume"].(map[string]any)["volumeType"] = "slow" }),
			wantDiff: []string{`rootVolume.volumeType: "fast-az0" -> "slow"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, unknown, err := Compare(openstack{}, c.desired, []byte(openstackSpec))
			if err != nil || unknown != nil {
				t.Fatal(err, unknown)
			}
			var got []string
			for _, ch := range d {
				got = append(got, ch.String())
			}
			if !reflect.DeepEqual(got, c.wantDiff) {
				t.Errorf("diff %q want %q", got, c.wantDiff)
			}
		})
	}
}

func TestOpenStackMatches(t *testing.T) {
	observed, _ := openstack{}.FailureDomain([]byte(openstackSpec))
	cases := []struct {
		name     string
		declared FailureDomain
		want     bool
	}{
		{"everything", osFD("nova-az0", "cinder-az0", "fast-az0"), true},
		{"zone only accepts any root volume", osFD("nova-az0", "", ""), true},
		{"root volume only accepts any zone", osFD("", "cinder-az0", "fast-az0"), true},
		{"another zone", osFD("nova-az1", "cinder-az0", "fast-az0"), false},
		{"another volume zone", osFD("nova-az0", "cinder-az1", "fast-az0"), false},
		{"another volume type", osFD("nova-az0", "cinder-az0", "slow"), false},
	}
	for _, c := range cases {
		if got := c.declared.Matches(observed); got != c.want {
			t.Errorf("%s: %s.Matches(%s) = %v", c.name, c.declared, observed, got)
		}
	}
	if osFD("nova-az0", "", "").Matches(FailureDomain{}) {
		t.Error("a machine without a zone is not in nova-az0")
	}
}
