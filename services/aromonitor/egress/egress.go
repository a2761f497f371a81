// Package egress turns probe rounds into the egress status: one vantage
// point's record (with its hysteresis), and a role's ARO condition from its
// vantage points. It is pure apart from Round, which runs the probes.
package egress

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/libs/truncate"

	"github.com/upshift-io/upshift/services/aromonitor/hysteresis"
	"github.com/upshift-io/upshift/services/aromonitor/probe"
)

// Round probes every URL at once and returns the results in URL order.
func Round(ctx context.Context, p *probe.Prober, urls []string) []probe.Result {
	out := make([]probe.Result, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = p.Probe(ctx, u)
		}()
	}
	wg.Wait()
	return out
}

// Record folds one round into a vantage point's record. A round passes when
// every URL was reached; the reachable status moves with the hysteresis.
func Record(prev amv1alpha1.VantagePoint, name string, role amv1alpha1.Role, node string, results []probe.Result, now time.Time, th hysteresis.Thresholds) amv1alpha1.VantagePoint {
	passed := len(results) > 0
	vp := amv1alpha1.VantagePoint{Name: name, Role: role, Node: node, Path: amv1alpha1.PathDirect}
	for _, r := range results {
		t := amv1alpha1.TargetResult{URL: r.URL, LatencyMilliseconds: map[amv1alpha1.ProbePhase]int64{}}
		for ph, d := range r.Latency {
			t.LatencyMilliseconds[ph] = d.Milliseconds()
		}
		if !r.OK() {
			passed = false
			t.FailedPhase = r.FailedPhase
			t.Error = truncate.String(r.Err.Error(), 1024)
		}
		if r.Path == amv1alpha1.PathProxy {
			vp.Path = amv1alpha1.PathProxy
		}
		vp.Targets = append(vp.Targets, t)
	}
	st := hysteresis.Next(hysteresis.State{Status: prev.Reachable, Failures: prev.ConsecutiveFailures, Successes: prev.ConsecutiveSuccesses}, passed, th)
	vp.Reachable, vp.ConsecutiveFailures, vp.ConsecutiveSuccesses = st.Status, st.Failures, st.Successes
	t := metav1.NewTime(now.Truncate(time.Second))
	vp.LastCheckTime = &t
	return vp
}

// Passed says whether a vantage point's latest round reached every URL: the
// round itself, not the hysteresis-held status.
func Passed(vp amv1alpha1.VantagePoint) bool {
	if len(vp.Targets) == 0 {
		return false
	}
	for _, t := range vp.Targets {
		if t.FailedPhase != "" {
			return false
		}
	}
	return true
}

// Condition is a role's ARO condition (InternetReachableFromMaster or
// ...FromWorker) from its vantage points. A vantage point with no round for
// staleAfter counts as unknown; expected names vantage points that should
// exist (worker subnets) but have none yet.
type Condition struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// ReasonNoVantagePoint: nothing probed from the role yet, or recently.
const ReasonNoVantagePoint = "NoVantagePoint"

// ForRole computes the condition for role. failureThreshold is the number
// of failed rounds in a row that turns a vantage point False, for the
// message about one still short of it.
func ForRole(role amv1alpha1.Role, vps []amv1alpha1.VantagePoint, expected []string, now time.Time, staleAfter time.Duration, failureThreshold int32) Condition {
	var failing, pending, stale, ok []string
	seen := map[string]bool{}
	for _, vp := range vps {
		if vp.Role != role {
			continue
		}
		seen[strings.ToLower(vp.Name)] = true
		switch {
		case vp.LastCheckTime == nil || now.Sub(vp.LastCheckTime.Time) > staleAfter:
			stale = append(stale, vp.Name)
		case vp.Reachable == metav1.ConditionFalse:
			failing = append(failing, describe(vp))
		case vp.Reachable == metav1.ConditionTrue:
			ok = append(ok, vp.Name)
		case vp.ConsecutiveFailures > 0:
			// Recent rounds, failing, not yet often enough for False: it
			// has results, and they are failures.
			pending = append(pending, fmt.Sprintf("%s is failing (%d of %d failed rounds before False)", vp.Name, vp.ConsecutiveFailures, max(failureThreshold, 1)))
		default:
			stale = append(stale, vp.Name)
		}
	}
	var missing []string
	for _, e := range expected {
		if !seen[strings.ToLower(e)] {
			missing = append(missing, e)
		}
	}
	sort.Strings(failing)
	sort.Strings(pending)
	sort.Strings(stale)
	sort.Strings(missing)
	// unsure says what keeps the other vantage points from an answer.
	var unsure []string
	if len(stale)+len(missing) > 0 {
		unsure = append(unsure, "no recent result from "+strings.Join(append(stale, missing...), ", "))
	}
	unsure = append(unsure, pending...)
	switch {
	case len(failing) > 0:
		msg := strings.Join(failing, "\n")
		if n := len(ok); n > 0 {
			msg += fmt.Sprintf("\n%d other vantage point(s) reach every URL", n)
		}
		return Condition{metav1.ConditionFalse, arov1alpha1.ReasonCheckFailed, msg}
	case len(ok) > 0 && len(unsure) == 0:
		return Condition{metav1.ConditionTrue, arov1alpha1.ReasonCheckDone, "Outgoing connection successful"}
	case len(ok) > 0:
		return Condition{metav1.ConditionTrue, arov1alpha1.ReasonCheckDone, fmt.Sprintf(
			"Outgoing connection successful from %s; %s", strings.Join(ok, ", "), strings.Join(unsure, "; "))}
	}
	what := "no probe has run from the " + string(role) + " role"
	if len(unsure) > 0 {
		what = strings.Join(unsure, "; ")
	}
	return Condition{metav1.ConditionUnknown, ReasonNoVantagePoint, what}
}

// describe says which URLs fail from a vantage point, and in which phase.
func describe(vp amv1alpha1.VantagePoint) string {
	var parts []string
	for _, t := range vp.Targets {
		if t.FailedPhase != "" {
			parts = append(parts, fmt.Sprintf("%s: %s failed: %s", t.URL, t.FailedPhase, t.Error))
		}
	}
	via := ""
	if vp.Path == amv1alpha1.PathProxy {
		via = " (through the proxy)"
	}
	if len(parts) == 0 {
		// Still False by the hysteresis, but the latest round passed: say
		// so, rather than name no failure at all.
		return fmt.Sprintf("from %s%s: every URL reached again, %d good round(s) in a row so far", vp.Name, via, vp.ConsecutiveSuccesses)
	}
	return fmt.Sprintf("from %s%s: %s", vp.Name, via, strings.Join(parts, "; "))
}
