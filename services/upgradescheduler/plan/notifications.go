package plan

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
)

// Notification events: MUO's notifier states. Started, delayed, scale
// skipped, skipped, failed and completed are written as the OCM upgrade
// policy's state (both skips as "delayed", told apart by their
// description, as MUO does); the ones ending in SL are service logs, posted
// only with the ServiceLogNotification feature gate (as MUO).
const (
	EventStarted                = "StateStarted"
	EventDelayed                = "StateDelayed"
	EventScaleSkipped           = "StateScaleSkipped"
	EventSkipped                = "StateSkipped"
	EventFailed                 = "StateFailed"
	EventCompleted              = "StateCompleted"
	EventControlPlaneStartedSL  = "StateControlPlaneStartedSL"
	EventControlPlaneFinishedSL = "StateControlPlaneFinishedSL"
	EventWorkerPlaneFinishedSL  = "StateWorkerPlaneFinishedSL"
	// With the PreHealthCheck feature gate (muohealth.go).
	EventHealthCheckSL    = "StateHealthCheckSL"
	EventPreHealthCheckSL = "StatePreHealthCheckSL"
)

// The notices' texts are MUO's, word for word (its event manager's
// descriptions): SREs' tooling and customers read them.
const (
	descPrecheckFailed       = "Cluster upgrade to version %s was cancelled as the cluster did not pass its pre-upgrade verification checks. Automated upgrades will be retried on their next scheduling cycle. If you have manually scheduled an upgrade instead, it must now be rescheduled"
	descPreHealthCheckFailed = "Cluster upgrade to version %s was cancelled during the Pre-Health Check step. Health alerts are firing in the cluster which could impact the upgrade's operation, so the upgrade did not proceed. Automated upgrades will be retried on their next scheduling cycle. If you have manually scheduled an upgrade instead, it must now be rescheduled"
	descExtDepCheckFailed    = "Cluster upgrade to version %s was cancelled during the External Dependency Availability Check step. A required external dependency of the upgrade was unavailable, so the upgrade did not proceed. Automated upgrades will be retried on their next scheduling cycle. If you have manually scheduled an upgrade instead, it must now be rescheduled"
	descScaleFailed          = "Cluster upgrade to version %s was cancelled during the Scale-Up Worker Node step. A temporary additional worker node was unable to be created to temporarily house workloads, so the upgrade did not proceed. Automated upgrades will be retried on their next scheduling cycle. If you have manually scheduled an upgrade instead, it must now be rescheduled"
	descScaleSkipped         = "Cluster upgrade to version %s has skipped Scale-Up additional Worker Node step for compute capacity reservation. This is an informational notification and no action is required by you"
	descDefaultDelay         = "Cluster upgrade to version %s is experiencing a delay whilst it performs necessary pre-upgrade procedures. The upgrade will continue to retry. This is an informational notification and no action is required"
	descPreHealthCheckDelay  = "Cluster upgrade to version %s is experiencing a delay as health alerts are firing in the cluster which could impact the upgrade's operation. The upgrade will continue to retry. This is an informational notification and no action is required by you"
	descExtDepCheckDelay     = "Cluster upgrade to version %s is experiencing a delay as an external dependency of the upgrade is currently unavailable. The upgrade will continue to retry. This is an informational notification and no action is required by you"
	descScaleDelay           = "Cluster upgrade to version %s is experiencing a delay attempting to scale up an additional worker node. The upgrade will continue to retry. This is an informational notification and no action is required by you"
	descScaleDelaySkip       = "Cluster upgrade to version %s has experienced an issue during capacity reservation efforts. This could be caused by cloud service provider quota limitations or temporary connectivity issues to/from the new worker node. The upgrade will continue without extra compute. This is an informational notification and no action is required by you"
	descControlPlaneStarted  = "Cluster upgrade to version %s is starting with control and worker plane upgrade. This is an informational notification and no action is required"
	descControlPlaneFinished = "Cluster upgrade to version %s has finished control plane upgrade. This is an informational notification and no action is required"
	descWorkerPlaneFinished  = "Cluster upgrade to version %s has finished worker plane upgrade. This is an informational notification and no action is required."
	descHealthCheck          = "Cluster upgrade to version %s may experience a delay as following healthcheck(s): %s are failing for the cluster which could impact the upgrade's operation."
	descPreHealthCheck       = "Cluster upgrade to version %s has been scheduled for more than 2 hours, cluster pre-upgrade health check has identified the following points which may impact the upgrade process: %s. Please take actions to review and fix the issues before the upgrade begins to have seamless upgrade experience"
	// healthCheckKCS is the article MUO's health check service logs refer to.
	healthCheckKCS = "https://access.redhat.com/solutions/7081505"
	// descDrainDelay names no version: MUO's text, as it sends it.
	descDrainDelay = "Node drain grace period might be impacting cluster upgrade. Please refer to the article for further details https://access.redhat.com/solutions/7075425"
)

// Notification is one notification for the reconciler to deliver (action
// Notify). Exactly one of PolicyState and ServiceLog is set.
type Notification struct {
	Event      string
	Version    string
	Generation int64
	// PolicyState is the OCM upgrade policy state to write, with Description.
	PolicyState string
	Description string
	// ServiceLogSummary and ServiceLogDescription are the service log's
	// texts, DocReferences the articles it links.
	ServiceLog            bool
	ServiceLogSummary     string
	ServiceLogDescription string
	DocReferences         []string
}

// Key identifies the notification for deduplication: the UpgradeConfig's
// UID, the version and the event. It is the service log's idempotency key,
// read back before posting. The generation is not part of it: any spec edit
// (a pause toggled, a window added) bumps it, and a service log already
// posted must not be posted again because of such an edit.
func (n Notification) Key(uid string) string {
	return fmt.Sprintf("%s/%s/%s", uid, n.Version, n.Event)
}

// notice builds the notification of event for the current attempt, with
// MUO's texts; a delayed or failed notice names the step the attempt is
// held at (its first step not done), as MUO's does.
func (p *planner) notice(event string) *Notification {
	n := &Notification{Event: event, Version: p.target, Generation: p.uc.Generation}
	v := p.target
	switch event {
	case EventStarted:
		n.PolicyState, n.Description = "started", fmt.Sprintf("Cluster is currently being upgraded to version %s", v)
	case EventDelayed:
		n.PolicyState, n.Description = "delayed", fmt.Sprintf(delayedText(p.heldAt()), v)
		if c := p.heldAt(); c != nil && c.Type == StepWorkerNodesUpgraded {
			// Only the drains delay an attempt after commencement.
			n.Description = descDrainDelay
		}
	case EventScaleSkipped:
		n.PolicyState, n.Description = "delayed", fmt.Sprintf(descScaleSkipped, v)
	case EventSkipped:
		n.PolicyState, n.Description = "delayed", fmt.Sprintf(descScaleDelaySkip, v)
	case EventFailed:
		n.PolicyState, n.Description = "failed", failedText(p.heldAt(), v)
	case EventCompleted:
		n.PolicyState, n.Description = "completed", fmt.Sprintf("Cluster has been successfully upgraded to version %s", v)
	case EventControlPlaneStartedSL:
		n.ServiceLog, n.ServiceLogSummary, n.ServiceLogDescription = true, "Cluster is starting with control and worker plane upgrade", fmt.Sprintf(descControlPlaneStarted, v)
	case EventControlPlaneFinishedSL:
		n.ServiceLog, n.ServiceLogSummary, n.ServiceLogDescription = true, "Cluster has finished control plane upgrade", fmt.Sprintf(descControlPlaneFinished, v)
	case EventWorkerPlaneFinishedSL:
		n.ServiceLog, n.ServiceLogSummary, n.ServiceLogDescription = true, "Cluster has finished with worker plane upgrade", fmt.Sprintf(descWorkerPlaneFinished, v)
	case EventHealthCheckSL:
		// The description names the findings: healthNotice completes it.
		n.ServiceLog, n.ServiceLogSummary, n.DocReferences = true, "Cluster has encountered healthcheck failure during upgrade", []string{healthCheckKCS}
	case EventPreHealthCheckSL:
		n.ServiceLog, n.ServiceLogSummary, n.DocReferences = true, "Cluster has encountered pre-upgrade healthcheck failure", []string{healthCheckKCS}
	}
	return n
}

// heldAt is the step the attempt is held at: MUO's "first incomplete
// condition", the newest step condition that is not done (conditions are
// kept newest first). The failure's own conditions (FailedUpgrade, and
// the FailedNotificationSent that is not done while this notice is built)
// are not steps.
func (p *planner) heldAt() *upgradev1alpha1.UpgradeCondition {
	for i, c := range p.history().Conditions {
		if c.Type != ConditionFailedUpgrade && c.Type != ConditionFailedNotificationSent && c.Status == "False" {
			return &p.history().Conditions[i]
		}
	}
	return nil
}

// delayedText is the delayed notice's text for the step the attempt is held
// at.
func delayedText(c *upgradev1alpha1.UpgradeCondition) string {
	if c != nil {
		switch c.Type {
		case StepClusterHealthyBeforeUpgrade:
			return descPreHealthCheckDelay
		case StepExternalDependenciesAvailable:
			return descExtDepCheckDelay
		case StepComputeCapacityReserved:
			return descScaleDelay
		}
	}
	return descDefaultDelay
}

// failedText is the failed notice's text for the step the attempt failed
// at; a cluster that is not upgradeable says why in the step's message.
func failedText(c *upgradev1alpha1.UpgradeCondition, version string) string {
	if c != nil {
		switch c.Type {
		case StepIsClusterUpgradable:
			if c.Message != "" {
				return c.Message
			}
		case StepClusterHealthyBeforeUpgrade:
			return fmt.Sprintf(descPreHealthCheckFailed, version)
		case StepExternalDependenciesAvailable:
			return fmt.Sprintf(descExtDepCheckFailed, version)
		case StepComputeCapacityReserved:
			return fmt.Sprintf(descScaleFailed, version)
		}
	}
	return fmt.Sprintf(descPrecheckFailed, version)
}

// NotificationDue is the pure decision behind every notification: event is
// to be sent for (generation, version) when a notifier is configured, the
// event is enabled (service logs need the ServiceLogNotification gate) and
// no record of it exists. The record, written before the upgrade moves on, is
// what makes a notification go out once.
func NotificationDue(records []upgradev1alpha1.NotificationRecord, notifier bool, gates map[string]bool, generation int64, version, event string) bool {
	if !notifier {
		return false
	}
	if isServiceLog(event) && !gates[config.FeatureGateServiceLogNotification] {
		return false
	}
	for _, r := range records {
		if r.Generation == generation && r.Version == version && r.Event == event {
			return false
		}
	}
	return true
}

// PolicyGoneBlocks says whether a notice that finds its OCM upgrade policy
// gone must stop the attempt instead of counting as delivered. The started
// and delayed notices go out before commencement: a policy deleted then is
// the user (or OCM) withdrawing the upgrade, and going ahead would upgrade a
// cluster nobody scheduled any more; the step waits while the policy sync
// cancels or reschedules the attempt. The completed notice comes after
// commencement (the upgrade ran to its end whatever OCM says), and a failed
// attempt is over either way: for those a gone policy is recorded as such.
func PolicyGoneBlocks(event string) bool {
	return event == EventStarted || event == EventDelayed
}

func isServiceLog(event string) bool {
	switch event {
	case EventControlPlaneStartedSL, EventControlPlaneFinishedSL, EventWorkerPlaneFinishedSL, EventHealthCheckSL, EventPreHealthCheckSL:
		return true
	}
	return false
}

// recorded says whether event was delivered for the current target in any
// generation of the spec.
func (p *planner) recorded(event string) bool {
	for _, r := range p.st.Notifications {
		if r.Version == p.target && r.Event == event {
			return true
		}
	}
	return false
}

func (p *planner) due(event string) bool {
	return NotificationDue(p.st.Notifications, p.in.Integrations.Notifications, p.cfg.FeatureGates, p.uc.Generation, p.target, event)
}

// Notification retry backoff: a delivery that failed is tried again after
// notifyRetryBase, doubling with each attempt up to notifyRetryMax. Without
// it an OCM outage would be retried on every reconcile, and each failure's
// status write is itself a watch event that reconciles at once.
const (
	notifyRetryBase = 10 * time.Second
	notifyRetryMax  = 10 * time.Minute
)

// NotifyRetryAfter is how long after the failure of its attempts-th attempt
// a notification is tried again.
func NotifyRetryAfter(attempts int32) time.Duration {
	d := notifyRetryBase
	for i := int32(1); i < attempts && d < notifyRetryMax; i++ {
		d *= 2
	}
	return min(d, notifyRetryMax)
}

// holdNotifyRetry says whether the notification of step, whose last
// attempt failed, must wait before it is tried again; it then asks to be
// woken when it may. The step's condition is left as the failure wrote it,
// so that waiting writes no status (no watch event, no reconcile).
func (p *planner) holdNotifyRetry(step upgradev1alpha1.UpgradeConditionType) bool {
	c := findStepCondition(p.history().Conditions, step)
	if c == nil || c.LastError == "" || c.Attempts == 0 || c.Status == "True" {
		return false
	}
	until := c.LastProbeTime.Add(NotifyRetryAfter(c.Attempts))
	if !p.now.Before(until) {
		return false
	}
	p.wake(until)
	return true
}

// notifyAction is the side effect that delivers event.
func (p *planner) notifyAction(event string) *Action {
	return &Action{Kind: Notify, Notification: p.notice(event)}
}

// RecordNotification returns status with the delivery of n recorded, for
// the reconciler to write after a delivery that succeeded (in whatever way:
// sent, found already sent, not allowed, policy gone). The oldest records
// go first when the list is full.
func RecordNotification(st upgradev1alpha1.UpgradeConfigStatus, n *Notification, outcome string, now time.Time) upgradev1alpha1.UpgradeConfigStatus {
	out := *st.DeepCopy()
	out.Notifications = append(out.Notifications, upgradev1alpha1.NotificationRecord{
		Event: n.Event, Version: n.Version, Generation: n.Generation, Outcome: outcome, Time: metav1.NewTime(now)})
	if over := len(out.Notifications) - maxNotificationRecords; over > 0 {
		out.Notifications = out.Notifications[over:]
	}
	return out
}

// maxNotificationRecords is the API's limit on status.notifications.
const maxNotificationRecords = 64

// notify is the step of a policy-state notification (started, completed):
// done once recorded, or at once without a notifier.
func notify(event string) func(*planner) result {
	return func(p *planner) result {
		if !p.in.Integrations.Notifications {
			return result{done: true, message: "no notifier configured: the " + event + " notification was not sent"}
		}
		if !p.due(event) {
			return result{done: true, message: event + " notification sent"}
		}
		return result{message: "sending the " + event + " notification", action: p.notifyAction(event)}
	}
}

// noticeBefore runs step only once event is delivered (MUO posts the
// control-plane-started service log before it points ClusterVersion at the
// target). Once the upgrade has commenced it is too late for the notice: it
// is not sent (as MUO, whose step returns at once when commenced).
func noticeBefore(event string, step func(*planner) result) func(*planner) result {
	return func(p *planner) result {
		// Only when the step would act now: not while no maintenance
		// window is open (the step then says so and waits).
		if sched, err := p.schedule(); err == nil && !sched.Open(p.now) {
			return step(p)
		}
		if !p.commenced() && p.due(event) {
			return result{message: "sending the " + event + " notification", action: p.notifyAction(event)}
		}
		return step(p)
	}
}

// noticeAfter completes step only once the notice it calls for is
// delivered: event says which, once the step is done ("" for none). MUO
// posts the control-plane-finished and worker-plane-finished service logs
// when those steps complete, and tells of a skipped capacity reservation
// when that step ends without one (capacitySkip).
func noticeAfter(event func(*planner) string, step func(*planner) result) func(*planner) result {
	return func(p *planner) result {
		r := step(p)
		if !r.done {
			return r
		}
		if e := event(p); e != "" && p.due(e) {
			return result{message: "sending the " + e + " notification", action: p.notifyAction(e), events: r.events}
		}
		return r
	}
}

// always is the notice event of a step that always calls for it.
func always(event string) func(*planner) string {
	return func(*planner) string { return event }
}

// capacitySkip is MUO's notice of a capacity reservation that ended without
// temporary machines: ScaleSkipped when there was no worker MachineSet to
// copy, Skipped when the copies were not ready within scale.timeOut and the
// upgrade goes on without them. As MUO, a ScaleSkipped that could not be
// delivered once is not tried again (the upgrade goes on; the step's
// condition keeps the error), while Skipped is retried until delivered.
func capacitySkip(p *planner) string {
	if p.st.CapacityReservation == nil {
		return ""
	}
	switch p.st.CapacityReservation.Outcome {
	case CapacitySkipped:
		if c := findStepCondition(p.history().Conditions, StepComputeCapacityReserved); c != nil && c.Attempts > 0 && c.LastError != "" {
			return ""
		}
		return EventScaleSkipped
	case CapacityTimedOut:
		return EventSkipped
	}
	return ""
}

// NotificationWanted says whether event may still be delivered for the
// attempt in st: any notice while the attempt is under way, only the
// failed notice once it failed, none once it was cancelled or upgraded
// (their notices were sent or will never be).
func NotificationWanted(st upgradev1alpha1.UpgradeConfigStatus, event string) bool {
	if len(st.History) == 0 {
		return false
	}
	switch st.History[0].Phase {
	case upgradev1alpha1.UpgradePhaseCancelled, upgradev1alpha1.UpgradePhaseUpgraded:
		return false
	case upgradev1alpha1.UpgradePhaseFailed:
		return event == EventFailed
	}
	return true
}
