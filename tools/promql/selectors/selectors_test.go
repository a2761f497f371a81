package selectors

import (
	"reflect"
	"strings"
	"testing"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []Selector
	}{
		{`up`, []Selector{{Metric: "up"}}},
		{`rate(controller_runtime_reconcile_errors_total{controller="updatestatus"}[5m]) > 0`,
			[]Selector{{Metric: "controller_runtime_reconcile_errors_total", Labels: []string{"controller"}}}},
		// Label lists of aggregations and vector matching are not metrics.
		{`sum by (pool, phase) (a_total) / on (pool) group_left (kind) sum without (instance) (b)`,
			[]Selector{{Metric: "a_total"}, {Metric: "b"}}},
		{`count by (pool) (x) > bool 1 unless y and z or w`,
			[]Selector{{Metric: "x"}, {Metric: "y"}, {Metric: "z"}, {Metric: "w"}}},
		{`histogram_quantile(0.99, sum by (le) (rate(d_bucket{job=~"a|b", le!="+Inf"}[5m])))`,
			[]Selector{{Metric: "d_bucket", Labels: []string{"job", "le"}}}},
		{"time() - max by (namespace, job) (last_timestamp_seconds) > 15 * 60\nand on (namespace, job)\n(max(updating) == 1)",
			[]Selector{{Metric: "last_timestamp_seconds"}, {Metric: "updating"}}},
		// Strings, offsets, @ modifiers, subqueries, exponents, Inf and NaN.
		// (An offset applies to a selector or a subquery, never to a call.)
		{`label_replace(m1{a='x,y}', b!~"z"} offset -5m, "dst", "$1", "src", "(.*)")`,
			[]Selector{{Metric: "m1", Labels: []string{"a", "b"}}}},
		{`max_over_time(deriv(m2[5m])[1h:1m] @ end()) + 1e-3 * 0x1f - Inf + NaN`,
			[]Selector{{Metric: "m2"}}},
		{`{__name__="named", pool="p"}`, []Selector{{Metric: "named", Labels: []string{"pool"}}}},
		{"vector(1) # a comment mentioning not_a_metric", nil},
		{"m3{a=`raw`}", []Selector{{Metric: "m3", Labels: []string{"a"}}}},
		{`absent(upshift_build_info{component="x", job="j"} == 1)`,
			[]Selector{{Metric: "upshift_build_info", Labels: []string{"component", "job"}}}},
	} {
		got, err := Of(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.expr, got, tc.want)
		}
	}
}

func TestOfRejects(t *testing.T) {
	for _, tc := range []struct{ expr, wantErr string }{
		{`sum(x`, "unclosed left parenthesis"},
		{`x)`, "unexpected right parenthesis"},
		{`x{a="b"`, "unexpected end of input"},
		{`rate(x[5m)`, "unexpected"},
		{`x{a}`, "unexpected"},
		{`x{a=b}`, "unexpected identifier"},
		{`sum by (a b) (x)`, "unexpected identifier"},
		{`"open`, "unterminated quoted string"},
		{`x ; y`, "unexpected character"},
		{`rate(x[$__rate_interval])`, "unexpected character"},
		{`no_such_function(x)`, "unknown function"},
		{`rate(x)`, "expected type range vector"},
		{`x{__name__="y"}`, "metric name must not be set twice"},
		{`{a=""}`, "vector selector must contain at least one non-empty matcher"},
		// Valid PromQL, but what it reads cannot be checked.
		{`{a="b"}`, "names no metric"},
		{`{__name__=~"up|down"}`, "matched by =~"},
		{`{__name__=~"up.*", job="x"}`, "matched by =~"},
	} {
		sels, err := Of(tc.expr)
		if err == nil {
			t.Errorf("%s: no error, got %+v", tc.expr, sels)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error %q, want it to say %q", tc.expr, err, tc.wantErr)
		}
	}
}
