// Package rounds folds one round of a check into its condition and record,
// for the checks that decide a condition from a whole round's reading of the
// cluster (MachineValid, DefaultIngressCertificate, DefaultClusterDNS, the
// workloads' conditions). The condition's status moves with a hysteresis
// (package hysteresis) whose counters live in the check's record, so a
// restart neither resets nor repeats a transition; its message always says
// what this round found, also while the status is held. No I/O.
package rounds

import (
	"fmt"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/clusterstatus"
	"github.com/upshift-io/upshift/services/aromonitor/hysteresis"
)

// ReasonSettling: failing since aro-monitor started checking, not yet for
// the failure threshold.
const ReasonSettling = "Settling"

// Result is what one round found for one condition: the reason and message
// the condition takes when the status follows the round, and a one-line
// summary for the messages of a held status.
type Result struct {
	Passed          bool
	Reason, Message string
	Summary         string
}

// Words name the passing state in the messages of a held status: Passing
// (e.g. "All machines valid") while True is held over failed rounds,
// Recovering (e.g. "every machine valid again") while False is held over
// passed ones.
type Words struct {
	Passing, Recovering string
}

// Fold folds r into the condition of type t (prev holds the record's
// conditions) and into check, the check's record: its counters, last check
// and last success times. Held statuses keep the reason of the status they
// hold, CheckDone for True and CheckFailed for False, as ARO's own writers.
func Fold(prev []operatorv1.OperatorCondition, check amv1alpha1.CheckStatus, t string, r Result, w Words, now time.Time, th hysteresis.Thresholds) (operatorv1.OperatorCondition, amv1alpha1.CheckStatus) {
	check.LastCheckTime = clusterstatus.Time(now)
	var held metav1.ConditionStatus
	if c := clusterstatus.ConditionByType(prev, t); c != nil {
		held = metav1.ConditionStatus(c.Status)
	}
	st := hysteresis.Next(hysteresis.State{Status: held, Failures: check.ConsecutiveFailures, Successes: check.ConsecutiveSuccesses}, r.Passed, th)
	check.ConsecutiveFailures, check.ConsecutiveSuccesses = st.Failures, st.Successes
	if r.Passed {
		check.LastSuccessTime = check.LastCheckTime
	}
	reason, message := r.Reason, r.Message
	switch {
	case st.Status == metav1.ConditionTrue && !r.Passed:
		reason, message = "CheckDone", fmt.Sprintf("%s until %d failed rounds in a row; failing for %d: %s", w.Passing, max(th.Failures, 1), st.Failures, r.Summary)
	case st.Status == metav1.ConditionFalse && r.Passed:
		reason, message = "CheckFailed", fmt.Sprintf("%s, %d of %d good rounds before True\n", w.Recovering, st.Successes, max(th.Successes, 1))
	case st.Status == metav1.ConditionUnknown:
		reason, message = ReasonSettling, fmt.Sprintf("failing (%d of %d failed rounds before False): %s", st.Failures, max(th.Failures, 1), r.Summary)
	}
	cond := operatorv1.OperatorCondition{Type: t, Status: operatorv1.ConditionStatus(st.Status), Reason: reason, Message: message}
	return clusterstatus.Condition(prev, cond, now), check
}

// Pending says a failed round is being held back by the threshold: the
// status is not False yet although the last round failed. Callers repeat
// such a round sooner than their interval, to confirm it.
func Pending(cond operatorv1.OperatorCondition, check amv1alpha1.CheckStatus) bool {
	return check.ConsecutiveFailures > 0 && cond.Status != operatorv1.ConditionFalse
}

// Wait is how long until the check's next round is due: an interval after
// the last one recorded, whoever ran it. 0: due now.
func Wait(check amv1alpha1.CheckStatus, now time.Time, interval time.Duration) time.Duration {
	if check.LastCheckTime == nil {
		return 0
	}
	return max(check.LastCheckTime.Add(interval).Sub(now), 0)
}
