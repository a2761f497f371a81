package platform

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
)

// nutanixInfra is an Infrastructure with Nutanix failure domains, in the
// shape of the OpenShift documentation's "Adding failure domains to an
// existing Nutanix cluster": one Prism Element by name, one by UUID.
const nutanixInfra = `
apiVersion: config.openshift.io/v1
kind: Infrastructure
metadata:
  name: cluster
spec:
  platformSpec:
    type: Nutanix
    nutanix:
      prismCentral:
        address: pc.example.com
        port: 9440
      prismElements:
      - name: pe1
        endpoint:
          address: pe1.example.com
          port: 9440
      - name: pe2
        endpoint:
          address: pe2.example.com
          port: 9440
      failureDomains:
      - name: fd-pe1
        cluster:
          type: Name
          name: pe1
        subnets:
        - type: Name
          name: pe1-subnet
      - name: fd-pe2
        cluster:
          type: UUID
          uuid: 0005b0f1-8f43-a0f2-02b7-3cecef193712
        subnets:
        - type: UUID
          uuid: c7938dc6-7659-453e-a688-e26020c68e43
        - type: Name
          name: pe2-storage
status:
  infrastructureName: c1-x7k2p
  platform: Nutanix
`

// nutanixSpec is a control-plane machine the installer made in fd-pe1 (the
// documentation's Nutanix control plane machine set example).
const nutanixSpec = `{
  "apiVersion": "machine.openshift.io/v1",
  "kind": "NutanixMachineProviderConfig",
  "bootType": "",
  "categories": [{"key": "env", "value": "prod"}],
  "cluster": {"type": "name", "name": "pe1"},
  "credentialsSecret": {"name": "nutanix-credentials"},
  "failureDomain": {"name": "fd-pe1"},
  "image": {"type": "name", "name": "c1-x7k2p-rhcos"},
  "memorySize": "16Gi",
  "metadata": {"creationTimestamp": null},
  "project": {"type": ""},
  "subnets": [{"type": "name", "name": "pe1-subnet"}],
  "systemDiskSize": "120Gi",
  "userDataSecret": {"name": "master-user-data"},
  "vcpuSockets": 8,
  "vcpusPerSocket": 1
}`

func nutanixFDs(names ...string) *machinev1.FailureDomains {
	fds := &machinev1.FailureDomains{Platform: configv1.NutanixPlatformType}
	for _, n := range names {
		fds.Nutanix = append(fds.Nutanix, machinev1.NutanixFailureDomainReference{Name: n})
	}
	return fds
}

func resolvedNutanix(t *testing.T, name string) FailureDomain {
	t.Helper()
	fds, err := FromSpec(nutanixFDs(name), loadInfra(t, nutanixInfra))
	if err != nil || len(fds) != 1 {
		t.Fatalf("resolving %s: %v %v", name, fds, err)
	}
	return fds[0]
}

func nid(typ machinev1.NutanixIdentifierType, name, uuid string) machinev1.NutanixResourceIdentifier {
	id := machinev1.NutanixResourceIdentifier{Type: typ}
	if name != "" {
		id.Name = &name
	}
	if uuid != "" {
		id.UUID = &uuid
	}
	return id
}

func TestNutanixFromSpec(t *testing.T) {
	fd := resolvedNutanix(t, "fd-pe2")
	// The Infrastructure spells the types "Name"/"UUID", the provider spec
	// "name"/"uuid".
	want := NutanixFailureDomain{Name: "fd-pe2",
		Cluster: nid(machinev1.NutanixIdentifierUUID, "", "0005b0f1-8f43-a0f2-02b7-3cecef193712"),
		Subnets: []machinev1.NutanixResourceIdentifier{
			nid(machinev1.NutanixIdentifierUUID, "", "c7938dc6-7659-453e-a688-e26020c68e43"),
			nid(machinev1.NutanixIdentifierName, "pe2-storage", ""),
		}}
	if fd.Nutanix == nil || !reflect.DeepEqual(*fd.Nutanix, want) || fd.String() != "Nutanix{name=fd-pe2}" {
		t.Fatalf("got %s %+v", fd, fd.Nutanix)
	}

	infra := loadInfra(t, nutanixInfra)
	_, err := FromSpec(nutanixFDs("fd-pe1", "fd-pe3"), infra)
	var undefined UndefinedFailureDomainsError
	if !errors.As(err, &undefined) || !reflect.DeepEqual(undefined, UndefinedFailureDomainsError{{configv1.NutanixPlatformType, 1, "fd-pe3"}}) {
		t.Fatalf("unknown name: %v", err)
	}
	if !strings.Contains(err.Error(), `the failure domain with name "fd-pe3" is not defined in the infrastructure resource (Infrastructure cluster, spec.platformSpec.nutanix.failureDomains)`) {
		t.Errorf("message %q", err)
	}
	if _, err := FromSpec(nutanixFDs("fd-pe1"), nil); !errors.Is(err, ErrNoInfrastructure) {
		t.Errorf("no Infrastructure: %v", err)
	}
	bad := infra.DeepCopy()
	bad.Spec.PlatformSpec.Nutanix.FailureDomains[0].Cluster.Type = "Serial"
	if _, err := FromSpec(nutanixFDs("fd-pe1"), bad); err == nil || !strings.Contains(err.Error(), `"fd-pe1"`) || !strings.Contains(err.Error(), `"Serial"`) {
		t.Errorf("an identifier type the provider spec cannot express: %v", err)
	}
}

func TestNutanixInjectAndCompare(t *testing.T) {
	// The set's template as the upstream generator writes it: the failure
	// domain's fields emptied.
	template := edit(t, nutanixSpec, func(m map[string]any) {
		m["cluster"] = map[string]any{"type": ""}
		m["subnets"] = []any{}
		delete(m, "failureDomain")
		m["futureField"] = "kept"
	})
	fd2 := resolvedNutanix(t, "fd-pe2")
	out, err := nutanix{}.Inject(template, fd2)
	if err != nil {
		t.Fatal(err)
	}
	m := decodeMap(t, out)
	wantSubnets := []any{map[string]any{"type": "uuid", "uuid": "c7938dc6-7659-453e-a688-e26020c68e43"}, map[string]any{"type": "name", "name": "pe2-storage"}}
	if !reflect.DeepEqual(m["failureDomain"], map[string]any{"name": "fd-pe2"}) ||
		!reflect.DeepEqual(m["cluster"], map[string]any{"type": "uuid", "uuid": "0005b0f1-8f43-a0f2-02b7-3cecef193712"}) ||
		!reflect.DeepEqual(m["subnets"], wantSubnets) || m["futureField"] != "kept" || m["memorySize"] != "16Gi" {
		t.Fatalf("injected %s", out)
	}
	// The cluster is replaced whole: a name in the template must not
	// survive next to the failure domain's UUID.
	out, _ = nutanix{}.Inject([]byte(nutanixSpec), fd2)
	if c := decodeMap(t, out)["cluster"].(map[string]any); c["name"] != nil {
		t.Errorf("cluster %v", c)
	}

	desired, err := nutanix{}.Inject(template, resolvedNutanix(t, "fd-pe1"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		actual   []byte
		wantDiff []string
	}{
		{name: "the installer's machine in fd-pe1", actual: []byte(nutanixSpec)},
		{name: "a quantity written another way", actual: edit(t, nutanixSpec, func(m map[string]any) { m["memorySize"] = "16384Mi" })},
		// As upstream, Nutanix ignores nothing: the image is named after
		// the cluster, not the release.
		{name: "the image counts", actual: edit(t, nutanixSpec, func(m map[string]any) { m["image"] = map[string]any{"type": "name", "name": "old-rhcos"} }),
			wantDiff: []string{`image.name: "old-rhcos" -> "c1-x7k2p-rhcos"`}},
		{name: "a machine made before failure domains", actual: edit(t, nutanixSpec, func(m map[string]any) { delete(m, "failureDomain") }),
			wantDiff: []string{`failureDomain: <absent> -> {"name":"fd-pe1"}`}},
		{name: "sockets", actual: edit(t, nutanixSpec, func(m map[string]any) { m["vcpuSockets"] = 4 }),
			wantDiff: []string{`vcpuSockets: 4 -> 8`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, unknown, err := Compare(nutanix{}, desired, c.actual)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"futureField"}; !reflect.DeepEqual(unknown, want) {
				t.Errorf("unknown %q", unknown)
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

func TestNutanixFailureDomainAndMatches(t *testing.T) {
	observed, err := nutanix{}.FailureDomain([]byte(nutanixSpec))
	if err != nil || observed.String() != "Nutanix{name=fd-pe1}" {
		t.Fatalf("observed %s %v", observed, err)
	}
	legacy, _ := nutanix{}.FailureDomain(edit(t, nutanixSpec, func(m map[string]any) { delete(m, "failureDomain") }))
	if legacy.String() != "Nutanix{cluster=name:pe1, subnets=[name:pe1-subnet]}" {
		t.Fatalf("legacy %s", legacy)
	}
	movedLegacy, _ := nutanix{}.FailureDomain(edit(t, nutanixSpec, func(m map[string]any) {
		delete(m, "failureDomain")
		m["subnets"] = []any{map[string]any{"type": "name", "name": "other"}}
	}))
	fd1, fd2 := resolvedNutanix(t, "fd-pe1"), resolvedNutanix(t, "fd-pe2")
	cases := []struct {
		name     string
		declared FailureDomain
		observed FailureDomain
		want     bool
	}{
		{"by name", fd1, observed, true},
		{"another name", fd2, observed, false},
		{"a machine without a name, by its cluster and subnets", fd1, legacy, true},
		{"a machine without a name in another cluster", fd2, legacy, false},
		{"a machine without a name on another subnet", fd1, movedLegacy, false},
		{"no failure domain", fd1, FailureDomain{}, false},
	}
	for _, c := range cases {
		if got := c.declared.Matches(c.observed); got != c.want {
			t.Errorf("%s: %s.Matches(%s) = %v", c.name, c.declared, c.observed, got)
		}
	}
	if fd, _ := (nutanix{}).FailureDomain([]byte(`{"kind":"NutanixMachineProviderConfig","memorySize":"16Gi"}`)); !fd.IsZero() {
		t.Errorf("a spec without cluster, subnets or failure domain: %s", fd)
	}
}
