// Package selectors lists the series a PromQL expression reads, from the
// syntax tree Prometheus's own parser builds: the tests use it to check that
// every metric and label a chart's alerts and dashboards query is one the
// component exports.
package selectors

import (
	"errors"
	"fmt"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Selector is one vector selector of an expression: the metric it selects
// and the names of the labels it matches on, in the order written.
type Selector struct {
	Metric string   `json:"metric"`
	Labels []string `json:"labels,omitempty"`
}

// promql parses with the functions and syntax a stock Prometheus accepts: an
// expression that needs an experimental feature flag is refused, since the
// Prometheus the charts are installed beside may not have it on.
var promql = parser.NewParser(parser.Options{})

// Of parses expr and returns its vector selectors, in the order they appear
// (those of range vectors and subqueries included). A selector that names no
// metric, or names it only by a regular expression, is an error: what it
// reads cannot be checked against what a component exports.
func Of(expr string) ([]Selector, error) {
	root, err := promql.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var out []Selector
	var errs []error
	parser.Inspect(root, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		sel, err := selectorOf(vs)
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		out = append(out, sel)
		return nil
	})
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func selectorOf(vs *parser.VectorSelector) (Selector, error) {
	sel := Selector{Metric: vs.Name}
	for _, m := range vs.LabelMatchers {
		if m.Name != model.MetricNameLabel {
			sel.Labels = append(sel.Labels, m.Name)
			continue
		}
		// The parser adds the metric name as a __name__ matcher; a name
		// given only as {__name__="x"} is the same selector.
		if m.Type != labels.MatchEqual {
			return Selector{}, fmt.Errorf("%s: the metric name is matched by %s, not named: its series cannot be checked", vs, m.Type)
		}
		sel.Metric = m.Value
	}
	if sel.Metric == "" {
		return Selector{}, fmt.Errorf("%s names no metric: its series cannot be checked", vs)
	}
	return sel, nil
}
