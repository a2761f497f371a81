package egress

import (
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/services/aromonitor/clusterstatus"
)

// ReasonCheckDisabled is the conditions' reason while ARO's checker is off.
const ReasonCheckDisabled = "CheckDisabled"

const offMessage = "the check is off: aro.checker.enabled is false"

// ConditionType is the condition a role's vantage points decide.
func ConditionType(role amv1alpha1.Role) string {
	if role == amv1alpha1.RoleMaster {
		return arov1alpha1.InternetReachableFromMaster
	}
	return arov1alpha1.InternetReachableFromWorker
}

// Disabled is what a vantage point writes while the internet checks are
// off: the master sets its condition Unknown, as ARO does when its checker
// is off; a worker writes nothing (nil).
func Disabled(role amv1alpha1.Role, prev amv1alpha1.MonitorConfigStatus, now time.Time) *amv1alpha1.MonitorConfigStatus {
	if role != amv1alpha1.RoleMaster {
		return nil
	}
	c := clusterstatus.Unknown(ConditionType(role), ReasonCheckDisabled, offMessage)
	return &amv1alpha1.MonitorConfigStatus{Conditions: []operatorv1.OperatorCondition{clusterstatus.Condition(prev.Conditions, c, now)}}
}

// Wait is how long until the vantage point's next round is due: an
// interval after the last one, whoever ran it, so that a restart or a lease
// hand-over does not probe twice in a row. 0: due now.
func Wait(prev amv1alpha1.VantagePoint, now time.Time, interval time.Duration) time.Duration {
	if prev.LastCheckTime == nil {
		return 0
	}
	return max(prev.LastCheckTime.Add(interval).Sub(now), 0)
}

// RoundStatus is what a round writes: the vantage point's record, and for
// the master also InternetReachableFromMaster and the check's record.
func RoundStatus(prev amv1alpha1.MonitorConfigStatus, vp amv1alpha1.VantagePoint, now time.Time, interval time.Duration, failures int32) amv1alpha1.MonitorConfigStatus {
	st := amv1alpha1.MonitorConfigStatus{VantagePoints: []amv1alpha1.VantagePoint{vp}}
	if vp.Role != amv1alpha1.RoleMaster {
		return st
	}
	c := ForRole(amv1alpha1.RoleMaster, []amv1alpha1.VantagePoint{vp}, nil, now, 3*interval, failures)
	cond := operatorv1.OperatorCondition{Type: ConditionType(vp.Role), Status: operatorv1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message}
	st.Conditions = []operatorv1.OperatorCondition{clusterstatus.Condition(prev.Conditions, cond, now)}
	check := clusterstatus.FindCheck(prev.Checks, amv1alpha1.CheckInternetMaster)
	check.LastCheckTime = vp.LastCheckTime
	// This round's result: a failed round while the hysteresis still
	// holds True is no success.
	if Passed(vp) {
		check.LastSuccessTime = vp.LastCheckTime
	}
	st.Checks = []amv1alpha1.CheckStatus{check}
	return st
}

// Workers is InternetReachableFromWorker and its check's record from the
// workers' vantage points, expected naming the worker subnets; nil when it
// is what the status says already (no write). Vantage points without a
// round for staleAfter count as unknown, so while the checks run it asks
// to run again after staleAfter (requeue), to notice results going stale.
func Workers(prev amv1alpha1.MonitorConfigStatus, enabled bool, expected []string, now time.Time, staleAfter time.Duration, failures int32) (st *amv1alpha1.MonitorConfigStatus, requeue time.Duration) {
	var cond operatorv1.OperatorCondition
	check := clusterstatus.FindCheck(prev.Checks, amv1alpha1.CheckInternetWorker)
	if !enabled {
		// As the master's condition: Unknown, not the last answer kept.
		cond = clusterstatus.Unknown(arov1alpha1.InternetReachableFromWorker, ReasonCheckDisabled, offMessage)
	} else {
		requeue = staleAfter
		c := ForRole(amv1alpha1.RoleWorker, prev.VantagePoints, expected, now, staleAfter, failures)
		cond = operatorv1.OperatorCondition{Type: arov1alpha1.InternetReachableFromWorker, Status: operatorv1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message}
		var last *amv1alpha1.VantagePoint
		allPassed := true
		for i, vp := range prev.VantagePoints {
			if vp.Role != amv1alpha1.RoleWorker || vp.LastCheckTime == nil || now.Sub(vp.LastCheckTime.Time) > staleAfter {
				continue
			}
			allPassed = allPassed && Passed(vp)
			if last == nil || vp.LastCheckTime.After(last.LastCheckTime.Time) {
				last = &prev.VantagePoints[i]
			}
		}
		if last != nil {
			check.LastCheckTime = last.LastCheckTime
			// Every subnet's latest round passed, not the hysteresis-held
			// status: a failing round while the condition is still True is
			// no success.
			if allPassed {
				check.LastSuccessTime = last.LastCheckTime
			}
		}
	}
	if old := clusterstatus.ConditionByType(prev.Conditions, cond.Type); old != nil && old.Status == cond.Status && old.Reason == cond.Reason &&
		old.Message == cond.Message && equality.Semantic.DeepEqual(clusterstatus.FindCheck(prev.Checks, amv1alpha1.CheckInternetWorker), check) {
		return nil, requeue
	}
	return &amv1alpha1.MonitorConfigStatus{
		Conditions: []operatorv1.OperatorCondition{clusterstatus.Condition(prev.Conditions, cond, now)},
		Checks:     []amv1alpha1.CheckStatus{check},
	}, requeue
}
