package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	in := `[{"source": "rule A", "expr": "max by (pool) (a{pool=\"w\"}) == 1"},
		{"source": "rule B", "expr": "sum(b"}]`
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	want := `[{"source":"rule A","selectors":[{"metric":"a","labels":["pool"]}]},` +
		`{"source":"rule B","selectors":null,"error":"1:6: parse error: unclosed left parenthesis"}]` + "\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestRunRefusesWhatItCannotRead(t *testing.T) {
	for _, in := range []string{``, `{"source": "x", "expr": "up"}`, `[{"query": "up"}]`} {
		if err := run(strings.NewReader(in), &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
