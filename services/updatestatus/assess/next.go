package assess

import (
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The assessment depends on the time as well as on the objects: an operator
// degraded for five minutes becomes a health insight, an update running past
// its estimate becomes Slow, then Stalled, and the estimated completion time
// moves. Assess reports the earliest time at which its result would change
// with the same objects (Result.NextCheck), so the caller recomputes exactly
// then instead of polling.

// estimateHorizon bounds how far ahead the estimate is searched for its next
// change. Past a day nothing is pending worth waking for: any object change
// recomputes anyway, and an update that runs for a day has long been Stalled.
const estimateHorizon = 24 * time.Hour

// estimateStep is the stride of that search; the change is then located to
// the second inside the stride where it happens.
const estimateStep = 15 * time.Second

// nextCheck collects the instants at which the result changes and keeps the
// earliest one after now.
type nextCheck struct {
	now  time.Time
	next time.Time
}

// at records that the result changes at t (ignored unless after now).
func (n *nextCheck) at(t time.Time) {
	if t.After(n.now) && (n.next.IsZero() || t.Before(n.next)) {
		n.next = t
	}
}

// operatorThresholds: an unavailable or degraded operator becomes a warning,
// then an error, once its condition is older than the thresholds. The rules
// compare with ">", so the change is one instant after the threshold.
func operatorThresholds(ops []operatorState, n *nextCheck) {
	for _, o := range ops {
		if a := o.available; a != nil && a.Status == configv1.ConditionFalse {
			n.at(a.LastTransitionTime.Add(coUnavailableWarnAfter + time.Nanosecond))
			n.at(a.LastTransitionTime.Add(coUnavailableErrorAfter + time.Nanosecond))
		}
		if d := o.degraded; d != nil && d.Status == configv1.ConditionTrue {
			n.at(d.LastTransitionTime.Add(coDegradedWarnAfter + time.Nanosecond))
			n.at(d.LastTransitionTime.Add(coDegradedErrorAfter + time.Nanosecond))
		}
	}
}

// nodeThresholds: an unavailable node that is not updating becomes a health
// insight once its condition is old enough to be serious (">=").
func nodeThresholds(states []nodeState, n *nextCheck) {
	for _, st := range states {
		if st.updating {
			continue
		}
		for _, r := range st.unavailable {
			if r.condition == nil {
				continue
			}
			if after, ok := seriousAfter[r.condition.Type]; ok {
				n.at(r.condition.LastTransitionTime.Add(after))
			}
		}
	}
}

// estimateChange is the first instant in (now, now+estimateHorizon] at which
// the control plane's assessment changes, or its estimated completion time
// moves from published (the value the result carries) by estimateJitter or
// more, which is when the result would publish a new one. Zero: no change
// within the horizon.
func estimateChange(e controlPlaneEstimate, now time.Time, assessment string, published *metav1.Time) time.Time {
	if e.completed {
		return time.Time{} // nothing depends on the time any more
	}
	changed := func(t time.Time) bool {
		a, at := e.at(t)
		if string(a) != assessment || (at == nil) != (published == nil) {
			return true
		}
		if at == nil {
			return false
		}
		d := at.Sub(published.Time)
		return d <= -estimateJitter || d >= estimateJitter
	}
	prev := now
	for t := now.Add(estimateStep); !t.After(now.Add(estimateHorizon)); t = t.Add(estimateStep) {
		if !changed(t) {
			prev = t
			continue
		}
		// The change lies in (prev, t]: bisect to the second.
		lo, hi := prev, t
		for hi.Sub(lo) > time.Second {
			mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
			if !mid.After(lo) {
				mid = lo.Add(time.Second)
			}
			if changed(mid) {
				hi = mid
			} else {
				lo = mid
			}
		}
		return hi
	}
	return time.Time{}
}
