package platform

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"sigs.k8s.io/yaml"
)

// vsphereInfra is an Infrastructure of a zonal vSphere cluster, in the shape
// of the OpenShift documentation's "Specifying multiple regions and zones
// for your cluster on vSphere": one failure domain spelling out everything,
// one leaving the resource pool, folder and template to the defaults, one a
// host-group zone.
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
        topology:
          datacenter: dc1
          computeCluster: /dc1/host/cluster1
          networks: [ci-vlan-1]
          datastore: /dc1/datastore/ds1
          resourcePool: /dc1/host/cluster1/Resources/ocp
          folder: /dc1/vm/ocp
          template: /dc1/vm/custom-rhcos
      - name: us-east-1b
        region: us-east
        zone: us-east-1b
        server: vcenter.example.com
        topology:
          datacenter: dc1
          computeCluster: /dc1/host/cluster2
          networks: [ci-vlan-2, storage-vlan]
          datastore: /dc1/datastore/ds2
      - name: us-east-1c
        region: us-east
        zone: us-east-1c
        server: vcenter.example.com
        zoneAffinity:
          type: HostGroup
          hostGroup:
            vmGroup: zone-c-vms
            hostGroup: zone-c-hosts
            vmHostRule: zone-c-rule
        topology:
          datacenter: dc1
          computeCluster: /dc1/host/cluster3
          networks: [ci-vlan-3]
          datastore: /dc1/datastore/ds3
status:
  infrastructureName: c1-x7k2p
  platform: VSphere
`

// vsphereMachineSpec is a control-plane machine the installer made in
// us-east-1b: the template by its inventory path, the resource pool as it
// wrote it, and its own static addresses.
const vsphereMachineSpec = `{
  "apiVersion": "machine.openshift.io/v1beta1",
  "kind": "VSphereMachineProviderSpec",
  "credentialsSecret": {"name": "vsphere-cloud-credentials"},
  "diskGiB": 120, "memoryMiB": 16384, "numCPUs": 4, "numCoresPerSocket": 4,
  "metadata": {"creationTimestamp": null},
  "network": {"devices": [
    {"networkName": "ci-vlan-2", "ipAddrs": ["10.0.0.11/24"], "gateway": "10.0.0.1", "nameservers": ["10.0.0.2"]},
    {"networkName": "storage-vlan"}
  ]},
  "snapshot": "",
  "template": "/dc1/vm/c1-x7k2p-rhcos-us-east-us-east-1b",
  "userDataSecret": {"name": "master-user-data"},
  "workspace": {"datacenter": "dc1", "datastore": "/dc1/datastore/ds2", "folder": "/dc1/vm/c1-x7k2p",
    "resourcePool": "/dc1/host/cluster2//Resources", "server": "vcenter.example.com"}
}`

// vsphereTemplateSpec is the set's template as the upstream generator writes
// it when the Infrastructure has failure domains: no placement of its own.
const vsphereTemplateSpec = `{
  "apiVersion": "machine.openshift.io/v1beta1",
  "kind": "VSphereMachineProviderSpec",
  "credentialsSecret": {"name": "vsphere-cloud-credentials"},
  "diskGiB": 120, "memoryMiB": 16384, "numCPUs": 4, "numCoresPerSocket": 4,
  "metadata": {"creationTimestamp": null},
  "network": {"devices": null},
  "snapshot": "",
  "template": "",
  "userDataSecret": {"name": "master-user-data"},
  "workspace": {}
}`

func loadInfra(t *testing.T, doc string) *configv1.Infrastructure {
	t.Helper()
	var infra configv1.Infrastructure
	if err := yaml.UnmarshalStrict([]byte(doc), &infra); err != nil {
		t.Fatal(err)
	}
	return &infra
}

func vsphereFDs(names ...string) *machinev1.FailureDomains {
	fds := &machinev1.FailureDomains{Platform: configv1.VSpherePlatformType}
	for _, n := range names {
		fds.VSphere = append(fds.VSphere, machinev1.VSphereFailureDomain{Name: n})
	}
	return fds
}

func resolvedVSphere(t *testing.T, name string) FailureDomain {
	t.Helper()
	fds, err := FromSpec(vsphereFDs(name), loadInfra(t, vsphereInfra))
	if err != nil || len(fds) != 1 {
		t.Fatalf("resolving %s: %v %v", name, fds, err)
	}
	return fds[0]
}

func TestVSphereFromSpecResolvesTheInfrastructure(t *testing.T) {
	cases := []struct {
		name string
		want VSphereFailureDomain
	}{
		{"us-east-1a", VSphereFailureDomain{
			Name: "us-east-1a",
			Workspace: machinev1beta1.Workspace{Server: "vcenter.example.com", Datacenter: "dc1", Datastore: "/dc1/datastore/ds1",
				ResourcePool: "/dc1/host/cluster1/Resources/ocp", Folder: "/dc1/vm/ocp"},
			Networks: []string{"ci-vlan-1"},
			// A failure domain's template is cloned by name.
			Template: "custom-rhcos",
		}},
		{"us-east-1b", VSphereFailureDomain{
			Name: "us-east-1b",
			// Defaults: the cluster's root pool, the cluster's folder, the
			// template the installer uploads for the region and zone.
			Workspace: machinev1beta1.Workspace{Server: "vcenter.example.com", Datacenter: "dc1", Datastore: "/dc1/datastore/ds2",
				ResourcePool: "/dc1/host/cluster2/Resources", Folder: "/dc1/vm/c1-x7k2p"},
			Networks: []string{"ci-vlan-2", "storage-vlan"},
			Template: "c1-x7k2p-rhcos-us-east-us-east-1b",
		}},
		{"us-east-1c", VSphereFailureDomain{
			Name: "us-east-1c",
			Workspace: machinev1beta1.Workspace{Server: "vcenter.example.com", Datacenter: "dc1", Datastore: "/dc1/datastore/ds3",
				ResourcePool: "/dc1/host/cluster3/Resources", Folder: "/dc1/vm/c1-x7k2p", VMGroup: "zone-c-vms"},
			Networks: []string{"ci-vlan-3"},
			Template: "c1-x7k2p-rhcos-us-east-us-east-1c",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fd := resolvedVSphere(t, c.name)
			if fd.Platform != configv1.VSpherePlatformType || fd.VSphere == nil || !reflect.DeepEqual(*fd.VSphere, c.want) {
				t.Fatalf("got %+v\nwant %+v", fd.VSphere, c.want)
			}
			if fd.String() != "VSphere{name="+c.name+"}" {
				t.Errorf("String %s", fd)
			}
		})
	}
}

func TestVSphereFromSpecErrors(t *testing.T) {
	infra := loadInfra(t, vsphereInfra)
	_, err := FromSpec(vsphereFDs("us-east-1a", "eu-west-1a", "us-east-1b", "ap-south-1a"), infra)
	var undefined UndefinedFailureDomainsError
	if !errors.As(err, &undefined) {
		t.Fatalf("unknown names: %v, want UndefinedFailureDomainsError", err)
	}
	want := UndefinedFailureDomainsError{{configv1.VSpherePlatformType, 1, "eu-west-1a"}, {configv1.VSpherePlatformType, 3, "ap-south-1a"}}
	if !reflect.DeepEqual(undefined, want) {
		t.Fatalf("got %+v want %+v", undefined, want)
	}
	if !strings.Contains(err.Error(), `the failure domain with name "eu-west-1a" is not defined in the infrastructure resource (Infrastructure cluster, spec.platformSpec.vsphere.failureDomains)`) {
		t.Errorf("message %q", err)
	}

	noVSphere := infra.DeepCopy()
	noVSphere.Spec.PlatformSpec.VSphere = nil
	if _, err := FromSpec(vsphereFDs("us-east-1a"), noVSphere); !errors.As(err, &undefined) {
		t.Errorf("an Infrastructure without vSphere failure domains: %v", err)
	}
	if _, err := FromSpec(vsphereFDs("us-east-1a"), nil); !errors.Is(err, ErrNoInfrastructure) {
		t.Errorf("no Infrastructure: %v", err)
	}

	// The defaults carry the infrastructure name; without it they would name
	// a folder and template that do not exist.
	unnamed := infra.DeepCopy()
	unnamed.Status.InfrastructureName = ""
	if _, err := FromSpec(vsphereFDs("us-east-1a"), unnamed); err != nil {
		t.Errorf("us-east-1a sets its folder and template and needs no name: %v", err)
	}
	if _, err := FromSpec(vsphereFDs("us-east-1b"), unnamed); err == nil || !strings.Contains(err.Error(), `"us-east-1b"`) || !strings.Contains(err.Error(), "status.infrastructureName") {
		t.Errorf("us-east-1b without an infrastructure name: %v", err)
	}
}

func decodeMap(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestVSphereInject(t *testing.T) {
	fdB := resolvedVSphere(t, "us-east-1b")
	fdC := resolvedVSphere(t, "us-east-1c")
	cases := []struct {
		name     string
		template string
		fd       FailureDomain
		// check inspects the injected spec.
		check func(t *testing.T, out map[string]any)
	}{
		{
			name: "generator's template into a defaulted failure domain", template: vsphereTemplateSpec, fd: fdB,
			check: func(t *testing.T, out map[string]any) {
				wantWS := map[string]any{"server": "vcenter.example.com", "datacenter": "dc1", "datastore": "/dc1/datastore/ds2",
					"resourcePool": "/dc1/host/cluster2/Resources", "folder": "/dc1/vm/c1-x7k2p"}
				if !reflect.DeepEqual(out["workspace"], wantWS) {
					t.Errorf("workspace %v", out["workspace"])
				}
				wantNet := map[string]any{"devices": []any{map[string]any{"networkName": "ci-vlan-2"}, map[string]any{"networkName": "storage-vlan"}}}
				if !reflect.DeepEqual(out["network"], wantNet) {
					t.Errorf("network %v", out["network"])
				}
				if out["template"] != "c1-x7k2p-rhcos-us-east-us-east-1b" || out["numCPUs"] != 4.0 || out["userDataSecret"] == nil {
					t.Errorf("template or untouched fields: %v", out)
				}
			},
		},
		{
			name: "template placement is replaced, unknown fields stay",
			template: `{"kind":"VSphereMachineProviderSpec","template":"/dc0/vm/old","futureField":{"x":1},` +
				`"workspace":{"server":"old-vc","vmGroup":"old-group","futureWorkspaceField":"kept"},"network":{"devices":[{"networkName":"old","ipAddrs":["10.0.0.9/24"],"gateway":"10.0.0.1"}]}}`,
			fd: fdB,
			check: func(t *testing.T, out map[string]any) {
				ws := out["workspace"].(map[string]any)
				if ws["server"] != "vcenter.example.com" || ws["futureWorkspaceField"] != "kept" {
					t.Errorf("workspace %v", ws)
				}
				if _, ok := ws["vmGroup"]; ok {
					t.Errorf("a VM group the failure domain does not set must not survive from the template: %v", ws)
				}
				// A static address in the template would go to every machine.
				wantNet := map[string]any{"devices": []any{map[string]any{"networkName": "ci-vlan-2"}, map[string]any{"networkName": "storage-vlan"}}}
				if !reflect.DeepEqual(out["network"], wantNet) {
					t.Errorf("network %v", out["network"])
				}
				if out["futureField"] == nil || out["template"] != "c1-x7k2p-rhcos-us-east-us-east-1b" {
					t.Errorf("%v", out)
				}
			},
		},
		{
			name:     "devices taking addresses from IP pools are kept and named",
			template: `{"kind":"VSphereMachineProviderSpec","network":{"devices":[{"addressesFromPools":[{"group":"ipam.cluster.x-k8s.io","resource":"IPPool","name":"pool-a"}],"nameservers":["10.0.0.2"]}]}}`,
			fd:       fdB,
			check: func(t *testing.T, out map[string]any) {
				devices := out["network"].(map[string]any)["devices"].([]any)
				first := devices[0].(map[string]any)
				if len(devices) != 2 || first["networkName"] != "ci-vlan-2" || first["addressesFromPools"] == nil || first["nameservers"] == nil ||
					!reflect.DeepEqual(devices[1], map[string]any{"networkName": "storage-vlan"}) {
					t.Errorf("devices %v", devices)
				}
			},
		},
		{
			name: "host-group zone sets the VM group", template: vsphereTemplateSpec, fd: fdC,
			check: func(t *testing.T, out map[string]any) {
				if out["workspace"].(map[string]any)["vmGroup"] != "zone-c-vms" {
					t.Errorf("workspace %v", out["workspace"])
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := vsphere{}.Inject([]byte(c.template), c.fd)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, decodeMap(t, b))
			back, err := vsphere{}.FailureDomain(b)
			if err != nil || !c.fd.Matches(back) {
				t.Errorf("injected %s, read back %s (%v)", c.fd, back, err)
			}
		})
	}
	if out, err := (vsphere{}).Inject([]byte(vsphereTemplateSpec), FailureDomain{}); err != nil || string(out) != vsphereTemplateSpec {
		t.Errorf("no failure domain changed the spec: %s %v", out, err)
	}
}

// TestVSphereCompare: a machine the installer made is up to date with the
// template put into its failure domain, whatever it carries that the
// upstream operator ignores; everything else counts.
func TestVSphereCompare(t *testing.T) {
	desired, err := vsphere{}.Inject([]byte(vsphereTemplateSpec), resolvedVSphere(t, "us-east-1b"))
	if err != nil {
		t.Fatal(err)
	}
	machine := func(f func(m map[string]any)) []byte { return edit(t, vsphereMachineSpec, f) }
	device := func(m map[string]any, i int) map[string]any {
		return m["network"].(map[string]any)["devices"].([]any)[i].(map[string]any)
	}
	cases := []struct {
		name     string
		desired  []byte
		actual   []byte
		wantDiff []string
	}{
		{name: "installer's machine in its failure domain", desired: desired, actual: []byte(vsphereMachineSpec)},
		{name: "template by name or by path", desired: desired,
			actual: machine(func(m map[string]any) { m["template"] = "c1-x7k2p-rhcos-us-east-us-east-1b" })},
		{name: "another template", desired: desired,
			actual:   machine(func(m map[string]any) { m["template"] = "/dc1/vm/c1-x7k2p-rhcos-old" }),
			wantDiff: []string{`template: "c1-x7k2p-rhcos-old" -> "c1-x7k2p-rhcos-us-east-us-east-1b"`}},
		{name: "static addresses and their name servers do not count", desired: desired,
			actual: machine(func(m map[string]any) {
				d := device(m, 0)
				d["ipAddrs"], d["gateway"], d["nameservers"] = []any{"10.0.0.99/24"}, "10.0.0.254", []any{"8.8.8.8"}
			})},
		{name: "port group counts", desired: desired,
			actual:   machine(func(m map[string]any) { device(m, 1)["networkName"] = "other-vlan" }),
			wantDiff: []string{`network.devices[1].networkName: "other-vlan" -> "storage-vlan"`}},
		{name: "IP pools and, with them, name servers count",
			desired: edit(t, string(desired), func(m map[string]any) {
				d := device(m, 0)
				d["addressesFromPools"], d["nameservers"] = []any{map[string]any{"group": "ipam.cluster.x-k8s.io", "resource": "IPPool", "name": "pool-a"}}, []any{"10.0.0.2"}
			}),
			actual: machine(func(m map[string]any) {
				d := device(m, 0)
				d["addressesFromPools"], d["nameservers"] = []any{map[string]any{"group": "ipam.cluster.x-k8s.io", "resource": "IPPool", "name": "pool-b"}}, []any{"10.0.0.3"}
			}),
			wantDiff: []string{`network.devices[0].addressesFromPools[0].name: "pool-b" -> "pool-a"`, `network.devices[0].nameservers[0]: "10.0.0.3" -> "10.0.0.2"`}},
		{name: "resource pool compared as a clean path, datastore as written", desired: desired,
			actual:   machine(func(m map[string]any) { m["workspace"].(map[string]any)["datastore"] = "/dc1/datastore/ds2/" }),
			wantDiff: []string{`workspace.datastore: "/dc1/datastore/ds2/" -> "/dc1/datastore/ds2"`}},
		{name: "size counts", desired: desired,
			actual:   machine(func(m map[string]any) { m["memoryMiB"] = 8192 }),
			wantDiff: []string{`memoryMiB: 8192 -> 16384`}},
		{name: "a machine in another failure domain differs in its placement", desired: desired,
			actual: machine(func(m map[string]any) {
				m["workspace"].(map[string]any)["datastore"] = "/dc1/datastore/ds1"
				m["workspace"].(map[string]any)["resourcePool"] = "/dc1/host/cluster1/Resources"
			}),
			wantDiff: []string{`workspace.datastore: "/dc1/datastore/ds1" -> "/dc1/datastore/ds2"`, `workspace.resourcePool: "/dc1/host/cluster1/Resources" -> "/dc1/host/cluster2/Resources"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, unknown, err := Compare(vsphere{}, c.desired, c.actual)
			if err != nil || unknown != nil {
				t.Fatal(err, unknown)
			}
			var got []string
			for _, ch := range d {
				got = append(got, ch.String())
			}
			if !reflect.DeepEqual(got, c.wantDiff) {
				t.Errorf("diff\n got %q\nwant %q", got, c.wantDiff)
			}
		})
	}
}

func TestVSphereFailureDomainAndMatches(t *testing.T) {
	observed, err := vsphere{}.FailureDomain([]byte(vsphereMachineSpec))
	if err != nil {
		t.Fatal(err)
	}
	if want := "VSphere{server=vcenter.example.com, datacenter=dc1, datastore=/dc1/datastore/ds2, resourcePool=/dc1/host/cluster2//Resources, folder=/dc1/vm/c1-x7k2p}"; observed.String() != want {
		t.Fatalf("observed %s\nwant %s", observed, want)
	}
	if fd, _ := (vsphere{}).FailureDomain([]byte(vsphereTemplateSpec)); !fd.IsZero() {
		t.Errorf("an empty workspace places nothing: %s", fd)
	}
	ws := func(f func(w map[string]any)) FailureDomain {
		fd, err := vsphere{}.FailureDomain(edit(t, vsphereMachineSpec, func(m map[string]any) { f(m["workspace"].(map[string]any)) }))
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	b, a, c := resolvedVSphere(t, "us-east-1b"), resolvedVSphere(t, "us-east-1a"), resolvedVSphere(t, "us-east-1c")
	cases := []struct {
		name     string
		declared FailureDomain
		observed FailureDomain
		want     bool
	}{
		{"its own failure domain", b, observed, true},
		{"another failure domain", a, observed, false},
		{"another folder is a change, not another failure domain", b, ws(func(w map[string]any) { w["folder"] = "/dc1/vm/elsewhere" }), true},
		{"another datastore", b, ws(func(w map[string]any) { w["datastore"] = "/dc1/datastore/ds3" }), false},
		{"another vCenter", b, ws(func(w map[string]any) { w["server"] = "vc2.example.com" }), false},
		{"a VM group the failure domain does not have", b, ws(func(w map[string]any) { w["vmGroup"] = "zone-c-vms" }), false},
		{"host-group zone", c, ws(func(w map[string]any) {
			w["datastore"], w["resourcePool"], w["vmGroup"] = "/dc1/datastore/ds3", "/dc1/host/cluster3/Resources/", "zone-c-vms"
		}), true},
		{"no placement", b, FailureDomain{}, false},
		{"by name when both have one", b, FailureDomain{VSphere: &VSphereFailureDomain{Name: "us-east-1b"}}, true},
	}
	for _, c := range cases {
		if got := c.declared.Matches(c.observed); got != c.want {
			t.Errorf("%s: %s.Matches(%s) = %v", c.name, c.declared, c.observed, got)
		}
	}
}
