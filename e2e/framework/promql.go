package framework

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	"github.com/upshift-io/upshift/libs/testenv"
)

// EnvPromQL names the upshift-promql binary (tools/promql); the Makefile
// builds it and exports this variable.
const EnvPromQL = "UPSHIFT_PROMQL"

// Selector is one vector selector of a PromQL expression: the metric it
// selects and the label names it matches on.
type Selector struct {
	Metric string   `json:"metric"`
	Labels []string `json:"labels"`
}

// ParsedQuery is a query with what Prometheus's parser made of it: its
// selectors, or why they cannot be checked (a parse error, a selector that
// names no metric).
type ParsedQuery struct {
	Query
	Selectors []Selector
	Err       error
}

// ParseQueries parses every query with Prometheus's own PromQL parser and
// returns, in order, the selectors of each. The parser lives in
// upshift-promql, a module of its own outside the workspace: Prometheus's
// module would move the workspace's Kubernetes libraries. The error is for a
// tool that cannot run; a query that does not parse has its own Err.
func ParseQueries(queries []Query) ([]ParsedQuery, error) {
	bin, err := promqlBinary()
	if err != nil {
		return nil, err
	}
	type wireQuery struct {
		Source string `json:"source"`
		Expr   string `json:"expr"`
	}
	in := make([]wireQuery, len(queries))
	for i, q := range queries {
		in[i] = wireQuery(q)
	}
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "selectors")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(body), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s selectors: %w: %s", bin, err, stderr.String())
	}
	var results []struct {
		Source    string     `json:"source"`
		Selectors []Selector `json:"selectors"`
		Error     string     `json:"error"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &results); err != nil {
		return nil, fmt.Errorf("reading the output of %s: %w", bin, err)
	}
	if len(results) != len(queries) {
		return nil, fmt.Errorf("%s answered %d queries of %d", bin, len(results), len(queries))
	}
	out := make([]ParsedQuery, len(queries))
	for i, r := range results {
		out[i] = ParsedQuery{Query: queries[i], Selectors: r.Selectors}
		if r.Error != "" {
			out[i].Err = fmt.Errorf("%s: %s: %s", queries[i].Source, r.Error, queries[i].Expr)
		}
	}
	return out, nil
}

func promqlBinary() (string, error) {
	if b := os.Getenv(EnvPromQL); b != "" {
		return b, nil
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "bin", "upshift-promql")
	if _, err := os.Stat(bin); err != nil {
		return "", errors.New("upshift-promql not found: run `make promql` or set " + EnvPromQL)
	}
	return bin, nil
}

// Exposition is what a /metrics scrape exposes: every series name, with the
// label names seen on it.
type Exposition map[string]map[string]bool

// ParseExposition reads the Prometheus text format (ParseMetrics).
func ParseExposition(text string) (Exposition, error) {
	ms, err := ParseMetrics(text)
	if err != nil {
		return nil, err
	}
	out := Exposition{}
	for _, s := range ms {
		labels := out[s.Name]
		if labels == nil {
			labels = map[string]bool{}
			out[s.Name] = labels
		}
		for l := range s.Labels {
			labels[l] = true
		}
	}
	return out, nil
}

// Merge adds the series and labels of o: a suite that scrapes at several
// moments (mid-update, blocked, done) checks its queries against everything
// the component exported at any of them.
func (e Exposition) Merge(o Exposition) {
	for name, labels := range o {
		if e[name] == nil {
			e[name] = map[string]bool{}
		}
		for l := range labels {
			e[name][l] = true
		}
	}
}

// MissingFor lists, for each query, what its selectors need and the
// exposition lacks, prefixed with the query's source. A query that does not
// parse or selects no metric is an error: it could never be checked.
func (e Exposition) MissingFor(queries []Query) ([]string, error) {
	parsed, err := ParseQueries(queries)
	if err != nil {
		return nil, err
	}
	var out []string
	var errs []error
	for _, q := range parsed {
		switch {
		case q.Err != nil:
			errs = append(errs, q.Err)
		case len(q.Selectors) == 0:
			errs = append(errs, fmt.Errorf("%s selects no metric: %s", q.Source, q.Expr))
		}
		for _, m := range e.Missing(q.Selectors) {
			out = append(out, q.Source+": "+m)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Missing lists, for each selector the exposition cannot satisfy, what is
// missing: the metric, or a label the selector matches on.
func (e Exposition) Missing(sels []Selector) []string {
	var out []string
	for _, s := range sels {
		labels, ok := e[s.Metric]
		if !ok {
			out = append(out, "metric "+s.Metric)
			continue
		}
		for _, l := range s.Labels {
			// job, namespace, instance, pod... are the scraper's target
			// labels, never on the exposed series.
			if !labels[l] && !targetLabels[l] {
				out = append(out, fmt.Sprintf("label %s on %s", l, s.Metric))
			}
		}
	}
	sort.Strings(out)
	return out
}

var targetLabels = map[string]bool{"job": true, "namespace": true, "instance": true, "pod": true,
	"service": true, "endpoint": true, "container": true}
