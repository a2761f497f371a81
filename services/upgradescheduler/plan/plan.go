// Package plan is the upgrade-scheduler's pure core: from an UpgradeConfig,
// the configuration, a snapshot of the cluster and the time, Plan decides the
// status to write, at most one side effect to perform, the Events to record,
// and when to look again if only time can change the answer.
//
// The reconciler around it does the I/O, in one order for every side
// effect, act then record: it reads the snapshot from its caches (and, only
// for a plan that asks, the firing alerts and a run of the HTTP dependency
// checks: Output.NeedsAlerts, Output.NeedsExternalChecks), calls Plan,
// carries out the lease decision and Output.Action, writes the status
// Executed returns from Output.Status and what it did, records the Events,
// and requeues after Output.RequeueAfter. Acting first is safe because every
// side effect is found again by the next plan (below) and its record is a
// summary that plan can rebuild.
//
// Durability comes from the status and from observation, never from memory:
// a step whose history condition is True is never run again; a side effect is
// decided only from what the snapshot shows (ClusterVersion already pointed
// at the target is "commenced"; a temporary MachineSet has a fixed name, and
// one seen once is recorded and never created again), so a restart at any
// point neither repeats nor loses one.
package plan

import (
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/silence"
)

// Snapshot is what the planner knows of the cluster.
type Snapshot struct {
	// ClusterVersion is clusterversion/version; nil when it cannot be read.
	ClusterVersion   *configv1.ClusterVersion
	ClusterOperators []configv1.ClusterOperator
	Pools            []mcfgv1.MachineConfigPool
	Nodes            []corev1.Node
	PDBs             []policyv1.PodDisruptionBudget
	// NodeGateRuns are node-gate's runs (libs/gating), when node-gate is
	// installed: the worker deadline and the worker silence allow for the
	// time a run holds the workers as designed (gates.go).
	NodeGateRuns []gating.Run
	// MachineSets and Machines are those in openshift-machine-api.
	MachineSets []machinev1beta1.MachineSet
	Machines    []machinev1beta1.Machine
	// Alerts is the critical-alerts query result; nil when no alert source
	// is configured (the check then reports "not configured").
	Alerts *AlertsResult
	// AlertsUnread is set (with Alerts nil) when an alert source is
	// configured but was not read for this plan: a read costs a request,
	// and seconds when the source is down, while most plans (waiting in a
	// terminal phase, paused, being deleted) run no health check. A plan that
	// would check the alerts reports Output.NeedsAlerts instead, and is to be
	// planned again with Alerts read.
	AlertsUnread bool
	// Leases are this UpgradeConfig's silences as Alertmanager lists them
	// (silence.OwnerFilter), read only for a plan that manages its leases
	// (Output.NeedsLeases); nil when they were not read.
	Leases *LeasesRead
	// LeasesUnread is set (with Leases nil) when Alertmanager is wired in
	// but its silences were not listed for this plan.
	LeasesUnread bool
	// ExternalChecks is the result of a run of the HTTP dependency checks,
	// made only for a plan that asks for one (Output.NeedsExternalChecks);
	// nil otherwise.
	ExternalChecks *ExternalChecksResult
	// PDBNodes are the nodes of the pods each blocking PodDisruptionBudget
	// guards, by "<namespace>/<name>", read only for the budgets a plan asks
	// for (Output.NeedsPDBNodes); a budget missing is unread.
	PDBNodes map[string][]string
	// DrainPods are the pods on worker nodes whose drain may be forced, by
	// node, read only for the nodes a plan asks for (Output.NeedsDrainPods);
	// a node missing is unread.
	DrainPods map[string][]corev1.Pod
	// FileIntegrityReinitRequested is true when the FedRAMP FileIntegrity
	// object already carries the re-init annotation.
	FileIntegrityReinitRequested bool
}

// AlertsResult is the outcome of the critical-alerts query (filled by the
// Alertmanager integration).
type AlertsResult struct {
	// Firing are the names of firing critical alerts after the ignore lists.
	Firing []string
	// Err is set when the alerts could not be read; the check then fails.
	Err string
}

// LeasesRead is the listing of an UpgradeConfig's silences.
type LeasesRead struct {
	Existing []silence.Silence
	// Err is set when they could not be listed: no lease step is planned
	// (the reconciler retries with its backoff).
	Err string
}

// ExternalChecksResult is the outcome of one run of the HTTP dependency
// checks: every URL answered below 400, or what failed.
type ExternalChecksResult struct {
	Passed  bool
	Details string
}

// Integrations says which managed-service integrations are wired in. Steps
// that need an absent one complete at once and say so.
type Integrations struct {
	// Notifications: an OCM notifier is configured (policy states, and
	// service logs with the ServiceLogNotification gate).
	Notifications bool
	Silences      bool
}

// Input is everything Plan decides from.
type Input struct {
	UpgradeConfig *upgradev1alpha1.UpgradeConfig
	// Config is the configuration in force (the last good one); ConfigError
	// is set when the current ConfigMap is invalid or missing.
	Config       *config.Config
	ConfigError  error
	Snapshot     Snapshot
	Integrations Integrations
	Now          time.Time
	// SilenceTTL is each lease's length (silence.DefaultTTL when zero).
	SilenceTTL time.Duration
}

// Output is the decision.
type Output struct {
	// Status is the status planned. The reconciler writes what Executed
	// makes of it once the lease step and Action have run.
	Status upgradev1alpha1.UpgradeConfigStatus
	// Action is at most one side effect, performed before the status is
	// written (act, then record).
	Action *Action
	// Events are the decisions worth showing in `kubectl describe`.
	Events []Event
	// RequeueAfter is set only when the answer changes with time alone (a
	// scheduled start, a window opening, a deadline); zero otherwise.
	RequeueAfter time.Duration
	// Silences are the Alertmanager leases to hold now (with Integrations.
	// Silences).
	Silences Silences
	// Leases is the lease step to carry out this pass (silence.Client.Apply),
	// decided from Silences and the listing; Executed records its result in
	// status.silences. nil: no lease step this pass.
	Leases *LeaseStep
	// NeedsLeases is set when Silences are to be managed and
	// Snapshot.LeasesUnread was: the rest of this Output is then void, and
	// the reconciler lists the silences and plans again.
	NeedsLeases bool
	// NeedsAlerts is set when Snapshot.AlertsUnread was and a health check
	// needed the alerts: the rest of this Output is then void, and the
	// reconciler plans again with Snapshot.Alerts read. When it is not set
	// the Output is the one Plan returns for any Snapshot.Alerts.
	NeedsAlerts bool
	// NeedsExternalChecks is set when the external dependency step needs a
	// fresh run of the HTTP checks and Snapshot.ExternalChecks is nil: the
	// rest of this Output is then void, and the reconciler runs the checks
	// and plans again with their result.
	NeedsExternalChecks bool
	// NeedsPDBNodes names the blocking PodDisruptionBudgets whose pods'
	// nodes the preflight report needs and Snapshot.PDBNodes lacks: the rest
	// of this Output is then void, and the reconciler reads them and plans
	// again.
	NeedsPDBNodes []string
	// NeedsDrainPods names the nodes whose pods a drain decision needs and
	// Snapshot.DrainPods lacks: the rest of this Output is then void, and
	// the reconciler reads them (from the apiserver: pods are not cached)
	// and plans again.
	NeedsDrainPods []string
	// Drains are the drains' forced steps, taken after Status is written,
	// and their Events on nodes.
	Drains Drains
}

// LeaseStep is the lease decision and the listing it was made from.
type LeaseStep struct {
	Plan     silence.Plan
	Existing []silence.Silence
}

// CreatedBy is written on every silence: MUO's name, which SRE alert rules
// and people search for.
const CreatedBy = "managed-upgrade-operator"

// Event is a Kubernetes Event on the UpgradeConfig.
type Event struct {
	Warning bool
	Reason  string
	Message string
}

// ActionKind is a side effect.
type ActionKind string

const (
	// PatchClusterVersion merge-patches ClusterVersion's spec.
	PatchClusterVersion ActionKind = "PatchClusterVersion"
	// CreateMachineSet creates a temporary worker MachineSet.
	CreateMachineSet ActionKind = "CreateMachineSet"
	// DeleteMachineSet deletes a temporary worker MachineSet.
	DeleteMachineSet ActionKind = "DeleteMachineSet"
	// ReinitFileIntegrity adds the FedRAMP re-init annotation to the
	// FileIntegrity object (adds it: other annotations stay).
	ReinitFileIntegrity ActionKind = "ReinitFileIntegrity"
	// Notify delivers Action.Notification (an OCM policy state or a service
	// log); Executed records the outcome in status.notifications.
	Notify ActionKind = "Notify"
	// RemoveFinalizer removes the scheduler's finalizer from a deleted
	// UpgradeConfig once nothing is left to clean up.
	RemoveFinalizer ActionKind = "RemoveFinalizer"
)

// Action is one side effect.
type Action struct {
	Kind ActionKind
	// Step is the history condition type the action belongs to.
	Step upgradev1alpha1.UpgradeConditionType
	// ClusterVersion is the patch for PatchClusterVersion.
	ClusterVersion *ClusterVersionPatch
	// MachineSet is the object to create, or (name only) to delete.
	MachineSet *machinev1beta1.MachineSet
	// Notification is what Notify delivers.
	Notification *Notification
}

// Finalizer keeps a deleted UpgradeConfig until its temporary capacity is gone.
const Finalizer = "upgrade.managed.openshift.io/upgrade-scheduler"

// Plan decides. It never mutates its input.
func Plan(in Input) Output {
	p := newPlanner(in)
	p.run()
	return p.output()
}
