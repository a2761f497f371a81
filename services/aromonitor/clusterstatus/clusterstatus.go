// Package clusterstatus holds what every aro-monitor check's planner does
// to the status it keeps (the MonitorConfig's) and to ARO's Cluster
// conditions: keep a condition's transition time, find a check's record,
// store times as the API does, and merge a check's conditions into a list
// other writers share. The planners (packages credentials, nsg, egress)
// build their part of the status with it; no I/O.
package clusterstatus

import (
	"slices"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
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
func FindCheck(checks []amv1alpha1.CheckStatus, n amv1alpha1.CheckName) amv1alpha1.CheckStatus {
	for _, c := range checks {
		if c.Name == n {
			return c
		}
	}
	return amv1alpha1.CheckStatus{Name: n}
}

// Time is t as the API stores it: whole seconds, so that what a planner
// computes compares equal to what it reads back.
func Time(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.Truncate(time.Second))
	return &mt
}

// Merge is existing with each condition of owned put in: replacing the one
// of its type where it is (its transition time kept while the status stays
// the same), appended after the others when new. Every other condition is
// left as it is and where it is: they are other writers'. changed is false
// when no status, reason or message differs — a transition time alone is no
// reason to write, as with ARO's own writers.
func Merge(existing, owned []operatorv1.OperatorCondition, now time.Time) (merged []operatorv1.OperatorCondition, changed bool) {
	merged = append([]operatorv1.OperatorCondition(nil), existing...)
	for _, c := range owned {
		c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
		i := slices.IndexFunc(merged, func(e operatorv1.OperatorCondition) bool { return e.Type == c.Type })
		if i < 0 {
			merged = append(merged, c)
			changed = true
			continue
		}
		e := merged[i]
		if e.Status == c.Status {
			c.LastTransitionTime = e.LastTransitionTime
		}
		if e.Status != c.Status || e.Reason != c.Reason || e.Message != c.Message {
			changed = true
		}
		merged[i] = c
	}
	return merged, changed
}
