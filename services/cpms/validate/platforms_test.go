package validate

import (
	"fmt"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// The sets below follow the OpenShift documentation's control plane machine
// set examples for each platform; the Infrastructures its pages on failure
// domains.

const setHead = `
apiVersion: machine.openshift.io/v1
kind: ControlPlaneMachineSet
metadata:
  name: cluster
  namespace: openshift-machine-api
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
          machine.openshift.io/cluster-api-machine-type: master
`

// vsphereSet: the template as the upstream generator writes it once the
// Infrastructure defines failure domains (no placement of its own).
const vsphereSet = setHead + `
      failureDomains:
        platform: VSphere
        vsphere:
        - name: us-east-1a
        - name: us-east-1b
        - name: us-east-1c
      spec:
        providerSpec:
          value:
            apiVersion: machine.openshift.io/v1beta1
            kind: VSphereMachineProviderSpec
            credentialsSecret:
              name: vsphere-cloud-credentials
            diskGiB: 120
            memoryMiB: 16384
            metadata:
              creationTimestamp: null
            network:
              devices: null
            numCPUs: 4
            numCoresPerSocket: 4
            snapshot: ""
            template: ""
            userDataSecret:
              name: master-user-data
            workspace: {}
`

const vsphereInfra = `
apiVersion: config.openshift.io/v1
kind: Infrastructure
metadata:
  name: cluster
spec:
  platformSpec:
    type: VSphere
    vsphere:
      vcenters:
      - server: vcenter.example.com
        port: 443
        datacenters: [dc1]
      failureDomains:
      - name: us-east-1a
        region: us-east
        zone: us-east-1a
        server: vcenter.example.com
        topology: {datacenter: dc1, computeCluster: /dc1/host/cluster1, networks: [ci-vlan-1], datastore: /dc1/datastore/ds1}
      - name: us-east-1b
        region: us-east
        zone: us-east-1b
        server: vcenter.example.com
        topology: {datacenter: dc1, computeCluster: /dc1/host/cluster2, networks: [ci-vlan-2], datastore: /dc1/datastore/ds2}
      - name: us-east-1c
        region: us-east
        zone: us-east-1c
        server: vcenter.example.com
        topology: {datacenter: dc1, computeCluster: /dc1/host/cluster3, networks: [ci-vlan-3], datastore: /dc1/datastore/ds3}
status:
  infrastructureName: c1-x7k2p
  platform: VSphere
`

const openstackSet = setHead + `
      failureDomains:
        platform: OpenStack
        openstack:
        - availabilityZone: nova-az2
          rootVolume: {availabilityZone: cinder-az2, volumeType: fast-az2}
        - availabilityZone: nova-az0
          rootVolume: {availabilityZone: cinder-az0, volumeType: fast-az0}
        - availabilityZone: nova-az1
          rootVolume: {availabilityZone: cinder-az1, volumeType: fast-az1}
      spec:
        providerSpec:
          value:
            apiVersion: machine.openshift.io/v1alpha1
            kind: OpenstackProviderSpec
            cloudName: openstack
            cloudsSecret:
              name: openstack-cloud-credentials
              namespace: openshift-machine-api
            flavor: m1.xlarge
            image: ocp1-2g2xs-rhcos
            metadata:
              creationTimestamp: null
            networks:
            - filter: {}
              subnets:
              - filter:
                  name: ocp1-2g2xs-nodes
                  tags: openshiftClusterID=ocp1-2g2xs
            rootVolume:
              diskSize: 100
            securityGroups:
            - filter: {}
              name: ocp1-2g2xs-master
            serverGroupName: ocp1-2g2xs-master
            serverMetadata:
              Name: ocp1-2g2xs-master
              openshiftClusterID: ocp1-2g2xs
            tags:
            - openshiftClusterID=ocp1-2g2xs
            trunk: true
            userDataSecret:
              name: master-user-data
`

const nutanixSet = setHead + `
      failureDomains:
        platform: Nutanix
        nutanix:
        - name: fd-pe1
        - name: fd-pe2
      spec:
        providerSpec:
          value:
            apiVersion: machine.openshift.io/v1
            kind: NutanixMachineProviderConfig
            bootType: ""
            categories: null
            cluster:
              type: ""
            credentialsSecret:
              name: nutanix-credentials
            image:
              name: c1-x7k2p-rhcos
              type: name
            memorySize: 16Gi
            metadata:
              creationTimestamp: null
            project:
              type: ""
            subnets: []
            systemDiskSize: 120Gi
            userDataSecret:
              name: master-user-data
            vcpuSockets: 8
            vcpusPerSocket: 1
`

const nutanixInfra = `
apiVersion: config.openshift.io/v1
kind: Infrastructure
metadata:
  name: cluster
spec:
  platformSpec:
    type: Nutanix
    nutanix:
      prismCentral: {address: pc.example.com, port: 9440}
      prismElements:
      - name: pe1
        endpoint: {address: pe1.example.com, port: 9440}
      - name: pe2
        endpoint: {address: pe2.example.com, port: 9440}
      failureDomains:
      - name: fd-pe1
        cluster: {type: Name, name: pe1}
        subnets: [{type: Name, name: pe1-subnet}]
      - name: fd-pe2
        cluster: {type: Name, name: pe2}
        subnets: [{type: Name, name: pe2-subnet}]
status:
  infrastructureName: c1-x7k2p
  platform: Nutanix
`

func loadInfra(t *testing.T, doc string) *configv1.Infrastructure {
	t.Helper()
	var infra configv1.Infrastructure
	if err := yaml.UnmarshalStrict([]byte(doc), &infra); err != nil {
		t.Fatal(err)
	}
	return &infra
}

func machine(name, spec string) machinev1beta1.Machine {
	m := awsMachine(name, "1a", "m6i.xlarge")
	m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(spec)}
	return m
}

// vsphereMasters are the installer's machines, machine i in cluster<n>,
// datastore ds<n> for the given n.
func vsphereMasters(zones ...int) []machinev1beta1.Machine {
	var out []machinev1beta1.Machine
	for i, n := range zones {
		out = append(out, machine(fmt.Sprintf("c1-master-%d", i), fmt.Sprintf(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"VSphereMachineProviderSpec",`+
			`"credentialsSecret":{"name":"vsphere-cloud-credentials"},"diskGiB":120,"memoryMiB":16384,"numCPUs":4,"numCoresPerSocket":4,`+
			`"network":{"devices":[{"networkName":"ci-vlan-%[1]d","ipAddrs":["10.0.%[1]d.10/24"],"gateway":"10.0.%[1]d.1","nameservers":["10.0.0.2"]}]},`+
			`"snapshot":"","template":"/dc1/vm/c1-x7k2p-rhcos-us-east-us-east-1%[2]c","userDataSecret":{"name":"master-user-data"},`+
			`"workspace":{"datacenter":"dc1","datastore":"/dc1/datastore/ds%[1]d","folder":"/dc1/vm/c1-x7k2p","resourcePool":"/dc1/host/cluster%[1]d/Resources","server":"vcenter.example.com"}}`,
			n, rune('a'+n-1))))
	}
	return out
}

func openstackMasters(zones ...int) []machinev1beta1.Machine {
	var out []machinev1beta1.Machine
	for i, n := range zones {
		out = append(out, machine(fmt.Sprintf("c1-master-%d", i), fmt.Sprintf(`{"apiVersion":"machine.openshift.io/v1alpha1","kind":"OpenstackProviderSpec",`+
			`"availabilityZone":"nova-az%[1]d","flavor":"m1.xlarge","image":"ocp1-2g2xs-rhcos","rootVolume":{"availabilityZone":"cinder-az%[1]d","diskSize":100,"volumeType":"fast-az%[1]d"}}`, n)))
	}
	return out
}

func nutanixMasters(fds ...int) []machinev1beta1.Machine {
	var out []machinev1beta1.Machine
	for i, n := range fds {
		out = append(out, machine(fmt.Sprintf("c1-master-%d", i), fmt.Sprintf(`{"apiVersion":"machine.openshift.io/v1","kind":"NutanixMachineProviderConfig",`+
			`"cluster":{"type":"name","name":"pe%[1]d"},"failureDomain":{"name":"fd-pe%[1]d"},"image":{"type":"name","name":"c1-x7k2p-rhcos"},`+
			`"memorySize":"16Gi","subnets":[{"type":"name","name":"pe%[1]d-subnet"}],"systemDiskSize":"120Gi","vcpuSockets":8,"vcpusPerSocket":1}`, n)))
	}
	return out
}

// checkResult: wantErrs are the rendered errors, in order, each as fragments
// separated by " ~ " that must all appear in it; wantWarn fragments of the
// warnings, one each.
func checkResult(t *testing.T, warnings []string, errs field.ErrorList, wantErrs, wantWarn []string) {
	t.Helper()
	if len(errs) != len(wantErrs) {
		t.Fatalf("errors:\n  %s\nwant %d: %q", errs.ToAggregate(), len(wantErrs), wantErrs)
	}
	for i, want := range wantErrs {
		for _, frag := range strings.Split(want, " ~ ") {
			if !strings.Contains(errs[i].Error(), frag) {
				t.Errorf("error %d is\n  %s\nwant it to contain %q", i, errs[i].Error(), frag)
			}
		}
	}
	if len(warnings) != len(wantWarn) {
		t.Fatalf("warnings %q, want %q", warnings, wantWarn)
	}
	for i, w := range wantWarn {
		if !strings.Contains(warnings[i], w) {
			t.Errorf("warning %d is %q, want it to contain %q", i, warnings[i], w)
		}
	}
}

func TestSetPlatforms(t *testing.T) {
	vsInfra := loadInfra(t, vsphereInfra)
	vsInfraWithoutFDs := vsInfra.DeepCopy()
	vsInfraWithoutFDs.Spec.PlatformSpec.VSphere.FailureDomains = nil
	ntxInfra := loadInfra(t, nutanixInfra)
	const value = "spec.template.machines_v1beta1_machine_openshift_io.spec.providerSpec.value"
	const fds = "spec.template.machines_v1beta1_machine_openshift_io.failureDomains"
	noFailureDomains := func(c *machinev1.ControlPlaneMachineSet) {
		c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains = nil
	}
	cases := []struct {
		name     string
		doc      string
		infra    *configv1.Infrastructure
		mutate   func(*machinev1.ControlPlaneMachineSet)
		machines []machinev1beta1.Machine
		wantErrs []string
		wantWarn []string
	}{
		// vSphere.
		{name: "vSphere: the generated set over the installer's machines", doc: vsphereSet, infra: vsInfra, machines: vsphereMasters(1, 2, 3)},
		{name: "vSphere: a failure domain the Infrastructure does not define", doc: vsphereSet, infra: vsInfra, machines: vsphereMasters(1, 2, 3),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains.VSphere[1].Name = "eu-west-1a"
			},
			wantErrs: []string{fds + `.vsphere[1].name: Invalid value: "eu-west-1a": the failure domain with name "eu-west-1a" is not defined in the infrastructure resource`}},
		{name: "vSphere: no Infrastructure", doc: vsphereSet, machines: vsphereMasters(1, 2, 3),
			wantErrs: []string{fds + `.platform: Invalid value: "VSphere": failure domains for platform VSphere are names: the Infrastructure cluster (config.openshift.io/v1) defines them and was not available`}},
		{name: "vSphere: a machine outside every declared failure domain", doc: vsphereSet, infra: vsInfra, machines: vsphereMasters(1, 2, 4),
			wantErrs: []string{fds + `: Invalid value: ~ machine c1-master-2 is in VSphere{server=vcenter.example.com, datacenter=dc1, datastore=/dc1/datastore/ds4, ~ which the set does not declare: activating would move it to VSphere{name=us-east-1c}`}},
		{name: "vSphere: placement and networks in the template under failure domains", doc: vsphereSet, infra: vsInfra, machines: vsphereMasters(1, 2, 3),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				setProviderSpec(c, func(t map[string]any) {
					t["network"] = map[string]any{"devices": []any{map[string]any{"addressesFromPools": []any{map[string]any{"group": "ipam.cluster.x-k8s.io", "resource": "IPPool", "name": "p"}}}, map[string]any{"networkName": "ci-vlan-1"}}}
					t["workspace"] = map[string]any{"datacenter": "dc1", "server": "vcenter.example.com", "folder": "/dc1/vm/x", "resourcePool": "/dc1/host/cluster1/Resources"}
					t["template"] = "/dc1/vm/rhcos"
				})
			},
			wantErrs: []string{
				value + `.network.devices[1].networkName: Forbidden: network devices should not be set when control plane nodes are in a failure domain`,
				value + `.workspace.datacenter: Forbidden: workspace fields should not be set when control plane nodes are in a failure domain`,
				value + `.workspace.server: Forbidden: workspace fields should not be set when control plane nodes are in a failure domain`,
			},
			wantWarn: []string{
				value + `.template: template field is configured and may be ignored if configured in the failure domain.`,
				value + `.workspace.folder: folder field is configured and may be ignored if configured in the failure domain.`,
				value + `.workspace.resourcePool: resourcePool field is configured and may be ignored if configured in the failure domain.`,
			}},
		{name: "vSphere: a template path that is not the full inventory path", doc: vsphereSet, infra: vsInfra, machines: vsphereMasters(1, 2, 3),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				setProviderSpec(c, func(t map[string]any) { t["template"] = "vm/rhcos" })
			},
			wantErrs: []string{value + `.template: Invalid value: "vm/rhcos": template must be provided as the full path`},
			wantWarn: []string{value + `.template: template field is configured`}},
		{name: "vSphere: an older set without failure domains keeps its own placement", doc: vsphereSet, infra: vsInfra, machines: vsphereMasters(1, 1, 1),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				noFailureDomains(c)
				c.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value = vsphereMasters(1)[0].Spec.ProviderSpec.Value
			},
			wantWarn: []string{value + `.template: template field is configured`}},
		{name: "vSphere: without failure domains anywhere, a template name alone is fine, a partial path is not", doc: vsphereSet, infra: vsInfraWithoutFDs, machines: vsphereMasters(1, 1, 1),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				noFailureDomains(c)
				c.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value = vsphereMasters(1)[0].Spec.ProviderSpec.Value
				setProviderSpec(c, func(t map[string]any) { t["template"] = "dc1/rhcos" })
			},
			wantErrs: []string{value + `.template: Invalid value: "dc1/rhcos": template must be provided as the full path`}},
		{name: "vSphere: without failure domains, a machine elsewhere than the template", doc: vsphereSet, infra: vsInfraWithoutFDs, machines: vsphereMasters(1, 2, 1),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				noFailureDomains(c)
				c.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value = vsphereMasters(1)[0].Spec.ProviderSpec.Value
			},
			wantErrs: []string{value + `: Invalid value: ~ machine c1-master-1 is in VSphere{ ~ datastore=/dc1/datastore/ds2`}},

		// OpenStack.
		{name: "OpenStack: the documented set over its machines", doc: openstackSet, machines: openstackMasters(0, 1, 2)},
		{name: "OpenStack: a small etcd block device", doc: openstackSet, machines: openstackMasters(0, 1, 2),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				setProviderSpec(c, func(t map[string]any) {
					t["additionalBlockDevices"] = []any{
						map[string]any{"name": "data", "sizeGiB": 5, "storage": map[string]any{"type": "Local"}},
						map[string]any{"name": "etcd", "sizeGiB": 9, "storage": map[string]any{"type": "Local"}},
					}
				})
			},
			wantErrs: []string{value + `.additionalBlockDevices[1].sizeGiB: Invalid value: 9: etcd block device size must be at least 10 GiB`}},
		{name: "OpenStack: a 10 GiB etcd block device", doc: openstackSet, machines: openstackMasters(0, 1, 2),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				setProviderSpec(c, func(t map[string]any) {
					t["additionalBlockDevices"] = []any{map[string]any{"name": "etcd", "sizeGiB": 10, "storage": map[string]any{"type": "Local"}}}
				})
			}},
		{name: "OpenStack: root-volume failure domains over a template that boots from the image", doc: openstackSet, machines: openstackMasters(0, 1, 2),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				setProviderSpec(c, func(t map[string]any) { delete(t, "rootVolume") })
			},
			// Each error names the entry as written (nova-az0 is the second).
			wantErrs: []string{
				fds + `.openstack[1]: Invalid value: "OpenStack{availabilityZone=nova-az0, ~ sets a root volume but the template providerSpec has no rootVolume`,
				fds + `.openstack[2]: Invalid value: "OpenStack{availabilityZone=nova-az1,`,
				fds + `.openstack[0]: Invalid value: "OpenStack{availabilityZone=nova-az2,`,
			}},
		{name: "OpenStack: a machine in an undeclared zone", doc: openstackSet, machines: openstackMasters(0, 1, 3),
			wantErrs: []string{fds + `: Invalid value: ~ machine c1-master-2 is in OpenStack{availabilityZone=nova-az3, rootVolume={availabilityZone=cinder-az3, volumeType=fast-az3}}, which the set does not declare`}},

		// Nutanix.
		{name: "Nutanix: the documented set over its machines", doc: nutanixSet, infra: ntxInfra, machines: nutanixMasters(1, 2, 1)},
		{name: "Nutanix: a failure domain the Infrastructure does not define", doc: nutanixSet, infra: ntxInfra, machines: nutanixMasters(1, 2, 1),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains.Nutanix = append(c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains.Nutanix,
					machinev1.NutanixFailureDomainReference{Name: "fd-pe3"})
			},
			wantErrs: []string{fds + `.nutanix[2].name: Invalid value: "fd-pe3": the failure domain with name "fd-pe3" is not defined in the infrastructure resource`}},
		{name: "Nutanix: a machine in a failure domain the set does not declare", doc: nutanixSet, infra: ntxInfra, machines: nutanixMasters(1, 2, 1),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains.Nutanix = []machinev1.NutanixFailureDomainReference{{Name: "fd-pe1"}}
			},
			wantErrs: []string{fds + `: Invalid value: "Nutanix{name=fd-pe2}": machine c1-master-1 is in Nutanix{name=fd-pe2}, which the set does not declare`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cpms := load(t, tc.doc)
			if tc.mutate != nil {
				tc.mutate(cpms)
			}
			if !NeedsInfrastructure(nil, cpms) && tc.infra != nil {
				t.Fatal("the case gives an Infrastructure the webhook would not read")
			}
			warnings, errs := Set(nil, cpms, tc.machines, tc.infra)
			checkResult(t, warnings, errs, tc.wantErrs, tc.wantWarn)
		})
	}
}

func TestNeedsInfrastructure(t *testing.T) {
	deleting := func(c *machinev1.ControlPlaneMachineSet) { c.DeletionTimestamp = &metav1.Time{} }
	cases := []struct {
		name   string
		doc    string
		old    func(*machinev1.ControlPlaneMachineSet) // nil: a create
		mutate func(*machinev1.ControlPlaneMachineSet)
		want   bool
	}{
		{name: "AWS", doc: awsSet},
		{name: "OpenStack", doc: openstackSet},
		{name: "vSphere with failure domains", doc: vsphereSet, want: true},
		{name: "vSphere without failure domains: the template rules depend on the Infrastructure's", doc: vsphereSet, want: true,
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains = nil
			}},
		{name: "Nutanix", doc: nutanixSet, want: true},
		{name: "an update that leaves the spec alone", doc: vsphereSet, old: func(*machinev1.ControlPlaneMachineSet) {},
			mutate: func(c *machinev1.ControlPlaneMachineSet) { c.Annotations = map[string]string{"a": "b"} }},
		{name: "an update of the spec", doc: vsphereSet, want: true, old: func(*machinev1.ControlPlaneMachineSet) {},
			mutate: func(c *machinev1.ControlPlaneMachineSet) { c.Spec.Strategy.Type = machinev1.OnDelete }},
		{name: "a set being deleted", doc: vsphereSet, old: deleting, mutate: deleting},
	}
	for _, tc := range cases {
		cpms := load(t, tc.doc)
		var old *machinev1.ControlPlaneMachineSet
		if tc.old != nil {
			old = cpms.DeepCopy()
			tc.old(old)
		}
		if tc.mutate != nil {
			tc.mutate(cpms)
		}
		if got := NeedsInfrastructure(old, cpms); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
