package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
)

// MutexRunConfig gates the updates of the nodes of its targets' pools: each
// node is released to the machine-config operator only after its rules'
// pre-update operations succeeded, and the next node only after the previous
// one finished its update and its post-update operations.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=numo
// Its printer columns start with the mutex operator's (Canary, Rules,
// Targets, under that operator's names and paths: scripts and people read
// them); Upshift's follow.
//
// +kubebuilder:printcolumn:name="Canary",type=string,JSONPath=`.spec.canary.name`,description="The canary MachineConfigPool"
// +kubebuilder:printcolumn:name="Rules",type=string,JSONPath=`.spec.mutexRules`,description="The MutexRules every node goes through"
// +kubebuilder:printcolumn:name="Targets",type=string,JSONPath=`.spec.mutexTargets`,description="The MutexTargets whose nodes are gated"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Current",type=string,JSONPath=`.status.currentNodes`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MutexRunConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec MutexRunConfigSpec `json:"spec"`
	// +optional
	Status MutexRunConfigStatus `json:"status,omitempty"`
}

// MutexRunConfigSpec is the run. canary, mutexRules, mutexTargets and
// skipTLSVerify are the mutex operator's; the rest is Upshift's.
type MutexRunConfigSpec struct {
	// skipTLSVerify is accepted for compatibility. The mutex operator used it
	// when reading the desired release image; node-gate reads no image, so it
	// has no effect. (mutex operator)
	// +optional
	// +kubebuilder:default=false
	SkipTLSVerify bool `json:"skipTLSVerify,omitempty"`

	// canary names an existing pool that receives the released nodes. While
	// the run moves nodes, its node selector is replaced by node-gate's release
	// label (the original is recorded in status and restored). Unset: node-gate
	// creates and owns one gate pool per gated pool, named <pool>-gate, with
	// the gated pool's MachineConfig selector. (mutex operator)
	// +optional
	Canary *PoolReference `json:"canary,omitempty"`

	// mutexRules are the rules every gated node goes through, in this order.
	// A rule without a namespace is looked up in the run's namespace.
	// (mutex operator)
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	MutexRules []ObjectReference `json:"mutexRules,omitempty"`

	// mutexTargets say which pools are gated. (mutex operator)
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	MutexTargets []ObjectReference `json:"mutexTargets"`

	// maxUnavailable is how many nodes may be released at once, as a number
	// or a percentage of the gated nodes (rounded down, at least 1). (Upshift)
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^(100|[1-9][0-9]?)%$')",message="spec.maxUnavailable must be a number of at least 1 or a percentage between 1% and 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// maintenanceWindows, when set, restrict when a node may be released; a
	// node released inside a window finishes even if the window closes.
	// (Upshift)
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	MaintenanceWindows []commonv1alpha1.MaintenanceWindow `json:"maintenanceWindows,omitempty"`

	// healthGate holds nodes back while alerts fire. (Upshift)
	// +optional
	HealthGate *HealthGate `json:"healthGate,omitempty"`

	// holdUntil says how long gated nodes wait while ClusterVersion updates
	// the cluster. Rendered (the default): until every gated pool and its
	// gate pool target a configuration rendered for the requested release,
	// which is when the machine-config operator would start updating them
	// without a gate. ControlPlaneUpdated: until ClusterVersion reports the
	// update Completed, the gate pools paused all that time. (Upshift)
	// +optional
	// +kubebuilder:default=Rendered
	HoldUntil HoldUntil `json:"holdUntil,omitempty"`

	// paused stops releasing nodes (nodes already released finish). Setting it
	// back to false resumes a run that a failure paused. (Upshift)
	// +optional
	Paused bool `json:"paused,omitempty"`

	// drainRemediation, when set, escalates drains of released nodes that
	// the machine-config operator cannot finish (a PodDisruptionBudget that
	// never allows the eviction, a pod stuck terminating). Unset: node-gate
	// never deletes a pod. (Upshift; replaces MUO's NodeKeeper)
	// +optional
	DrainRemediation *DrainRemediation `json:"drainRemediation,omitempty"`
}

// DrainRemediation says when and how a blocked drain is forced.
type DrainRemediation struct {
	// timeout is how long a node's drain may be blocked before its
	// remaining pods are forced off, one step at a time. Unset: the
	// PDBForceDrainTimeout (minutes) of an UpgradeConfig in the run's
	// namespace, or 60m without one.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// stepTimeout is how long each escalation step (delete with the pod's
	// grace period, delete with grace 0, finalizer removal) gets before the
	// next one. Default 2m.
	// +optional
	StepTimeout *metav1.Duration `json:"stepTimeout,omitempty"`
	// ignoredNamespacePatterns are regular expressions (anchored) of
	// namespaces whose pods are never forced.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	IgnoredNamespacePatterns []string `json:"ignoredNamespacePatterns,omitempty"`
}

// PoolReference names a MachineConfigPool.
type PoolReference struct {
	// name of the MachineConfigPool.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self != 'master' && self != 'worker'",message="spec.canary.name must name a custom pool, not master or worker"
	Name string `json:"name"`
}

// ObjectReference names a MutexRule or MutexTarget.
type ObjectReference struct {
	// name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// namespace of the object; empty means the run's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// HoldUntil is how long gated nodes wait while the cluster updates.
// +kubebuilder:validation:Enum=Rendered;ControlPlaneUpdated
type HoldUntil string

const (
	// HoldUntilRendered: until the gated pools target the requested release.
	HoldUntilRendered HoldUntil = "Rendered"
	// HoldUntilControlPlaneUpdated: until ClusterVersion completed the update.
	HoldUntilControlPlaneUpdated HoldUntil = "ControlPlaneUpdated"
)

// HealthGate blocks releasing nodes while matching alerts are active. Alert
// read errors block too (fail closed).
type HealthGate struct {
	// alertNames, when set, are the only alerts that block; unset means
	// every alert except those in ignoredAlertNames.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	AlertNames []string `json:"alertNames,omitempty"`
	// ignoredAlertNames never block (Watchdog-style alerts that always fire).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	IgnoredAlertNames []string `json:"ignoredAlertNames,omitempty"`
	// includePending makes pending alerts block too; by default only firing ones do.
	// +optional
	IncludePending bool `json:"includePending,omitempty"`
}

// RunPhase is where the run stands.
// +kubebuilder:validation:Enum=Idle;Blocked;Waiting;Progressing;Paused;Restoring;Completed;Aborted
type RunPhase string

const (
	// RunIdle: no node needs an update; nothing is changed.
	RunIdle RunPhase = "Idle"
	// RunBlocked: the run refuses to start (condition Blocked says why).
	RunBlocked RunPhase = "Blocked"
	// RunWaiting: an update is pending but a gate (window, alerts, control
	// plane) holds it.
	RunWaiting RunPhase = "Waiting"
	// RunProgressing: nodes are being gated.
	RunProgressing RunPhase = "Progressing"
	// RunPaused: spec.paused or a failure stopped releasing nodes.
	RunPaused RunPhase = "Paused"
	// RunRestoring: every node is done; originals are being restored.
	RunRestoring RunPhase = "Restoring"
	// RunCompleted: every gated node updated and the originals are back.
	RunCompleted RunPhase = "Completed"
	// RunAborted: a hook with failurePolicy Abort failed; originals restored.
	RunAborted RunPhase = "Aborted"
)

// NodePhase is where one gated node stands.
// +kubebuilder:validation:Enum=Pending;PreHooks;Released;Updated;PostHooks;Completed;Failed;Skipped
type NodePhase string

const (
	NodePending   NodePhase = "Pending"
	NodePreHooks  NodePhase = "PreHooks"
	NodeReleased  NodePhase = "Released"
	NodeUpdated   NodePhase = "Updated"
	NodePostHooks NodePhase = "PostHooks"
	NodeCompleted NodePhase = "Completed"
	NodeFailed    NodePhase = "Failed"
	// NodeSkipped: the node already runs the target, or left the pools.
	NodeSkipped NodePhase = "Skipped"
)

// HookStage says when a hook runs.
// +kubebuilder:validation:Enum=Pre;Post
type HookStage string

const (
	StagePre  HookStage = "Pre"
	StagePost HookStage = "Post"
)

// HookPhase is the state of one hook for one node.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed;Ignored
type HookPhase string

const (
	HookPending   HookPhase = "Pending"
	HookRunning   HookPhase = "Running"
	HookSucceeded HookPhase = "Succeeded"
	HookFailed    HookPhase = "Failed"
	// HookIgnored: failed, and its failurePolicy Ignore let the node go on.
	HookIgnored HookPhase = "Ignored"
)

// MutexRunConfigStatus records the run.
type MutexRunConfigStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, Progressing, Paused, Degraded, Blocked.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// phase summarises the run.
	// +optional
	Phase RunPhase `json:"phase,omitempty"`

	// pausedGeneration is the generation at which a failure paused the run;
	// any later spec change resumes it.
	// +optional
	PausedGeneration int64 `json:"pausedGeneration,omitempty"`

	// runID identifies the current round (one target configuration of the
	// gated pools); hook Jobs carry it in RUN_ID and in their names.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	RunID string `json:"runID,omitempty"`

	// pools are the gated pools, their targets and the originals recorded
	// before the first change.
	// +optional
	// +listType=map
	// +listMapKey=name
	Pools []PoolRecord `json:"pools,omitempty"`

	// plannedOrder is the order nodes start in, computed before anything
	// moves (a dry-run preview): their pre-update hooks start in this
	// order, and they are released in it, except that with lookahead a
	// node whose hooks finish first is released before one ahead of it
	// that still runs its own.
	// +optional
	// +listType=atomic
	PlannedOrder []string `json:"plannedOrder,omitempty"`

	// currentNodes are the nodes between their first pre-hook and their last
	// post-hook.
	// +optional
	// +listType=atomic
	CurrentNodes []string `json:"currentNodes,omitempty"`

	// progress is "<completed>/<total>" for the printer column.
	// +optional
	Progress string `json:"progress,omitempty"`

	// summary counts the nodes by state.
	// +optional
	Summary Summary `json:"summary,omitempty"`

	// nodes is one record per gated node, names unique. Nodes that
	// completed keep their phase and timestamps only, and once their release
	// label is gone their name, pool and phase only (unless the record has a
	// lastError or pods were forced off its drain): their hook runs and
	// times were told in Events and metrics when they happened, and dropping
	// them keeps every status write small on clusters with thousands of
	// workers.
	// Atomic rather than a map keyed by name: only node-gate writes status,
	// always whole, and a map would make the API server track every record's
	// every field in managedFields (about 170 bytes per node, and twice the
	// time per write at 500 nodes).
	// +optional
	// +listType=atomic
	Nodes []NodeRecord `json:"nodes,omitempty"`
}

// PoolRecord is one gated pool.
type PoolRecord struct {
	// name of the gated (source) pool.
	Name string `json:"name"`
	// gatePool is the pool node-gate holds the pool's nodes in, paused,
	// until it releases them (or, with a canary, the pool released nodes
	// move into).
	// +optional
	GatePool string `json:"gatePool,omitempty"`
	// gatePoolCreated is true when node-gate created the gate pool (and so deletes it).
	// +optional
	GatePoolCreated bool `json:"gatePoolCreated,omitempty"`
	// targetConfig is the pool's rendered target this round gates to.
	// +optional
	TargetConfig string `json:"targetConfig,omitempty"`
	// originalPaused is the pool's spec.paused before the run changed it;
	// unset until recorded.
	// +optional
	OriginalPaused *bool `json:"originalPaused,omitempty"`
	// originalNodeSelector is the pool's node selector before the run changed
	// it (recorded only for pools whose selector the run changes).
	// +optional
	OriginalNodeSelector *metav1.LabelSelector `json:"originalNodeSelector,omitempty"`
	// originalGateNodeSelector is the canary pool's node selector before the
	// run replaced it.
	// +optional
	OriginalGateNodeSelector *metav1.LabelSelector `json:"originalGateNodeSelector,omitempty"`
	// originalGatePaused is the canary pool's spec.paused before the run.
	// +optional
	OriginalGatePaused *bool `json:"originalGatePaused,omitempty"`
	// originalMaxUnavailable is the pool's spec.maxUnavailable before the
	// run set it to the run's limit; unset until recorded.
	// +optional
	OriginalMaxUnavailable *RecordedMaxUnavailable `json:"originalMaxUnavailable,omitempty"`
}

// RecordedMaxUnavailable is a pool's recorded maxUnavailable, which may
// itself have been unset.
type RecordedMaxUnavailable struct {
	// value is the pool's maxUnavailable; unset when the pool set none.
	// +optional
	Value *intstr.IntOrString `json:"value,omitempty"`
}

// Summary counts nodes.
type Summary struct {
	Total      int32 `json:"total"`
	Pending    int32 `json:"pending"`
	InProgress int32 `json:"inProgress"`
	Succeeded  int32 `json:"succeeded"`
	Failed     int32 `json:"failed"`
	Skipped    int32 `json:"skipped"`
}

// NodeRecord is one node's progress through the gate.
type NodeRecord struct {
	// name of the Node.
	Name string `json:"name"`
	// pool is the gated pool the node belongs to.
	Pool string `json:"pool"`
	// phase is where the node stands.
	Phase NodePhase `json:"phase"`
	// hooks are the node's hook runs, in the order they run.
	// +optional
	// +listType=atomic
	Hooks []HookRecord `json:"hooks,omitempty"`
	// hooksTarget is the rendered configuration its gate pool targeted when
	// its pre-update hooks started (their TARGET_CONFIG). If the pools render
	// another one before the machine-config operator starts the node, the
	// hooks run again.
	// +optional
	HooksTarget string `json:"hooksTarget,omitempty"`
	// startTime is when the node's first pre-hook started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// releasedTime is when the node was moved into the gate pool.
	// +optional
	ReleasedTime *metav1.Time `json:"releasedTime,omitempty"`
	// updatedTime is when the machine-config operator finished the node.
	// +optional
	UpdatedTime *metav1.Time `json:"updatedTime,omitempty"`
	// completionTime is when its last post-hook finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// lastError is the latest failure, if any.
	// +optional
	LastError string `json:"lastError,omitempty"`

	// drain is the clock and the blocking pods of the node's current drain,
	// kept here so that a restart or a cordon flap does not reset it.
	// +optional
	Drain *commonv1alpha1.DrainRecord `json:"drain,omitempty"`
}

// HookRecord is one hook for one node.
type HookRecord struct {
	// rule is the MutexRule, as namespace/name.
	Rule string `json:"rule"`
	// name of the hook in the rule (job and cleanup for jobSpec and cleanUpJobSpec).
	Name string `json:"name"`
	// stage is Pre or Post.
	Stage HookStage `json:"stage"`
	// phase of the hook.
	Phase HookPhase `json:"phase"`
	// attempts is how many Jobs were created.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// attemptsBefore is the number of attempts made before the run was last
	// resumed; a resumed hook gets its retries again on top of it.
	// +optional
	AttemptsBefore int32 `json:"attemptsBefore,omitempty"`
	// jobName is the latest attempt's Job (in the rule's jobNamespace).
	// +optional
	JobName string `json:"jobName,omitempty"`
	// startTime is when the latest attempt started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the hook finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// lastError is the latest attempt's failure.
	// +optional
	LastError string `json:"lastError,omitempty"`
}

// +kubebuilder:object:root=true

// MutexRunConfigList is a list of MutexRunConfigs.
type MutexRunConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MutexRunConfig `json:"items"`
}
