package plan

import (
	"fmt"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// vsphereInfra and nutanixInfra define the failure domains the vSphere and
// Nutanix sets below name, in the shape of the OpenShift documentation.
const vsphereInfra = `
apiVersion: config.openshift.io/v1
kind: Infrastructure
metadata: {name: cluster}
spec:
  platformSpec:
    type: VSphere
    vsphere:
      vcenters: [{server: vc.example.com, port: 443, datacenters: [dc1]}]
      failureDomains:
      - {name: fd-a, region: r, zone: a, server: vc.example.com, topology: {datacenter: dc1, computeCluster: /dc1/host/a, networks: [net-a], datastore: /dc1/datastore/a}}
      - {name: fd-b, region: r, zone: b, server: vc.example.com, topology: {datacenter: dc1, computeCluster: /dc1/host/b, networks: [net-b], datastore: /dc1/datastore/b}}
      - {name: fd-c, region: r, zone: c, server: vc.example.com, topology: {datacenter: dc1, computeCluster: /dc1/host/c, networks: [net-c], datastore: /dc1/datastore/c}}
status: {infrastructureName: c1-x7k2p, platform: VSphere}
`

const nutanixInfra = `
apiVersion: config.openshift.io/v1
kind: Infrastructure
metadata: {name: cluster}
spec:
  platformSpec:
    type: Nutanix
    nutanix:
      prismCentral: {address: pc.example.com, port: 9440}
      prismElements: [{name: pe-a, endpoint: {address: a.example.com, port: 9440}}]
      failureDomains:
      - {name: fd-a, cluster: {type: Name, name: pe-a}, subnets: [{type: Name, name: subnet-a}]}
      - {name: fd-b, cluster: {type: Name, name: pe-b}, subnets: [{type: Name, name: subnet-b}]}
      - {name: fd-c, cluster: {type: Name, name: pe-c}, subnets: [{type: Name, name: subnet-c}]}
status: {infrastructureName: c1-x7k2p, platform: Nutanix}
`

func infrastructure(t *testing.T, doc string) *configv1.Infrastructure {
	t.Helper()
	var infra configv1.Infrastructure
	if err := yaml.UnmarshalStrict([]byte(doc), &infra); err != nil {
		t.Fatal(err)
	}
	return &infra
}

// TestPlatformsThroughThePlanner: for each platform, a set whose machines
// match it replaces nothing, a boot-image-only change replaces nothing where
// the platform ignores the boot image, and a size change replaces index 0
// into index 0's failure domain.
func TestPlatformsThroughThePlanner(t *testing.T) {
	cases := []struct {
		name string
		// spec renders a provider spec with a size, a zone and a boot image.
		spec  func(size, zone, image string) string
		fds   *machinev1.FailureDomains
		infra *configv1.Infrastructure
		zones []string
		// zoneField is how index 0's zone appears in the created spec.
		zoneField string
		// imageCounts: the platform compares the boot image (as upstream).
		imageCounts bool
	}{
		{
			name: "Azure",
			spec: func(size, zone, image string) string {
				return fmt.Sprintf(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AzureMachineProviderSpec","vmSize":%q,"zone":%q,`+
					`"image":{"resourceID":%q},"osDisk":{"diskSizeGB":1024,"osType":"Linux"},"internalLoadBalancer":"c1-internal","subnet":"c1-master-subnet"}`, size, zone, image)
			},
			fds:   &machinev1.FailureDomains{Platform: configv1.AzurePlatformType, Azure: &[]machinev1.AzureFailureDomain{{Zone: "1"}, {Zone: "2"}, {Zone: "3"}}},
			zones: []string{"1", "2", "3"}, zoneField: `"zone":"1"`,
		},
		{
			name: "GCP",
			spec: func(size, zone, image string) string {
				return fmt.Sprintf(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"GCPMachineProviderSpec","machineType":%q,"zone":%q,"region":"us-central1",`+
					`"disks":[{"autoDelete":true,"boot":true,"image":%q,"sizeGb":128,"type":"pd-ssd"}],"targetPools":["c1-api"]}`, size, zone, image)
			},
			fds:   &machinev1.FailureDomains{Platform: configv1.GCPPlatformType, GCP: &[]machinev1.GCPFailureDomain{{Zone: "us-central1-a"}, {Zone: "us-central1-b"}, {Zone: "us-central1-c"}}},
			zones: []string{"us-central1-a", "us-central1-b", "us-central1-c"}, zoneField: `"zone":"us-central1-a"`,
		},
		{
			// The template names no placement; the failure domain brings
			// the workspace, network and template. The machines carry their
			// template by inventory path and their own static addresses,
			// which do not count. The "boot image" is the folder of the
			// template's path, which the failure domain's template replaces.
			name: "vSphere",
			spec: func(size, zone, image string) string {
				return fmt.Sprintf(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"VSphereMachineProviderSpec","snapshot":%q,"numCPUs":4,"memoryMiB":16384,`+
					`"template":"/dc1/%s/c1-x7k2p-rhcos-r-%s","network":{"devices":[{"networkName":"net-%[3]s","ipAddrs":["10.0.0.1%[3]s/24"],"gateway":"10.0.0.1"}]},`+
					`"workspace":{"server":"vc.example.com","datacenter":"dc1","datastore":"/dc1/datastore/%[3]s","folder":"/dc1/vm/c1-x7k2p","resourcePool":"/dc1/host/%[3]s/Resources"}}`, size, image, zone)
			},
			fds:   &machinev1.FailureDomains{Platform: configv1.VSpherePlatformType, VSphere: []machinev1.VSphereFailureDomain{{Name: "fd-a"}, {Name: "fd-b"}, {Name: "fd-c"}}},
			infra: infrastructure(t, vsphereInfra),
			zones: []string{"a", "b", "c"}, zoneField: `"datastore":"/dc1/datastore/a"`,
		},
		{
			name: "OpenStack",
			spec: func(size, zone, image string) string {
				return fmt.Sprintf(`{"apiVersion":"machine.openshift.io/v1alpha1","kind":"OpenstackProviderSpec","flavor":%q,"availabilityZone":"nova-%s","image":%q,`+
					`"rootVolume":{"diskSize":100,"availabilityZone":"cinder-%[2]s","volumeType":"fast"}}`, size, zone, image)
			},
			fds: &machinev1.FailureDomains{Platform: configv1.OpenStackPlatformType, OpenStack: []machinev1.OpenStackFailureDomain{
				{AvailabilityZone: "nova-a", RootVolume: &machinev1.RootVolume{AvailabilityZone: "cinder-a", VolumeType: "fast"}},
				{AvailabilityZone: "nova-b", RootVolume: &machinev1.RootVolume{AvailabilityZone: "cinder-b", VolumeType: "fast"}},
				{AvailabilityZone: "nova-c", RootVolume: &machinev1.RootVolume{AvailabilityZone: "cinder-c", VolumeType: "fast"}},
			}},
			zones: []string{"a", "b", "c"}, zoneField: `"availabilityZone":"cinder-a"`, imageCounts: true,
		},
		{
			name: "Nutanix",
			spec: func(size, zone, image string) string {
				return fmt.Sprintf(`{"apiVersion":"machine.openshift.io/v1","kind":"NutanixMachineProviderConfig","bootType":%q,"vcpuSockets":8,"memorySize":"16Gi",`+
					`"cluster":{"type":"name","name":"pe-%s"},"subnets":[{"type":"name","name":"subnet-%[2]s"}],"failureDomain":{"name":"fd-%[2]s"},"image":{"type":"name","name":%q}}`, size, zone, image)
			},
			fds:   &machinev1.FailureDomains{Platform: configv1.NutanixPlatformType, Nutanix: []machinev1.NutanixFailureDomainReference{{Name: "fd-a"}, {Name: "fd-b"}, {Name: "fd-c"}}},
			infra: infrastructure(t, nutanixInfra),
			zones: []string{"a", "b", "c"}, zoneField: `"failureDomain":{"name":"fd-a"}`, imageCounts: true,
		},
		{
			name: "generic, no failure domains",
			spec: func(size, _, image string) string {
				return fmt.Sprintf(`{"kind":"BareMetalMachineProviderSpec","hostSelector":{"matchLabels":{"size":%q}},"image":{"url":%q}}`, size, image)
			},
			zones: []string{"", "", ""}, imageCounts: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			tmpl := w.cpms.Spec.Template.OpenShiftMachineV1Beta1Machine
			tmpl.FailureDomains = c.fds
			tmpl.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(c.spec("small", c.zones[0], "img-1"))}
			for i, z := range c.zones {
				w.machines[fmt.Sprintf("c1-master-%d", i)].Spec.ProviderSpec.Value.Raw = []byte(c.spec("small", z, "img-1"))
			}
			plan := func() Output {
				in := w.input()
				in.Infrastructure = c.infra
				return Plan(in)
			}
			out := plan()
			if out.Action != nil {
				t.Fatalf("matching set acted: %s; %v", describe(out.Action), out.Indexes)
			}
			if p := meta.FindStatusCondition(out.Status.Conditions, ConditionProgressing); p == nil || p.Status != "False" || p.Reason != ReasonAllReplicasUpdated {
				t.Fatalf("Progressing %+v, want False/%s", p, ReasonAllReplicasUpdated)
			}

			newImage := c.spec("small", c.zones[2], "img-2")
			tmpl.Spec.ProviderSpec.Value.Raw = []byte(newImage)
			if out := plan(); (out.Action != nil) != c.imageCounts {
				t.Fatalf("after a boot image change: %s (the platform compares the image: %v)", describe(out.Action), c.imageCounts)
			}

			tmpl.Spec.ProviderSpec.Value.Raw = []byte(c.spec("large", c.zones[2], "img-1"))
			out = plan()
			if out.Action == nil || out.Action.Kind != CreateMachine || !strings.HasSuffix(out.Action.Machine.Name, "-0") {
				t.Fatalf("size change: %s", describe(out.Action))
			}
			raw := string(out.Action.Machine.Spec.ProviderSpec.Value.Raw)
			if !strings.Contains(raw, `"large"`) || !strings.Contains(raw, c.zoneField) {
				t.Fatalf("created spec %s lacks the size or %s", raw, c.zoneField)
			}
			if !strings.Contains(out.Action.Event.Note, `"small" -> "large"`) {
				t.Fatalf("event %q", out.Action.Event.Note)
			}
		})
	}
}

// TestNamedFailureDomainsNeedTheInfrastructure: a vSphere set whose failure
// domains cannot be resolved halts (Degraded/InvalidSpec, naming what is
// missing) rather than guessing where machines go.
func TestNamedFailureDomainsNeedTheInfrastructure(t *testing.T) {
	noFD := infrastructure(t, vsphereInfra)
	noFD.Spec.PlatformSpec.VSphere.FailureDomains = noFD.Spec.PlatformSpec.VSphere.FailureDomains[:2]
	cases := []struct {
		name  string
		infra *configv1.Infrastructure
		msg   string
	}{
		{"no Infrastructure", nil, "the Infrastructure cluster (config.openshift.io/v1) defines them and was not available"},
		{"a name it does not define", noFD, `the failure domain with name "fd-c" is not defined in the infrastructure resource`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			tmpl := w.cpms.Spec.Template.OpenShiftMachineV1Beta1Machine
			tmpl.FailureDomains = &machinev1.FailureDomains{Platform: configv1.VSpherePlatformType, VSphere: []machinev1.VSphereFailureDomain{{Name: "fd-a"}, {Name: "fd-b"}, {Name: "fd-c"}}}
			tmpl.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(`{"kind":"VSphereMachineProviderSpec","numCPUs":8}`)}
			in := w.input()
			in.Infrastructure = c.infra
			out := Plan(in)
			if out.Action != nil {
				t.Fatalf("acted: %s", describe(out.Action))
			}
			d := meta.FindStatusCondition(out.Status.Conditions, ConditionDegraded)
			if d == nil || d.Status != "True" || d.Reason != ReasonInvalidSpec || !strings.Contains(d.Message, c.msg) {
				t.Fatalf("Degraded %+v, want True/%s with %q", d, ReasonInvalidSpec, c.msg)
			}
		})
	}
}
