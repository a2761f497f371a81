// Package plan is the cpms-controller's pure core. From the
// ControlPlaneMachineSet, the control-plane Machines and Nodes, the etcd and
// kube-apiserver ClusterOperators, the configuration and the time, Plan
// derives the state of every index, the status to write, the Events to record
// and at most one mutating action.
//
// The reconciler around it reads the snapshot from its caches, calls Plan,
// performs Output.Action, writes Output.Status (or, when the action failed,
// the status Failed returns) and records the Events. It must not plan again
// before its cache has seen its own last write (a created Machine, a
// deletion, the remediation annotation): the planner trusts the snapshot to
// contain its own decisions. Deterministic machine names make a repeated
// create fail with AlreadyExists, which the reconciler treats as success, so
// even a lapse of that wait cannot double a replacement for the same desired
// spec.
//
// Nothing is remembered between passes except what the cluster shows: the
// index of a machine comes from its name, its progress from its phase and
// Node, and the remediation budget from an annotation on the set.
package plan

import (
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/upshift-io/upshift/libs/events"
)

const (
	// PausedAnnotation set to "true" on the ControlPlaneMachineSet freezes
	// every mutation (no create, delete, adoption or remediation) while the
	// status keeps being reported.
	PausedAnnotation = "cpms.upshift.io/paused"
	// RemediationAnnotation holds the remediation budget already spent, per
	// index (JSON, written only by this controller). See Budget.
	RemediationAnnotation = "cpms.upshift.io/remediation"

	// EtcdHookName and EtcdHookOwner identify the preDrain lifecycle hook the
	// etcd operator puts on every control-plane Machine it has adopted; it
	// releases the hook on a deleting machine once its etcd member is gone.
	EtcdHookName  = "EtcdQuorumOperator"
	EtcdHookOwner = "clusteroperator/etcd"

	// ClusterIDLabel, RoleLabel and TypeLabel are the machine-api's labels:
	// the cluster a machine belongs to, its role and type. New machine names
	// derive from the first two; the generator selects by all three.
	ClusterIDLabel = "machine.openshift.io/cluster-api-cluster"
	RoleLabel      = "machine.openshift.io/cluster-api-machine-role"
	TypeLabel      = "machine.openshift.io/cluster-api-machine-type"
)

// Condition types on the ControlPlaneMachineSet.
const (
	ConditionAvailable   = "Available"
	ConditionDegraded    = "Degraded"
	ConditionProgressing = "Progressing"
	// ConditionError is True once the same error failed
	// MaxContinuousErrors passes in a row (reason ReasonContinuousErrors),
	// as the upstream operator reports it.
	ConditionError = "Error"
)

// MaxContinuousErrors is how many identical failed passes in a row make
// Error True: with the controller's exponential back-off, a minute or two of
// a problem that does not go away by itself.
const MaxContinuousErrors = 15

// ErrorStreak is the last error of the reconciler and how many passes in a
// row failed with it. The zero value is a pass that succeeded. It lives in
// the process: a restart starts a new count, as upstream's does.
type ErrorStreak struct {
	Err   string
	Count int
	Since time.Time
}

// Next is the streak after a pass that ended with err (nil: success).
func (s ErrorStreak) Next(err error, now time.Time) ErrorStreak {
	switch {
	case err == nil:
		return ErrorStreak{}
	case s.Count > 0 && s.Err == err.Error():
		s.Count++
		return s
	}
	// Without the monotonic reading, which would show in the message.
	return ErrorStreak{Err: err.Error(), Count: 1, Since: now.Round(0).UTC()}
}

// Config is the controller's configuration (flags).
type Config struct {
	// NodeGracePeriod: a Running machine whose Node went NotReady less than
	// this long ago still counts as ready, so a reboot does not flip
	// Available (the upstream operator uses 20 minutes).
	NodeGracePeriod time.Duration
	// ProgressDeadline: a replacement not Ready this long after its creation
	// is reported Degraded (ReplacementTimedOut) and, with remediation on,
	// replaced. Zero disables the deadline.
	ProgressDeadline time.Duration
	// Remediation of failed or timed-out replacements; off unless enabled.
	Remediation Remediation
}

// Remediation is the opt-in retry of failed replacements.
type Remediation struct {
	Enabled bool
	// MaxRetries is how many failed replacements of one index, for one
	// desired spec, are deleted and retried before giving up.
	MaxRetries int
	// RetryPeriod is the wait between deleting a failed replacement and
	// creating the next.
	RetryPeriod time.Duration
}

// DefaultConfig is the configuration without flags.
func DefaultConfig() Config {
	return Config{
		NodeGracePeriod:  20 * time.Minute,
		ProgressDeadline: time.Hour,
		Remediation:      Remediation{MaxRetries: 3, RetryPeriod: 5 * time.Minute},
	}
}

// Input is everything Plan decides from.
type Input struct {
	CPMS *machinev1.ControlPlaneMachineSet
	// Machines in the set's namespace; Plan keeps those spec.selector selects.
	Machines []machinev1beta1.Machine
	// Nodes; Plan keeps the control-plane ones (labelled master or control-plane).
	Nodes []corev1.Node
	// ClusterOperators; Plan reads etcd and kube-apiserver. A missing one
	// blocks nothing (it is not known to be degraded).
	ClusterOperators []configv1.ClusterOperator
	// ClusterVersion is the cluster's "version"; nil when absent. No
	// replacement starts while it is Progressing (a cluster update).
	ClusterVersion *configv1.ClusterVersion
	// CPMSOperator is what the cluster runs of OpenShift's own operator; it
	// chooses the Mode.
	CPMSOperator CPMSOperator
	// Infrastructure is the cluster's Infrastructure "cluster"; nil when
	// absent. vSphere and Nutanix failure domains are only names in the set,
	// defined in its spec.platformSpec; without it such a set is invalid.
	Infrastructure *configv1.Infrastructure
	// ARO is the cluster's Azure Red Hat OpenShift configuration; nil on
	// other clusters.
	ARO *AROCluster
	// Errors is the reconciler's streak of identical failed passes; the
	// Error condition reports it once it reaches MaxContinuousErrors.
	Errors ErrorStreak
	Config Config
	Now    time.Time
}

// Output is the decision.
type Output struct {
	// Status is the status to write once Action succeeded (Failed gives the
	// one to write when it failed).
	Status machinev1.ControlPlaneMachineSetStatus
	// Indexes is the derived state of every index, sorted by index (for
	// metrics, logs and Events).
	Indexes []IndexReport
	// Action is at most one mutation.
	Action *Action
	// Events are decisions and state changes worth a `kubectl describe`,
	// about the ControlPlaneMachineSet; record them once the status is
	// written. The action's own Event is Action.Event, recorded once the
	// action succeeded.
	Events []events.Event
	// Warnings name provider-spec fields the platform's type does not know
	// and that were therefore not compared (sorted; for the log).
	Warnings []string
	// RequeueAfter is set when only time can change the answer (a deadline,
	// the end of a Node's grace period, a retry period); zero otherwise.
	RequeueAfter time.Duration
	// Mode is the mode in effect (also ConditionMode's reason).
	Mode Mode
	// StatusOwned: the whole status is this controller's to write. When the
	// upstream operator runs it writes the counters, Available, Degraded and
	// Progressing, and only OwnConditionTypes are written from Status.
	StatusOwned bool
}

// ActionKind is a mutation.
type ActionKind string

const (
	// CreateMachine creates Action.Machine. AlreadyExists means a previous
	// pass created it: success.
	CreateMachine ActionKind = "CreateMachine"
	// DeleteMachine deletes Action.Target, with Target.UID as precondition.
	// NotFound and a UID conflict mean it is already gone: success.
	DeleteMachine ActionKind = "DeleteMachine"
	// Remediate writes Action.Annotation as the set's RemediationAnnotation,
	// then deletes Action.Target like DeleteMachine. If the second write is
	// lost, the next pass sees its budget already spent and only deletes.
	Remediate ActionKind = "Remediate"
	// Adopt makes the set the controller owner of Action.Adopt (a metadata
	// patch adding the owner reference).
	Adopt ActionKind = "Adopt"
)

// Action is one mutation.
type Action struct {
	Kind ActionKind
	// Index is the index acted on (-1 for Adopt).
	Index int
	// Machine is the Machine to create.
	Machine *machinev1beta1.Machine
	// Target is the Machine to delete.
	Target *MachineRef
	// Adopt are the Machines to own.
	Adopt []MachineRef
	// Annotation is the new RemediationAnnotation value (Remediate).
	Annotation string
	// Event is recorded after the action succeeded (Failed gives the one
	// for a failure).
	Event events.Event
}

// MachineRef names a Machine; UID guards a delete against a namesake.
type MachineRef struct {
	Name string
	UID  types.UID
}
