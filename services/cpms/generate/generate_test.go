package generate_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1alpha1 "github.com/openshift/api/machine/v1alpha1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/services/cpms/generate"
	"github.com/upshift-io/upshift/services/cpms/plan"
	"github.com/upshift-io/upshift/services/cpms/platform"
	"github.com/upshift-io/upshift/services/cpms/validate"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// machine is an installer's control-plane Machine made from spec (an
// openshift/api provider type), created minutes after t0.
func machine(name string, minutes int, spec any) machinev1beta1.Machine {
	raw, err := json.Marshal(spec)
	if err != nil {
		panic(err)
	}
	return machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: validate.Namespace,
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(minutes) * time.Minute)),
			Labels: map[string]string{
				plan.ClusterIDLabel: "c1-x7k2p", plan.RoleLabel: "master", plan.TypeLabel: "master",
			},
		},
		Spec: machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: raw}}},
	}
}

func infra(pt configv1.PlatformType, yamlSpec string) *configv1.Infrastructure {
	i := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	if yamlSpec != "" {
		if err := yaml.UnmarshalStrict([]byte(yamlSpec), &i.Spec); err != nil {
			panic(err)
		}
	}
	i.Spec.PlatformSpec.Type = pt
	i.Status.InfrastructureName = "c1-x7k2p"
	i.Status.PlatformStatus = &configv1.PlatformStatus{Type: pt}
	return i
}

var secrets = struct{ creds, userData *corev1.LocalObjectReference }{
	&corev1.LocalObjectReference{Name: "cloud-credentials"}, &corev1.LocalObjectReference{Name: "master-user-data"},
}

func awsSpec(zone, instanceType, ami string) machinev1beta1.AWSMachineProviderConfig {
	id := "c1-x7k2p-subnet-private-" + zone
	return machinev1beta1.AWSMachineProviderConfig{
		TypeMeta:           metav1.TypeMeta{APIVersion: "machine.openshift.io/v1beta1", Kind: "AWSMachineProviderConfig"},
		InstanceType:       instanceType,
		AMI:                machinev1beta1.AWSResourceReference{ID: ptr.To(ami)},
		Placement:          machinev1beta1.Placement{Region: "us-east-1", AvailabilityZone: zone},
		Subnet:             machinev1beta1.AWSResourceReference{Filters: []machinev1beta1.Filter{{Name: "tag:Name", Values: []string{id}}}},
		SecurityGroups:     []machinev1beta1.AWSResourceReference{{Filters: []machinev1beta1.Filter{{Name: "tag:Name", Values: []string{"c1-x7k2p-master-sg"}}}}},
		IAMInstanceProfile: &machinev1beta1.AWSResourceReference{ID: ptr.To("c1-x7k2p-master-profile")},
		CredentialsSecret:  secrets.creds,
		UserDataSecret:     secrets.userData,
		LoadBalancers:      []machinev1beta1.LoadBalancerReference{{Name: "c1-x7k2p-int", Type: machinev1beta1.NetworkLoadBalancerType}},
	}
}

func azureSpec(zone, subnet string) machinev1beta1.AzureMachineProviderSpec {
	return machinev1beta1.AzureMachineProviderSpec{
		TypeMeta:             metav1.TypeMeta{APIVersion: "machine.openshift.io/v1beta1", Kind: "AzureMachineProviderSpec"},
		Location:             "eastus",
		VMSize:               "Standard_D8s_v3",
		Zone:                 zone,
		Subnet:               subnet,
		Vnet:                 "c1-x7k2p-vnet",
		NetworkResourceGroup: "c1-x7k2p-rg",
		ResourceGroup:        "c1-x7k2p-rg",
		InternalLoadBalancer: "c1-x7k2p-internal",
		Image:                machinev1beta1.Image{ResourceID: "/resourceGroups/c1-x7k2p-rg/providers/Microsoft.Compute/galleries/gallery_c1/images/c1-gen2/versions/latest"},
		OSDisk:               machinev1beta1.OSDisk{OSType: "Linux", DiskSizeGB: 1024, ManagedDisk: machinev1beta1.OSDiskManagedDiskParameters{StorageAccountType: "Premium_LRS"}},
		CredentialsSecret:    &corev1.SecretReference{Name: "azure-cloud-credentials", Namespace: validate.Namespace},
		UserDataSecret:       &corev1.SecretReference{Name: "master-user-data"},
	}
}

func gcpSpec(zone string) machinev1beta1.GCPMachineProviderSpec {
	return machinev1beta1.GCPMachineProviderSpec{
		TypeMeta:          metav1.TypeMeta{APIVersion: "machine.openshift.io/v1beta1", Kind: "GCPMachineProviderSpec"},
		MachineType:       "n2-standard-4",
		Region:            "us-central1",
		Zone:              zone,
		ProjectID:         "openshift-c1",
		Disks:             []*machinev1beta1.GCPDisk{{AutoDelete: true, Boot: true, SizeGB: 128, Type: "pd-ssd", Image: "projects/rhcos-cloud/global/images/rhcos-417"}},
		NetworkInterfaces: []*machinev1beta1.GCPNetworkInterface{{Network: "c1-x7k2p-network", Subnetwork: "c1-x7k2p-master-subnet"}},
		TargetPools:       []string{"c1-x7k2p-api"},
		CredentialsSecret: secrets.creds,
		UserDataSecret:    secrets.userData,
	}
}

func openstackSpec(az, rvZone, rvType, serverGroup string) machinev1alpha1.OpenstackProviderSpec {
	s := machinev1alpha1.OpenstackProviderSpec{
		TypeMeta:         metav1.TypeMeta{APIVersion: "machine.openshift.io/v1alpha1", Kind: "OpenstackProviderSpec"},
		CloudName:        "openstack",
		CloudsSecret:     &corev1.SecretReference{Name: "openstack-cloud-credentials", Namespace: validate.Namespace},
		Flavor:           "m1.xlarge",
		Image:            "c1-x7k2p-rhcos",
		AvailabilityZone: az,
		ServerGroupName:  serverGroup,
		UserDataSecret:   &corev1.SecretReference{Name: "master-user-data"},
		Networks:         []machinev1alpha1.NetworkParam{{Subnets: []machinev1alpha1.SubnetParam{{Filter: machinev1alpha1.SubnetFilter{Name: "c1-x7k2p-nodes"}}}}},
	}
	if rvZone != "" || rvType != "" {
		s.RootVolume = &machinev1alpha1.RootVolume{Size: 100, Zone: rvZone, VolumeType: rvType}
	}
	return s
}

const vsphereInfra = `
platformSpec:
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
`

// vsphereSpec is a machine the installer placed in failure domain n (1-3)
// of vsphereInfra, with the defaults the Infrastructure leaves to it.
func vsphereSpec(n int) machinev1beta1.VSphereMachineProviderSpec {
	zone := string(rune('a' + n - 1))
	return machinev1beta1.VSphereMachineProviderSpec{
		TypeMeta: metav1.TypeMeta{APIVersion: "machine.openshift.io/v1beta1", Kind: "VSphereMachineProviderSpec"},
		Template: "c1-x7k2p-rhcos-us-east-us-east-1" + zone,
		Workspace: &machinev1beta1.Workspace{
			Server: "vcenter.example.com", Datacenter: "dc1", Datastore: fmt.Sprintf("/dc1/datastore/ds%d", n),
			ResourcePool: fmt.Sprintf("/dc1/host/cluster%d//Resources", n), Folder: "/dc1/vm/c1-x7k2p",
		},
		Network:           machinev1beta1.NetworkSpec{Devices: []machinev1beta1.NetworkDeviceSpec{{NetworkName: fmt.Sprintf("ci-vlan-%d", n), IPAddrs: []string{fmt.Sprintf("10.0.0.%d/24", 10+n)}, Gateway: "10.0.0.1"}}},
		NumCPUs:           4,
		NumCoresPerSocket: 4,
		MemoryMiB:         16384,
		DiskGiB:           120,
		CredentialsSecret: secrets.creds,
		UserDataSecret:    secrets.userData,
	}
}

const nutanixInfra = `
platformSpec:
  nutanix:
    prismCentral: {address: pc.example.com, port: 9440}
    prismElements:
    - {name: pe1, endpoint: {address: pe1.example.com, port: 9440}}
    - {name: pe2, endpoint: {address: pe2.example.com, port: 9440}}
    failureDomains:
    - name: fd-1
      cluster: {type: UUID, uuid: 00000000-0000-0000-0000-0000000000e1}
      subnets: [{type: UUID, uuid: 00000000-0000-0000-0000-0000000000a1}]
    - name: fd-2
      cluster: {type: UUID, uuid: 00000000-0000-0000-0000-0000000000e2}
      subnets: [{type: UUID, uuid: 00000000-0000-0000-0000-0000000000a2}]
`

func nutanixSpec(fd string, n int) machinev1.NutanixMachineProviderConfig {
	uuid := func(kind byte) machinev1.NutanixResourceIdentifier {
		return machinev1.NutanixResourceIdentifier{Type: machinev1.NutanixIdentifierUUID, UUID: ptr.To(fmt.Sprintf("00000000-0000-0000-0000-0000000000%c%d", kind, n))}
	}
	s := machinev1.NutanixMachineProviderConfig{
		TypeMeta:          metav1.TypeMeta{APIVersion: "machine.openshift.io/v1", Kind: "NutanixMachineProviderConfig"},
		Cluster:           uuid('e'),
		Subnets:           []machinev1.NutanixResourceIdentifier{uuid('a')},
		Image:             machinev1.NutanixResourceIdentifier{Type: machinev1.NutanixIdentifierName, Name: ptr.To("c1-x7k2p-rhcos")},
		VCPUsPerSocket:    1,
		VCPUSockets:       8,
		MemorySize:        resource.MustParse("16Gi"),
		SystemDiskSize:    resource.MustParse("120Gi"),
		CredentialsSecret: secrets.creds,
		UserDataSecret:    secrets.userData,
	}
	if fd != "" {
		s.FailureDomain = &machinev1.NutanixFailureDomainReference{Name: fd}
	}
	return s
}

// tree decodes a provider spec for assertions on its fields.
func tree(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSet(t *testing.T) {
	for _, tc := range []struct {
		name     string
		machines []machinev1beta1.Machine
		infra    *configv1.Infrastructure
		// fds are the declared failure domains (String, sorted); nil: none.
		fds []string
		// absent and present are top-level (dot-separated) template fields.
		absent, present []string
		replicas        int32
	}{{
		name: "AWS: one failure domain per zone with its subnet; the AMI and everything else from the newest",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, awsSpec("us-east-1a", "m6i.xlarge", "ami-old")),
			machine("c1-x7k2p-master-1", 0, awsSpec("us-east-1b", "m6i.xlarge", "ami-old")),
			machine("c1-x7k2p-master-2", 0, awsSpec("us-east-1c", "m6i.xlarge", "ami-new")),
		},
		infra: infra(configv1.AWSPlatformType, ""),
		fds: []string{
			"AWS{availabilityZone=us-east-1a, subnet=filters:[tag:Name=c1-x7k2p-subnet-private-us-east-1a]}",
			"AWS{availabilityZone=us-east-1b, subnet=filters:[tag:Name=c1-x7k2p-subnet-private-us-east-1b]}",
			"AWS{availabilityZone=us-east-1c, subnet=filters:[tag:Name=c1-x7k2p-subnet-private-us-east-1c]}",
		},
		absent:   []string{"subnet", "placement.availabilityZone"},
		present:  []string{"placement.region", "instanceType", "ami.id", "securityGroups", "loadBalancers"},
		replicas: 3,
	}, {
		name: "Azure: zones differ, the subnet is shared: failure domains by zone, the subnet stays in the template",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, azureSpec("1", "c1-x7k2p-master-subnet")),
			machine("c1-x7k2p-master-1", 0, azureSpec("2", "c1-x7k2p-master-subnet")),
			machine("c1-x7k2p-master-2", 0, azureSpec("3", "c1-x7k2p-master-subnet")),
		},
		infra:    infra(configv1.AzurePlatformType, ""),
		fds:      []string{"Azure{zone=1}", "Azure{zone=2}", "Azure{zone=3}"},
		absent:   []string{"zone"},
		present:  []string{"subnet", "vmSize", "internalLoadBalancer"},
		replicas: 3,
	}, {
		name: "Azure: subnets differ too: each failure domain carries its subnet",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, azureSpec("1", "subnet-a")),
			machine("c1-x7k2p-master-1", 0, azureSpec("1", "subnet-b")),
			machine("c1-x7k2p-master-2", 0, azureSpec("2", "subnet-a")),
		},
		infra:    infra(configv1.AzurePlatformType, ""),
		fds:      []string{"Azure{zone=1, subnet=subnet-a}", "Azure{zone=1, subnet=subnet-b}", "Azure{zone=2, subnet=subnet-a}"},
		absent:   []string{"zone", "subnet"},
		replicas: 3,
	}, {
		name: "Azure without zones: one failure domain is left to the template",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, azureSpec("", "c1-x7k2p-master-subnet")),
			machine("c1-x7k2p-master-1", 0, azureSpec("", "c1-x7k2p-master-subnet")),
			machine("c1-x7k2p-master-2", 0, azureSpec("", "c1-x7k2p-master-subnet")),
		},
		infra:    infra(configv1.AzurePlatformType, ""),
		present:  []string{"subnet"},
		replicas: 3,
	}, {
		name: "GCP: one failure domain per zone; the disk image is the newest's",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, gcpSpec("us-central1-a")),
			machine("c1-x7k2p-master-1", 0, gcpSpec("us-central1-b")),
			machine("c1-x7k2p-master-2", 0, gcpSpec("us-central1-c")),
		},
		infra:    infra(configv1.GCPPlatformType, ""),
		fds:      []string{"GCP{zone=us-central1-a}", "GCP{zone=us-central1-b}", "GCP{zone=us-central1-c}"},
		absent:   []string{"zone"},
		present:  []string{"region", "machineType", "targetPools", "disks"},
		replicas: 3,
	}, {
		name: "GCP, without an Infrastructure: the platform is the provider spec's",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, gcpSpec("us-central1-a")),
			machine("c1-x7k2p-master-1", 0, gcpSpec("us-central1-b")),
			machine("c1-x7k2p-master-2", 0, gcpSpec("us-central1-c")),
		},
		fds:      []string{"GCP{zone=us-central1-a}", "GCP{zone=us-central1-b}", "GCP{zone=us-central1-c}"},
		absent:   []string{"zone"},
		replicas: 3,
	}, {
		name: "OpenStack: compute and volume zones become failure domains; the root volume's size stays",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, openstackSpec("nova-az0", "cinder-az0", "fast-az0", "c1-x7k2p-master")),
			machine("c1-x7k2p-master-1", 0, openstackSpec("nova-az1", "cinder-az1", "fast-az1", "c1-x7k2p-master")),
			machine("c1-x7k2p-master-2", 0, openstackSpec("nova-az2", "cinder-az2", "fast-az2", "c1-x7k2p-master")),
		},
		infra: infra(configv1.OpenStackPlatformType, ""),
		fds: []string{
			"OpenStack{availabilityZone=nova-az0, rootVolume={availabilityZone=cinder-az0, volumeType=fast-az0}}",
			"OpenStack{availabilityZone=nova-az1, rootVolume={availabilityZone=cinder-az1, volumeType=fast-az1}}",
			"OpenStack{availabilityZone=nova-az2, rootVolume={availabilityZone=cinder-az2, volumeType=fast-az2}}",
		},
		absent:   []string{"availabilityZone", "rootVolume.availabilityZone", "rootVolume.volumeType"},
		present:  []string{"rootVolume.diskSize", "flavor", "serverGroupName"},
		replicas: 3,
	}, {
		name: "OpenStack without zones: no failure domains",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, openstackSpec("", "", "", "c1-x7k2p-master")),
			machine("c1-x7k2p-master-1", 0, openstackSpec("", "", "", "c1-x7k2p-master")),
			machine("c1-x7k2p-master-2", 0, openstackSpec("", "", "", "c1-x7k2p-master")),
		},
		infra:    infra(configv1.OpenStackPlatformType, ""),
		present:  []string{"flavor"},
		replicas: 3,
	}, {
		name: "vSphere: machines named by the Infrastructure's failure domain they are in; no placement in the template",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, vsphereSpec(1)),
			machine("c1-x7k2p-master-1", 0, vsphereSpec(2)),
			machine("c1-x7k2p-master-2", 0, vsphereSpec(3)),
		},
		infra:    infra(configv1.VSpherePlatformType, vsphereInfra),
		fds:      []string{"VSphere{name=us-east-1a}", "VSphere{name=us-east-1b}", "VSphere{name=us-east-1c}"},
		absent:   []string{"workspace", "template", "network"},
		present:  []string{"numCPUs", "memoryMiB", "diskGiB"},
		replicas: 3,
	}, {
		name: "vSphere without failure domains in the Infrastructure: the template keeps the newest's placement",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, vsphereSpec(1)),
			machine("c1-x7k2p-master-1", 0, vsphereSpec(1)),
			machine("c1-x7k2p-master-2", 0, vsphereSpec(1)),
		},
		infra:    infra(configv1.VSpherePlatformType, ""),
		present:  []string{"workspace.datastore", "template", "network.devices"},
		replicas: 3,
	}, {
		name: "Nutanix: failure domains by the names the machines record",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, nutanixSpec("fd-1", 1)),
			machine("c1-x7k2p-master-1", 0, nutanixSpec("fd-2", 2)),
			machine("c1-x7k2p-master-2", 0, nutanixSpec("fd-1", 1)),
		},
		infra:    infra(configv1.NutanixPlatformType, nutanixInfra),
		fds:      []string{"Nutanix{name=fd-1}", "Nutanix{name=fd-2}"},
		absent:   []string{"failureDomain", "cluster", "subnets"},
		present:  []string{"image", "vcpuSockets"},
		replicas: 3,
	}, {
		name: "Nutanix without failure domains: the template keeps the cluster and subnets",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, nutanixSpec("", 1)),
			machine("c1-x7k2p-master-1", 0, nutanixSpec("", 1)),
			machine("c1-x7k2p-master-2", 0, nutanixSpec("", 1)),
		},
		infra:    infra(configv1.NutanixPlatformType, ""),
		absent:   []string{"failureDomain"},
		present:  []string{"cluster", "subnets"},
		replicas: 3,
	}, {
		name: "five masters: five replicas",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, gcpSpec("us-central1-a")),
			machine("c1-x7k2p-master-1", 0, gcpSpec("us-central1-b")),
			machine("c1-x7k2p-master-2", 0, gcpSpec("us-central1-c")),
			machine("c1-x7k2p-master-3", 0, gcpSpec("us-central1-a")),
			machine("c1-x7k2p-master-4", 0, gcpSpec("us-central1-b")),
		},
		infra:    infra(configv1.GCPPlatformType, ""),
		fds:      []string{"GCP{zone=us-central1-a}", "GCP{zone=us-central1-b}", "GCP{zone=us-central1-c}"},
		replicas: 5,
	}, {
		name: "workers, a deleting master and another cluster's labels aside, the control plane alone counts",
		machines: append([]machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, gcpSpec("us-central1-a")),
			machine("c1-x7k2p-master-1", 0, gcpSpec("us-central1-b")),
			machine("c1-x7k2p-master-2", 0, gcpSpec("us-central1-c")),
		}, func() []machinev1beta1.Machine {
			w := machine("c1-x7k2p-worker-a-xyz12", 9, gcpSpec("us-central1-f"))
			w.Labels[plan.RoleLabel], w.Labels[plan.TypeLabel] = "worker", "worker"
			d := machine("c1-x7k2p-master-old-2", 9, gcpSpec("us-central1-f"))
			d.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
			d.Finalizers = []string{"machine.machine.openshift.io"}
			return []machinev1beta1.Machine{w, d}
		}()...),
		infra:    infra(configv1.GCPPlatformType, ""),
		fds:      []string{"GCP{zone=us-central1-a}", "GCP{zone=us-central1-b}", "GCP{zone=us-central1-c}"},
		replicas: 3,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := generate.Set(tc.machines, tc.infra)
			if err != nil {
				t.Fatal(err)
			}
			checkSet(t, set, tc.machines, tc.infra, tc.replicas)
			tmpl := set.Spec.Template.OpenShiftMachineV1Beta1Machine
			var got []string
			if tmpl.FailureDomains != nil {
				fds, err := platform.FromSpec(tmpl.FailureDomains, tc.infra)
				if err != nil {
					t.Fatal(err)
				}
				for _, fd := range fds {
					name := fd.String()
					got = append(got, name)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.fds, "\n") {
				t.Errorf("failure domains:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.fds, "\n"))
			}
			spec := tree(t, tmpl.Spec.ProviderSpec.Value.Raw)
			for _, f := range tc.absent {
				if _, ok := lookup(spec, f); ok {
					t.Errorf("template has %s, which the failure domains set", f)
				}
			}
			for _, f := range tc.present {
				if _, ok := lookup(spec, f); !ok {
					t.Errorf("template lacks %s", f)
				}
			}
		})
	}
}

func lookup(tree map[string]any, path string) (any, bool) {
	var v any = tree
	for _, p := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	return v, v != nil
}

// checkSet checks what every generated set must be: Inactive, RollingUpdate,
// selecting its own template labels and every control-plane machine,
// admitted by the webhook's rules on create and on activation, and such that
// every machine is up to date with the template in its failure domain (the
// machines here share everything but their placement and boot image), so
// that activating it replaces nothing.
func checkSet(t *testing.T, set *machinev1.ControlPlaneMachineSet, machines []machinev1beta1.Machine, infra *configv1.Infrastructure, replicas int32) {
	t.Helper()
	if set.Name != "cluster" || set.Namespace != "openshift-machine-api" || set.Kind != "ControlPlaneMachineSet" || set.APIVersion != "machine.openshift.io/v1" {
		t.Errorf("identity %s %s/%s", set.GroupVersionKind(), set.Namespace, set.Name)
	}
	if set.Spec.State != machinev1.ControlPlaneMachineSetStateInactive || set.Spec.Strategy.Type != machinev1.RollingUpdate || ptr.Deref(set.Spec.Replicas, 0) != replicas {
		t.Errorf("state %s, strategy %s, replicas %d; want Inactive, RollingUpdate, %d", set.Spec.State, set.Spec.Strategy.Type, ptr.Deref(set.Spec.Replicas, 0), replicas)
	}
	want := map[string]string{plan.ClusterIDLabel: "c1-x7k2p", plan.RoleLabel: "master", plan.TypeLabel: "master"}
	if fmt.Sprint(set.Spec.Selector.MatchLabels) != fmt.Sprint(want) || fmt.Sprint(set.Spec.Template.OpenShiftMachineV1Beta1Machine.ObjectMeta.Labels) != fmt.Sprint(want) {
		t.Errorf("selector %v, template labels %v; want %v", set.Spec.Selector.MatchLabels, set.Spec.Template.OpenShiftMachineV1Beta1Machine.ObjectMeta.Labels, want)
	}
	if w, errs := validate.Set(nil, set, machines, infra); len(errs) > 0 {
		t.Errorf("create refused: %v (warnings %v)", errs, w)
	}
	active := set.DeepCopy()
	active.Spec.State = machinev1.ControlPlaneMachineSetStateActive
	if _, errs := validate.Set(set, active, machines, infra); len(errs) > 0 {
		t.Errorf("activation refused: %v", errs)
	}
	// Each machine against the template in its failure domain.
	tmpl := set.Spec.Template.OpenShiftMachineV1Beta1Machine
	spec := tmpl.Spec.ProviderSpec.Value.Raw
	p, err := platform.Detect(tmpl.FailureDomains, spec)
	if err != nil {
		t.Fatal(err)
	}
	fds, err := platform.FromSpec(tmpl.FailureDomains, infra)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range generate.ControlPlane(machines) {
		observed, err := p.FailureDomain(m.Spec.ProviderSpec.Value.Raw)
		if err != nil {
			t.Fatal(err)
		}
		desired := spec
		if len(fds) > 0 {
			var in *platform.FailureDomain
			for i := range fds {
				if fds[i].Matches(observed) {
					in = &fds[i]
					break
				}
			}
			if in == nil {
				t.Errorf("%s in %s: no declared failure domain", m.Name, observed)
				continue
			}
			if desired, err = p.Inject(spec, *in); err != nil {
				t.Fatal(err)
			}
		}
		d, unknown, err := platform.Compare(p, desired, m.Spec.ProviderSpec.Value.Raw)
		if err != nil || len(d) > 0 || len(unknown) > 0 {
			t.Errorf("%s would be replaced on activation: %s (unknown %v, err %v)", m.Name, d.Summary(5), unknown, err)
		}
	}
}

// The newest machine's provider spec is the template: a person who replaced
// a master by hand with a bigger one wants the others to follow.
func TestSetNewestMachineWins(t *testing.T) {
	ms := []machinev1beta1.Machine{
		machine("c1-x7k2p-master-0", 0, awsSpec("us-east-1a", "m6i.xlarge", "ami-1")),
		machine("c1-x7k2p-master-1", 0, awsSpec("us-east-1b", "m6i.xlarge", "ami-1")),
		machine("c1-x7k2p-master-2", 0, awsSpec("us-east-1c", "m6i.xlarge", "ami-1")),
		machine("c1-x7k2p-master-abcde-0", 30, awsSpec("us-east-1a", "m6i.2xlarge", "ami-2")),
	}
	for _, order := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}} {
		var in []machinev1beta1.Machine
		for _, i := range order {
			in = append(in, ms[i])
		}
		set, err := generate.Set(in, infra(configv1.AWSPlatformType, ""))
		if err != nil {
			t.Fatal(err)
		}
		spec := tree(t, set.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value.Raw)
		if spec["instanceType"] != "m6i.2xlarge" {
			t.Errorf("order %v: template instance type %v, want the newest machine's m6i.2xlarge", order, spec["instanceType"])
		}
		if got := len(*set.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains.AWS); got != 3 || *set.Spec.Replicas != 3 {
			t.Errorf("order %v: %d failure domains, %d replicas; want 3, 3", order, got, *set.Spec.Replicas)
		}
	}
	// Same creation time: the name decides, so the listing order does not.
	a := machine("c1-x7k2p-master-0", 0, gcpSpec("us-central1-a"))
	b := machine("c1-x7k2p-master-1", 0, gcpSpec("us-central1-b"))
	if got := generate.ControlPlane([]machinev1beta1.Machine{b, a}); got[0].Name != b.Name {
		t.Errorf("newest of a tie: %s, want %s", got[0].Name, b.Name)
	}
	if got := generate.ControlPlane([]machinev1beta1.Machine{a, b}); got[0].Name != b.Name {
		t.Errorf("newest of a tie: %s, want %s", got[0].Name, b.Name)
	}
}

func TestSetErrors(t *testing.T) {
	three := func(spec func(i int) any) []machinev1beta1.Machine {
		var ms []machinev1beta1.Machine
		for i := range 3 {
			ms = append(ms, machine(fmt.Sprintf("c1-x7k2p-master-%d", i), 0, spec(i)))
		}
		return ms
	}
	zones := []string{"us-central1-a", "us-central1-b", "us-central1-c"}
	gcp3 := three(func(i int) any { return gcpSpec(zones[i]) })
	for _, tc := range []struct {
		name     string
		machines []machinev1beta1.Machine
		infra    *configv1.Infrastructure
		is       error
		want     string
	}{{
		name:     "bare metal",
		machines: gcp3,
		infra:    infra(configv1.BareMetalPlatformType, ""),
		is:       generate.ErrUnsupportedPlatform,
		want:     "unsupported platform BareMetal: sets are generated on AWS, Azure, GCP, VSphere, OpenStack, Nutanix",
	}, {
		name:     "no Infrastructure, a provider spec of no known kind",
		machines: three(func(int) any { return map[string]any{"kind": "BareMetalMachineProviderSpec"} }),
		is:       generate.ErrUnsupportedPlatform,
		want:     "newest control-plane machine's provider spec is of no supported kind",
	}, {
		name:     "single node",
		machines: gcp3[:1],
		infra:    infra(configv1.GCPPlatformType, ""),
		is:       generate.ErrTooFewMachines,
		want:     "too few control-plane machines: 1",
	}, {
		name:     "the Infrastructure's platform is not the machines'",
		machines: gcp3,
		infra:    infra(configv1.AWSPlatformType, ""),
		want:     `newest control-plane machine c1-x7k2p-master-2: failure domains are for platform AWS but the template providerSpec is of kind "GCPMachineProviderSpec"`,
	}, {
		name:     "a name without an index",
		machines: append(gcp3[:2:2], machine("c1-x7k2p-master-extra", 0, gcpSpec("us-central1-c")), machine("bootstrap", 0, gcpSpec("us-central1-c"))),
		infra:    infra(configv1.GCPPlatformType, ""),
		want:     `control-plane machine names without an index (a number after the last "-"): bootstrap, c1-x7k2p-master-extra`,
	}, {
		name:     "a machine without a zone next to zonal ones",
		machines: append(gcp3[:2:2], machine("c1-x7k2p-master-2", 0, gcpSpec(""))),
		infra:    infra(configv1.GCPPlatformType, ""),
		want:     "machines c1-x7k2p-master-2 name no failure domain while c1-x7k2p-master-0 in GCP{zone=us-central1-a}, c1-x7k2p-master-1 in GCP{zone=us-central1-b}: a set cannot declare both",
	}, {
		name: "OpenStack: another server group",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, openstackSpec("nova-az0", "", "", "old-group")),
			machine("c1-x7k2p-master-1", 0, openstackSpec("nova-az1", "", "", "c1-x7k2p-master")),
			machine("c1-x7k2p-master-2", 0, openstackSpec("nova-az2", "", "", "c1-x7k2p-master")),
		},
		infra: infra(configv1.OpenStackPlatformType, ""),
		want:  `machine c1-x7k2p-master-0 is in server group "old-group" but the newest control-plane machine c1-x7k2p-master-2 in "c1-x7k2p-master"`,
	}, {
		name: "vSphere: a machine outside the Infrastructure's failure domains",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, vsphereSpec(1)),
			machine("c1-x7k2p-master-1", 0, vsphereSpec(2)),
			machine("c1-x7k2p-master-2", 0, vsphereSpec(4)),
		},
		infra: infra(configv1.VSpherePlatformType, vsphereInfra),
		want:  "machine c1-x7k2p-master-2 is in VSphere{server=vcenter.example.com, datacenter=dc1, datastore=/dc1/datastore/ds4, resourcePool=/dc1/host/cluster4//Resources, folder=/dc1/vm/c1-x7k2p}, which none of the failure domains of the Infrastructure cluster is",
	}, {
		name: "Nutanix: a failure domain the Infrastructure does not define",
		machines: []machinev1beta1.Machine{
			machine("c1-x7k2p-master-0", 0, nutanixSpec("fd-1", 1)),
			machine("c1-x7k2p-master-1", 0, nutanixSpec("fd-9", 2)),
			machine("c1-x7k2p-master-2", 0, nutanixSpec("fd-1", 1)),
		},
		infra: infra(configv1.NutanixPlatformType, nutanixInfra),
		want:  "machine c1-x7k2p-master-1 is in Nutanix{name=fd-9}, which none of the failure domains of the Infrastructure cluster is",
	}, {
		name: "a master of another role value",
		machines: func() []machinev1beta1.Machine {
			ms := three(func(i int) any { return gcpSpec(zones[i]) })
			ms[0].Labels[plan.RoleLabel] = "control-plane"
			return ms
		}(),
		infra: infra(configv1.GCPPlatformType, ""),
		want:  `control-plane machines without the newest machine's labels (machine.openshift.io/cluster-api-cluster=c1-x7k2p,machine.openshift.io/cluster-api-machine-role=master,machine.openshift.io/cluster-api-machine-type=master), which the set would not select: c1-x7k2p-master-0 (machine.openshift.io/cluster-api-machine-role="control-plane")`,
	}, {
		name: "the webhook would refuse it: Azure without an internal load balancer",
		machines: three(func(i int) any {
			s := azureSpec(fmt.Sprint(i+1), "subnet")
			s.InternalLoadBalancer = ""
			return s
		}),
		infra: infra(configv1.AzurePlatformType, ""),
		want:  "the generated set would be refused: spec.template.machines_v1beta1_machine_openshift_io.spec.providerSpec.value.internalLoadBalancer: Required value",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := generate.Set(tc.machines, tc.infra)
			if err == nil {
				t.Fatalf("no error; set %v", set.Spec)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}
