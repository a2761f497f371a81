// Package machineapi simulates the machine-api-operator's machine controller,
// nodelink and drain (Machines go Provisioning → Provisioned → Running, get a
// Node with providerID and a nodeRef; deletion waits for preDrain hooks,
// drains, waits for preTerminate hooks, removes the Node and the Machine) and
// the MachineSet controller (replicas create and delete Machines).
// objects.go builds Machines and Nodes; controller.go holds the loops and the
// pure scale-down rule (deletePriority).
package machineapi

import (
	"crypto/sha1" //nolint:gosec // only for stable fake IPs
	"encoding/json"
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Names and labels of the machine-api.
const (
	Namespace         = "openshift-machine-api"
	Finalizer         = "machine.machine.openshift.io"
	ClusterLabel      = "machine.openshift.io/cluster-api-cluster"
	RoleLabel         = "machine.openshift.io/cluster-api-machine-role"
	TypeLabel         = "machine.openshift.io/cluster-api-machine-type"
	MachineSetLabel   = "machine.openshift.io/cluster-api-machineset"
	ZoneLabel         = "machine.openshift.io/zone"
	RegionLabel       = "machine.openshift.io/region"
	InstanceTypeLabel = "machine.openshift.io/instance-type"
	MachineAnnotation = "machine.openshift.io/machine"
	ExcludeDrainAnnot = "machine.openshift.io/exclude-node-draining"
	DeleteMachineAnn  = "machine.openshift.io/delete-machine"

	// KwokAnnotation hands a Node to kwok (value "fake"); kwok then keeps it
	// Ready and runs the pods bound to it.
	KwokAnnotation = "kwok.x-k8s.io/node"
	KwokValue      = "fake"
)

// ProviderSpec is the simulated AWS provider config stored in providerSpec.value.
type ProviderSpec struct {
	APIVersion   string `json:"apiVersion"`
	Kind         string `json:"kind"`
	InstanceType string `json:"instanceType"`
	Placement    struct {
		AvailabilityZone string `json:"availabilityZone"`
		Region           string `json:"region"`
	} `json:"placement"`
}

// NewProviderSpec returns providerSpec.value for a zone.
func NewProviderSpec(region, zone, instanceType string) *runtime.RawExtension {
	ps := ProviderSpec{APIVersion: "machine.openshift.io/v1beta1", Kind: "AWSMachineProviderConfig", InstanceType: instanceType}
	ps.Placement.AvailabilityZone, ps.Placement.Region = zone, region
	raw, _ := json.Marshal(ps)
	return &runtime.RawExtension{Raw: raw}
}

// ReadProviderSpec decodes providerSpec.value (zero value if absent).
func ReadProviderSpec(m *machinev1beta1.Machine) ProviderSpec {
	var ps ProviderSpec
	if v := m.Spec.ProviderSpec.Value; v != nil {
		_ = json.Unmarshal(v.Raw, &ps)
	}
	return ps
}

// ProviderID is the fake providerID of a machine's instance.
func ProviderID(zone, machine string) string {
	return fmt.Sprintf("aws:///%s/i-%s", zone, shortHash(machine))
}

// InternalIP is a stable fake address derived from the machine name.
func InternalIP(machine string) string {
	h := sha1.Sum([]byte(machine)) //nolint:gosec
	return fmt.Sprintf("10.0.%d.%d", h[0], 1+int(h[1])%253)
}

func shortHash(s string) string {
	h := sha1.Sum([]byte(s)) //nolint:gosec
	return fmt.Sprintf("%x", h[:8])
}

// IsControlPlane reports a control-plane Machine.
func IsControlPlane(m *machinev1beta1.Machine) bool { return m.Labels[RoleLabel] == "master" }

// NodeSpec describes the Node a Machine brings up.
type NodeSpec struct {
	Name, Zone, Region, InstanceType string
	Role                             string            // master | worker
	ExtraLabels                      map[string]string // e.g. node-role.kubernetes.io/infra
	Annotations                      map[string]string // MCO annotations
	MachineRef                       string            // namespace/name
	ProviderID                       string
	InternalIP                       string
	KubeletVersion                   string
}

// Node builds a Node as the installer/kubelet registers it, Ready, handed to kwok.
func Node(s NodeSpec) *corev1.Node {
	lbl := map[string]string{
		"kubernetes.io/hostname":            s.Name,
		"kubernetes.io/os":                  "linux",
		"kubernetes.io/arch":                "amd64",
		"beta.kubernetes.io/os":             "linux",
		"beta.kubernetes.io/arch":           "amd64",
		"node.kubernetes.io/instance-type":  s.InstanceType,
		"topology.kubernetes.io/zone":       s.Zone,
		"topology.kubernetes.io/region":     s.Region,
		"node.openshift.io/os_id":           "rhcos",
		"node-role.kubernetes.io/" + s.Role: "",
		"type":                              "kwok",
	}
	if s.Role == "master" {
		lbl["node-role.kubernetes.io/control-plane"] = ""
	}
	for k, v := range s.ExtraLabels {
		lbl[k] = v
	}
	ann := map[string]string{KwokAnnotation: KwokValue}
	if s.MachineRef != "" {
		ann[MachineAnnotation] = s.MachineRef
	}
	for k, v := range s.Annotations {
		ann[k] = v
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Labels: lbl, Annotations: ann},
		Spec:       corev1.NodeSpec{ProviderID: s.ProviderID},
		Status: corev1.NodeStatus{
			Capacity:    nodeResources(),
			Allocatable: nodeResources(),
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				ReadyCondition(corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status", metav1.Now()),
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: s.InternalIP}, {Type: corev1.NodeHostName, Address: s.Name}},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion: s.KubeletVersion, OSImage: "Red Hat Enterprise Linux CoreOS", OperatingSystem: "linux", Architecture: "amd64",
				ContainerRuntimeVersion: "cri-o://1.29.0",
			},
		},
	}
	if s.Role == "master" {
		n.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/master", Effect: corev1.TaintEffectNoSchedule}}
	}
	return n
}

// ReadyCondition is a kubelet Ready condition.
func ReadyCondition(status corev1.ConditionStatus, reason, msg string, now metav1.Time) corev1.NodeCondition {
	return corev1.NodeCondition{Type: corev1.NodeReady, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
}

func nodeResources() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
}

// MachineSpec describes a Machine to build.
type MachineSpec struct {
	Name, InfraName, Role, Region, Zone, InstanceType, MachineSet string
}

// Machine builds a Machine of the machine-api (without status).
func Machine(s MachineSpec) *machinev1beta1.Machine {
	lbl := map[string]string{
		ClusterLabel: s.InfraName, RoleLabel: s.Role, TypeLabel: s.Role,
		ZoneLabel: s.Zone, RegionLabel: s.Region, InstanceTypeLabel: s.InstanceType,
	}
	if s.MachineSet != "" {
		lbl[MachineSetLabel] = s.MachineSet
	}
	m := &machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: Namespace, Labels: lbl},
		Spec: machinev1beta1.MachineSpec{
			ProviderSpec: machinev1beta1.ProviderSpec{Value: NewProviderSpec(s.Region, s.Zone, s.InstanceType)},
		},
	}
	if s.Role == "master" {
		m.Spec.ObjectMeta.Labels = map[string]string{"node-role.kubernetes.io/master": ""}
	} else {
		m.Spec.ObjectMeta.Labels = map[string]string{"node-role.kubernetes.io/worker": ""}
	}
	return m
}
