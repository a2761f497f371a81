package cli

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/render"
	"github.com/upshift-io/upshift/services/updatestatus/snapshot"
)

// TestShownRendersAsAll is the property readShown rests on: for any set of
// node insights, the report rendered from the rows it reads in full plus the
// others as their table rows tell them is the report rendered from every
// insight in full.
func TestShownRendersAsAll(t *testing.T) {
	loaded, err := snapshot.Load(filepath.Join("testdata", "many-nodes-cv.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	result, err := assess.Assess(loaded.Snapshot, nil)
	if err != nil {
		t.Fatal(err)
	}
	status := result.Status
	if len(status.WorkerPools) != 1 {
		t.Fatalf("the fixture has %d worker pools, want 1", len(status.WorkerPools))
	}
	// A second worker pool: the report has a node table for each.
	infra := *status.WorkerPools[0].DeepCopy()
	infra.Name, infra.Pool.Name = "infra", "infra"
	status.WorkerPools = append(status.WorkerPools, infra)
	// The control plane, two worker pools, no pool, and a pool the status
	// does not list.
	pools := []string{"master", status.WorkerPools[0].Name, "infra", "", strings.Repeat("p", 70)}
	someSummarized := 0
	for seed := uint64(0); seed < 400; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		nodes := randomNodes(rng, pools, rng.IntN(150))
		for _, details := range []render.Details{render.DetailsNone, render.DetailsNodes, render.DetailsAll} {
			want := renderNodes(t, status, nodes, details)

			byName := map[string]updatev1alpha1.NodeStatusInsight{}
			rows := make([]tableRow, len(nodes))
			for i, n := range nodes {
				byName[n.Name] = n
				rows[i] = rowOf(n)
			}
			summaries, full := splitShown(status, rows, details)
			if len(summaries)+len(full) != len(nodes) {
				t.Fatalf("seed %d: %d summarized + %d in full, want %d nodes", seed, len(summaries), len(full), len(nodes))
			}
			read := append([]updatev1alpha1.NodeStatusInsight(nil), summaries...)
			for _, name := range full {
				read = append(read, byName[name])
			}
			if got := renderNodes(t, status, read, details); got != want {
				t.Fatalf("seed %d, --details=%s: the report from %d insights read in full and %d summarized differs from the report from all:\n--- all\n%s\n--- shown\n%s",
					seed, details, len(full), len(summaries), want, got)
			}
			if details == render.DetailsNone && len(summaries) > 0 {
				someSummarized++
			}
		}
	}
	if someSummarized < 250 {
		t.Fatalf("only %d of 400 seeds left nodes out of the report: the property was barely exercised", someSummarized)
	}
}

// TestTableRows reads the API server's table by column name, whatever the
// columns' order, and refuses a table it cannot read in full.
func TestTableRows(t *testing.T) {
	columns := func(names ...string) []metav1.TableColumnDefinition {
		out := make([]metav1.TableColumnDefinition, len(names))
		for i, n := range names {
			out[i] = metav1.TableColumnDefinition{Name: n}
		}
		return out
	}
	all := columns("Name", "Pool", "Phase", "Version", "Est", "Message", "Age", "Degraded", "Available")
	reordered := columns("Available", "Degraded", "Phase", "Pool", "Name")
	for _, c := range []struct {
		name    string
		table   metav1.Table
		want    []tableRow
		readAll bool
	}{
		{name: "the chart's columns", table: metav1.Table{ColumnDefinitions: all, Rows: []metav1.TableRow{
			{Cells: []any{"a", "worker", "Draining", "4.18.1", nil, "", "5m", "False", "True"}},
			// Conditions the insight lacks are null cells.
			{Cells: []any{"b", "infra", nil, nil, nil, nil, "5m", nil, "Unknown"}},
		}}, want: []tableRow{{"a", "worker", "Draining", "False", "True"}, {"b", "infra", "", "", "Unknown"}}},
		{name: "columns in another order", table: metav1.Table{ColumnDefinitions: reordered, Rows: []metav1.TableRow{
			{Cells: []any{"False", "True", "Updated", "worker", "c"}},
		}}, want: []tableRow{{"c", "worker", "Updated", "True", "False"}}},
		{name: "no rows", table: metav1.Table{ColumnDefinitions: all}, want: []tableRow{}},
		{name: "an older CRD, without Degraded and Available", table: metav1.Table{ColumnDefinitions: all[:7]}, readAll: true},
		{name: "a short row", table: metav1.Table{ColumnDefinitions: all, Rows: []metav1.TableRow{{Cells: []any{"a", "worker"}}}}, readAll: true},
		{name: "a cell not a string", table: metav1.Table{ColumnDefinitions: all, Rows: []metav1.TableRow{
			{Cells: []any{"a", "worker", "Draining", "4.18.1", nil, "", "5m", int64(1), "True"}},
		}}, readAll: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := tableRows(&c.table)
			if c.readAll {
				if !errors.Is(err, errReadAll) {
					t.Fatalf("got %v, %v; want errReadAll", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// rowOf is n's row in the API server's table, as the CRD's printer columns
// (JSONPath expressions) give it.
func rowOf(n updatev1alpha1.NodeStatusInsight) tableRow {
	r := tableRow{n.Name, n.PoolResource.Name}
	if c := meta.FindStatusCondition(n.Conditions, updatev1alpha1.ConditionUpdating); c != nil {
		r[2] = c.Reason
	}
	if c := meta.FindStatusCondition(n.Conditions, updatev1alpha1.ConditionDegraded); c != nil {
		r[3] = string(c.Status)
	}
	if c := meta.FindStatusCondition(n.Conditions, updatev1alpha1.ConditionAvailable); c != nil {
		r[4] = string(c.Status)
	}
	return r
}

func renderNodes(t *testing.T, status updatev1alpha1.UpgradeStatusStatus, nodes []updatev1alpha1.NodeStatusInsight, details render.Details) string {
	t.Helper()
	nodes = append([]updatev1alpha1.NodeStatusInsight(nil), nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	var out bytes.Buffer
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	if err := render.Render(&out, render.Input{Status: status, Nodes: nodes}, render.Options{Details: details, Now: now}); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// randomNodes makes n node insights of the given pools in every combination
// of phase, availability and degradation the controller writes, and some it
// does not (conditions missing).
func randomNodes(rng *rand.Rand, pools []string, n int) []updatev1alpha1.NodeStatusInsight {
	phases := []assess.Phase{assess.PhaseDraining, assess.PhaseUpdating, assess.PhaseRebooting, assess.PhasePaused, assess.PhasePending, assess.PhaseUpdated}
	status := func() metav1.ConditionStatus {
		return []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}[rng.IntN(3)]
	}
	out := make([]updatev1alpha1.NodeStatusInsight, n)
	for i := range out {
		// Few phases and pools, so that rows tie on rank and sort by name.
		name := fmt.Sprintf("node-%03d", rng.IntN(1000))
		for taken(out[:i], name) {
			name += "x"
		}
		pool := pools[rng.IntN(len(pools))]
		in := updatev1alpha1.NodeStatusInsight{
			Name:         name,
			PoolResource: updatev1alpha1.PoolResourceRef{ResourceRef: updatev1alpha1.ResourceRef{Name: pool}},
			ScopeType:    updatev1alpha1.ScopeTypeWorkerPool,
			Version:      []string{"4.18.1", "4.17.9", ""}[rng.IntN(3)],
			Message:      []string{"", "Node " + name + " is draining", "Disk pressure"}[rng.IntN(3)],
		}
		if pool == "master" {
			in.ScopeType = updatev1alpha1.ScopeTypeControlPlane
		}
		if r := rng.IntN(3); r > 0 {
			in.EstimatedToComplete = &metav1.Duration{Duration: time.Duration(r-1) * 7 * time.Minute}
		}
		if rng.IntN(20) > 0 {
			p := phases[rng.IntN(len(phases))]
			s := metav1.ConditionFalse
			if p.Updating() {
				s = metav1.ConditionTrue
			}
			in.Conditions = append(in.Conditions, metav1.Condition{Type: updatev1alpha1.ConditionUpdating, Status: s, Reason: string(p)})
		}
		if rng.IntN(10) > 0 {
			in.Conditions = append(in.Conditions, metav1.Condition{Type: updatev1alpha1.ConditionAvailable, Status: status(), Reason: updatev1alpha1.ReasonNodeNotReady})
		}
		if rng.IntN(10) > 0 {
			in.Conditions = append(in.Conditions, metav1.Condition{Type: updatev1alpha1.ConditionDegraded, Status: status(), Reason: updatev1alpha1.ReasonNodeMCDDegraded})
		}
		out[i] = in
	}
	return out
}

func taken(nodes []updatev1alpha1.NodeStatusInsight, name string) bool {
	for _, n := range nodes {
		if n.Name == name {
			return true
		}
	}
	return false
}
