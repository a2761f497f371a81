package render

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	u "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// Expected strings here follow oc's documented output and its use of
// text/tabwriter (padding 3); they are worked out by hand, never taken from a
// run of this code.

func renderString(t *testing.T, in Input, details Details, at time.Time) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, in, Options{Details: details, Now: at}); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// oc formats the operator table's SINCE from the raw duration.
func TestUntruncatedShortDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{368975 * time.Nanosecond, "6m8s"}, // "368.975µs" -> "368s"
		{1500 * time.Microsecond, "1s"},    // "1.5ms" -> "1s"
		{500 * time.Millisecond, "500ms"},  // verbatim
		{45*time.Second + 368975*time.Nanosecond, "45s"},
		{0, "now"},
		{time.Hour, "1h"},
		{14 * time.Minute, "14m"},
		{time.Hour + 59*time.Minute + 500*time.Millisecond, "1h59m"},
		{64*time.Minute + 41*time.Second, "1h4m41s"},
	} {
		if got := untruncatedShortDuration(tc.d); got != tc.want {
			t.Errorf("untruncatedShortDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// The operator table: SINCE unrounded; a multi-line message continues under
// MESSAGE with the other cells empty, in the same column block.
func TestOperatorTable(t *testing.T) {
	cp := updatingControlPlane(30*time.Minute, 50, 5*time.Minute)
	latest := now.Add(-368975 * time.Nanosecond) // the operator's transition is the snapshot's latest event
	upd := metav1.Condition{Type: "Updating", Status: "True", Reason: u.ReasonProgressing, Message: "a\nb", LastTransitionTime: metav1.NewTime(latest)}
	cp.ClusterOperators = append(updatedCOs(1), operator("kube-apiserver", upd, cond("Healthy", "True", u.ReasonAsExpected, "", time.Hour)))
	cp.ClusterOperators[1].ProgressingReason = "NodeInstaller"
	out := renderString(t, Input{Status: u.UpgradeStatusStatus{ControlPlane: cp}}, DetailsOperators, now)
	want := "Updating Cluster Operators\n" +
		"NAME             SINCE   REASON          MESSAGE\n" +
		"kube-apiserver   6m8s    NodeInstaller   a\n" +
		strings.Repeat(" ", 17+8+16) + "b\n"
	if !strings.Contains(out, want) {
		t.Errorf("operator table:\n%s\nwant it to contain:\n%s", out, want)
	}
}

// Node and health tables write the last cell verbatim: a continuation line
// starts at column 0 and ends the column block; the rows after it are aligned
// among themselves. A trailing newline in a message leaves an empty line.
func TestMultiLineNodeAndHealthCells(t *testing.T) {
	cp := updatingControlPlane(2*time.Hour, 100, 0)
	cp.Conditions[0] = cond("Updating", "False", u.ReasonClusterVersionNotProgressing, "", 30*time.Minute)
	cp.ClusterVersion.Assessment = u.ControlPlaneAssessmentCompleted
	cp.ClusterVersion.CompletedAt = at(-30 * time.Minute)
	deg := nodeInsight("n1", "worker", "Updating", "4.14.0", nil, cond("Degraded", "True", u.ReasonNodeMCDDegraded, "", time.Minute))
	deg.Message = "first\nsecond\n"
	in := Input{
		Status: u.UpgradeStatusStatus{
			ControlPlane: cp,
			WorkerPools:  []u.Pool{workerPool("worker", u.PoolDegraded, 66, 3, 3, 0, 1, 0, 0, 1)},
			Health: []u.HealthInsight{
				{UID: "a", StartedAt: at(-time.Hour), Impact: u.InsightImpact{Level: u.ErrorImpactLevel, Type: u.UpdateStalledImpactType, Summary: "one\ntwo", Description: "d"}, Remediation: u.InsightRemediation{Reference: "r"}},
				{UID: "b", StartedAt: at(-2 * time.Hour), Impact: u.InsightImpact{Level: u.WarningImpactLevel, Type: u.NoneImpactType, Summary: "three", Description: "d"}, Remediation: u.InsightRemediation{Reference: "r"}},
			},
		},
		Nodes: []u.NodeStatusInsight{
			nodeInsight("n2", "worker", "Completed", "4.14.1", dur(0)),
			deg,
			nodeInsight("n3", "worker", "Completed", "4.14.1", dur(0)),
		},
	}
	out := renderString(t, in, DetailsNone, now)
	wantNodes := "Worker Pool Nodes: worker\n" +
		"NAME   ASSESSMENT   PHASE      VERSION   EST   MESSAGE\n" +
		"n1     Degraded     Updating   4.14.0    ?     first\n" +
		"second\n" +
		"\n" +
		"n2   Completed   Updated   4.14.1   -   \n" +
		"n3   Completed   Updated   4.14.1   -   \n"
	if !strings.Contains(out, wantNodes) {
		t.Errorf("node table:\n%s\nwant it to contain:\n%s", out, wantNodes)
	}
	wantHealth := "= Update Health =\n" +
		"SINCE   LEVEL   IMPACT           MESSAGE\n" +
		"1h      Error   Update Stalled   one\n" +
		"two\n" +
		"2h   Warning   None   three\n"
	if !strings.Contains(out, wantHealth) {
		t.Errorf("health table:\n%s\nwant it to contain:\n%s", out, wantHealth)
	}
}

// "Resources:" is printed only for an insight that has resources.
func TestResourcesHeader(t *testing.T) {
	in := workersAfterControlPlane()
	in.Status.Health = []u.HealthInsight{{UID: "x", Impact: u.InsightImpact{Level: u.WarningImpactLevel, Type: u.NoneImpactType, Summary: "s", Description: "d"},
		Remediation: u.InsightRemediation{Reference: "r"}}}
	out := renderString(t, in, DetailsHealth, now)
	want := "Message: s\n  Since:       -\n  Level:       Warning\n  Impact:      None\n  Reference:   r\n  Description: d\n"
	if !strings.Contains(out, want) {
		t.Errorf("detailed health:\n%s\nwant:\n%s", out, want)
	}
}

// Omitted nodes count as Available only when not updating (an updating node
// is always unavailable to oc: cordoned, or its MCD at work).
func TestOmittedNodesAvailable(t *testing.T) {
	in := manyNodes()
	in.Nodes = nil
	for i := 0; i < 15; i++ {
		name := fmt.Sprintf("worker-%02d", i)
		switch {
		case i < 12:
			in.Nodes = append(in.Nodes, nodeInsight(name, "worker", "Updating", "4.14.0", dur(5*time.Minute)))
		case i < 14:
			in.Nodes = append(in.Nodes, nodeInsight(name, "worker", "Pending", "4.14.0", nil))
		default:
			in.Nodes = append(in.Nodes, nodeInsight(name, "worker", "Completed", "4.14.1", dur(0)))
		}
	}
	out := renderString(t, in, DetailsNone, now)
	// Rows 11-15 are omitted: 2 updating, 2 pending, 1 completed.
	want := "...\nOmitted additional 5 Total, 1 Completed, 3 Available, 2 Progressing, 4 Outdated, 0 Draining, 0 Excluded, and 0 Degraded nodes.\nPass along --details=nodes to see all information.\n"
	if !strings.Contains(out, want) {
		t.Errorf("output:\n%s\nwant it to contain:\n%s", out, want)
	}
}

// oc sorts newest first, then by level with a stable sort; unknown starts
// last; ties keep the order the insights come in.
func TestHealthOrder(t *testing.T) {
	h := func(uid string, level u.InsightImpactLevel, started *metav1.Time) u.HealthInsight {
		return u.HealthInsight{UID: uid, StartedAt: started, Impact: u.InsightImpact{Level: level, Type: u.NoneImpactType, Summary: uid, Description: "d"},
			Remediation: u.InsightRemediation{Reference: "r"}}
	}
	in := []u.HealthInsight{
		h("warn-old", u.WarningImpactLevel, at(-time.Hour)),
		h("err-unknown-1", u.ErrorImpactLevel, nil),
		h("warn-new", u.WarningImpactLevel, at(-time.Minute)),
		h("err-tie-1", u.ErrorImpactLevel, at(-time.Hour)),
		h("err-unknown-2", u.ErrorImpactLevel, nil),
		h("err-tie-2", u.ErrorImpactLevel, at(-time.Hour)),
		h("crit", u.CriticalImpactLevel, at(-3*time.Hour)),
		h("info", u.InfoImpactLevel, at(0)),
	}
	var got []string
	for _, x := range sortedHealth(in) {
		got = append(got, x.UID)
	}
	want := "crit err-tie-1 err-tie-2 err-unknown-1 err-unknown-2 warn-new warn-old info"
	if strings.Join(got, " ") != want {
		t.Errorf("order %v, want %s", got, want)
	}
}
