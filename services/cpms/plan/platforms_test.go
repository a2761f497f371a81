package plan

import (
	"fmt"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestPlatformsThroughThePlanner: for each platform, a set whose machines
// match it replaces nothing, a boot-image-only change replaces nothing, and
// a size change replaces index 0 into index 0's failure domain.
func TestPlatformsThroughThePlanner(t *testing.T) {
	cases := []struct {
		name string
		// spec renders a provider spec with a size, a zone and a boot image.
		spec  func(size, zone, image string) string
		fds   *machinev1.FailureDomains
		zones []string
		// zoneField is how index 0's zone appears in the created spec.
		zoneField string
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
			name: "generic, no failure domains",
			spec: func(size, _, image string) string {
				return fmt.Sprintf(`{"kind":"NutanixMachineProviderConfig","vcpusPerSocket":%q,"image":{"name":%q}}`, size, image)
			},
			zones: []string{"", "", ""},
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
			if out := w.plan(); out.Action != nil {
				t.Fatalf("matching set acted: %s; %v", describe(out.Action), out.Indexes)
			}
			w.expectCond("Progressing", "False", ReasonAllReplicasUpdated)

			newImage := c.spec("small", c.zones[2], "img-2")
			tmpl.Spec.ProviderSpec.Value.Raw = []byte(newImage)
			if c.name != "generic, no failure domains" {
				if out := w.plan(); out.Action != nil {
					t.Fatalf("a boot image change replaced a machine: %s", describe(out.Action))
				}
			}

			tmpl.Spec.ProviderSpec.Value.Raw = []byte(c.spec("large", c.zones[2], "img-1"))
			out := w.plan()
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
