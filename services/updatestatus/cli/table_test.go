package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apirest "k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/api/crds"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/render"
)

// TestTableRendersAsObjects is the property readReport rests on: for any set
// of node insights, the report rendered from the API server's table of them
// is the report rendered from the insights themselves. The rows come from
// the API server's own table code, fed the CRD's printer columns, as a real
// server would build them from the stored objects.
func TestTableRendersAsObjects(t *testing.T) {
	_, result := loadAssessed(t, "many-nodes")
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
	convert := crdTableConvertor(t)
	omitting := 0
	for seed := uint64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		nodes := randomNodes(rng, pools, rng.IntN(150))
		read, err := tableInsights(serverTable(t, convert, nodes))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, details := range []render.Details{render.DetailsNone, render.DetailsNodes, render.DetailsAll} {
			want := renderNodes(t, status, nodes, details)
			if got := renderNodes(t, status, read, details); got != want {
				t.Fatalf("seed %d, --details=%s: the report from the table differs from the report from the objects:\n--- objects\n%s\n--- table\n%s",
					seed, details, want, got)
			}
			if details == render.DetailsNone && strings.Contains(want, "Omitted additional") {
				omitting++
			}
		}
	}
	// Both the rows shown and the omitted counts must be exercised.
	if omitting < 150 {
		t.Fatalf("only %d of 300 seeds left nodes out of the report: the omitted counts were barely exercised", omitting)
	}
}

// crdTableConvertor is the API server's table convertor for the
// NodeProgressInsight CRD's printer columns.
func crdTableConvertor(t *testing.T) apirest.TableConvertor {
	t.Helper()
	data, err := fs.ReadFile(crds.FS, "update.upshift.io_nodeprogressinsights.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("the CRD has %d versions, want 1", len(crd.Spec.Versions))
	}
	convert, err := tableconvertor.New(crd.Spec.Versions[0].AdditionalPrinterColumns)
	if err != nil {
		t.Fatal(err)
	}
	return convert
}

// serverTable is the table an API server with convert sends for the node
// insights of nodes: each stored as JSON, the table built from the decoded
// objects, and sent as JSON again.
func serverTable(t *testing.T, convert apirest.TableConvertor, nodes []updatev1alpha1.NodeStatusInsight) *metav1.Table {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	for _, n := range nodes {
		stored, err := json.Marshal(&updatev1alpha1.NodeProgressInsight{
			TypeMeta:   metav1.TypeMeta{APIVersion: updatev1alpha1.GroupVersion.String(), Kind: "NodeProgressInsight"},
			ObjectMeta: metav1.ObjectMeta{Name: n.Name}, Status: n,
		})
		if err != nil {
			t.Fatal(err)
		}
		item := unstructured.Unstructured{}
		if err := item.UnmarshalJSON(stored); err != nil {
			t.Fatal(err)
		}
		list.Items = append(list.Items, item)
	}
	table, err := convert.ConvertToTable(context.Background(), list, &metav1.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	table.Kind, table.APIVersion = "Table", "meta.k8s.io/v1"
	sent, err := json.Marshal(table)
	if err != nil {
		t.Fatal(err)
	}
	got := &metav1.Table{}
	if err := json.Unmarshal(sent, got); err != nil {
		t.Fatal(err)
	}
	return got
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
	// The CRD's order: Age is not read.
	all := columns("Name", "Pool", "Phase", "Version", "Est", "Message", "Age", "Degraded", "Available", "Scope")
	reordered := columns("Scope", "Available", "Degraded", "Message", "Est", "Version", "Phase", "Pool", "Name")
	for _, c := range []struct {
		name    string
		table   metav1.Table
		want    []tableRow
		readAll bool
	}{
		{name: "the chart's columns", table: metav1.Table{ColumnDefinitions: all, Rows: []metav1.TableRow{
			{Cells: []any{"a", "worker", "Draining", "4.18.1", "7m0s", "Draining node", "5m", "False", "True", "WorkerPool"}},
			// Fields the insight lacks are null cells.
			{Cells: []any{"b", "infra", nil, nil, nil, nil, "5m", nil, "Unknown", "WorkerPool"}},
		}}, want: []tableRow{
			{"a", "worker", "WorkerPool", "Draining", "4.18.1", "7m0s", "Draining node", "False", "True"},
			{"b", "infra", "WorkerPool", "", "", "", "", "", "Unknown"},
		}},
		{name: "columns in another order", table: metav1.Table{ColumnDefinitions: reordered, Rows: []metav1.TableRow{
			{Cells: []any{"ControlPlane", "False", "True", "m", "0s", "4.18.2", "Completed", "master", "c"}},
		}}, want: []tableRow{{"c", "master", "ControlPlane", "Completed", "4.18.2", "0s", "m", "True", "False"}}},
		{name: "no rows", table: metav1.Table{ColumnDefinitions: all}, want: []tableRow{}},
		{name: "an older CRD, without Scope", table: metav1.Table{ColumnDefinitions: all[:9]}, readAll: true},
		{name: "an older CRD, without Degraded, Available and Scope", table: metav1.Table{ColumnDefinitions: all[:7]}, readAll: true},
		{name: "a short row", table: metav1.Table{ColumnDefinitions: all, Rows: []metav1.TableRow{{Cells: []any{"a", "worker"}}}}, readAll: true},
		{name: "a cell not a string", table: metav1.Table{ColumnDefinitions: all, Rows: []metav1.TableRow{
			{Cells: []any{"a", "worker", "Draining", "4.18.1", nil, "", "5m", int64(1), "True", "WorkerPool"}},
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

// TestInsightOf turns a row into the insight the report reads: the Updating
// condition's status follows from the phase, and an estimate that is not a
// duration sends the report to the full list rather than showing a wrong one.
func TestInsightOf(t *testing.T) {
	row := func(phase, est string) tableRow {
		return tableRow{"n", "worker", "WorkerPool", phase, "4.18.1", est, "msg", "", ""}
	}
	for _, c := range []struct {
		name     string
		row      tableRow
		updating metav1.ConditionStatus // "" for no Updating condition
		est      *metav1.Duration
		readAll  bool
	}{
		{name: "draining", row: row("Draining", "1h2m3.5s"), updating: metav1.ConditionTrue, est: &metav1.Duration{Duration: time.Hour + 2*time.Minute + 3500*time.Millisecond}},
		{name: "rebooting", row: row("Rebooting", "0s"), updating: metav1.ConditionTrue, est: &metav1.Duration{}},
		{name: "completed", row: row("Completed", ""), updating: metav1.ConditionFalse},
		{name: "paused", row: row("Paused", ""), updating: metav1.ConditionFalse},
		{name: "no phase", row: row("", "")},
		{name: "an estimate that is not a duration", row: row("Updating", "soon"), readAll: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := insightOf(c.row)
			if c.readAll {
				if !errors.Is(err, errReadAll) {
					t.Fatalf("got %v; want errReadAll", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := updatev1alpha1.NodeStatusInsight{Name: "n", Version: "4.18.1", Message: "msg", ScopeType: updatev1alpha1.ScopeTypeWorkerPool,
				PoolResource: updatev1alpha1.PoolResourceRef{ResourceRef: updatev1alpha1.ResourceRef{Name: "worker"}}, EstimatedToComplete: c.est}
			if c.updating != "" {
				want.Conditions = []metav1.Condition{{Type: updatev1alpha1.ConditionUpdating, Status: c.updating, Reason: c.row[colPhase]}}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
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
			// Messages as the controller writes them, and text a printer
			// column could mangle: lines, separators, quotes, braces.
			Message: []string{"", "Node " + name + " is draining", "Disk pressure",
				"Pod a/b cannot be evicted:\n  PDB \"c\" allows 0, {d}, ø", " spaced  out "}[rng.IntN(5)],
		}
		if pool == "master" {
			in.ScopeType = updatev1alpha1.ScopeTypeControlPlane
		}
		switch rng.IntN(4) {
		case 1:
			in.EstimatedToComplete = &metav1.Duration{}
		case 2:
			in.EstimatedToComplete = &metav1.Duration{Duration: time.Duration(rng.IntN(3)) * 7 * time.Minute}
		case 3:
			in.EstimatedToComplete = &metav1.Duration{Duration: time.Duration(rng.Int64N(int64(30 * time.Hour)))}
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
