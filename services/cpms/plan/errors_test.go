package plan

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestErrorStreak(t *testing.T) {
	var s ErrorStreak
	boom := errors.New("machines.machine.openshift.io is forbidden")
	for i := 1; i <= 3; i++ {
		s = s.Next(boom, t0.Add(time.Duration(i)*time.Second))
	}
	if s.Count != 3 || !s.Since.Equal(t0.Add(time.Second)) {
		t.Fatalf("three identical errors = %+v, want count 3 since the first", s)
	}
	if s = s.Next(errors.New("other"), t0.Add(time.Minute)); s.Count != 1 || !s.Since.Equal(t0.Add(time.Minute)) {
		t.Fatalf("a different error starts a new streak, got %+v", s)
	}
	if s = s.Next(nil, t0); s != (ErrorStreak{}) {
		t.Fatalf("a pass that succeeds ends the streak, got %+v", s)
	}
}

// The upstream operator's Error condition: False/AsExpected, and True/
// ContinuousErrors with its own message once the same error failed 15
// passes in a row. Alerts and tooling match on it.
func TestErrorCondition(t *testing.T) {
	w := newWorld(t)
	w.plan()
	w.expectCond(ConditionError, metav1.ConditionFalse, ReasonAsExpected)

	since := time.Date(2026, 11, 23, 7, 58, 0, 0, time.UTC)
	in := w.input()
	in.Errors = ErrorStreak{Err: "etcdserver: request timed out", Count: 14, Since: since}
	if out := Plan(in); condOf(out, ConditionError).Status != metav1.ConditionFalse {
		t.Fatal("Error True before 15 identical errors")
	}
	in.Errors.Count = 15
	out := Plan(in)
	c := condOf(out, ConditionError)
	want := "The control plane machine set has experienced the following error more than 15 consecutive times since 2026-11-23 07:58:00 +0000 UTC: etcdserver: request timed out"
	if c.Status != metav1.ConditionTrue || c.Reason != "ContinuousErrors" || c.Message != want {
		t.Fatalf("Error = %+v\nwant True/ContinuousErrors %q", c, want)
	}
	found := false
	for _, e := range out.Events {
		found = found || (e.Reason == "ContinuousErrors" && e.Warning)
	}
	if !found {
		t.Fatalf("no Warning Event for Error=True: %v", out.Events)
	}
}

func condOf(out Output, t string) metav1.Condition {
	for _, c := range out.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return metav1.Condition{}
}
