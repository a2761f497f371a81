package plan

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/services/upgradescheduler/silence"
)

// setCondition sets a summary condition (status.conditions).
func (p *planner) setCondition(t string, s metav1.ConditionStatus, reason, message string) {
	if len(message) > 32768 {
		message = message[:32768]
	}
	meta.SetStatusCondition(&p.st.Conditions, metav1.Condition{
		Type: t, Status: s, Reason: reason, Message: message,
		ObservedGeneration: p.uc.Generation, LastTransitionTime: p.nowT,
	})
}

// isNew reports whether summary condition t did not already have status s in
// the status read, so that an Event is recorded once per change.
func (p *planner) isNew(t string, s metav1.ConditionStatus) bool {
	c := meta.FindStatusCondition(p.uc.Status.Conditions, t)
	return c == nil || c.Status != s
}

func (p *planner) isNewFailure(t string) bool { return p.isNew(t, metav1.ConditionFalse) }

// summarise derives the Progressing, Completed, DeadlineExceeded and
// HealthChecksPassing conditions from the attempt.
func (p *planner) summarise() {
	h := p.history()
	switch {
	case h.Phase == upgradev1alpha1.UpgradePhaseUpgrading && p.st.CurrentStep != "":
		p.setCondition("Progressing", metav1.ConditionTrue, "Step"+p.st.CurrentStep, "upgrading to "+p.target+": at step "+p.st.CurrentStep)
	case h.Phase == upgradev1alpha1.UpgradePhaseUpgrading:
		p.setCondition("Progressing", metav1.ConditionTrue, "Upgrading", "upgrading to "+p.target)
	case terminal(h.Phase):
		p.setCondition("Progressing", metav1.ConditionFalse, string(h.Phase), "the upgrade to "+p.target+" ended: "+string(h.Phase))
	}
	if terminal(h.Phase) {
		p.setCondition("Completed", metav1.ConditionTrue, string(h.Phase), "the upgrade to "+p.target+" ended: "+string(h.Phase))
		p.st.CurrentStep = ""
	} else {
		p.setCondition("Completed", metav1.ConditionFalse, string(h.Phase), "")
		if p.deadlineHit == "" {
			p.setCondition("DeadlineExceeded", metav1.ConditionFalse, "WithinDeadlines", "")
		}
	}
	if p.commenced() || terminal(h.Phase) {
		meta.RemoveStatusCondition(&p.st.Conditions, "Delayed")
	}
	if len(p.st.Preflight) > 0 {
		failing, advisory := p.failingChecks()
		switch {
		case len(failing) > 0:
			msg := "failing: " + strings.Join(failing, ", ")
			if len(advisory) > 0 {
				msg += "; advisory findings: " + strings.Join(advisory, ", ")
			}
			p.setCondition("HealthChecksPassing", metav1.ConditionFalse, "ChecksFailing", msg)
		case len(advisory) > 0:
			p.setCondition("HealthChecksPassing", metav1.ConditionTrue, "AdvisoryFindings",
				"advisory findings (they do not hold the upgrade): "+strings.Join(advisory, ", "))
		default:
			p.setCondition("HealthChecksPassing", metav1.ConditionTrue, "AllChecksPassed", "")
		}
	}
}

func findStepCondition(conds upgradev1alpha1.Conditions, t upgradev1alpha1.UpgradeConditionType) *upgradev1alpha1.UpgradeCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// setStepCondition sets a step's history condition the way MUO does: new
// conditions are prepended (the printer columns read conditions[0]), the
// start time is kept, the completion time is set once on True and cleared on
// False. The probe time moves only when something else changed, so that an
// unchanged plan writes nothing.
func setStepCondition(conds *upgradev1alpha1.Conditions, t upgradev1alpha1.UpgradeConditionType, s corev1.ConditionStatus, reason, message string, now time.Time) *upgradev1alpha1.UpgradeCondition {
	nowT := metav1.NewTime(now)
	c := findStepCondition(*conds, t)
	if c == nil {
		start := nowT
		*conds = append(upgradev1alpha1.Conditions{{Type: t, Status: s, StartTime: &start, LastTransitionTime: nowT, LastProbeTime: nowT}}, *conds...)
		c = &(*conds)[0]
	}
	if c.Status != s {
		c.LastTransitionTime = nowT
	}
	if c.Status != s || c.Reason != reason || c.Message != message {
		c.LastProbeTime = nowT
	}
	c.Status, c.Reason, c.Message = s, reason, message
	if s == corev1.ConditionTrue {
		if c.CompleteTime == nil {
			c.CompleteTime = &nowT
		}
	} else {
		c.CompleteTime = nil
	}
	return c
}

// RecordActionError returns status with the failure of the action of step
// recorded on its condition, for the reconciler to write instead of
// Output.Status when the side effect failed.
func RecordActionError(st upgradev1alpha1.UpgradeConfigStatus, step upgradev1alpha1.UpgradeConditionType, err error, now time.Time) upgradev1alpha1.UpgradeConfigStatus {
	out := *st.DeepCopy()
	if len(out.History) == 0 {
		return out
	}
	msg := fmt.Sprintf("%s still in progress: %v", step, err)
	c := setStepCondition(&out.History[0].Conditions, step, corev1.ConditionFalse, string(step)+" not done", msg, now)
	c.LastError = truncate(err.Error())
	// The time of the failure, whatever its text: the retry backoff of a
	// notification counts from it.
	c.LastProbeTime = metav1.NewTime(now)
	return out
}

// Done is what the reconciler did with an Output before writing the status.
type Done struct {
	// LeasesApplied is set once Output.Leases was carried out (completely or
	// not), and Leases is the record silence.Client.Apply returned: the IDs
	// of the silences that exist, by purpose.
	LeasesApplied bool
	Leases        map[silence.Purpose]string
	// Action is the side effect performed (nil: none), Outcome the outcome
	// of a delivered notification ("" when nothing settled), and Err the
	// action's failure.
	Action  *Action
	Outcome string
	Err     error
}

// Executed returns the status to write after a pass: out.Status with the
// lease step's record and the action's result, a delivered notification
// recorded or the failure recorded on the action's step. The leases were
// created or expired in Alertmanager whatever became of the action, so their
// record is kept either way (the next plan would otherwise adopt again what
// it already knew). out is not modified.
func Executed(out Output, d Done, now time.Time) upgradev1alpha1.UpgradeConfigStatus {
	st := *out.Status.DeepCopy()
	if d.LeasesApplied && out.Leases != nil {
		st.Silences = SilenceStatus(d.Leases, out.Leases.Plan, out.Leases.Existing)
	}
	switch {
	case d.Action == nil:
	case d.Err != nil:
		st = RecordActionError(st, d.Action.Step, d.Err, now)
	case d.Action.Kind == Notify && d.Outcome != "":
		st = RecordNotification(st, d.Action.Notification, d.Outcome, now)
	}
	return st
}

// HoldForLeases reports whether action a must wait because the lease step
// failed this pass. Only the finalizer's removal waits: a silence that
// Alertmanager still holds (one not yet expired, or one whose list could not
// be read) would otherwise outlive its UpgradeConfig for up to its TTL, with
// no owner left to expire it. Every other action is independent of the
// leases, and the lease step is retried with the requeue either way.
func HoldForLeases(a *Action, leaseErr error) bool {
	return a != nil && a.Kind == RemoveFinalizer && leaseErr != nil
}

func stepCompleteTime(conds upgradev1alpha1.Conditions, t upgradev1alpha1.UpgradeConditionType) time.Time {
	if c := findStepCondition(conds, t); c != nil && c.Status == corev1.ConditionTrue && c.CompleteTime != nil {
		return c.CompleteTime.Time
	}
	return time.Time{}
}
