package framework

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseQueries runs the real upshift-promql: each query's selectors,
// or its own error naming its source, in the order given.
func TestParseQueries(t *testing.T) {
	got, err := ParseQueries([]Query{
		{Source: "rule A", Expr: `max by (pool) (a_total{pool="w"}) == 1 unless on (pool) b`},
		{Source: "rule B", Expr: `sum(b`},
		{Source: "panel C", Expr: `{job="x"}`},
		{Source: "rule D", Expr: `vector(1)`},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("got %d results for 4 queries", len(got))
	}
	if want := []Selector{{Metric: "a_total", Labels: []string{"pool"}}, {Metric: "b"}}; got[0].Err != nil || !reflect.DeepEqual(got[0].Selectors, want) {
		t.Errorf("rule A: got %+v, %v; want %+v", got[0].Selectors, got[0].Err, want)
	}
	for i, want := range map[int]string{1: "rule B: 1:6: parse error: unclosed left parenthesis", 2: "panel C: {job=\"x\"} names no metric"} {
		if got[i].Err == nil || !strings.HasPrefix(got[i].Err.Error(), want) {
			t.Errorf("%s: error %v, want it to start %q", got[i].Source, got[i].Err, want)
		}
	}
	if got[3].Err != nil || len(got[3].Selectors) != 0 {
		t.Errorf("rule D: got %+v, %v; want no selector and no error", got[3].Selectors, got[3].Err)
	}
}

func TestExposition(t *testing.T) {
	text := `# HELP a_total Some help.
# TYPE a_total counter
a_total{kind="x",quote="a \"}\" b"} 3
a_total{kind="y"} 4
b 1
h_bucket{le="+Inf"} 2
`
	e, err := ParseExposition(text)
	if err != nil {
		t.Fatal(err)
	}
	want := Exposition{"a_total": {"kind": true, "quote": true}, "b": {}, "h_bucket": {"le": true}}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("got %v, want %v", e, want)
	}
	missing := e.Missing([]Selector{
		{Metric: "a_total", Labels: []string{"kind", "job", "pool"}},
		{Metric: "b"}, {Metric: "c"}, {Metric: "h_bucket", Labels: []string{"le"}},
	})
	if want := []string{"label pool on a_total", "metric c"}; !reflect.DeepEqual(missing, want) {
		t.Errorf("missing %v, want %v", missing, want)
	}
	if _, err := ParseExposition(`x{a="b} 1`); err == nil {
		t.Error("unclosed label value: no error")
	}
}

func TestExpositionMergeAndMissingFor(t *testing.T) {
	mid, err := ParseExposition(`step_info{name="a",step="X"} 1`)
	if err != nil {
		t.Fatal(err)
	}
	done, err := ParseExposition(`phase{name="a",phase="Upgraded"} 1`)
	if err != nil {
		t.Fatal(err)
	}
	queries := []Query{{Source: "rule A", Expr: `step_info{step!=""} == 1`}, {Source: "rule B", Expr: `sum by (phase) (phase)`}}
	if missing, err := done.MissingFor(queries); err != nil || len(missing) != 1 || missing[0] != "rule A: metric step_info" {
		t.Fatalf("one scrape: %v %v", missing, err)
	}
	done.Merge(mid)
	if missing, err := done.MissingFor(queries); err != nil || len(missing) != 0 {
		t.Fatalf("merged: %v %v", missing, err)
	}
	if _, err := done.MissingFor([]Query{{Source: "rule C", Expr: `1`}}); err == nil {
		t.Fatal("a query that selects no metric passed")
	}
	if _, err := done.MissingFor([]Query{{Source: "rule D", Expr: `phase{name="a"`}}); err == nil || !strings.Contains(err.Error(), "rule D") {
		t.Fatalf("a query that does not parse: %v", err)
	}
}
