package rounds

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/hysteresis"
)

// A series of rounds through every held state: the status follows the
// thresholds, the message always says what the round found, and Pending
// is true exactly while a failure is held back.
func TestFold(t *testing.T) {
	th := hysteresis.Thresholds{Failures: 2, Successes: 2}
	w := Words{Passing: "all good", Recovering: "good again"}
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	ok := Result{Passed: true, Reason: "CheckDone", Message: "fine", Summary: "fine"}
	bad := Result{Reason: "CheckFailed", Message: "broken\n", Summary: "broken"}
	var check amv1alpha1.CheckStatus
	var conds = []struct {
		in                      Result
		status, reason, message string
		pending                 bool
	}{
		{bad, "Unknown", ReasonSettling, "failing (1 of 2 failed rounds before False): broken", true},
		{ok, "True", "CheckDone", "fine", false},
		{bad, "True", "CheckDone", "all good until 2 failed rounds in a row; failing for 1: broken", true},
		{bad, "False", "CheckFailed", "broken\n", false},
		{ok, "False", "CheckFailed", "good again, 1 of 2 good rounds before True\n", false},
		{ok, "True", "CheckDone", "fine", false},
	}
	st := amv1alpha1.MonitorConfigStatus{}
	for i, step := range conds {
		now = now.Add(time.Minute)
		c, next := Fold(st.Conditions, check, "X", step.in, w, now, th)
		if string(c.Status) != step.status || c.Reason != step.reason || c.Message != step.message || Pending(c, next) != step.pending {
			t.Fatalf("round %d: %+v (pending %v), want %s %s %q %v", i, c, Pending(c, next), step.status, step.reason, step.message, step.pending)
		}
		if next.LastCheckTime.Time != now || (step.in.Passed && next.LastSuccessTime.Time != now) {
			t.Fatalf("round %d: times %+v", i, next)
		}
		st.Conditions, check = append(st.Conditions[:0], c), next
	}
}

func TestWait(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	last := metav1.NewTime(now.Add(-2 * time.Minute))
	if w := Wait(amv1alpha1.CheckStatus{}, now, 5*time.Minute); w != 0 {
		t.Errorf("never checked: wait %v", w)
	}
	if w := Wait(amv1alpha1.CheckStatus{LastCheckTime: &last}, now, 5*time.Minute); w != 3*time.Minute {
		t.Errorf("wait %v", w)
	}
}
