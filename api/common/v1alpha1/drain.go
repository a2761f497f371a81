package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The drain record is shared by the two components that force a blocked
// drain to finish (libs/drain): node-gate records it per node of a run, the
// upgrade-scheduler per worker node of an upgrade. One node's drain has one
// of them as its owner at a time.

// DrainStep is how far the remediation went with a pod.
type DrainStep string

const (
	// DrainStepDelete: deleted with the pod's own grace period.
	DrainStepDelete DrainStep = "Delete"
	// DrainStepForceDelete: deleted with grace period 0.
	DrainStepForceDelete DrainStep = "ForceDelete"
	// DrainStepRemoveFinalizers: its finalizers were removed.
	DrainStepRemoveFinalizers DrainStep = "RemoveFinalizers"
)

// DrainRecord is one drain of one node as the machine-config operator asked
// for it.
type DrainRecord struct {
	// request is the desiredDrain annotation value this drain answers.
	Request string `json:"request"`
	// startTime is when the drain's clock started: for the upgrade-scheduler
	// the node's cordon (the cordon taint's timeAdded, MUO's clock; when the
	// taint has no time, when the scheduler first saw it), for node-gate when
	// the run first saw the request unacknowledged.
	StartTime metav1.Time `json:"startTime"`
	// completionTime is when the drain controller acknowledged it.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// blockingPods are the pods still on the node, each with the
	// PodDisruptionBudgets that select it and the step it is at.
	// +optional
	// +listType=atomic
	BlockingPods []BlockingPod `json:"blockingPods,omitempty"`
	// forcedPods counts pods the remediation acted on during this drain.
	// +optional
	ForcedPods int32 `json:"forcedPods,omitempty"`
}

// BlockingPod is a pod that keeps a drain from finishing.
type BlockingPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// uid tells a pod from a new one of the same name.
	// +optional
	UID string `json:"uid,omitempty"`
	// pdbs are the PodDisruptionBudgets of the pod's namespace whose
	// selector matches it.
	// +optional
	// +listType=atomic
	PDBs []string `json:"pdbs,omitempty"`
	// step is the last escalation step taken, and stepTime when.
	// +optional
	Step DrainStep `json:"step,omitempty"`
	// +optional
	StepTime *metav1.Time `json:"stepTime,omitempty"`
}
