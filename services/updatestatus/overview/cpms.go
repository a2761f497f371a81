package overview

import (
	"fmt"

	machinev1 "github.com/openshift/api/machine/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cpms-controller's Progressing reasons the view tells apart (its plan
// package): a cluster update holds the rollout on purpose, a fault holds it
// until someone acts.
var (
	cpmsUpdateHolds = map[string]bool{"ClusterUpdating": true, "MastersUpdating": true}
	cpmsFaults      = map[string]bool{"EtcdHookMissing": true, "NodesNotReady": true, "EtcdDegraded": true, "KubeAPIServerDegraded": true,
		"UnavailableReplicas": true, "FailedReplacement": true, "ReplacementTimedOut": true}
)

// cpmsSection is the control-plane rollout: the ControlPlaneMachineSet's
// replicas and the conditions the cpms-controller writes.
func cpmsSection(in Input) Section {
	s := Section{Component: CPMSController}
	r := in.ControlPlaneMachineSet
	if unreadable(&s, r.Outcome, r.Err, "ControlPlaneMachineSet") {
		return s
	}
	if r.Outcome == Absent || r.Object == nil {
		s.State, s.Waiting = StateIdle, "no ControlPlaneMachineSet: control-plane machines are not managed"
		return s
	}
	cpms := r.Object
	st := cpms.Status
	replicas := int32(0)
	if cpms.Spec.Replicas != nil {
		replicas = *cpms.Spec.Replicas
	}
	s.Lines = append(s.Lines, fmt.Sprintf("%s/%s: %s, %s; %d replicas: %d ready, %d updated, %d unavailable",
		cpms.Namespace, cpms.Name, orElse(string(cpms.Spec.State), "Inactive"), cpms.Spec.Strategy.Type,
		replicas, st.ReadyReplicas, st.UpdatedReplicas, st.UnavailableReplicas))
	for _, t := range []string{"Available", "Degraded", "Progressing"} {
		if c := cond(st.Conditions, t); c != nil && (c.Message != "" || c.Type == "Degraded" && c.Status == metav1.ConditionTrue || c.Type == "Available" && c.Status == metav1.ConditionFalse) {
			s.Lines = append(s.Lines, "  "+condLine(c))
		}
	}
	progressing := cond(st.Conditions, "Progressing")
	reason := ""
	if progressing != nil {
		reason = progressing.Reason
	}
	switch {
	case cpms.Spec.State != machinev1.ControlPlaneMachineSetStateActive:
		s.State, s.Waiting = StateIdle, "Inactive: replaces no machine"
	case isTrue(st.Conditions, "Degraded"):
		s.State, s.Waiting = StateBlocked, "degraded: "+condSummary(cond(st.Conditions, "Degraded"))
	case isFalse(st.Conditions, "Available"):
		s.State, s.Waiting = StateBlocked, "unavailable: "+condSummary(cond(st.Conditions, "Available"))
	case cpmsFaults[reason]:
		s.State, s.Waiting, s.Updating = StateBlocked, "rollout held: "+condSummary(progressing), true
	case cpmsUpdateHolds[reason]:
		s.State, s.Waiting = StateWaiting, "waiting for the cluster update to finish before the next replacement"
	case reason == "WaitingForUserDeletion":
		s.State, s.Waiting = StateWaiting, "OnDelete: waiting for you to delete the outdated machines: "+condSummary(progressing)
	case reason == "Paused":
		s.State, s.Waiting = StateWaiting, "paused: "+condSummary(progressing)
	case progressing != nil && progressing.Status == metav1.ConditionTrue:
		s.State, s.Waiting, s.Updating = StateProgressing, "replacing control-plane machines: "+condSummary(progressing), true
	default:
		s.State, s.Waiting = StateIdle, fmt.Sprintf("%d of %d replicas up to date", st.UpdatedReplicas, replicas)
	}
	return s
}

func condSummary(c *metav1.Condition) string {
	return joinNonEmpty(": ", c.Reason, oneLine(c.Message, 200))
}
