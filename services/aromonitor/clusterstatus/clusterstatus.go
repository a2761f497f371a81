// Package clusterstatus holds what every aro-monitor check's planner does
// to the ARO Cluster's status: keep a condition's transition time, find a
// check's record, store times as the API does. The planners (packages
// credentials, nsg, egress) build their part of the status with it; no I/O.
package clusterstatus

import (
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
)

// Condition returns c with its lastTransitionTime kept from the existing
// condition of the same type when the status did not change, else now.
func Condition(existing []operatorv1.OperatorCondition, c operatorv1.OperatorCondition, now time.Time) operatorv1.OperatorCondition {
	c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
	for _, e := range existing {
		if e.Type == c.Type && e.Status == c.Status {
			c.LastTransitionTime = e.LastTransitionTime
		}
	}
	return c
}

// ConditionByType is the condition of type t, or nil.
func ConditionByType(conds []operatorv1.OperatorCondition, t string) *operatorv1.OperatorCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// Unknown is a condition of type t that is Unknown.
func Unknown(t, reason, msg string) operatorv1.OperatorCondition {
	return operatorv1.OperatorCondition{Type: t, Status: operatorv1.ConditionUnknown, Reason: reason, Message: msg}
}

// FindCheck is the record of check n, or an empty one named n.
func FindCheck(checks []arov1alpha1.CheckStatus, n arov1alpha1.CheckName) arov1alpha1.CheckStatus {
	for _, c := range checks {
		if c.Name == n {
			return c
		}
	}
	return arov1alpha1.CheckStatus{Name: n}
}

// Time is t as the API stores it: whole seconds, so that what a planner
// computes compares equal to what it reads back.
func Time(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.Truncate(time.Second))
	return &mt
}
