package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// NodeProgressInsight is the update status of one Node. There is one per Node,
// with the Node's name, owned by the Node so it is garbage-collected with it.
// The controller keeps its labels (Label*) current, so that
// `kubectl get nodeprogressinsights -l update.upshift.io/phase=Draining` or
// `-l update.upshift.io/degraded=true` finds nodes without reading them all.
// Its printer columns (Degraded and Available with `-o wide`) tell how
// `kubectl upshift status` classifies a node in its tables: when a report
// lists every node, or the UpgradeStatus carries no node tables, the CLI
// renders from the API server's table of them (a list as=Table, no objects).
//
// Unlike the other kinds, it has no status subresource: it has no spec and
// one writer, and without the subresource one server-side apply sets the
// status and the labels that follow it. With it, every change of phase was
// two writes (the status subresource ignores labels); at 5,000 nodes that
// was half of the controller's writes.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:validation:XValidation:rule="!has(self.status) || !has(self.status.name) || self.status.name == self.metadata.name",message="status.name must equal metadata.name"
// +kubebuilder:printcolumn:name="Pool",type=string,JSONPath=`.status.poolResource.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.conditions[?(@.type=="Updating")].reason`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Est",type=string,JSONPath=`.status.estimatedToComplete`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`,priority=1
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`,priority=1
// +kubebuilder:printcolumn:name="Scope",type=string,JSONPath=`.status.scopeType`,priority=1
type NodeProgressInsight struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is empty: this is a purely status-reporting API.
	// +optional
	Spec NodeProgressInsightSpec `json:"spec,omitzero"`

	// status is the node's update status.
	// +optional
	Status NodeStatusInsight `json:"status,omitzero"`
}

// NodeProgressInsightSpec is empty.
type NodeProgressInsightSpec struct{}

// NodeStatusInsight is the update status of one Node.
type NodeStatusInsight struct {
	// conditions: Updating (its reason is the update phase: Draining, Updating,
	// Rebooting, Paused, Gated (held by a node-gate run), Pending, Completed),
	// Available (False when the node does not accept workloads and is not
	// updating) and Degraded (True when the MCD failed to apply the
	// configuration).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=10
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// name of the Node.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// resource is the Node.
	// +required
	// +kubebuilder:validation:XValidation:rule="(!has(self.group) || self.group == '') && self.resource == 'nodes'",message="resource must be a node"
	Resource ResourceRef `json:"resource"`

	// poolResource is the MachineConfigPool the node belongs to.
	// +required
	PoolResource PoolResourceRef `json:"poolResource"`

	// scopeType is ControlPlane for nodes of the master pool, WorkerPool otherwise.
	// +required
	ScopeType ScopeType `json:"scopeType"`

	// version is the release version the node runs, when known; inferred from
	// its current MachineConfig's release-image-version annotation.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version,omitempty"`

	// estimatedToComplete is the estimated time until the node is updated;
	// absent when unknown, zero when there is nothing left to do.
	// +optional
	EstimatedToComplete *metav1.Duration `json:"estimatedToComplete,omitempty"`

	// message is a short human message, set when there is something interesting to say.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
}

// +kubebuilder:object:root=true

// NodeProgressInsightList is a list of NodeProgressInsight.
type NodeProgressInsightList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeProgressInsight `json:"items"`
}
