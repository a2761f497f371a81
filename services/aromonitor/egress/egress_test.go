package egress

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/hysteresis"
	"github.com/upshift-io/upshift/services/aromonitor/probe"
)

var (
	now = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	th  = hysteresis.Thresholds{Failures: 3, Successes: 2}
	ok  = probe.Result{URL: "https://a/", Path: amv1alpha1.PathDirect, Latency: map[amv1alpha1.ProbePhase]time.Duration{"DNS": 2 * time.Millisecond}}
	bad = probe.Result{URL: "https://b/", Path: amv1alpha1.PathDirect, FailedPhase: "TLS", Err: errors.New("x509: certificate signed by unknown authority")}
)

func TestRecordHysteresis(t *testing.T) {
	vp := amv1alpha1.VantagePoint{}
	vp = Record(vp, "master", amv1alpha1.RoleMaster, "m0", []probe.Result{ok}, now, th)
	if vp.Reachable != metav1.ConditionTrue || vp.Targets[0].LatencyMilliseconds["DNS"] != 2 {
		t.Fatalf("first good round: %+v", vp)
	}
	for i := 1; i <= 3; i++ {
		vp = Record(vp, "master", amv1alpha1.RoleMaster, "m0", []probe.Result{ok, bad}, now, th)
		want := metav1.ConditionTrue
		if i == 3 {
			want = metav1.ConditionFalse
		}
		if vp.Reachable != want {
			t.Fatalf("after %d failed rounds: %s, want %s", i, vp.Reachable, want)
		}
	}
	if vp.Targets[1].FailedPhase != "TLS" || vp.Targets[1].Error == "" || vp.Targets[0].FailedPhase != "" {
		t.Errorf("targets %+v", vp.Targets)
	}
	if r := Record(amv1alpha1.VantagePoint{}, "x", amv1alpha1.RoleWorker, "", nil, now, th); r.Reachable != metav1.ConditionUnknown {
		t.Errorf("a round with no URLs passed: %s", r.Reachable)
	}
}

func TestForRole(t *testing.T) {
	at := func(d time.Duration) *metav1.Time { x := metav1.NewTime(now.Add(-d)); return &x }
	good := func(name string) amv1alpha1.VantagePoint {
		return amv1alpha1.VantagePoint{Name: name, Role: amv1alpha1.RoleWorker, Reachable: metav1.ConditionTrue, LastCheckTime: at(time.Minute)}
	}
	failing := amv1alpha1.VantagePoint{Name: "worker-b", Role: amv1alpha1.RoleWorker, Reachable: metav1.ConditionFalse, LastCheckTime: at(time.Minute),
		Path: amv1alpha1.PathProxy, Targets: []amv1alpha1.TargetResult{{URL: "https://b/", FailedPhase: "Connect", Error: "403 Forbidden"}}}
	stale := good("worker-c")
	stale.LastCheckTime = at(time.Hour)
	master := amv1alpha1.VantagePoint{Name: "master", Role: amv1alpha1.RoleMaster, Reachable: metav1.ConditionFalse, LastCheckTime: at(time.Minute)}
	// Failing since start, one round short of False: Unknown, with results.
	settling := amv1alpha1.VantagePoint{Name: "worker-d", Role: amv1alpha1.RoleWorker, Reachable: metav1.ConditionUnknown, ConsecutiveFailures: 2, LastCheckTime: at(time.Minute)}
	for _, tc := range []struct {
		name       string
		vps        []amv1alpha1.VantagePoint
		expected   []string
		want       metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{"all good", []amv1alpha1.VantagePoint{good("worker-a"), master}, []string{"worker-a"}, "True", "CheckDone", "Outgoing connection successful"},
		{"one subnet failing names it and the phase", []amv1alpha1.VantagePoint{good("worker-a"), failing}, nil, "False", "CheckFailed",
			"from worker-b (through the proxy): https://b/: Connect failed: 403 Forbidden\n1 other vantage point(s) reach every URL"},
		{"a subnet with no agent is named", []amv1alpha1.VantagePoint{good("worker-a")}, []string{"worker-a", "worker-z"}, "True", "CheckDone",
			"Outgoing connection successful from worker-a; no recent result from worker-z"},
		{"only stale results", []amv1alpha1.VantagePoint{stale}, nil, "Unknown", ReasonNoVantagePoint, "no recent result from worker-c"},
		{"held False while recovering says so instead of naming no failure", []amv1alpha1.VantagePoint{{Name: "worker-e", Role: amv1alpha1.RoleWorker,
			Reachable: metav1.ConditionFalse, ConsecutiveSuccesses: 1, LastCheckTime: at(time.Minute), Targets: []amv1alpha1.TargetResult{{URL: "https://e/"}}}}, nil,
			"False", "CheckFailed", "from worker-e: every URL reached again, 1 good round(s) in a row so far"},
		{"failing below the threshold is said to be failing, not stale", []amv1alpha1.VantagePoint{settling}, nil, "Unknown", ReasonNoVantagePoint,
			"worker-d is failing (2 of 3 failed rounds before False)"},
		{"failing below the threshold next to a good one", []amv1alpha1.VantagePoint{good("worker-a"), settling, stale}, nil, "True", "CheckDone",
			"Outgoing connection successful from worker-a; no recent result from worker-c; worker-d is failing (2 of 3 failed rounds before False)"},
		{"nothing at all", nil, nil, "Unknown", ReasonNoVantagePoint, "no probe has run from the worker role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ForRole(amv1alpha1.RoleWorker, tc.vps, tc.expected, now, 15*time.Minute, 3)
			if c.Status != tc.want || c.Reason != tc.wantReason || c.Message != tc.wantMsg {
				t.Errorf("got %s %s %q\nwant %s %s %q", c.Status, c.Reason, c.Message, tc.want, tc.wantReason, tc.wantMsg)
			}
		})
	}
	if c := ForRole(amv1alpha1.RoleMaster, []amv1alpha1.VantagePoint{master}, nil, now, time.Hour, 3); c.Status != "False" || !strings.HasPrefix(c.Message, "from master") {
		t.Errorf("master role: %+v", c)
	}
}
