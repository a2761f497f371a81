package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// UpgradeStatusName is the only allowed name of the UpgradeStatus singleton.
const UpgradeStatusName = "cluster"

// MaxHealthInsights is the most health insights the status holds; keep it
// equal to the MaxItems marker of UpgradeStatusStatus.Health.
const MaxHealthInsights = 128

// UpgradeStatus is the cluster's update status, as interpreted by the
// update-status-controller. It is a singleton named "cluster". Node insights
// are kept apart, in NodeProgressInsight objects, so that this object stays
// small on large clusters.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'cluster'",message="UpgradeStatus is a singleton and must be named 'cluster'"
// +kubebuilder:printcolumn:name="Assessment",type=string,JSONPath=`.status.controlPlane.clusterVersion.assessment`
// +kubebuilder:printcolumn:name="Completion",type=integer,JSONPath=`.status.controlPlane.clusterVersion.completion`
// +kubebuilder:printcolumn:name="Target Version",type=string,JSONPath=`.status.controlPlane.clusterVersion.versions.target.version`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type UpgradeStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is empty: this is a purely status-reporting API.
	// +optional
	Spec UpgradeStatusSpec `json:"spec,omitzero"`

	// status is the update status.
	// +optional
	Status UpgradeStatusStatus `json:"status,omitzero"`
}

// UpgradeStatusSpec is empty.
type UpgradeStatusSpec struct{}

// UpgradeStatusStatus is the update status of the cluster.
type UpgradeStatusStatus struct {
	// conditions describe the controller itself (is it able to compute the
	// status), not the update.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=10
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// controlPlane is the update status of the control plane.
	// +optional
	ControlPlane *ControlPlane `json:"controlPlane,omitempty"`

	// workerPools is the update status of every non-master MachineConfigPool.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	WorkerPools []Pool `json:"workerPools,omitempty"`

	// health lists conditions that need attention during the update.
	// +optional
	// +listType=map
	// +listMapKey=uid
	// +kubebuilder:validation:MaxItems=128
	Health []HealthInsight `json:"health,omitempty"`

	// reportedNodes are the node tables of `kubectl upshift status` without
	// --details=nodes, as the controller computed them with the insights: the
	// nodes each table lists and counts of those it leaves out. They are
	// published here so that such a report is one read however many nodes
	// the cluster has; the NodeProgressInsights stay the source of each
	// node's status. Absent when there is no node to list, or when the listed
	// nodes do not fit (more than 128 of them, or more than 32 KiB of their
	// messages): the report then reads the node insights.
	// +optional
	ReportedNodes *ReportedNodes `json:"reportedNodes,omitempty"`
}

// The bounds of ReportedNodes: a report lists ten nodes per table and every
// node with a problem, so a cluster with many problem nodes or many pools
// goes without (the status would grow with the node count otherwise).
const (
	MaxReportedNodes        = 128
	MaxReportedMessageBytes = 32 << 10
)

// ReportedNodes are the node tables of a report without --details=nodes.
type ReportedNodes struct {
	// controlPlane is the table of the control-plane nodes.
	// +optional
	ControlPlane NodeTable `json:"controlPlane,omitzero"`

	// workerPools holds the table of each worker pool that has nodes.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	WorkerPools []PoolNodeTable `json:"workerPools,omitempty"`
}

// PoolNodeTable is the node table of one worker pool.
type PoolNodeTable struct {
	// name of the MachineConfigPool.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9-]+$`
	Name string `json:"name"`

	NodeTable `json:",inline"`
}

// NodeTable is one node table of a report: the nodes it lists, in its order,
// and counts of the nodes it leaves out.
type NodeTable struct {
	// nodes are the listed nodes' insights in the table's order (problems
	// first, then nodes updating, then the rest; by name within each), their
	// conditions without messages.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	Nodes []NodeStatusInsight `json:"nodes,omitempty"`

	// omitted counts the nodes the table leaves out.
	// +optional
	Omitted OmittedNodes `json:"omitted,omitzero"`
}

// OmittedNodes counts the nodes a table leaves out, as the report's
// "Omitted additional ..." line does.
type OmittedNodes struct {
	// total is the number of nodes left out.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Total int32 `json:"total,omitempty"`
	// completed of them are updated.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Completed int32 `json:"completed,omitempty"`
	// available of them accept workloads and are not updating.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Available int32 `json:"available,omitempty"`
	// progressing of them are updating.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Progressing int32 `json:"progressing,omitempty"`
	// outdated of them do not run the target yet.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Outdated int32 `json:"outdated,omitempty"`
	// draining of them are being drained.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Draining int32 `json:"draining,omitempty"`
	// excluded of them are in paused pools.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Excluded int32 `json:"excluded,omitempty"`
}

// ControlPlane is the update status of the control plane.
type ControlPlane struct {
	// conditions summarize the control plane; type Updating with reasons
	// ClusterVersionProgressing, ClusterVersionNotProgressing or CannotDetermineUpdating.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=10
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// clusterVersion is the ClusterVersion insight.
	// +optional
	ClusterVersion *ClusterVersionStatusInsight `json:"clusterVersion,omitempty"`

	// clusterOperators holds one insight per platform ClusterOperator, sorted by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	ClusterOperators []ClusterOperatorStatusInsight `json:"clusterOperators,omitempty"`

	// pool is the insight of the control-plane MachineConfigPool ("master");
	// absent when the cluster has none.
	// +optional
	Pool *MachineConfigPoolStatusInsight `json:"pool,omitempty"`
}

// Pool is the update status of one worker pool.
// +kubebuilder:validation:XValidation:rule="self.name == self.pool.name",message="name must match the pool insight's name"
type Pool struct {
	// name of the MachineConfigPool.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9-]+$`
	Name string `json:"name"`

	// conditions summarize the pool; type Updating.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=10
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// pool is the MachineConfigPool insight.
	// +required
	Pool MachineConfigPoolStatusInsight `json:"pool"`
}

// ControlPlaneAssessment is the overall assessment of the control-plane update.
// +kubebuilder:validation:Enum=Unknown;Progressing;"Progressing - Slow";Stalled;Completed;Degraded
type ControlPlaneAssessment string

const (
	ControlPlaneAssessmentUnknown     ControlPlaneAssessment = "Unknown"
	ControlPlaneAssessmentProgressing ControlPlaneAssessment = "Progressing"
	// ControlPlaneAssessmentSlow: the update takes longer than estimated.
	ControlPlaneAssessmentSlow ControlPlaneAssessment = "Progressing - Slow"
	// ControlPlaneAssessmentStalled: the update overran its estimate by more than 10 minutes.
	ControlPlaneAssessmentStalled   ControlPlaneAssessment = "Stalled"
	ControlPlaneAssessmentCompleted ControlPlaneAssessment = "Completed"
	ControlPlaneAssessmentDegraded  ControlPlaneAssessment = "Degraded"
)

// ClusterVersionStatusInsight is the status of the ClusterVersion, i.e. of the
// control plane of a standalone cluster.
type ClusterVersionStatusInsight struct {
	// conditions: type Updating.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=10
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// resource is the ClusterVersion.
	// +required
	// +kubebuilder:validation:XValidation:rule="has(self.group) && self.group == 'config.openshift.io' && self.resource == 'clusterversions'",message="resource must be a clusterversions.config.openshift.io"
	Resource ResourceRef `json:"resource"`

	// assessment is the human-oriented state of the control-plane update.
	// +required
	Assessment ControlPlaneAssessment `json:"assessment"`

	// versions are the previous and target versions.
	// +required
	Versions ControlPlaneUpdateVersions `json:"versions"`

	// completion is the percentage of platform ClusterOperators at the target version.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Completion int32 `json:"completion"`

	// startedAt is when the current or last update started.
	// +required
	StartedAt metav1.Time `json:"startedAt"`

	// completedAt is when the update completed; set only then.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// estimatedCompletedAt is when the update is expected to complete; absent
	// when the update is complete or no estimate is available.
	// +optional
	EstimatedCompletedAt *metav1.Time `json:"estimatedCompletedAt,omitempty"`
}

// ClusterOperatorStatusInsight is the status of one platform ClusterOperator.
type ClusterOperatorStatusInsight struct {
	// conditions: Updating (reasons Updated, Pending, Progressing, CannotDetermine;
	// when True its lastTransitionTime and message are the operator's Progressing
	// condition's) and Healthy (reasons AsExpected, Unavailable, Degraded, CannotDetermine).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=10
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// name of the ClusterOperator.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9-]+$`
	Name string `json:"name"`

	// resource is the ClusterOperator.
	// +required
	// +kubebuilder:validation:XValidation:rule="has(self.group) && self.group == 'config.openshift.io' && self.resource == 'clusteroperators'",message="resource must be a clusteroperators.config.openshift.io"
	Resource ResourceRef `json:"resource"`

	// progressingReason is the reason of the operator's own Progressing
	// condition while it is updating (Upshift addition; shown by the CLI).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	ProgressingReason string `json:"progressingReason,omitempty"`
}

// PoolAssessment is the assessment of a MachineConfigPool's update.
// +kubebuilder:validation:Enum=Pending;Completed;Degraded;Excluded;Progressing
type PoolAssessment string

const (
	// PoolPending: nodes will be updated but none started.
	PoolPending PoolAssessment = "Pending"
	// PoolCompleted: all nodes are updated.
	PoolCompleted PoolAssessment = "Completed"
	// PoolDegraded: a node failed to update.
	PoolDegraded PoolAssessment = "Degraded"
	// PoolExcluded: configuration (a paused pool) keeps nodes from updating.
	PoolExcluded PoolAssessment = "Excluded"
	// PoolProgressing: nodes are updating without problems.
	PoolProgressing PoolAssessment = "Progressing"
)

// MachineConfigPoolStatusInsight is the status of one MachineConfigPool.
type MachineConfigPoolStatusInsight struct {
	// conditions: type Updating.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=10
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// name of the pool.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9-]+$`
	Name string `json:"name"`

	// resource is the MachineConfigPool.
	// +required
	Resource PoolResourceRef `json:"resource"`

	// scopeType is ControlPlane for the master pool, WorkerPool otherwise.
	// +required
	ScopeType ScopeType `json:"scopeType"`

	// assessment of the pool's update.
	// +required
	Assessment PoolAssessment `json:"assessment"`

	// completion is the percentage of the pool's nodes that are updated (0 for an empty pool).
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Completion int32 `json:"completion"`

	// summaries count the pool's nodes by state; counts are not exclusive.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Summaries []NodeSummary `json:"summaries,omitempty"`
}

// NodeSummaryType is a category of nodes counted in a pool summary.
// +kubebuilder:validation:Enum=Total;Available;Progressing;Outdated;Draining;Excluded;Degraded
type NodeSummaryType string

const (
	NodesTotal       NodeSummaryType = "Total"
	NodesAvailable   NodeSummaryType = "Available"
	NodesProgressing NodeSummaryType = "Progressing"
	NodesOutdated    NodeSummaryType = "Outdated"
	NodesDraining    NodeSummaryType = "Draining"
	NodesExcluded    NodeSummaryType = "Excluded"
	NodesDegraded    NodeSummaryType = "Degraded"
)

// NodeSummary counts the nodes of a pool in one category.
type NodeSummary struct {
	// type of nodes counted.
	// +required
	Type NodeSummaryType `json:"type"`
	// count of nodes.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=8192
	Count int32 `json:"count"`
}

// Summary returns the count of the given summary type, 0 when absent.
func (p MachineConfigPoolStatusInsight) Summary(t NodeSummaryType) int32 {
	for _, s := range p.Summaries {
		if s.Type == t {
			return s.Count
		}
	}
	return 0
}

// +kubebuilder:object:root=true

// UpgradeStatusList is a list of UpgradeStatus.
type UpgradeStatusList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UpgradeStatus `json:"items"`
}
