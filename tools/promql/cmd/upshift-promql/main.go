// Command upshift-promql parses PromQL with Prometheus's own parser for the
// tests of the Go workspace, which cannot link Prometheus: its module would
// move the workspace's Kubernetes libraries (see docs/testing.md).
//
//	upshift-promql selectors < queries.json > selectors.json
//
// reads a JSON array of {"source", "expr"} and writes, in the same order, a
// JSON array of {"source", "selectors": [{"metric", "labels"}], "error"}:
// a query that does not parse, or whose selectors cannot be checked, carries
// the parser's error and no selectors. The exit status is 0 unless the input
// cannot be read.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/upshift-io/upshift/tools/promql/selectors"
)

type query struct {
	Source string `json:"source"`
	Expr   string `json:"expr"`
}

type result struct {
	Source    string               `json:"source"`
	Selectors []selectors.Selector `json:"selectors"`
	Error     string               `json:"error,omitempty"`
}

func main() {
	if len(os.Args) != 2 || os.Args[1] != "selectors" {
		fmt.Fprintln(os.Stderr, "usage: upshift-promql selectors < queries.json")
		os.Exit(2)
	}
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "upshift-promql:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	var queries []query
	dec := json.NewDecoder(in)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&queries); err != nil {
		return fmt.Errorf("reading the queries (a JSON array of {\"source\", \"expr\"}): %w", err)
	}
	results := make([]result, len(queries))
	for i, q := range queries {
		results[i].Source = q.Source
		sels, err := selectors.Of(q.Expr)
		if err != nil {
			results[i].Error = err.Error()
			continue
		}
		results[i].Selectors = sels
	}
	return json.NewEncoder(out).Encode(results)
}
