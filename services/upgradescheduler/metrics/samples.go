// Package metrics turns an UpgradeConfig's status into Prometheus series and
// exports them: the managed-upgrade-operator's upgradeoperator_* gauges, with
// MUO's names and labels, so that the SRE alerts written for MUO keep
// working, and Upshift's upshift_upgrade_scheduler_* series.
//
// Samples and StepsCompleted are pure (status in, series out); Exporter keeps
// the registered collectors in step with them.
package metrics

import (
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

// Metric names. The upgradeoperator_* names and their labels are MUO's (an
// interface: SRE alert rules select them); the others are Upshift's.
const (
	ValidationFailed       = "upgradeoperator_upgradeconfig_validation_failed"
	HealthCheckFailed      = "upgradeoperator_healthcheck_failed"
	ClusterCheckFailed     = "upgradeoperator_cluster_check_failed"
	ScalingFailed          = "upgradeoperator_scaling_failed"
	UpgradeWindowBreached  = "upgradeoperator_upgrade_window_breached"
	ControlPlaneTimeout    = "upgradeoperator_controlplane_timeout"
	WorkerTimeout          = "upgradeoperator_worker_timeout"
	UpgradeStarted         = "upgradeoperator_upgrade_started_timestamp"
	UpgradeCompleted       = "upgradeoperator_upgrade_completed_timestamp"
	ControlPlaneStarted    = "upgradeoperator_controlplane_upgrade_started_timestamp"
	ControlPlaneCompleted  = "upgradeoperator_controlplane_upgrade_completed_timestamp"
	WorkerNodesStarted     = "upgradeoperator_workernode_upgrade_started_timestamp"
	WorkerNodesCompleted   = "upgradeoperator_workernode_upgrade_completed_timestamp"
	UpgradeStateTimestamp  = "upgradeoperator_upgrade_state_timestamp"
	Phase                  = "upshift_upgrade_scheduler_phase"
	CurrentStepInfo        = "upshift_upgrade_scheduler_current_step_info"
	DeadlineExceeded       = "upshift_upgrade_scheduler_deadline_exceeded"
	PreflightCheckFailing  = "upshift_upgrade_scheduler_preflight_check_failing"
	ConfigInvalid          = "upshift_upgrade_scheduler_config_invalid"
	Paused                 = "upshift_upgrade_scheduler_paused"
	CapacityReservationSet = "upshift_upgrade_scheduler_capacity_reservation"
	SilencesActive         = "upshift_upgrade_scheduler_silences_active"
	StepDuration           = "upshift_upgrade_scheduler_step_duration_seconds"
	// Notification is MUO's: 1 for every notification sent, by event and
	// version. MUO reads it back from Prometheus to deduplicate; here it is
	// only written (status.notifications is the record).
	Notification = "upgradeoperator_upgrade_notification"
	// NotificationFailed is MUO's, without the upgradeoperator_ prefix as MUO
	// exports it: 1 when the last delivery of event failed, 0 once it
	// succeeded.
	NotificationFailed = "upgrade_notification_failed"
	OCMRequests        = "upshift_upgrade_scheduler_ocm_requests_total"
	Notifications      = "upshift_upgrade_scheduler_notifications_total"
	SyncTimestamp      = "upgradeoperator_upgradeconfig_sync_timestamp"
	// NodeDrainTimeout is MUO's, labelled by node only: 1 while a worker
	// node's drain has timed out (status.drains[].timedOutTime), 0 once
	// that drain ended.
	NodeDrainTimeout = "upgradeoperator_node_drain_timeout"
	// UpgradeResult is MUO's: after an upgrade, 1 when none of the SRE
	// paging alerts fired during it, 0 when some did (named in alerts).
	UpgradeResult = "upgradeoperator_upgrade_result"
	DrainForced   = "upshift_upgrade_scheduler_drain_forced_total"
)

// Label names.
const (
	LabelUpgradeConfig = "upgradeconfig_name" // MUO's
	LabelClusterID     = "_id"                // MUO's: the cluster ID
	LabelVersion       = "version"
	LabelState         = "state"
	LabelReason        = "reason"
	LabelNamespace     = "namespace"
	LabelName          = "name"
	LabelPhase         = "phase"
	LabelStep          = "step"
	LabelDeadline      = "deadline"
	LabelCheck         = "check"
	LabelOutcome       = "outcome"
	LabelEvent         = "event"
	LabelResult        = "result"
	LabelOp            = "op"
	LabelCode          = "code"
	LabelNode          = "node_name" // MUO's
	// MUO's labels of upgrade_result.
	LabelPrecedingVersion = "preceding_version"
	LabelStream           = "stream"
	LabelAlerts           = "alerts"
)

// PagingAlerts are the SRE alerts (managed-cluster-config's rules on MUO's
// metrics) whose firing during an upgrade makes its result 0, as MUO lists
// them.
var PagingAlerts = []string{
	"UpgradeConfigValidationFailedSRE",
	"UpgradeClusterCheckFailedSRE",
	"UpgradeControlPlaneUpgradeTimeoutSRE",
	"UpgradeNodeUpgradeTimeoutSRE",
	"UpgradeNodeDrainFailedSRE",
}

// UpgradeResultSample is the result of the attempt in history[0] of uc, an
// upgrade that completed, given the paging alerts that fired during it.
func UpgradeResultSample(uc *upgradev1alpha1.UpgradeConfig, fired []string) Sample {
	h := uc.Status.History[0]
	return Sample{Name: UpgradeResult, Labels: map[string]string{LabelUpgradeConfig: uc.Name, LabelPrecedingVersion: h.PrecedingVersion,
		LabelStream: Stream(h.PrecedingVersion, h.Version), LabelVersion: h.Version, LabelAlerts: strings.Join(fired, ",")},
		Value: boolValue(len(fired) == 0)}
}

// minorOf reads the minor of a version as MUO does: the second of its
// dot-separated numbers, anything after the third dot aside.
var minorOf = regexp.MustCompile(`[0-9]+\.([0-9]+)\..*`)

// Stream is MUO's kind of update: "y" when the minor changes, "z" when not,
// "unknown" when either version does not read as one.
func Stream(preceding, version string) string {
	a, b := minorOf.FindStringSubmatch(preceding), minorOf.FindStringSubmatch(version)
	if len(a) < 2 || len(b) < 2 {
		return "unknown"
	}
	if a[1] != b[1] {
		return "y"
	}
	return "z"
}

// Sample is one series and its value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Key identifies the series.
func (s Sample) Key() string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(s.Name)
	for _, k := range keys {
		b.WriteString("|" + k + "=" + s.Labels[k])
	}
	return b.String()
}

// Cluster is what the series need from ClusterVersion.
type Cluster struct {
	// ID is spec.clusterID (MUO's _id label).
	ID string
	// Version is the version the cluster last completed (MUO's "current
	// version"), the version label of upgradeoperator_healthcheck_failed.
	Version string
}

// Phases are every phase an attempt can be in: the values of the phase state set.
var Phases = []upgradev1alpha1.UpgradePhase{
	upgradev1alpha1.UpgradePhaseNew, upgradev1alpha1.UpgradePhasePending, upgradev1alpha1.UpgradePhaseUpgrading,
	upgradev1alpha1.UpgradePhaseUpgraded, upgradev1alpha1.UpgradePhaseFailed, upgradev1alpha1.UpgradePhaseCancelled,
}

// CapacityOutcomes are the values of the capacity reservation state set.
var CapacityOutcomes = []string{plan.CapacityReady, plan.CapacityTimedOut, plan.CapacitySkipped, plan.CapacityRemoved}

// muoReasons are MUO's healthcheck_failed reasons for the checks MUO also
// runs; the checks MUO does not have get a reason in the same style.
var muoReasons = map[string]string{
	plan.CheckCriticalAlerts:        "critical_alerts_firing",
	plan.CheckClusterOperators:      "cluster_operators_degraded",
	plan.CheckClusterVersion:        "cluster_version_failing",
	plan.CheckMachineConfigPools:    "machine_config_pools_degraded",
	plan.CheckNodes:                 "cluster_nodes_not_ready_or_cordoned",
	plan.CheckPodDisruptionBudgets:  "pdb_blocks_drain",
	plan.CheckExternalDeps:          "external_dependencies_unavailable",
	plan.CheckCapacityReservation:   "default_worker_machinepool_not_found",
	plan.CheckManuallyCordonedNodes: "cluster_node_manually_cordoned",
	plan.CheckUnschedulableTaints:   "cluster_node_taint_unschedulable",
	plan.CheckPDBConfiguration:      "cluster_invalid_pdb_configuration",
}

// HealthCheckReason is the reason label of upgradeoperator_healthcheck_failed
// for a check of status.preflight.
func HealthCheckReason(check string) string {
	if r, ok := muoReasons[check]; ok {
		return r
	}
	return strings.ToLower(check)
}

// Samples are the series of one UpgradeConfig, from its status alone (and the
// cluster's ID and version): what is exported after every plan.
func Samples(uc *upgradev1alpha1.UpgradeConfig, cluster Cluster) []Sample {
	var out []Sample
	st := &uc.Status
	muo := func(name string, v float64, kv ...string) {
		l := map[string]string{LabelUpgradeConfig: uc.Name}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		out = append(out, Sample{Name: name, Labels: l, Value: v})
	}
	own := func(name string, v float64, kv ...string) {
		l := map[string]string{LabelNamespace: uc.Namespace, LabelName: uc.Name}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		out = append(out, Sample{Name: name, Labels: l, Value: v})
	}

	if c := meta.FindStatusCondition(st.Conditions, "ConfigValid"); c != nil {
		own(ConfigInvalid, boolValue(c.Status == metav1.ConditionFalse))
	}
	if c := meta.FindStatusCondition(st.Conditions, "Paused"); c != nil {
		own(Paused, boolValue(c.Status == metav1.ConditionTrue))
	}
	// The leases recorded in status: the scheduler expires them at the end of
	// every attempt, so a value above 0 on a finished upgrade is a leak.
	own(SilencesActive, float64(len(st.Silences)))
	if c := meta.FindStatusCondition(st.Conditions, "Validated"); c != nil {
		muo(ValidationFailed, boolValue(c.Status == metav1.ConditionFalse))
	}
	// MUO sets its notification gauge after a delivery that succeeded.
	seen := map[string]bool{}
	for _, n := range st.Notifications {
		if k := n.Event + "|" + n.Version; !seen[k] && (n.Outcome == "Sent" || n.Outcome == "AlreadySent") {
			seen[k] = true
			muo(Notification, 1, LabelEvent, n.Event, LabelVersion, n.Version)
		}
	}
	for _, d := range st.Drains {
		if d.TimedOutTime != nil {
			open := d.Record != nil && d.Record.CompletionTime == nil
			out = append(out, Sample{Name: NodeDrainTimeout, Labels: map[string]string{LabelNode: d.Node}, Value: boolValue(open)})
		}
	}
	if len(st.History) == 0 {
		return out
	}
	h := &st.History[0]

	for _, ph := range Phases {
		own(Phase, boolValue(h.Phase == ph), LabelPhase, string(ph))
	}
	if st.CurrentStep != "" {
		own(CurrentStepInfo, 1, LabelStep, st.CurrentStep)
	}

	exceeded := exceededDeadline(st)
	for _, d := range plan.Deadlines {
		own(DeadlineExceeded, boolValue(exceeded == d), LabelDeadline, d)
	}
	muo(UpgradeWindowBreached, boolValue(exceeded == plan.DeadlineStart))
	muo(ControlPlaneTimeout, boolValue(exceeded == plan.DeadlineControlPlane), LabelVersion, h.Version)
	muo(WorkerTimeout, boolValue(exceeded == plan.DeadlineWorkers), LabelVersion, h.Version)

	anyFailing := false
	for _, c := range st.Preflight {
		own(PreflightCheckFailing, boolValue(!c.Passed), LabelCheck, c.Check)
		// MUO's series, which MUO's SRE alerts page on, count only what
		// holds the upgrade, as with MUO; an advisory finding is in ours.
		// The checks of MUO's PreHealthCheck gate never hold it, and MUO
		// sets its series for them all the same.
		blocks := !c.Passed && !c.Advisory
		failed := blocks || (!c.Passed && plan.PreHealthCheckGateChecks[c.Check])
		muo(HealthCheckFailed, boolValue(failed), LabelState, string(h.Phase), LabelVersion, cluster.Version, LabelReason, HealthCheckReason(c.Check))
		anyFailing = anyFailing || blocks
	}
	if len(st.Preflight) > 0 {
		muo(ClusterCheckFailed, boolValue(anyFailing))
	}

	if cr := st.CapacityReservation; cr != nil && cr.Outcome != "" {
		muo(ScalingFailed, boolValue(cr.Outcome == plan.CapacityTimedOut))
		for _, o := range CapacityOutcomes {
			own(CapacityReservationSet, boolValue(cr.Outcome == o), LabelOutcome, o)
		}
	}

	// Timestamps: only those that happened (a zero would read as 1970).
	conds := h.Conditions
	commenced := completeTime(conds, plan.StepUpgradeCommenced)
	cpDone := completeTime(conds, plan.StepControlPlaneUpgraded)
	workersStart := timeOf(h.WorkerStartTime)
	if workersStart.IsZero() {
		// MUO sets it when the control plane completes.
		workersStart = cpDone
	}
	workersDone := timeOf(h.WorkerCompleteTime)
	if workersDone.IsZero() {
		workersDone = completeTime(conds, plan.StepWorkerNodesUpgraded)
	}
	ts := func(name string, t time.Time) {
		if !t.IsZero() {
			muo(name, unix(t), LabelClusterID, cluster.ID, LabelVersion, h.Version)
		}
	}
	ts(UpgradeStarted, timeOf(h.StartTime))
	ts(ControlPlaneStarted, commenced)
	ts(ControlPlaneCompleted, cpDone)
	ts(WorkerNodesStarted, workersStart)
	ts(WorkerNodesCompleted, workersDone)
	ts(UpgradeCompleted, timeOf(h.CompleteTime))

	// MUO's upgrade_state_timestamp (defined in MUO, never wired there):
	// one series per state reached, labelled by version and state only.
	state := func(s string, t time.Time) {
		if !t.IsZero() {
			out = append(out, Sample{Name: UpgradeStateTimestamp, Labels: map[string]string{LabelVersion: h.Version, LabelState: s}, Value: unix(t)})
		}
	}
	if at, err := time.Parse(time.RFC3339, uc.Spec.UpgradeAt); err == nil && h.Version == targetOf(uc) {
		state("scheduled", at)
	}
	state("started", timeOf(h.StartTime))
	state("control_plane_started", commenced)
	state("control_plane_completed", cpDone)
	state("workers_started", workersStart)
	state("workers_completed", workersDone)
	state("finished", timeOf(h.CompleteTime))
	return out
}

// exceededDeadline is the deadline the DeadlineExceeded condition names, or "".
func exceededDeadline(st *upgradev1alpha1.UpgradeConfigStatus) string {
	c := meta.FindStatusCondition(st.Conditions, "DeadlineExceeded")
	if c == nil || c.Status != metav1.ConditionTrue {
		return ""
	}
	for _, d := range plan.Deadlines {
		if c.Reason == plan.DeadlineExceededReason(d) {
			return d
		}
	}
	return ""
}

// StepDone is a step that completed, and how long it took from its first
// evaluation.
type StepDone struct {
	Step     string
	Duration time.Duration
}

// StepsCompleted are the steps of the current attempt that are done in after
// and were not in before: what a successful status write completed.
func StepsCompleted(before, after *upgradev1alpha1.UpgradeConfigStatus) []StepDone {
	if len(after.History) == 0 {
		return nil
	}
	h := after.History[0]
	var prev upgradev1alpha1.Conditions
	for _, b := range before.History {
		if b.Version == h.Version {
			prev = b.Conditions
			break
		}
	}
	var out []StepDone
	for _, c := range h.Conditions {
		if c.Status != corev1.ConditionTrue || c.CompleteTime == nil || c.StartTime == nil || !isStep(c.Type) {
			continue
		}
		if p := findCondition(prev, c.Type); p != nil && p.Status == corev1.ConditionTrue {
			continue
		}
		d := c.CompleteTime.Sub(c.StartTime.Time)
		if d < 0 {
			d = 0
		}
		out = append(out, StepDone{Step: string(c.Type), Duration: d})
	}
	return out
}

// isStep: a step of the attempt's list (not FailedUpgrade or UpgradeCancelled).
func isStep(t upgradev1alpha1.UpgradeConditionType) bool {
	for _, typ := range []upgradev1alpha1.UpgradeType{upgradev1alpha1.OSD, upgradev1alpha1.ARO} {
		for _, s := range plan.Steps(typ) {
			if s == t {
				return true
			}
		}
	}
	return false
}

func findCondition(conds upgradev1alpha1.Conditions, t upgradev1alpha1.UpgradeConditionType) *upgradev1alpha1.UpgradeCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func completeTime(conds upgradev1alpha1.Conditions, t upgradev1alpha1.UpgradeConditionType) time.Time {
	if c := findCondition(conds, t); c != nil && c.Status == corev1.ConditionTrue {
		return timeOf(c.CompleteTime)
	}
	return time.Time{}
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// targetOf is the history key of the spec's target (the image when there is
// no version), as the planner keys it.
func targetOf(uc *upgradev1alpha1.UpgradeConfig) string {
	if uc.Spec.Desired.Version != "" {
		return uc.Spec.Desired.Version
	}
	return uc.Spec.Desired.Image
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
