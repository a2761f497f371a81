package cpms

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	machinev1 "github.com/openshift/api/machine/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// upstreamDir holds openshift/api's own CRD test suites for the
// ControlPlaneMachineSets of AWS, Azure, GCP and OpenStack, copied unchanged from the
// pinned module by `make generate` (which lists the files and why those);
// `make verify` fails when they are not the module's.
const upstreamDir = "testdata/openshift-api"

// upstreamSuite is the format of openshift/api's CRD test suites (its
// tests/generator reads them): each test creates `initial` and expects the
// apiserver to store `expected` or to refuse it with `expectedError`.
type upstreamSuite struct {
	Name         string   `json:"name"`
	CRDName      string   `json:"crdName"`
	FeatureGates []string `json:"featureGates"`
	Tests        struct {
		OnCreate []upstreamTest `json:"onCreate"`
	} `json:"tests"`
}

type upstreamTest struct {
	Suite         string `json:"-"`
	Name          string `json:"name"`
	Initial       string `json:"initial"`
	Expected      string `json:"expected"`
	ExpectedError string `json:"expectedError"`
}

// defaultFeatureSetGates are the feature-gate conditions a suite may carry
// and still hold for the CRD we install (the Default feature set, where
// MachineAPIMigration is off: it is enabled only in TechPreviewNoUpgrade and
// DevPreviewNoUpgrade).
var defaultFeatureSetGates = map[string]bool{"-MachineAPIMigration": true}

// loadUpstream reads every onCreate test of the suites in upstreamDir, in
// file order.
func loadUpstream() ([]upstreamTest, error) {
	files, err := filepath.Glob(filepath.Join(upstreamDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []upstreamTest
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var s upstreamSuite
		if err := yaml.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if s.CRDName != "controlplanemachinesets.machine.openshift.io" {
			return nil, fmt.Errorf("%s: a suite of %q, not of the ControlPlaneMachineSet CRD", f, s.CRDName)
		}
		for _, g := range s.FeatureGates {
			if !defaultFeatureSetGates[g] {
				return nil, fmt.Errorf("%s: feature gate %q: the installed CRD is the Default feature set; decide whether this suite holds for it", f, g)
			}
		}
		for _, t := range s.Tests.OnCreate {
			t.Suite = s.Name
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no onCreate tests in %s: run make generate", upstreamDir)
	}
	return out, nil
}

// object is the test's initial object as it is written: unstructured, so
// that it reaches the apiserver unchanged. Through our Go types it would not:
// fields without omitempty come back as zero values (`platform: ""`, `type:
// ""`), and the apiserver answers another error than the upstream expects.
func (t upstreamTest) object() (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(t.Initial), &u.Object); err != nil {
		return nil, fmt.Errorf("%s / %s: %w", t.Suite, t.Name, err)
	}
	if gvk := u.GroupVersionKind(); gvk != machinev1.GroupVersion.WithKind("ControlPlaneMachineSet") {
		return nil, fmt.Errorf("%s / %s: a %s, not a ControlPlaneMachineSet", t.Suite, t.Name, gvk)
	}
	return u, nil
}

// apiserverMessage is the upstream's expectedError as this suite's
// kube-apiserver (1.36) words it. The upstream wrote its expectations against
// an earlier one, which printed the OpenAPI type of the value a CEL rule
// judged (`Invalid value: "object": <rule message>`) and quoted the value of
// its "some validation rules were not checked" marker (`Invalid value:
// "null"`); 1.36 prints neither the type nor the quotes. Nothing else is
// changed: the field paths and the rules' messages are the upstream's.
func apiserverMessage(expectedError string) string {
	return strings.NewReplacer(`Invalid value: "object": `, `Invalid value: `,
		`Invalid value: "null"`, `Invalid value: null`).Replace(expectedError)
}

// webhookRefusals are what the webhook answers to the upstream objects its
// schema admits, by upstream test name, in a cluster of three AWS masters.
// An upstream test of that kind missing here fails the spec: its expectation
// is to be decided, not defaulted.
//
// The schema-valid AWS and OpenStack objects declare failure domains (or
// none) but no provider spec (`providerSpec: {}`: the upstream tests the CRD
// alone). A set that does not say what its machines run can neither be
// compared with the masters there are nor create one, so the webhook refuses
// it and names the field, before any comparison with the cluster's machines.
var webhookRefusals = map[string]string{
	"Should accept an AWS failure domain with the subnet type ID and an ID provided (-MachineAPIMigration)":                     providerSpecRequired,
	"Should accept an AWS failure domain with the subnet type ARN and an ARN provided (-MachineAPIMigration)":                   providerSpecRequired,
	"Should accept an AWS failure domain with the subnet type Filters and a Filter provided (-MachineAPIMigration)":             providerSpecRequired,
	"Should accept no failureDomains (-MachineAPIMigration)":                                                                    providerSpecRequired,
	"Should accept an OpenStack failure domain with only the availabilityZone provided (-MachineAPIMigration)":                  providerSpecRequired,
	"Should accept an OpenStack failure domain with only the rootVolume provided (-MachineAPIMigration)":                        providerSpecRequired,
	"Should accept an OpenStack failure domain with only the root volume type provided (-MachineAPIMigration)":                  providerSpecRequired,
	"Should accept an OpenStack failure domain with both availabilityZone and rootVolume provided (-MachineAPIMigration)":       providerSpecRequired,
	"Should accept an OpenStack failure domain with both availabilityZone and root volume type provided (-MachineAPIMigration)": providerSpecRequired,
}

const providerSpecRequired = "spec.template.machines_v1beta1_machine_openshift_io.spec.providerSpec.value: Required value: the provider spec of the control-plane machines is required"

// documentedSets are ControlPlaneMachineSets of the platforms openshift/api
// has no CRD test suite for (vSphere, Nutanix), written from the documented
// schema (machine/v1 FailureDomains: a list of names for both, defined in
// the Infrastructure `cluster`), each with the message the upstream webhook
// answers it with (its webhooks.go and providerconfig), in the suite's
// cluster: an AWS Infrastructure that defines no vSphere or Nutanix failure
// domain.
var documentedSets = []struct {
	name, initial, want string
}{{
	name: "vSphere failure domains the Infrastructure does not define",
	initial: documentedSet(`
      failureDomains:
        platform: VSphere
        vsphere:
        - name: us-east-1a
      spec:
        providerSpec:
          value:
            apiVersion: machine.openshift.io/v1beta1
            kind: VSphereMachineProviderSpec
            numCPUs: 4
            memoryMiB: 16384
            diskGiB: 120
            template: c1-rhcos-us-east-1a
            network:
              devices:
              - networkName: vm-network
            workspace: {}`),
	want: `the failure domain with name "us-east-1a" is not defined in the infrastructure resource`,
}, {
	name: "vSphere without failure domains, a template that is not a full path",
	initial: documentedSet(`
      spec:
        providerSpec:
          value:
            apiVersion: machine.openshift.io/v1beta1
            kind: VSphereMachineProviderSpec
            numCPUs: 4
            memoryMiB: 16384
            diskGiB: 120
            template: /dc1/templates/c1-rhcos-us-east-1a
            network:
              devices:
              - networkName: vm-network
            workspace:
              server: vcenter.example.com
              datacenter: dc1
              datastore: /dc1/datastore/ds1
              folder: /dc1/vm/c1
              resourcePool: /dc1/host/cluster1/Resources`),
	want: `providerSpec.value.template: Invalid value: "/dc1/templates/c1-rhcos-us-east-1a": template must be provided as the full path`,
}, {
	name: "Nutanix failure domains the Infrastructure does not define",
	initial: documentedSet(`
      failureDomains:
        platform: Nutanix
        nutanix:
        - name: pe-a
      spec:
        providerSpec:
          value:
            apiVersion: machine.openshift.io/v1
            kind: NutanixMachineProviderConfig
            vcpusPerSocket: 1
            vcpuSockets: 4
            memorySize: 16Gi
            systemDiskSize: 120Gi
            image:
              type: name
              name: c1-rhcos
            cluster:
              type: uuid
              uuid: 0005b0f1-8f43-a0f2-02b7-3cecef193712
            subnets:
            - type: uuid
              uuid: c7938dc6-7659-453e-a688-e26020c68e43`),
	want: `the failure domain with name "pe-a" is not defined in the infrastructure resource`,
}}

// documentedSet is a set of three masters with the given template body.
func documentedSet(template string) string {
	return `apiVersion: machine.openshift.io/v1
kind: ControlPlaneMachineSet
spec:
  replicas: 3
  state: Active
  strategy:
    type: RollingUpdate
  selector:
    matchLabels:
      machine.openshift.io/cluster-api-machine-role: master
      machine.openshift.io/cluster-api-machine-type: master
  template:
    machineType: machines_v1beta1_machine_openshift_io
    machines_v1beta1_machine_openshift_io:
      metadata:
        labels:
          machine.openshift.io/cluster-api-cluster: c1
          machine.openshift.io/cluster-api-machine-role: master
          machine.openshift.io/cluster-api-machine-type: master` + template + "\n"
}
