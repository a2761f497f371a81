package framework

import (
	"reflect"
	"testing"
)

func TestPromQLSelectors(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []Selector
	}{
		{`up`, []Selector{{Metric: "up"}}},
		{`rate(controller_runtime_reconcile_errors_total{controller="updatestatus"}[5m]) > 0`,
			[]Selector{{Metric: "controller_runtime_reconcile_errors_total", Labels: []string{"controller"}}}},
		// Aggregation label lists, before or after the argument, are not metrics.
		{`sum by (pool, phase) (a_total) / on (pool) group_left (kind) sum(b) without (instance)`,
			[]Selector{{Metric: "a_total"}, {Metric: "b"}}},
		{`count(x) by (pool) > bool 1 unless y and z or w`,
			[]Selector{{Metric: "x"}, {Metric: "y"}, {Metric: "z"}, {Metric: "w"}}},
		// Grafana variables in matchers and ranges; function names; numbers.
		{`histogram_quantile(0.99, sum by (le) (rate(d_bucket{job=~"$job", le!="+Inf"}[$__rate_interval])))`,
			[]Selector{{Metric: "d_bucket", Labels: []string{"job", "le"}}}},
		{"time() - max by (namespace, job) (last_timestamp_seconds) > 15 * 60\nand on (namespace, job)\n(max(updating) == 1)",
			[]Selector{{Metric: "last_timestamp_seconds"}, {Metric: "updating"}}},
		// Strings, offsets, @ modifiers, subqueries, exponents, Inf/NaN.
		{`label_replace(m1{a='x,y}', b!~"z"}, "dst", "$1", "src", "(.*)") offset -5m`,
			[]Selector{{Metric: "m1", Labels: []string{"a", "b"}}}},
		{`max_over_time(deriv(m2[5m])[1h:1m]) @ end() + 1e-3 * 0x1f - Inf + NaN`,
			[]Selector{{Metric: "m2"}}},
		{`{__name__="named", pool="p"}`, []Selector{{Metric: "named", Labels: []string{"pool"}}}},
		{`vector(1) # a comment mentioning not_a_metric`, nil},
		{`m3{a=` + "`raw`" + `}`, []Selector{{Metric: "m3", Labels: []string{"a"}}}},
	} {
		got, err := PromQLSelectors(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.expr, got, tc.want)
		}
	}
}

func TestPromQLSelectorsRejectsMalformed(t *testing.T) {
	for _, expr := range []string{
		`sum(x`, `x)`, `x{a="b"`, `x}`, `rate(x[5m)`, `x{a}`, `x{a=b}`, `x{a="b" c="d"}`,
		`sum by (a b`, `"open`, `x ; y`, `{a="b"}`, `x{__name__="y"}`,
	} {
		if sels, err := PromQLSelectors(expr); err == nil {
			t.Errorf("%s: no error, got %+v", expr, sels)
		}
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
}
