// Package hysteresis turns a series of check results into a condition status
// that does not flap: failureThreshold failures in a row before False,
// successThreshold successes in a row before True.
//
// The counters are kept in aro-monitor's record (the MonitorConfig's status)
// by the caller, so a restart neither resets a pending transition nor
// repeats one.
package hysteresis

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// State is a check's condition status with its streak counters.
type State struct {
	Status    metav1.ConditionStatus
	Failures  int32
	Successes int32
}

// Thresholds are the streak lengths that flip the status.
type Thresholds struct {
	Failures  int32
	Successes int32
}

// Next folds one result into the state. From Unknown (nothing known yet) a
// success is enough for True — there is nothing to flap from — while False
// still needs the full failure streak, so a single transient failure right
// after start never raises an alarm.
func Next(s State, passed bool, t Thresholds) State {
	if s.Status == "" {
		s.Status = metav1.ConditionUnknown
	}
	if passed {
		s.Successes++
		s.Failures = 0
		if s.Status == metav1.ConditionUnknown || s.Successes >= max(t.Successes, 1) {
			s.Status = metav1.ConditionTrue
		}
		return s
	}
	s.Failures++
	s.Successes = 0
	if s.Failures >= max(t.Failures, 1) {
		s.Status = metav1.ConditionFalse
	}
	return s
}
