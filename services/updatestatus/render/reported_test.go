package render

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	u "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// The published tables hold at most MaxReportedMessageBytes of node
// messages; a report whose listed nodes say more reads every insight.
func TestReportedMessageBound(t *testing.T) {
	in := manyNodes()
	// Problem nodes are listed beyond the first ten: each message counts.
	problems := func(n, size int) []u.NodeStatusInsight {
		nodes := append([]u.NodeStatusInsight(nil), in.Nodes...)
		for i := range n {
			p := nodeInsight(fmt.Sprintf("broken-%02d", i), "worker", "Pending", "4.14.0", nil, cond("Degraded", "True", u.ReasonNodeMCDDegraded, "", time.Hour))
			p.Message = strings.Repeat("m", size)
			nodes = append(nodes, p)
		}
		return nodes
	}
	// manyNodes' own messages ("Not ready") take 9 bytes.
	room := u.MaxReportedMessageBytes - len("Not ready")
	if got := Reported(in.Status, problems(8, room/8)); got == nil {
		t.Fatalf("no tables for messages of %d bytes in all", 8*(room/8)+9)
	}
	if got := Reported(in.Status, problems(8, room/8+1)); got != nil {
		t.Fatalf("tables for messages of %d bytes in all, over the bound", 8*(room/8+1)+9)
	}
}

// A report that lists every node, or a status without tables, cannot be
// rendered from them.
func TestFromReportedRefusesWhatItCannotRender(t *testing.T) {
	in := manyNodes()
	in.Status.ReportedNodes = Reported(in.Status, in.Nodes)
	in.Nodes, in.FromReported = nil, true
	for _, d := range []Details{DetailsNone, DetailsHealth, DetailsOperators} {
		if err := Render(&bytes.Buffer{}, in, Options{Details: d, Now: now}); err != nil {
			t.Errorf("--details=%s: %v", d, err)
		}
	}
	for _, d := range []Details{DetailsNodes, DetailsAll} {
		if err := Render(&bytes.Buffer{}, in, Options{Details: d, Now: now}); err == nil {
			t.Errorf("--details=%s rendered from the published tables", d)
		}
	}
	in.Status.ReportedNodes = nil
	if err := Render(&bytes.Buffer{}, in, Options{Now: now}); err == nil {
		t.Error("rendered from tables a status does not carry")
	}
}

// A listed node's conditions keep what the report reads and lose their
// messages; the insight it was made from is left as it was.
func TestReportedLeavesConditionMessagesOut(t *testing.T) {
	in := manyNodes()
	before := fmt.Sprint(in.Nodes)
	got := Reported(in.Status, in.Nodes)
	if fmt.Sprint(in.Nodes) != before {
		t.Fatal("Reported changed its input")
	}
	worker := got.WorkerPools[0]
	if worker.Name != "worker" || len(worker.Nodes) != 10 || worker.Omitted.Total != 4 {
		t.Fatalf("worker table: %s with %d nodes listed and %d omitted, want worker, 10 and 4", worker.Name, len(worker.Nodes), worker.Omitted.Total)
	}
	first := worker.Nodes[0]
	if first.Name != "worker-13" || first.Message != "Not ready" {
		t.Fatalf("first listed node %s with message %q, want the unavailable worker-13 with its message", first.Name, first.Message)
	}
	for _, c := range first.Conditions {
		if c.Message != "" || c.Reason == "" || c.Status == "" {
			t.Errorf("listed condition %+v: want its type, status and reason without a message", c)
		}
	}
}

// shownRows picks what a table shows without sorting every row; it must
// pick exactly the rows nodeRows and rowShown give, in their order, and
// count the others as the table's omitted line does. Problem rates from
// none to all, so that problems fill anywhere from none to all of the
// first ten rows.
func TestShownRowsAreTheTableRows(t *testing.T) {
	phases := []string{"Draining", "Updating", "Rebooting", "Paused", "Pending", "Completed", "Unknown"}
	for seed := uint64(0); seed < 500; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		problemRate := rng.IntN(5) // in quarters
		nodes := make([]*u.NodeStatusInsight, rng.IntN(40))
		for i := range nodes {
			var extra []metav1.Condition
			if rng.IntN(4) < problemRate {
				kind := []string{"Degraded", "Available"}[rng.IntN(2)]
				status := map[string]metav1.ConditionStatus{"Degraded": "True", "Available": "False"}[kind]
				extra = append(extra, cond(kind, status, "R", "", time.Minute))
			}
			// Names in random order, some sharing a prefix.
			n := nodeInsight(fmt.Sprintf("w-%02d", rng.IntN(100))+strings.Repeat("x", i), "worker", phases[rng.IntN(len(phases))], "4.14.1", nil, extra...)
			nodes[i] = &n
		}

		shown, omitted := shownRows(nodes)
		var want []string
		var wantOmitted omittedCounts
		for i, nr := range nodeRows(nodes) {
			if rowShown(i, nr) {
				want = append(want, nr.name)
			} else {
				wantOmitted.add(nr)
			}
		}
		got := make([]string, 0, len(shown))
		for _, i := range shown {
			got = append(got, nodes[i].Name)
		}
		if !slices.Equal(got, want) || omitted != wantOmitted {
			t.Fatalf("seed %d: shown %v, omitted %+v; the table shows %v, omits %+v", seed, got, omitted, want, wantOmitted)
		}
	}
}
