package plan

// This file derives the run's summary, progress and conditions.

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/truncate"
)

// summarize counts the nodes by state and lists those between their first
// pre-hook and their last post-hook (failed ones included).
func summarize(nodes []nodegatev1alpha1.NodeRecord) (sum nodegatev1alpha1.Summary, current []string) {
	for _, r := range nodes {
		sum.Total++
		switch r.Phase {
		case nodegatev1alpha1.NodePending:
			sum.Pending++
		case nodegatev1alpha1.NodeCompleted:
			sum.Succeeded++
		case nodegatev1alpha1.NodeSkipped:
			sum.Skipped++
		case nodegatev1alpha1.NodeFailed:
			sum.Failed++
			current = append(current, r.Name)
		default:
			sum.InProgress++
			current = append(current, r.Name)
		}
	}
	return sum, current
}

// finishStatus derives the summary, progress and conditions.
func (p *planner) finishStatus() {
	st := p.st
	sum, current := summarize(st.Nodes)
	st.Summary, st.CurrentNodes = sum, current
	st.Progress = fmt.Sprintf("%d/%d", sum.Succeeded, sum.Total-sum.Skipped)

	// A hook that failed in this pass paused the run after the gates were
	// evaluated: say so, the CRD requires a reason on every condition.
	if p.waitReason == "" && (st.Phase == nodegatev1alpha1.RunPaused || st.Phase == nodegatev1alpha1.RunWaiting) {
		switch {
		case st.PausedGeneration != 0:
			p.waitReason, p.waitMessage = ReasonHookFailed, "a hook failed; change the spec (for example toggle spec.paused) to resume"
		case p.run.Spec.Paused:
			p.waitReason, p.waitMessage = ReasonSpecPaused, "spec.paused is true"
		default:
			p.waitReason = string(st.Phase)
		}
	}
	gen := p.run.Generation
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		// A message over the API's limit would have the whole status write
		// refused (a list of thousands of nodes can be).
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: truncate.String(msg, conditionMessageLimit),
			ObservedGeneration: gen, LastTransitionTime: p.now})
	}
	if p.blockReason != "" {
		set(CondBlocked, metav1.ConditionTrue, p.blockReason, p.blockMsg)
	} else {
		set(CondBlocked, metav1.ConditionFalse, ReasonAsExpected, "")
	}
	switch {
	case st.Phase == nodegatev1alpha1.RunPaused && st.PausedGeneration != 0:
		set(CondPaused, metav1.ConditionTrue, ReasonHookFailed, p.waitMessage)
	case p.run.Spec.Paused:
		set(CondPaused, metav1.ConditionTrue, ReasonSpecPaused, "spec.paused is true")
	default:
		set(CondPaused, metav1.ConditionFalse, ReasonAsExpected, "")
	}
	var failed []string
	for _, r := range st.Nodes {
		if r.Phase == nodegatev1alpha1.NodeFailed {
			failed = append(failed, fmt.Sprintf("node %s: %s", r.Name, r.LastError))
		}
	}
	var held []string
	for _, n := range p.held {
		held = append(held, fmt.Sprintf("node %s carries %s without being released in this round: node-gate removes the label and holds the node until it is gone (something that puts it back holds the run)", n, ReleaseLabel))
	}
	if bad := append(append(failed, p.degraded...), held...); len(bad) > 0 {
		reason := ReasonHookFailed
		switch {
		case len(failed) > 0:
		case len(p.degraded) > 0:
			reason = ReasonNodeDegraded
		default:
			reason = ReasonStrayReleaseLabel
		}
		set(CondDegraded, metav1.ConditionTrue, reason, strings.Join(bad, "; "))
	} else {
		set(CondDegraded, metav1.ConditionFalse, ReasonAsExpected, "")
	}
	switch st.Phase {
	case nodegatev1alpha1.RunProgressing, nodegatev1alpha1.RunRestoring:
		reason, msg := ReasonNodesUpdating, fmt.Sprintf("%s nodes passed the gate; in progress: %s", st.Progress, strings.Join(st.CurrentNodes, ", "))
		if st.Phase == nodegatev1alpha1.RunRestoring {
			reason, msg = ReasonRestoring, "restoring the pools, selectors and labels the run changed"
		}
		if st.Phase == nodegatev1alpha1.RunProgressing {
			if p.slotWait != "" {
				msg += "; " + p.slotWait
			}
			if p.waitReason != "" {
				msg += "; no new node starts: " + p.waitMessage
			}
		}
		set(CondProgressing, metav1.ConditionTrue, reason, msg)
	case nodegatev1alpha1.RunWaiting, nodegatev1alpha1.RunPaused:
		// Readers time a wait from Progressing's last transition, and a wait
		// for the run's own window by the time its windows are open
		// (libs/gating). When the window opens and another gate holds the
		// run, that is a new wait, timed from now: kept, the transition
		// would date from when the window wait began, and a run that waited
		// a weekend for its window would count as stalled at once.
		if c := meta.FindStatusCondition(st.Conditions, CondProgressing); c != nil &&
			c.Reason == ReasonOutsideWindow && p.waitReason != ReasonOutsideWindow {
			c.LastTransitionTime = p.now
		}
		set(CondProgressing, metav1.ConditionFalse, p.waitReason, p.waitMessage)
	default:
		set(CondProgressing, metav1.ConditionFalse, string(orDefault(st.Phase, nodegatev1alpha1.RunIdle)), "")
	}
	switch st.Phase {
	case nodegatev1alpha1.RunIdle, nodegatev1alpha1.RunCompleted, "":
		set(CondReady, metav1.ConditionTrue, string(orDefault(st.Phase, nodegatev1alpha1.RunIdle)), "no gated update is in progress")
	default:
		set(CondReady, metav1.ConditionFalse, string(st.Phase), "")
	}
	if st.Phase == "" {
		st.Phase = nodegatev1alpha1.RunIdle
	}
}

func orDefault(ph, def nodegatev1alpha1.RunPhase) nodegatev1alpha1.RunPhase {
	if ph == "" {
		return def
	}
	return ph
}
