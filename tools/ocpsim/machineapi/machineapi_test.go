package machineapi

import (
	"sort"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestScaleDownOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(name string, age time.Duration, f func(*machinev1beta1.Machine)) *machinev1beta1.Machine {
		m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-age)), Annotations: map[string]string{}}}
		m.Status.Phase = ptr.To(machinev1beta1.PhaseRunning)
		m.Status.NodeRef = &corev1.ObjectReference{Name: name}
		if f != nil {
			f(m)
		}
		return m
	}
	ms := []*machinev1beta1.Machine{
		mk("old", 10*time.Hour, nil),
		mk("new", time.Hour, nil),
		mk("annotated", 20*time.Hour, func(m *machinev1beta1.Machine) { m.Annotations[DeleteMachineAnn] = "true" }),
		mk("failed", 30*time.Hour, func(m *machinev1beta1.Machine) { m.Status.Phase = ptr.To(machinev1beta1.PhaseFailed) }),
		mk("unlinked", 40*time.Hour, func(m *machinev1beta1.Machine) { m.Status.NodeRef = nil }),
	}
	sort.SliceStable(ms, func(i, j int) bool { return deletePriority(ms[i]) > deletePriority(ms[j]) })
	var got []string
	for _, m := range ms {
		got = append(got, m.Name)
	}
	want := []string{"annotated", "failed", "unlinked", "new", "old"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("scale-down order %v, want %v", got, want)
		}
	}
}

func TestObjects(t *testing.T) {
	m := Machine(MachineSpec{Name: "ocp-worker-a-0", InfraName: "ocp", Role: "worker", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "m6i.2xlarge", MachineSet: "ocp-worker-a"})
	ps := ReadProviderSpec(m)
	if ps.Placement.AvailabilityZone != "us-east-1a" || ps.InstanceType != "m6i.2xlarge" || ps.Kind != "AWSMachineProviderConfig" {
		t.Errorf("provider spec %+v", ps)
	}
	if m.Labels[ClusterLabel] != "ocp" || m.Labels[MachineSetLabel] != "ocp-worker-a" || IsControlPlane(m) {
		t.Errorf("labels %v", m.Labels)
	}
	if first, again := InternalIP("a"), InternalIP("a"); first != again || first == InternalIP("b") {
		t.Error("internal IPs must be stable and distinct")
	}
	n := Node(NodeSpec{Name: "cp", Role: "master", Zone: "z", InternalIP: "10.0.0.1"})
	if _, ok := n.Labels["node-role.kubernetes.io/control-plane"]; !ok || len(n.Spec.Taints) != 1 || n.Annotations[KwokAnnotation] != KwokValue {
		t.Errorf("control-plane node %+v", n.ObjectMeta)
	}
	if ns, name, ok := cutRef("openshift-machine-api/m"); !ok || ns != "openshift-machine-api" || name != "m" {
		t.Error("cutRef")
	}
	if _, _, ok := cutRef("m"); ok {
		t.Error("cutRef without namespace")
	}
}
