package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RuleType is the kind of operation a rule runs. The mutex operator reserved
// the field for future kinds; kubernetes (a batch/v1 Job) is the only one.
// +kubebuilder:validation:Enum=kubernetes
type RuleType string

// RuleTypeKubernetes runs the rule's operations as Kubernetes Jobs.
const RuleTypeKubernetes RuleType = "kubernetes"

// FailurePolicy is what a run does when a hook has failed all its attempts.
// +kubebuilder:validation:Enum=Pause;Ignore;Abort
type FailurePolicy string

const (
	// FailurePause stops releasing nodes and moves the run to Paused; the node
	// stays gated. Resuming is a spec change.
	FailurePause FailurePolicy = "Pause"
	// FailureIgnore records the failure and carries on as if the hook had succeeded.
	FailureIgnore FailurePolicy = "Ignore"
	// FailureAbort ends the run: nothing more is released and every change
	// the run made is restored.
	FailureAbort FailurePolicy = "Abort"
)

// Placement says where a hook's pod may run relative to the gated node.
// +kubebuilder:validation:Enum=OnNode;OffNode;Anywhere
type Placement string

const (
	// PlacementOnNode pins the pod to the gated node (node-local work; the pod
	// must tolerate whatever the node carries).
	PlacementOnNode Placement = "OnNode"
	// PlacementOffNode keeps the pod off the gated node, as the mutex operator
	// did for every Job.
	PlacementOffNode Placement = "OffNode"
	// PlacementAnywhere leaves scheduling to the Job spec.
	PlacementAnywhere Placement = "Anywhere"
)

// MutexRule is a set of operations that must run around each gated node's
// update: before the node is released to the machine-config operator
// (jobSpec, then preHooks in order) and after it finished updating
// (cleanUpJobSpec, then postHooks in order).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=numo
// +kubebuilder:printcolumn:name="Job Name",type=string,JSONPath=`.spec.jobName`
// +kubebuilder:printcolumn:name="Job Namespace",type=string,JSONPath=`.spec.jobNamespace`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MutexRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec MutexRuleSpec `json:"spec"`
	// +optional
	Status MutexRuleStatus `json:"status,omitempty"`
}

// MutexRuleSpec is what the rule runs. The first five fields are the mutex
// operator's; preHooks and postHooks are Upshift's.
//
// +kubebuilder:validation:XValidation:rule="has(self.jobSpec) || has(self.cleanUpJobSpec) || (has(self.preHooks) && size(self.preHooks) > 0) || (has(self.postHooks) && size(self.postHooks) > 0)",message="spec must set at least one of jobSpec, cleanUpJobSpec, preHooks or postHooks"
// +kubebuilder:validation:XValidation:rule="!has(self.preHooks) || !has(self.postHooks) || self.preHooks.all(p, self.postHooks.all(q, p.name != q.name))",message="spec.preHooks and spec.postHooks must not share a hook name"
type MutexRuleSpec struct {
	// jobName prefixes the names of the Jobs the rule creates. (mutex operator)
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=30
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.jobName must be a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit)"
	JobName string `json:"jobName"`

	// jobNamespace is where the rule's Jobs run. The namespace and the
	// service account the Jobs use are the user's to provide. (mutex operator)
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.jobNamespace must be a namespace name (a DNS label)"
	JobNamespace string `json:"jobNamespace"`

	// jobSpec is the operation run before each node is released, as the
	// first pre-update hook (named "job"), placed off the node and paused on
	// failure, as the mutex operator placed and stopped on it. (mutex operator)
	// +optional
	JobSpec *batchv1.JobSpec `json:"jobSpec,omitempty"`

	// cleanUpJobSpec is the operation run after each node finished its update,
	// as the first post-update hook (named "cleanup"). (mutex operator)
	// +optional
	CleanUpJobSpec *batchv1.JobSpec `json:"cleanUpJobSpec,omitempty"`

	// type is the kind of operation; only kubernetes exists. (mutex operator)
	// +optional
	// +kubebuilder:default=kubernetes
	Type RuleType `json:"type,omitempty"`

	// preHooks run in this order before the node is released, after jobSpec.
	// (Upshift)
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	PreHooks []Hook `json:"preHooks,omitempty"`

	// postHooks run in this order after the node finished its update, after
	// cleanUpJobSpec. (Upshift)
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	PostHooks []Hook `json:"postHooks,omitempty"`

	// lookahead lets node-gate run this rule's pre-update hooks ahead of
	// the nodes' turns: for up to lookahead nodes per release slot (the
	// run's maxUnavailable) beyond those updating, so that when a node
	// finishes, the next one's hooks are already done and it is released at
	// once. 0 (the default) starts a node's hooks only when it may be
	// updated next: strict mutual exclusion with the nodes updating. A run
	// uses the smallest lookahead of its rules. (Upshift)
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Lookahead int32 `json:"lookahead,omitempty"`

	// maxHookAge is how long a node's finished pre-update hooks stay valid
	// while it waits for its turn (only with lookahead); older, they run
	// again before it is released. A run uses the smallest of its rules'.
	// Default 30m. (Upshift)
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('168h')",message="maxHookAge must be between 1m and 168h"
	MaxHookAge *metav1.Duration `json:"maxHookAge,omitempty"`
}

// Hook is one Job run for each gated node. node-gate appends NODE_NAME,
// MUTEX_RULE (the rule's name), POOL, TARGET_CONFIG, TARGET_VERSION and
// RUN_ID to the environment of every container (after the user's own
// variables, which are kept).
//
// +kubebuilder:validation:XValidation:rule="self.name != 'job' && self.name != 'cleanup'",message="name must not be job or cleanup: those name the rule's jobSpec and cleanUpJobSpec"
type Hook struct {
	// name identifies the hook within its rule; it is part of the Job names.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=12
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="name must be a DNS label of at most 12 characters"
	Name string `json:"name"`

	// jobSpec is the Job to run.
	// +required
	JobSpec batchv1.JobSpec `json:"jobSpec"`

	// timeout bounds one attempt; an attempt still running after it counts
	// as failed (and the Job's activeDeadlineSeconds is set to it). Unset: the
	// Job's own deadline, if any.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('168h')",message="timeout must be between 1s and 168h"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// retries is how many more attempts a failed attempt gets (each a new Job).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	Retries int32 `json:"retries,omitempty"`

	// failurePolicy is what the run does when every attempt failed.
	// +optional
	// +kubebuilder:default=Pause
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`

	// placement says where the Job's pod runs relative to the gated node.
	// +optional
	// +kubebuilder:default=Anywhere
	Placement Placement `json:"placement,omitempty"`
}

// MutexRuleStatus is what node-gate found about the rule.
type MutexRuleStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: ValidConfig (the mutex operator's) says whether the rule can run.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true

// MutexRuleList is a list of MutexRules.
type MutexRuleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MutexRule `json:"items"`
}
