package plan

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
)

// deadline returns the deadline by name and the time it runs from; a zero
// anchor or After means it does not apply (yet).
func (p *planner) deadline(name string) (config.Deadline, time.Time) {
	conds := p.history().Conditions
	switch name {
	case DeadlineStart:
		start, _, err := p.scheduledStart()
		if err != nil {
			// An unparsable schedule is measured from when it was written.
			start = p.st.GenerationObservedTime.Time
		}
		return p.dl.Start, start
	case DeadlineControlPlane:
		return p.dl.ControlPlane, stepCompleteTime(conds, StepUpgradeCommenced)
	case DeadlineWorkers:
		d := p.dl.Workers
		if p.dl.WorkersComputed {
			d.After = p.workersAllowance()
		}
		// Deferred while node-gate holds the workers as designed, and run
		// again from a run's end (gates.go).
		holding, _, finished := p.gateHolds()
		if len(holding) > 0 {
			return d, time.Time{}
		}
		anchor := stepCompleteTime(conds, StepControlPlaneUpgraded)
		if !anchor.IsZero() && finished.After(anchor) {
			anchor = finished
		}
		return d, anchor
	case DeadlinePostCheck:
		return p.dl.PostCheck, stepCompleteTime(conds, StepWorkerNodesUpgraded)
	}
	return config.Deadline{}, time.Time{}
}

// workersAllowance is MUO's worker window: for every worker machine, the
// longer of the PDB force-drain timeout and nodeDrain.timeOut, plus the
// expected drain time. MUO assumes nodes update one at a time; so does this
// default, which errs on the long side (set spec.deadlines.workers to tighten).
func (p *planner) workersAllowance() time.Duration {
	var n int32
	for _, pool := range p.workerPools() {
		n += pool.Status.MachineCount
	}
	per := time.Duration(p.spec.PDBForceDrainTimeout) * time.Minute
	if p.cfg.NodeDrainTimeOut > per {
		per = p.cfg.NodeDrainTimeOut
	}
	return time.Duration(n) * (per + p.cfg.ExpectedNodeDrainTime)
}

// Deadlines are the deadline names, in the order an upgrade meets them.
var Deadlines = []string{DeadlineStart, DeadlineControlPlane, DeadlineWorkers, DeadlinePostCheck}

// DeadlineExceededReason is the reason of the DeadlineExceeded condition when
// the named deadline has passed, e.g. StartDeadlineExceeded.
func DeadlineExceededReason(deadline string) string {
	return strings.ToUpper(deadline[:1]) + deadline[1:] + "DeadlineExceeded"
}

// startDeadlineStops applies the start deadline before a pre-commencement
// step runs, when it has passed with a policy that stops the attempt (fail
// or pause); alert lets the step run and reports in checkDeadline.
func (p *planner) startDeadlineStops(step upgradev1alpha1.UpgradeConditionType) bool {
	d, anchor := p.deadline(DeadlineStart)
	if d.After <= 0 || anchor.IsZero() || p.now.Before(anchor.Add(d.After)) {
		return false
	}
	if d.Policy != upgradev1alpha1.DeadlineFail && d.Policy != upgradev1alpha1.DeadlinePause {
		return false
	}
	why := "the upgrade had not commenced"
	if c := findStepCondition(p.history().Conditions, step); c != nil {
		// What held the step the last time it ran.
		switch {
		case c.LastError != "":
			why = c.LastError
		case c.Message != "":
			why = c.Message
		}
	}
	p.checkDeadline(DeadlineStart, string(step)+": "+why)
	p.action = nil
	return true
}

// checkDeadline applies the named deadline to a wait; why says what is being
// waited for. It reports whether the deadline has passed.
func (p *planner) checkDeadline(name, why string) bool { return p.passDeadline(name, why, true) }

// noteDeadline reports a passed deadline as checkDeadline does, but never
// applies a fail or pause policy: as the policy alert does, it only says so.
func (p *planner) noteDeadline(name, why string) bool { return p.passDeadline(name, why, false) }

// passDeadline reports whether the named deadline has passed; when it has,
// it says so in DeadlineExceeded and, with enforce, applies its policy.
func (p *planner) passDeadline(name, why string, enforce bool) bool {
	d, anchor := p.deadline(name)
	if d.After <= 0 || anchor.IsZero() {
		return false
	}
	due := anchor.Add(d.After)
	if p.now.Before(due) {
		p.wake(due)
		return false
	}
	p.deadlineHit = name
	reason := DeadlineExceededReason(name)
	msg := fmt.Sprintf("the %s deadline (%s from %s) passed: %s", name, d.After, anchor.UTC().Format(time.RFC3339), why)
	newly := p.isNew("DeadlineExceeded", metav1.ConditionTrue)
	p.setCondition("DeadlineExceeded", metav1.ConditionTrue, reason, msg)
	policy := d.Policy
	if !enforce {
		policy = upgradev1alpha1.DeadlineAlert
	}
	switch policy {
	case upgradev1alpha1.DeadlineFail:
		p.event(true, reason, "%s; failing the upgrade (policy fail)", msg)
		p.endAttempt(upgradev1alpha1.UpgradePhaseFailed, ConditionFailedUpgrade, "Upgrade failed", msg)
	case upgradev1alpha1.DeadlinePause:
		p.event(true, reason, "%s; pausing (policy pause): change the spec to resume", msg)
		p.st.PausedByDeadline = &upgradev1alpha1.PausedDeadline{Deadline: name, Generation: p.uc.Generation}
		p.setCondition("Paused", metav1.ConditionTrue, "DeadlinePause", msg)
	default:
		if newly {
			p.event(true, reason, "%s; still waiting (policy alert)", msg)
		}
	}
	return true
}
