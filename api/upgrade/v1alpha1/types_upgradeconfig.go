package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
)

// UpgradeConfig schedules and runs one OpenShift upgrade: at upgradeAt (and
// inside a maintenance window, when any are set) the upgrade-scheduler checks
// the cluster, reserves capacity, points ClusterVersion at spec.desired, waits
// for the control plane and the workers, checks the cluster again and cleans up.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=upgrade
// +kubebuilder:printcolumn:name="desired_version",type=string,JSONPath=`.spec.desired.version`
// +kubebuilder:printcolumn:name="phase",type=string,JSONPath=`.status.history[0].phase`
// +kubebuilder:printcolumn:name="stage",type=string,JSONPath=`.status.history[0].conditions[0].type`
// +kubebuilder:printcolumn:name="status",type=string,JSONPath=`.status.history[0].conditions[0].status`
// +kubebuilder:printcolumn:name="reason",type=string,JSONPath=`.status.history[0].conditions[0].reason`
// +kubebuilder:printcolumn:name="message",type=string,JSONPath=`.status.history[0].conditions[0].message`
// +kubebuilder:printcolumn:name="findings",type=string,JSONPath=`.status.report.findings`,priority=1
// +kubebuilder:printcolumn:name="workers_eta",type=string,JSONPath=`.status.report.expectedWorkerDuration`,priority=1
type UpgradeConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   UpgradeConfigSpec   `json:"spec,omitempty"`
	Status UpgradeConfigStatus `json:"status,omitempty"`
}

// UpgradeConfigList is a list of UpgradeConfigs.
//
// +kubebuilder:object:root=true
type UpgradeConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UpgradeConfig `json:"items"`
}

// UpgradeType selects the step list: OSD (OpenShift Dedicated / ROSA) or ARO
// (Azure Red Hat OpenShift), as in MUO.
// +kubebuilder:validation:Enum=OSD;ARO
type UpgradeType string

const (
	// OSD runs the OpenShift Dedicated step list.
	OSD UpgradeType = "OSD"
	// ARO runs the Azure Red Hat OpenShift step list.
	ARO UpgradeType = "ARO"
)

// UpgradeConfigSpec is MUO's spec plus Upshift's optional additions.
//
// Which of desired's fields are needed (an image, or a version with a
// channel) is not checked at admission: MUO's own schema accepts any of them,
// and an object written for MUO must apply unchanged. The scheduler reports a
// missing one as a validation condition naming the field.
type UpgradeConfigSpec struct {
	// desired is the release to upgrade to. (MUO)
	// +required
	Desired Update `json:"desired"`

	// upgradeAt is the earliest time the upgrade may start, in RFC 3339 (e.g.
	// 2024-01-01T12:00:00Z). A time already past when this spec generation is
	// first observed means "now": the start window is then measured from that
	// observation (status.generationObservedTime). (MUO)
	// +required
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)([.][0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$')",message="spec.upgradeAt must be an RFC 3339 time such as 2024-01-01T12:00:00Z"
	UpgradeAt string `json:"upgradeAt"`

	// PDBForceDrainTimeout is how many minutes a node whose drain is blocked by
	// a PodDisruptionBudget waits before PDB-protected pods are forced off it.
	// The capitalised name is MUO's and is kept for compatibility. (MUO)
	// +required
	// +kubebuilder:validation:Minimum=0
	PDBForceDrainTimeout int32 `json:"PDBForceDrainTimeout"`

	// type selects the step list, OSD or ARO. (MUO)
	// +required
	Type UpgradeType `json:"type"`

	// capacityReservation adds one temporary worker per worker MachineSet for
	// the duration of the upgrade, removed on every way the upgrade ends. (MUO)
	// +optional
	CapacityReservation bool `json:"capacityReservation,omitempty"`

	// paused holds every side effect (no ClusterVersion patch, no MachineSet
	// created or deleted, no phase change) while true; the status still
	// reports what would happen next. Setting it back to false resumes at the
	// recorded step. (Upshift)
	// +optional
	Paused bool `json:"paused,omitempty"`

	// cancel, when true before the upgrade has commenced (ClusterVersion not
	// yet pointed at the target), removes the temporary capacity and ends the
	// upgrade in phase Cancelled. Once commenced, the control plane cannot be
	// stopped: the request is reported in status.conditions (type Cancelled,
	// reason AlreadyCommenced) and the upgrade runs to its end. (Upshift)
	// +optional
	Cancel bool `json:"cancel,omitempty"`

	// maintenanceWindows, when set, restrict when the upgrade may start: it
	// starts at upgradeAt or later, only while one of these windows is open.
	// Once commenced it is not interrupted when a window closes. (Upshift)
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	MaintenanceWindows []commonv1alpha1.MaintenanceWindow `json:"maintenanceWindows,omitempty"`

	// deadlines override, per wait, how long the scheduler waits and what it
	// does when the time is up. Unset fields come from the configuration.
	// (Upshift)
	// +optional
	Deadlines *Deadlines `json:"deadlines,omitempty"`
}

// Update is the target release. (MUO)
type Update struct {
	// version is the target OpenShift version, e.g. 4.14.15.
	// +optional
	Version string `json:"version,omitempty"`

	// channel is the update channel to set on ClusterVersion, e.g. stable-4.14.
	// +optional
	Channel string `json:"channel,omitempty"`

	// image is the release image by digest; when set it takes priority over
	// version and channel.
	// +optional
	Image string `json:"image,omitempty"`
}

// DeadlinePolicy is what happens when a deadline passes.
// +kubebuilder:validation:Enum=alert;pause;fail
type DeadlinePolicy string

const (
	// DeadlineAlert reports the breach (status condition DeadlineExceeded, an
	// Event, the metrics SRE alerts read) and keeps waiting.
	DeadlineAlert DeadlinePolicy = "alert"
	// DeadlinePause reports the breach and holds every further side effect
	// until the spec changes (any edit, such as a longer deadline).
	DeadlinePause DeadlinePolicy = "pause"
	// DeadlineFail removes the temporary capacity and ends the upgrade in
	// phase Failed. After commencement the control plane keeps upgrading: Failed
	// then means the scheduler stopped managing it.
	DeadlineFail DeadlinePolicy = "fail"
)

// Deadlines holds one deadline per wait. Every field is optional.
type Deadlines struct {
	// start bounds the time from the scheduled start (upgradeAt, or the first
	// window opening after it) to commencement: validation, pre-upgrade health
	// and capacity must pass within it. MUO's upgradeWindow.timeOut.
	// +optional
	Start *Deadline `json:"start,omitempty"`

	// controlPlane bounds the time from commencement to ClusterVersion
	// reporting the target Completed. MUO's maintenance.controlPlaneTime.
	// +optional
	ControlPlane *Deadline `json:"controlPlane,omitempty"`

	// workers bounds the time from control-plane completion to every worker
	// pool updated.
	// +optional
	Workers *Deadline `json:"workers,omitempty"`

	// postCheck bounds the time from workers done to the post-upgrade health
	// check passing.
	// +optional
	PostCheck *Deadline `json:"postCheck,omitempty"`
}

// Deadline is a time limit and what to do when it passes.
type Deadline struct {
	// minutes is the time limit; 0 turns this deadline off.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Minutes *int32 `json:"minutes,omitempty"`

	// policy is alert, pause or fail.
	// +optional
	Policy DeadlinePolicy `json:"policy,omitempty"`
}

// UpgradeConfigStatus is MUO's status (history) plus Upshift's additions.
type UpgradeConfigStatus struct {
	// history has one entry per target version, newest first. (MUO) It is
	// a map keyed by version, so that the mcp-tracker can set
	// workerStartTime and workerCompleteTime in an entry with server-side
	// apply without owning the rest of the list.
	// +optional
	// +listType=map
	// +listMapKey=version
	History []UpgradeHistory `json:"history,omitempty"`

	// observedGeneration is the spec generation this status describes. (Upshift)
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// generationObservedTime is when the scheduler first saw
	// observedGeneration; an upgradeAt already past then is measured from
	// this time. (Upshift)
	// +optional
	GenerationObservedTime *metav1.Time `json:"generationObservedTime,omitempty"`

	// currentStep is the step (a history condition type) the upgrade is at,
	// or empty outside phase Upgrading. (Upshift)
	// +optional
	CurrentStep string `json:"currentStep,omitempty"`

	// preflight is the latest result of every health check. (Upshift)
	// +optional
	// +listType=map
	// +listMapKey=check
	// +kubebuilder:validation:MaxItems=32
	Preflight []PreflightCheck `json:"preflight,omitempty"`

	// report is the preflight report: from the moment the upgrade is
	// scheduled until it commences, everything found that would delay it and
	// how long its worker phase is expected to take, refreshed on every
	// change; kept as it last was once the upgrade commenced. (Upshift)
	// +optional
	Report *PreflightReport `json:"report,omitempty"`

	// capacityReservation records the temporary MachineSets this upgrade
	// created, so that none is created twice and all are removed. (Upshift)
	// +optional
	CapacityReservation *CapacityReservationStatus `json:"capacityReservation,omitempty"`

	// pausedByDeadline names the deadline whose pause policy holds the upgrade,
	// and the generation it was reached at; any spec change resumes. (Upshift)
	// +optional
	PausedByDeadline *PausedDeadline `json:"pausedByDeadline,omitempty"`

	// silences are the Alertmanager silences this upgrade holds, one per
	// purpose, renewed while the phase that needs them runs and expired when
	// it ends (on every terminal path). After a restart the scheduler
	// re-adopts them from Alertmanager rather than creating a second one.
	// (Upshift)
	// +optional
	// +listType=map
	// +listMapKey=purpose
	// +kubebuilder:validation:MaxItems=8
	Silences []SilenceLease `json:"silences,omitempty"`

	// notifications records every notification the scheduler delivered (an
	// OCM upgrade policy state or a service log), one per spec generation,
	// target version and event. The record is written before the upgrade
	// moves past the notification, so a recorded notification is never sent
	// again; one sent but not recorded (the scheduler stopped in between) is
	// read back from OCM before it is sent again. (Upshift)
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Notifications []NotificationRecord `json:"notifications,omitempty"`

	// drains are the drains of worker nodes the machine-config operator
	// runs during the upgrade, one entry per node: who forces the drain once
	// it is blocked (the scheduler, as MUO's NodeKeeper does, or the
	// node-gate run that released the node), and for the scheduler's own
	// the drain's record. The scheduler times a drain from the node's
	// cordon, as MUO does (the cordon taint's timeAdded), and lists it once
	// it has lasted a tenth of its first timeout or pods of it were read:
	// a shorter drain's clock is on the Node, and it is not listed. An entry
	// is kept while its drain is open, and after it when pods were forced or
	// it timed out, until the attempt ends. (Upshift)
	// +optional
	// +listType=map
	// +listMapKey=node
	// +kubebuilder:validation:MaxItems=256
	Drains []NodeDrain `json:"drains,omitempty"`

	// conditions summarise the upgrade for Kubernetes tooling: Validated,
	// Progressing, Paused, Cancelled, DeadlineExceeded, HealthChecksPassing,
	// ConfigValid and Completed, written by the upgrade-scheduler, and
	// WorkersUpgraded, written by the mcp-tracker. (Upshift)
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// pools is the latest update of every MachineConfigPool (master, worker
	// and custom pools), one entry per pool, written by the mcp-tracker with
	// server-side apply under its own field manager. A pool that was deleted
	// stays listed, with removedTime, for a while after. (Upshift)
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Pools []PoolUpdate `json:"pools,omitempty"`
}

// WorkersUpgradedCondition is the status.conditions type the mcp-tracker
// writes: True once every pool other than master has completed its update to
// its current target configuration. (Upshift)
const WorkersUpgradedCondition = "WorkersUpgraded"

// PoolUpdate is one MachineConfigPool's update to one target (rendered)
// configuration. Times are observed by the mcp-tracker from the MCO's node
// annotations; durations are derived from them rather than stored, so that
// the status does not change every second. (Upshift)
type PoolUpdate struct {
	// name is the MachineConfigPool's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// targetConfig is the rendered MachineConfig the pool is updating (or has
	// updated) its nodes to: the pool's spec.configuration.name.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	TargetConfig string `json:"targetConfig,omitempty"`

	// startTime is when the first node of the pool was told to move to
	// targetConfig (its desiredConfig annotation changed to it). Unset when
	// the pool was already at targetConfig when first observed.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completeTime is when every node of the pool ran targetConfig with
	// state Done and the pool reported Updated.
	// +optional
	CompleteTime *metav1.Time `json:"completeTime,omitempty"`

	// removedTime is when the pool was seen deleted.
	// +optional
	RemovedTime *metav1.Time `json:"removedTime,omitempty"`

	// machineCount is how many nodes belong to the pool.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MachineCount int32 `json:"machineCount,omitempty"`

	// nodes counts the pool's nodes by update state.
	// +optional
	Nodes PoolNodeCounts `json:"nodes,omitempty"`

	// stuckNodes counts the nodes that have not changed state for longer
	// than the mcp-tracker's stuck threshold while updating or degraded.
	// +optional
	// +kubebuilder:validation:Minimum=0
	StuckNodes int32 `json:"stuckNodes,omitempty"`

	// lastUpdateDurationSeconds is how long the pool's most recent completed
	// update took, from startTime to completeTime. It is kept while the next
	// update runs (when startTime and completeTime already describe that
	// one), so that "slower than its previous update" can be judged, also
	// after the mcp-tracker restarts. Unset until one update was timed.
	// +optional
	// +kubebuilder:validation:Minimum=0
	LastUpdateDurationSeconds int64 `json:"lastUpdateDurationSeconds,omitempty"`

	// slowestNode is the node that has been longest in its current state
	// among the nodes still updating (draining, updating, rebooting or
	// degraded); unset when none is.
	// +optional
	SlowestNode *SlowestNode `json:"slowestNode,omitempty"`
}

// PoolNodeCounts counts a pool's nodes by update state. A node is pending
// until the MCO targets it, done once it runs the target with state Done, and
// degraded while the machine-config daemon reports Degraded or
// Unreconcilable.
type PoolNodeCounts struct {
	// +optional
	// +kubebuilder:validation:Minimum=0
	Pending int32 `json:"pending,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Draining int32 `json:"draining,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Updating int32 `json:"updating,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Rebooting int32 `json:"rebooting,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Done int32 `json:"done,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Degraded int32 `json:"degraded,omitempty"`
}

// SlowestNode names the node longest in its current update state; how long
// is now minus since.
type SlowestNode struct {
	// name is the Node's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// state is draining, updating, rebooting or degraded.
	// +required
	// +kubebuilder:validation:MaxLength=32
	State string `json:"state"`

	// since is when the node entered state, as observed by the mcp-tracker
	// (after a restart of the tracker: when it first saw the node again).
	// +required
	Since metav1.Time `json:"since"`

	// reason is the machine-config daemon's reason annotation, when it gives
	// one (a degraded node's error).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// DrainOwnerScheduler is NodeDrain.owner for the drains the scheduler forces.
const DrainOwnerScheduler = "upgrade-scheduler"

// NodeDrain is one worker node's drain during the upgrade. (Upshift)
type NodeDrain struct {
	// node is the Node's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node"`

	// owner is who forces the drain once it is blocked: upgrade-scheduler,
	// or "MutexRunConfig <namespace>/<name>" for a node-gate run that
	// released the node with drainRemediation set (node-gate then keeps the
	// record in the run's status).
	// +required
	// +kubebuilder:validation:MaxLength=512
	Owner string `json:"owner"`

	// timedOutTime is when the drain was found still blocked with nothing
	// left to force or wait for (MUO's failed drain):
	// upgradeoperator_node_drain_timeout is 1 for the node from then until
	// the drain ends, and 0 after.
	// +optional
	TimedOutTime *metav1.Time `json:"timedOutTime,omitempty"`

	// record is the scheduler's record of a drain it owns.
	// +optional
	Record *commonv1alpha1.DrainRecord `json:"record,omitempty"`

	// forcedGuardedPods counts the pods of this drain that a
	// PodDisruptionBudget selects and that the scheduler forced off: the
	// first one of an attempt delays it by the node drain grace period, which
	// the customer is told (MUO's delayed notice).
	// +optional
	// +kubebuilder:validation:Minimum=0
	ForcedGuardedPods int32 `json:"forcedGuardedPods,omitempty"`
}

// PreflightReport says, before an upgrade commences, what would delay it.
// (Upshift)
type PreflightReport struct {
	// findings summarises the failing checks of status.preflight: those
	// that hold the upgrade, then the advisory ones, e.g.
	// "blocking: CriticalAlerts; advisory: PodDisruptionBudgets, Nodes", or
	// "none".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Findings string `json:"findings,omitempty"`

	// drainBlockers are the PodDisruptionBudgets that allow no disruption
	// now, each with the nodes of the pods it guards: the drains of those
	// nodes will wait for it (and be forced after the drain timeouts).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	DrainBlockers []DrainBlocker `json:"drainBlockers,omitempty"`

	// expectedWorkerDuration is how long the worker phase is expected to
	// take: the slowest worker pool's rounds (its nodes over its
	// maxUnavailable) times its round time, plus the drain timeouts of the
	// rounds a drain blocker holds.
	// +optional
	ExpectedWorkerDuration *metav1.Duration `json:"expectedWorkerDuration,omitempty"`

	// workerPools is the estimate of each worker pool.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	WorkerPools []PoolEstimate `json:"workerPools,omitempty"`
}

// DrainBlocker is a PodDisruptionBudget that would block drains.
type DrainBlocker struct {
	// podDisruptionBudget is "<namespace>/<name>".
	// +required
	// +kubebuilder:validation:MaxLength=317
	PodDisruptionBudget string `json:"podDisruptionBudget"`

	// nodes are the nodes of the pods it guards (at most 20).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Nodes []string `json:"nodes,omitempty"`
}

// PoolEstimate is one worker pool's expected update time.
type PoolEstimate struct {
	// name is the MachineConfigPool's.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// nodes and maxUnavailable are the pool's machine count and how many
	// of them the MCO updates at once; rounds is nodes over maxUnavailable,
	// rounded up.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// +optional
	MaxUnavailable int32 `json:"maxUnavailable,omitempty"`
	// +optional
	Rounds int32 `json:"rounds,omitempty"`

	// roundDuration is the time of one round: from the pool's last update
	// as the mcp-tracker timed it (basis LastUpdate), else the
	// configuration's nodeDrain.expectedNodeDrainTime (basis Default).
	// +optional
	RoundDuration *metav1.Duration `json:"roundDuration,omitempty"`

	// basis is LastUpdate or Default.
	// +optional
	// +kubebuilder:validation:Enum=LastUpdate;Default
	Basis string `json:"basis,omitempty"`

	// blockedRounds counts the rounds a drain blocker will hold for the
	// drain timeout of a guarded pod.
	// +optional
	BlockedRounds int32 `json:"blockedRounds,omitempty"`
}

// PreflightCheck is the result of one health check. (Upshift)
type PreflightCheck struct {
	// check names the check, e.g. ClusterOperators.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Check string `json:"check"`

	// passed is true when the check found nothing wrong.
	Passed bool `json:"passed"`

	// advisory is true for a check whose failure is reported (here, in an
	// Event and in metrics) but does not hold the upgrade: as MUO, the
	// scheduler blocks only on critical alerts and ClusterOperators, unless
	// the configuration's blockingHealthChecks promotes a check.
	// +optional
	Advisory bool `json:"advisory,omitempty"`

	// details names what failed (operators, nodes, PDBs) or why the check
	// did not run.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Details string `json:"details,omitempty"`

	// lastRun is when the check last ran; while its result stays the same
	// it is refreshed at most every five minutes, so that an unchanged result
	// does not rewrite the status on every event.
	// +optional
	LastRun *metav1.Time `json:"lastRun,omitempty"`
}

// CapacityReservationStatus records the temporary capacity. (Upshift)
type CapacityReservationStatus struct {
	// machineSets are the temporary MachineSets created, each named after the
	// worker MachineSet it copies with the suffix -upgrade.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	MachineSets []string `json:"machineSets,omitempty"`

	// startTime is when the first temporary MachineSet was created; the scale
	// timeout is measured from it.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// outcome is Ready, TimedOut (the upgrade continued without the extra
	// capacity), Skipped (no worker MachineSet) or Removed.
	// +optional
	Outcome string `json:"outcome,omitempty"`
}

// SilenceLease is one Alertmanager silence held by the upgrade. (Upshift)
type SilenceLease struct {
	// purpose is what the silence is for: control-plane (warning and info
	// alerts in the platform namespaces during the control-plane upgrade),
	// control-plane-criticals (the configured critical alerts, same phase) or
	// workers (warning and info alerts while the worker pools upgrade).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Purpose string `json:"purpose"`

	// id is the silence's ID in Alertmanager.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id"`

	// endsAt is when the silence ends unless it is renewed: a scheduler that
	// stops renewing leaves nothing silenced past it.
	// +optional
	EndsAt *metav1.Time `json:"endsAt,omitempty"`
}

// PausedDeadline records a deadline with policy pause that has passed.
type PausedDeadline struct {
	// deadline is start, controlPlane, workers or postCheck.
	Deadline string `json:"deadline"`
	// generation is the spec generation when the deadline passed.
	Generation int64 `json:"generation"`
}

// UpgradePhase is the phase of one upgrade attempt. Cancelled is Upshift's.
// +kubebuilder:validation:Enum=New;Pending;Upgrading;Upgraded;Failed;Cancelled
type UpgradePhase string

const (
	UpgradePhaseNew       UpgradePhase = "New"
	UpgradePhasePending   UpgradePhase = "Pending"
	UpgradePhaseUpgrading UpgradePhase = "Upgrading"
	UpgradePhaseUpgraded  UpgradePhase = "Upgraded"
	UpgradePhaseFailed    UpgradePhase = "Failed"
	UpgradePhaseCancelled UpgradePhase = "Cancelled"
)

// UpgradeHistory is one upgrade attempt, per target version. (MUO)
type UpgradeHistory struct {
	// version is the target version of this attempt.
	// +optional
	// +default=""
	Version string `json:"version,omitempty"`

	// precedingVersion is the version the cluster upgraded from.
	// +optional
	PrecedingVersion string `json:"precedingVersion,omitempty"`

	// phase of this attempt.
	// +required
	Phase UpgradePhase `json:"phase"`

	// conditions has one entry per step, newest first.
	// +optional
	Conditions Conditions `json:"conditions,omitempty"`

	// startTime is when the attempt entered phase Upgrading.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completeTime is when the attempt reached phase Upgraded.
	// +optional
	CompleteTime *metav1.Time `json:"completeTime,omitempty"`

	// workerStartTime is when the worker pool started updating to this
	// attempt's configuration: the first worker node told to move to it.
	// Written by the mcp-tracker. (MUO)
	// +optional
	WorkerStartTime *metav1.Time `json:"workerStartTime,omitempty"`

	// workerCompleteTime is when every worker node ran that configuration
	// and the worker pool reported Updated. Written by the mcp-tracker. (MUO)
	// +optional
	WorkerCompleteTime *metav1.Time `json:"workerCompleteTime,omitempty"`
}

// Conditions is a list of step conditions, newest first.
type Conditions []UpgradeCondition

// UpgradeConditionType is a step name.
type UpgradeConditionType string

// UpgradeCondition is the state of one step. (MUO, plus attempts and lastError)
type UpgradeCondition struct {
	// type is the step.
	// +required
	Type UpgradeConditionType `json:"type"`

	// status is True when the step is done, False while it runs or fails.
	// +required
	Status corev1.ConditionStatus `json:"status"`

	// lastProbeTime is when the step was last evaluated.
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`

	// lastTransitionTime is when status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`

	// startTime is when the step first ran.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completeTime is when the step completed.
	// +optional
	CompleteTime *metav1.Time `json:"completeTime,omitempty"`

	// reason is "<step> not done" or "<step> done", as MUO writes it.
	// +optional
	Reason string `json:"reason,omitempty"`

	// message says what the step is doing or why it is blocked.
	// +optional
	Message string `json:"message,omitempty"`

	// attempts counts the side effects (ClusterVersion patch, MachineSet
	// create or delete) this step issued, and the times it found itself
	// blocked. (Upshift)
	// +optional
	// +kubebuilder:validation:Minimum=0
	Attempts int32 `json:"attempts,omitempty"`

	// lastError is the latest error this step met, kept after the step goes
	// on so that a transient failure stays visible. (Upshift)
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	LastError string `json:"lastError,omitempty"`
}

// NotificationRecord is one delivered notification. (Upshift)
type NotificationRecord struct {
	// event is MUO's notification state: StateStarted, StateDelayed,
	// StateFailed, StateCompleted (OCM policy states), or
	// StateControlPlaneStartedSL, StateControlPlaneFinishedSL,
	// StateWorkerPlaneFinishedSL (service logs).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Event string `json:"event"`

	// version is the target version (or image) of the attempt.
	// +required
	// +kubebuilder:validation:MaxLength=512
	Version string `json:"version"`

	// generation is the spec generation the notification belongs to.
	// +required
	Generation int64 `json:"generation"`

	// outcome is Sent (written now), AlreadySent (OCM already had it: an
	// earlier send whose record was lost), TransitionNotAllowed (the policy
	// is in a state MUO never moves from to this one) or PolicyGone (the
	// policy was deleted in OCM).
	// +required
	// +kubebuilder:validation:MaxLength=64
	Outcome string `json:"outcome"`

	// time is when the outcome was recorded.
	// +required
	Time metav1.Time `json:"time"`
}
