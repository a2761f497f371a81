package plan

import (
	"fmt"
	"sort"
	"strings"

	machinev1 "github.com/openshift/api/machine/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/truncate"
)

const maxMessage = 4096

// status computes the counters and conditions, and the Events for
// condition changes.
func (p *planner) status() {
	o := p.o
	cpms := p.in.CPMS
	st := machinev1.ControlPlaneMachineSetStatus{ObservedGeneration: cpms.Generation}
	st.Conditions = append(st.Conditions, cpms.Status.Conditions...)
	for _, m := range o.machines {
		st.Replicas++
		if m.ready {
			st.ReadyReplicas++
			// A deleting machine is on its way out: it is not an updated
			// replica even if its spec matches.
			if m.upToDate && !m.deleting {
				st.UpdatedReplicas++
			}
		}
	}
	var unavailable []string
	for _, g := range o.groups {
		if !g.anyReady() {
			st.UnavailableReplicas++
			unavailable = append(unavailable, fmt.Sprint(g.index))
		}
	}

	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: truncate.String(msg, maxMessage),
			ObservedGeneration: cpms.Generation, LastTransitionTime: metav1.NewTime(p.in.Now)})
	}

	// Available: every index has a ready machine.
	if st.UnavailableReplicas > 0 {
		set(ConditionAvailable, metav1.ConditionFalse, ReasonUnavailableReplicas,
			fmt.Sprintf("Missing %d available replica(s): indexes %s have no ready machine", st.UnavailableReplicas, strings.Join(unavailable, ", ")))
	} else {
		set(ConditionAvailable, metav1.ConditionTrue, ReasonAllReplicasAvailable, "")
	}

	// Degraded: halting problems first (in a fixed order), then failed
	// replacements, then OnDelete's surplus.
	var reasons, msgs []string
	for _, r := range haltOrder {
		if ms := o.halt[r]; len(ms) > 0 {
			sorted := append([]string(nil), ms...)
			sort.Strings(sorted)
			reasons = append(reasons, r)
			msgs = append(msgs, strings.Join(sorted, "; "))
		}
	}
	for _, g := range o.groups {
		if f := p.failure[g.index]; f != nil {
			reasons = append(reasons, p.failWhy[g.index])
			msgs = append(msgs, fmt.Sprintf("index %d: %s", g.index, p.reports[g.index].Reason))
		}
	}
	if o.strategy == machinev1.OnDelete {
		for _, g := range o.groups {
			var ready []string
			for _, m := range g.updated() {
				if m.ready {
					ready = append(ready, m.name)
				}
			}
			if len(ready) > 1 {
				reasons = append(reasons, ReasonExcessUpdatedReplicas)
				msgs = append(msgs, fmt.Sprintf("index %d has %d updated machines: %s", g.index, len(ready), strings.Join(ready, ", ")))
			}
		}
	}
	if len(reasons) > 0 {
		set(ConditionDegraded, metav1.ConditionTrue, reasons[0], strings.Join(msgs, "; "))
	} else {
		set(ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected, "")
	}

	// Progressing: is there work, and is it moving.
	var work []string
	waitingForUser := true
	for _, g := range o.groups {
		r := p.reports[g.index]
		if r.State == Stable {
			continue
		}
		line := fmt.Sprintf("index %d: %s", g.index, r.State)
		if r.Replacement != "" {
			line += " (" + r.Replacement + ")"
		}
		if r.Reason != "" {
			line += ": " + r.Reason
		}
		work = append(work, line)
		if r.State != WaitingForDeletion {
			waitingForUser = false
		}
	}
	excess := len(o.machines) > o.replicas
	switch {
	case len(o.halt) > 0:
		set(ConditionProgressing, metav1.ConditionFalse, ReasonOperatorDegraded, "no machine is created or deleted while the set is degraded")
	case !p.active():
		set(ConditionProgressing, metav1.ConditionFalse, ReasonInactive,
			fmt.Sprintf("the set is Inactive and replaces nothing; %d of %d replicas match the template", st.UpdatedReplicas, o.replicas))
	case len(work) == 0 && !excess:
		set(ConditionProgressing, metav1.ConditionFalse, ReasonAllReplicasUpdated, "")
	case p.modeHold != "":
		set(ConditionProgressing, metav1.ConditionFalse, p.modeHold, strings.Join(append([]string{p.modeHoldMsg}, work...), "; "))
	case p.paused():
		set(ConditionProgressing, metav1.ConditionFalse, ReasonPaused,
			fmt.Sprintf("mutations are paused by annotation %s; %s", PausedAnnotation, strings.Join(work, "; ")))
	case waitingForUser && len(work) > 0:
		set(ConditionProgressing, metav1.ConditionFalse, ReasonWaitingForUserDeletion, strings.Join(work, "; "))
	default:
		reason := ReasonNeedsUpdateReplicas
		if int(st.UpdatedReplicas) >= o.replicas && excess {
			reason = ReasonExcessReplicas
		}
		// A fault names the condition; failing one, a cluster update that
		// holds the rollout does (an Event, not a warning).
		for _, b := range p.progressBlock {
			if healthBlockers[b.reason] {
				reason = b.reason
				break
			}
			if updateHolds[b.reason] && reason == ReasonNeedsUpdateReplicas {
				reason = b.reason
			}
		}
		set(ConditionProgressing, metav1.ConditionTrue, reason, strings.Join(work, "; "))
	}

	// Error: the upstream operator's, with its message, so that what
	// watches for it keeps working.
	if e := p.in.Errors; e.Count >= MaxContinuousErrors {
		set(ConditionError, metav1.ConditionTrue, ReasonContinuousErrors,
			fmt.Sprintf("The control plane machine set has experienced the following error more than %d consecutive times since %s: %s", MaxContinuousErrors, e.Since, e.Err))
	} else {
		set(ConditionError, metav1.ConditionFalse, ReasonAsExpected, "")
	}

	mode := p.modeCondition()
	set(mode.Type, mode.Status, mode.Reason, mode.Message)
	ours := *meta.FindStatusCondition(st.Conditions, ConditionProgressing)
	set(ConditionUpshiftProgressing, ours.Status, ours.Reason, ours.Message)

	// An Event for every change of the mode and of Degraded or Progressing
	// (a new block, a cleared one, the end of a rollout) — of this
	// controller's own Progressing while the upstream operator writes the
	// others. Same reason, new message: no Event, so a message listing
	// changing machines does not spam.
	watched := []string{ConditionMode, ConditionDegraded, ConditionProgressing, ConditionError}
	if p.in.CPMSOperator.Running {
		watched = []string{ConditionMode, ConditionUpshiftProgressing}
	}
	for _, t := range watched {
		now := meta.FindStatusCondition(st.Conditions, t)
		before := meta.FindStatusCondition(cpms.Status.Conditions, t)
		if before != nil && before.Status == now.Status && before.Reason == now.Reason {
			continue
		}
		warn := ((t == ConditionDegraded || t == ConditionError) && now.Status == metav1.ConditionTrue) || healthBlockers[now.Reason] || now.Reason == ReasonOperatorDegraded ||
			now.Reason == ReasonCPMSOperatorStarted || now.Reason == ReasonCPMSOperatorStopped
		msg := fmt.Sprintf("%s=%s", t, now.Status)
		if now.Message != "" {
			msg += ": " + now.Message
		}
		p.out.Events = append(p.out.Events, events.Event{Regarding: cpms, Warning: warn, Reason: now.Reason, Action: actionReconcile, Note: msg})
	}
	p.out.Status = st
}
