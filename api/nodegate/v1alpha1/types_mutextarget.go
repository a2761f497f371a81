package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MutexTarget names the MachineConfigPools whose nodes a run gates.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=numo
// +kubebuilder:printcolumn:name="Machine Config Pools",type=string,JSONPath=`.spec.machineConfigPools`
// +kubebuilder:printcolumn:name="Nodes",type=string,JSONPath=`.status.nodes`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MutexTarget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec MutexTargetSpec `json:"spec"`
	// +optional
	Status MutexTargetStatus `json:"status,omitempty"`
}

// MutexTargetSpec lists the pools. (mutex operator)
type MutexTargetSpec struct {
	// machineConfigPools are names of existing MachineConfigPools to pause
	// and update node by node. master cannot be gated.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'))",message="spec.machineConfigPools must hold MachineConfigPool names (DNS subdomains)"
	// +kubebuilder:validation:XValidation:rule="!self.exists(p, p == 'master')",message="spec.machineConfigPools must not name master: control-plane nodes cannot be gated"
	MachineConfigPools []string `json:"machineConfigPools"`
}

// MutexTargetStatus is what node-gate found in the pools.
type MutexTargetStatus struct {
	// nodes are the nodes that are members of the pools, as the
	// machine-config operator decides membership. (mutex operator)
	// +optional
	// +listType=atomic
	Nodes []string `json:"nodes,omitempty"`

	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: ValidConfig and NodeListGathered (the mutex operator's).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true

// MutexTargetList is a list of MutexTargets.
type MutexTargetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MutexTarget `json:"items"`
}
