package plan

import (
	"time"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// Step names: the condition types of status.history[].conditions. They are
// MUO's, except that MUO records its delayed-upgrade check under
// StartedNotificationSent; here it has its own type.
const (
	StepStartedNotificationSent              upgradev1alpha1.UpgradeConditionType = "StartedNotificationSent"
	StepUpgradeDelayedCheckCompleted         upgradev1alpha1.UpgradeConditionType = "UpgradeDelayedCheckCompleted"
	StepIsClusterUpgradable                  upgradev1alpha1.UpgradeConditionType = "IsClusterUpgradable"
	StepClusterHealthyBeforeUpgrade          upgradev1alpha1.UpgradeConditionType = "ClusterHealthyBeforeUpgrade"
	StepExternalDependenciesAvailable        upgradev1alpha1.UpgradeConditionType = "ExternalDependenciesAvailable"
	StepComputeCapacityReserved              upgradev1alpha1.UpgradeConditionType = "ComputeCapacityReserved"
	StepControlPlaneMaintenanceWindowCreated upgradev1alpha1.UpgradeConditionType = "ControlPlaneMaintenanceWindowCreated"
	StepUpgradeCommenced                     upgradev1alpha1.UpgradeConditionType = "UpgradeCommenced"
	StepControlPlaneUpgraded                 upgradev1alpha1.UpgradeConditionType = "ControlPlaneUpgraded"
	StepControlPlaneMaintenanceWindowRemoved upgradev1alpha1.UpgradeConditionType = "ControlPlaneMaintenanceWindowRemoved"
	StepWorkersMaintenanceWindowCreated      upgradev1alpha1.UpgradeConditionType = "WorkersMaintenanceWindowCreated"
	StepWorkerNodesUpgraded                  upgradev1alpha1.UpgradeConditionType = "WorkerNodesUpgraded"
	StepComputeCapacityRemoved               upgradev1alpha1.UpgradeConditionType = "ComputeCapacityRemoved"
	StepWorkersMaintenanceWindowRemoved      upgradev1alpha1.UpgradeConditionType = "WorkersMaintenanceWindowRemoved"
	StepClusterHealthyAfterUpgrade           upgradev1alpha1.UpgradeConditionType = "ClusterHealthyAfterUpgrade"
	StepPostUpgradeTasksCompleted            upgradev1alpha1.UpgradeConditionType = "PostUpgradeTasksCompleted"
	StepCompletedNotificationSent            upgradev1alpha1.UpgradeConditionType = "CompletedNotificationSent"

	// ConditionFailedUpgrade is MUO's condition for a failed upgrade.
	ConditionFailedUpgrade upgradev1alpha1.UpgradeConditionType = "FailedUpgrade"
	// ConditionUpgradeCancelled records a cancelled upgrade (Upshift).
	ConditionUpgradeCancelled upgradev1alpha1.UpgradeConditionType = "UpgradeCancelled"
	// ConditionFailedNotificationSent records the failed notification of an
	// attempt that failed before commencement (Upshift: MUO sends it inside
	// its failure handling, under FailedUpgrade).
	ConditionFailedNotificationSent upgradev1alpha1.UpgradeConditionType = "FailedNotificationSent"
)

// Deadline names, as in spec.deadlines.
const (
	DeadlineStart        = "start"
	DeadlineControlPlane = "controlPlane"
	DeadlineWorkers      = "workers"
	DeadlinePostCheck    = "postCheck"
)

// step is one entry of a step list. run is evaluated only while the step is
// not done; a step whose condition is True is never run again.
type step struct {
	name upgradev1alpha1.UpgradeConditionType
	// preCommence steps complete at once when the upgrade has already
	// commenced (ClusterVersion points at the target), as in MUO.
	preCommence bool
	// deadline governs waiting in this step.
	deadline string
	run      func(*planner) result
}

// result is what a step decided this time.
type result struct {
	done bool
	// message describes progress, or why the step is blocked.
	message string
	// failure is set when the step is blocked by something wrong (a failing
	// check, an unlisted version) rather than merely waiting; it becomes the
	// condition's lastError.
	failure string
	action  *Action
	// wakeAt is when time alone may unblock the step.
	wakeAt time.Time
	events []Event
}

// osdSteps is MUO's OSD step list (17 steps), with a unique name for the
// delayed check. The managed-service steps (notifications, silences) are in
// place; without those integrations they complete at once and say so, and the
// integrations fill them in without changing the list.
var osdSteps = []step{
	{StepStartedNotificationSent, true, DeadlineStart, notify(EventStarted)},
	{StepUpgradeDelayedCheckCompleted, true, DeadlineStart, (*planner).delayedCheck},
	{StepIsClusterUpgradable, true, DeadlineStart, (*planner).upgradeable},
	{StepClusterHealthyBeforeUpgrade, true, DeadlineStart, (*planner).preHealth},
	{StepExternalDependenciesAvailable, true, DeadlineStart, (*planner).externalDependencies},
	{StepComputeCapacityReserved, true, DeadlineStart, noticeAfter(capacitySkip, (*planner).reserveCapacity)},
	{StepControlPlaneMaintenanceWindowCreated, true, DeadlineStart, silenceWindow("control plane", true)},
	{StepUpgradeCommenced, false, DeadlineStart, noticeBefore(EventControlPlaneStartedSL, (*planner).commence)},
	{StepControlPlaneUpgraded, false, DeadlineControlPlane, noticeAfter(always(EventControlPlaneFinishedSL), (*planner).controlPlaneUpgraded)},
	{StepControlPlaneMaintenanceWindowRemoved, false, DeadlineControlPlane, silenceWindow("control plane", false)},
	{StepWorkersMaintenanceWindowCreated, false, DeadlineWorkers, silenceWindow("worker", true)},
	{StepWorkerNodesUpgraded, false, DeadlineWorkers, noticeAfter(always(EventWorkerPlaneFinishedSL), drainNotice((*planner).workersUpgraded))},
	{StepComputeCapacityRemoved, false, DeadlinePostCheck, (*planner).removeCapacity},
	{StepWorkersMaintenanceWindowRemoved, false, DeadlinePostCheck, silenceWindow("worker", false)},
	{StepClusterHealthyAfterUpgrade, false, DeadlinePostCheck, (*planner).postHealth},
	{StepPostUpgradeTasksCompleted, false, DeadlinePostCheck, (*planner).postUpgradeTasks},
	{StepCompletedNotificationSent, false, DeadlinePostCheck, notify(EventCompleted)},
}

// aroSteps is MUO's ARO step list (14 steps): no delayed check, no
// Upgradeable gate, no post-upgrade tasks.
var aroSteps = []step{
	osdSteps[0], osdSteps[3], osdSteps[4], osdSteps[5], osdSteps[6], osdSteps[7], osdSteps[8],
	osdSteps[9], osdSteps[10], osdSteps[11], osdSteps[12], osdSteps[13], osdSteps[14], osdSteps[16],
}

// Steps returns the step list of an upgrade type (OSD for anything else, as MUO).
func Steps(t upgradev1alpha1.UpgradeType) []upgradev1alpha1.UpgradeConditionType {
	var out []upgradev1alpha1.UpgradeConditionType
	for _, s := range stepsFor(t) {
		out = append(out, s.name)
	}
	return out
}

func stepsFor(t upgradev1alpha1.UpgradeType) []step {
	if t == upgradev1alpha1.ARO {
		return aroSteps
	}
	return osdSteps
}

func silenceWindow(scope string, create bool) func(*planner) result {
	return func(p *planner) result {
		verb := "removed"
		if create {
			verb = "created"
		}
		if !p.in.Integrations.Silences {
			return result{done: true, message: "no Alertmanager configured: no " + scope + " silence " + verb}
		}
		return p.silenceStep(scope, create)
	}
}
