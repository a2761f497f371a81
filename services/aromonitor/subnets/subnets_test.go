package subnets

import (
	"fmt"
	"strings"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
)

const sub = "33333333-3333-3333-3333-333333333333"

var cluster = arov1alpha1.ClusterSpec{
	ResourceID:             "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/openShiftClusters/c1",
	ClusterResourceGroupID: "/subscriptions/" + sub + "/resourceGroups/aro-infra",
	InfraID:                "c1-abcde",
	ArchitectureVersion:    1,
}

func spec(subnet string) *runtime.RawExtension {
	return &runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AzureMachineProviderSpec","vnet":"vnet","subnet":%q,"networkResourceGroup":"vnet-rg","vmSize":"Standard_D8s_v3"}`, subnet))}
}

func machine(name, role, subnet string) machinev1beta1.Machine {
	m := machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{MachineRoleLabel: role}}}
	m.Spec.ProviderSpec.Value = spec(subnet)
	return m
}

func set(name, role, subnet string) machinev1beta1.MachineSet {
	ms := machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{MachineRoleLabel: role}}}
	ms.Spec.Template.Spec.ProviderSpec.Value = spec(subnet)
	return ms
}

func TestDiscover(t *testing.T) {
	bad := set("broken", "worker", "")
	bad.Spec.Template.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(`[]`)}
	got, problems, err := Discover(cluster,
		[]machinev1beta1.Machine{machine("m0", "master", "master"), machine("m1", "master", "Master"), machine("w-1", "worker", "ignored-machines-are-not-read")},
		[]machinev1beta1.MachineSet{set("w-a", "worker", "worker"), set("w-b", "worker", "WORKER"), set("infra", "infra", "infra"), bad})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range got {
		ids = append(ids, fmt.Sprintf("%s %s %s", s.Role, s.Name, s.ExpectedNSG[strings.LastIndex(s.ExpectedNSG, "/")+1:]))
	}
	want := "worker infra c1-abcde-nsg|master master c1-abcde-nsg|worker worker c1-abcde-nsg"
	if strings.Join(ids, "|") != want {
		t.Errorf("subnets %q, want %q", strings.Join(ids, "|"), want)
	}
	if len(problems) != 1 || problems[0].Object != "MachineSet broken" {
		t.Errorf("problems %v", problems)
	}
	if got[1].ID != "/subscriptions/"+sub+"/resourceGroups/vnet-rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/master" {
		t.Errorf("ID %s", got[1].ID)
	}
}

func TestExpectedNSGArchitectureV1(t *testing.T) {
	v0 := cluster
	v0.ArchitectureVersion = 0
	for _, tc := range []struct {
		spec arov1alpha1.ClusterSpec
		role amv1alpha1.Role
		want string
	}{
		{cluster, amv1alpha1.RoleMaster, "c1-abcde-nsg"},
		{v0, amv1alpha1.RoleMaster, "c1-abcde-controlplane-nsg"},
		{v0, amv1alpha1.RoleWorker, "c1-abcde-node-nsg"},
	} {
		got := ExpectedNSG(tc.spec, tc.role)
		if got != cluster.ClusterResourceGroupID+"/providers/Microsoft.Network/networkSecurityGroups/"+tc.want {
			t.Errorf("ExpectedNSG(v%d, %s) = %s", tc.spec.ArchitectureVersion, tc.role, got)
		}
	}
}

func TestSubscriptionOf(t *testing.T) {
	if s, err := SubscriptionOf(cluster.ResourceID); err != nil || s != sub {
		t.Errorf("SubscriptionOf = %q, %v", s, err)
	}
	for _, bad := range []string{"", "/resourceGroups/x", "/subscriptions/"} {
		if _, err := SubscriptionOf(bad); err == nil {
			t.Errorf("SubscriptionOf(%q) accepted", bad)
		}
	}
	if _, _, err := Discover(arov1alpha1.ClusterSpec{}, nil, nil); err == nil || !strings.Contains(err.Error(), "spec.resourceId") {
		t.Errorf("Discover without a resource ID: %v", err)
	}
}

func TestAgentLeaseName(t *testing.T) {
	for in, want := range map[string]string{
		"worker-eastus1": "upshift-aro-monitor-worker-worker-eastus1",
		"prod.workers":   "upshift-aro-monitor-worker-prod.workers",
	} {
		if got := AgentLeaseName(in); got != want {
			t.Errorf("AgentLeaseName(%q) = %q, want %q", in, got, want)
		}
	}
	// Names Kubernetes would refuse are made valid; different subnets stay
	// distinct, and every spelling of one subnet (Azure compares names
	// case-insensitively) shares one Lease, or two agents would probe it.
	seen := map[string]string{}
	for _, spellings := range [][]string{{"Worker_A", "worker_a", "WORKER_A"}, {"worker-a", "Worker-A", "WORKER-A"}, {"_x_", "_X_"}, {"worker.a"}} {
		first := AgentLeaseName(spellings[0])
		if errs := validation.IsDNS1123Subdomain(first); len(errs) > 0 {
			t.Errorf("AgentLeaseName(%q) = %q: %v", spellings[0], first, errs)
		}
		for _, in := range spellings[1:] {
			if got := AgentLeaseName(in); got != first {
				t.Errorf("AgentLeaseName(%q) = %q, but AgentLeaseName(%q) = %q: one subnet, two Leases", in, got, spellings[0], first)
			}
		}
		if prev, ok := seen[first]; ok {
			t.Errorf("%q and %q share the Lease %q", prev, spellings[0], first)
		}
		seen[first] = spellings[0]
	}
}

func TestOfMachine(t *testing.T) {
	m := &machinev1beta1.Machine{}
	if _, err := OfMachine(m); err == nil {
		t.Error("no provider spec: want an error")
	}
	m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(`{"kind":"AzureMachineProviderSpec","subnet":"worker-eastus1","vnet":"v"}`)}
	if got, err := OfMachine(m); err != nil || got != "worker-eastus1" {
		t.Errorf("OfMachine = %q, %v", got, err)
	}
	m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(`{"kind":"AzureMachineProviderSpec","vnet":"v"}`)}
	if _, err := OfMachine(m); err == nil || !strings.Contains(err.Error(), "names no subnet") {
		t.Errorf("no subnet: got %v", err)
	}
}
