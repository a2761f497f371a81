package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ResourceRef points at a Kubernetes resource by group, plural resource name,
// optional namespace and name.
type ResourceRef struct {
	// group of the resource; empty for the core group.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Group string `json:"group,omitempty"`

	// resource is the plural, lower-case resource name, e.g. "clusteroperators".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Resource string `json:"resource"`

	// name of the resource.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// namespace of the resource; empty for cluster-scoped resources.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// PoolResourceRef points at a MachineConfigPool.
// +kubebuilder:validation:XValidation:rule="has(self.group) && self.group == 'machineconfiguration.openshift.io' && self.resource == 'machineconfigpools'",message="a pool resource must be a machineconfigpools.machineconfiguration.openshift.io"
type PoolResourceRef struct {
	ResourceRef `json:",inline"`
}

// ScopeType says which part of the cluster an insight is about.
// +kubebuilder:validation:Enum=ControlPlane;WorkerPool;Cluster
type ScopeType string

const (
	// ScopeTypeControlPlane is the control plane: ClusterVersion, ClusterOperators, the master pool and its nodes.
	ScopeTypeControlPlane ScopeType = "ControlPlane"
	// ScopeTypeWorkerPool is a worker pool and its nodes.
	ScopeTypeWorkerPool ScopeType = "WorkerPool"
	// ScopeTypeCluster is the whole cluster; used for firing alerts (an Upshift addition, oc uses it too).
	ScopeTypeCluster ScopeType = "Cluster"
)

// Condition types and reasons used across the insights.
const (
	// ConditionUpdating says whether the subject (control plane, pool, operator, node) is updating.
	ConditionUpdating = "Updating"
	// ConditionHealthy says whether a ClusterOperator is healthy.
	ConditionHealthy = "Healthy"
	// ConditionAvailable says whether a Node accepts workloads.
	ConditionAvailable = "Available"
	// ConditionDegraded says whether a Node failed to apply its configuration.
	ConditionDegraded = "Degraded"

	// Control plane / ClusterVersion Updating reasons.
	ReasonClusterVersionProgressing    = "ClusterVersionProgressing"
	ReasonClusterVersionNotProgressing = "ClusterVersionNotProgressing"
	ReasonCannotDetermineUpdating      = "CannotDetermineUpdating"

	// ClusterOperator Updating reasons.
	ReasonUpdated         = "Updated"
	ReasonPending         = "Pending"
	ReasonProgressing     = "Progressing"
	ReasonCannotDetermine = "CannotDetermine"

	// ClusterOperator Healthy reasons (Unavailable is "stronger" than Degraded).
	ReasonAsExpected  = "AsExpected"
	ReasonUnavailable = "Unavailable"
	ReasonDegraded    = "Degraded"

	// Pool Updating reasons (besides Pending, Updated, Progressing).
	ReasonExcluded = "Excluded"

	// Node Updating reasons; they are the node's update phase.
	ReasonNodeDraining  = "Draining"
	ReasonNodeUpdating  = "Updating"
	ReasonNodeRebooting = "Rebooting"
	ReasonNodePaused    = "Paused"
	// ReasonNodeGated: the node's pool is paused by a node-gate run, which
	// releases the node after its pre-update hooks (not an administrator's
	// pause: an Upshift phase oc does not have).
	ReasonNodeGated     = "Gated"
	ReasonNodePending   = "Pending"
	ReasonNodeCompleted = "Completed"

	// Node Available=False reasons (free text goes to the message, never the reason).
	ReasonNodeNotReady            = "NotReady"
	ReasonNodeDiskPressure        = "DiskPressure"
	ReasonNodeNetworkUnavailable  = "NetworkUnavailable"
	ReasonNodeUnschedulable       = "Unschedulable"
	ReasonNodeMCDWorking          = "MachineConfigDaemonWorking"
	ReasonNodeMultipleUnavailable = "MultipleReasons"
	// Node Degraded=True reason; the MCD's own reason text is the message.
	ReasonNodeMCDDegraded = "MachineConfigDaemonDegraded"
)

// Version is a release version with optional metadata.
type Version struct {
	// version is the OpenShift release version, e.g. "4.18.1".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version"`

	// metadata describes the version; a key without value means "true".
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MaxItems=5
	Metadata []VersionMetadata `json:"metadata,omitempty"`
}

// VersionMetadataKey names a piece of version metadata.
// +kubebuilder:validation:Enum=Installation;Partial;Architecture
type VersionMetadataKey string

const (
	// InstallationMetadata marks the target of a fresh installation (no previous version).
	InstallationMetadata VersionMetadataKey = "Installation"
	// PartialMetadata marks a previous version whose update never completed.
	PartialMetadata VersionMetadataKey = "Partial"
	// ArchitectureMetadata carries the payload architecture, e.g. "multi" during a multi-arch migration.
	ArchitectureMetadata VersionMetadataKey = "Architecture"
)

// VersionMetadata is one key (and optional value) describing a Version.
type VersionMetadata struct {
	// key of the metadata.
	// +required
	Key VersionMetadataKey `json:"key"`
	// value of the metadata; only meaningful for Architecture.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Value string `json:"value,omitempty"`
}

// HasMetadata reports whether the version carries the given metadata key.
func (v Version) HasMetadata(key VersionMetadataKey) bool {
	for _, m := range v.Metadata {
		if m.Key == key {
			return true
		}
	}
	return false
}

// ControlPlaneUpdateVersions are the versions the control plane updates from and to.
// +kubebuilder:validation:XValidation:rule="has(self.previous) != (has(self.target.metadata) && self.target.metadata.exists(m, m.key == 'Installation'))",message="target carries Installation exactly when there is no previous version"
// +kubebuilder:validation:XValidation:rule="!has(self.previous) || !has(self.previous.metadata) || !self.previous.metadata.exists(m, m.key == 'Installation')",message="previous version cannot carry Installation"
// +kubebuilder:validation:XValidation:rule="!has(self.target.metadata) || !self.target.metadata.exists(m, m.key == 'Partial')",message="target version cannot carry Partial"
type ControlPlaneUpdateVersions struct {
	// previous is the version the update started from; absent on a cluster that was
	// never updated. It carries Partial when that previous update never completed.
	// +optional
	Previous *Version `json:"previous,omitempty"`
	// target is the version being (or last) updated or installed to.
	// +required
	Target Version `json:"target"`
}

// HealthInsight reports a condition that needs an administrator's attention
// (or, at level Info, tells them all is well).
type HealthInsight struct {
	// uid identifies the insight over time; the same problem keeps the same uid.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	UID string `json:"uid"`

	// startedAt is when the reported condition started; absent when unknown.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// scope is what the insight is about.
	// +required
	Scope InsightScope `json:"scope"`

	// impact describes what the condition does to the cluster or the update.
	// +required
	Impact InsightImpact `json:"impact"`

	// remediation points at help for resolving the condition.
	// +required
	Remediation InsightRemediation `json:"remediation"`
}

// InsightScope is the part of the cluster and the resources an insight is about.
type InsightScope struct {
	// type of the scope.
	// +required
	Type ScopeType `json:"type"`
	// resources involved, of any group and kind.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	Resources []ResourceRef `json:"resources,omitempty"`
}

// InsightImpactLevel is how severe an insight is.
// +kubebuilder:validation:Enum=Unknown;Info;Warning;Error;Critical
type InsightImpactLevel string

const (
	UnknownImpactLevel  InsightImpactLevel = "Unknown"
	InfoImpactLevel     InsightImpactLevel = "Info"
	WarningImpactLevel  InsightImpactLevel = "Warning"
	ErrorImpactLevel    InsightImpactLevel = "Error"
	CriticalImpactLevel InsightImpactLevel = "Critical"
)

// InsightImpactType is what kind of harm an insight describes.
// +kubebuilder:validation:Enum=None;Unknown;"API Availability";"Cluster Capacity";"Application Availability";"Application Outage";"Data Loss";"Update Speed";"Update Stalled"
type InsightImpactType string

const (
	NoneImpactType                    InsightImpactType = "None"
	UnknownImpactType                 InsightImpactType = "Unknown"
	APIAvailabilityImpactType         InsightImpactType = "API Availability"
	ClusterCapacityImpactType         InsightImpactType = "Cluster Capacity"
	ApplicationAvailabilityImpactType InsightImpactType = "Application Availability"
	ApplicationOutageImpactType       InsightImpactType = "Application Outage"
	DataLossImpactType                InsightImpactType = "Data Loss"
	UpdateSpeedImpactType             InsightImpactType = "Update Speed"
	UpdateStalledImpactType           InsightImpactType = "Update Stalled"
)

// InsightImpact describes the impact of a health insight.
type InsightImpact struct {
	// level of severity.
	// +required
	Level InsightImpactLevel `json:"level"`
	// type of impact.
	// +required
	Type InsightImpactType `json:"type"`
	// summary is a one-line human description.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Summary string `json:"summary"`
	// description is a longer human description; it may span lines.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Description string `json:"description,omitempty"`
}

// InsightRemediation points at help for an insight.
type InsightRemediation struct {
	// reference is a URL to documentation or a runbook. It is not validated as a URL
	// (unlike the draft) because a firing alert without a runbook_url annotation gets a
	// placeholder text, as oc prints it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Reference string `json:"reference"`
	// estimatedFinish is when the condition is expected to resolve.
	// +optional
	EstimatedFinish *metav1.Time `json:"estimatedFinish,omitempty"`
}

// The update-status-controller's own condition on UpgradeStatus: whether it
// can compute the status at all (not how the update goes).
const (
	// ConditionStatusAvailable is True while the insights are current; False
	// says why they cannot be computed (reason CannotAssess).
	ConditionStatusAvailable = "StatusAvailable"
	ReasonCannotAssess       = "CannotAssess"

	// ConditionHeartbeat is refreshed at most once a minute while the cluster updates; its lastTransitionTime is the last refresh.
	ConditionHeartbeat = "Heartbeat"

	// ConditionAlertsAvailable is present only when the controller is
	// configured to read alerts: True while they are read, False when the
	// last read failed (reason CannotReadAlerts, the error in the message).
	// While it is False the health insights have no alert-based insight.
	ConditionAlertsAvailable = "AlertsAvailable"
	ReasonCannotReadAlerts   = "CannotReadAlerts"
)
