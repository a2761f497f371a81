package main

import (
	"slices"
	"testing"
)

// TestPick: a subcommand, or --component as `make bench BENCH_FLAGS=...`
// passes it, in any of the flag package's spellings.
func TestPick(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		sub      string
		rest     []string
		mustFail bool
	}{
		{args: nil, sub: "update-status", rest: []string{}},
		{args: []string{"--bin-dir", "bin", "--sweep=10,30"}, sub: "update-status", rest: []string{"--bin-dir", "bin", "--sweep=10,30"}},
		{args: []string{"node-gate", "--workers=50"}, sub: "node-gate", rest: []string{"--workers=50"}},
		{args: []string{"--bin-dir", "bin", "--component=mcp-tracker", "--workers=9"}, sub: "mcp-tracker", rest: []string{"--bin-dir", "bin", "--workers=9"}},
		{args: []string{"-component", "node-gate"}, sub: "node-gate", rest: []string{}},
		{args: []string{"--component=update-status-controller"}, sub: "update-status", rest: []string{}},
		{args: []string{"--component=system", "--pairs=3"}, sub: "system", rest: []string{"--pairs=3"}},
		{args: []string{"--component=cpms"}, mustFail: true},
		{args: []string{"cpms"}, mustFail: true},
		{args: []string{"--component"}, mustFail: true},
	} {
		s, rest, err := pick(tc.args)
		if tc.mustFail {
			if err == nil {
				t.Errorf("%v: picked %s", tc.args, s.name)
			}
			continue
		}
		if err != nil || s.name != tc.sub || !slices.Equal(rest, tc.rest) {
			t.Errorf("%v: %s %v %v, want %s %v", tc.args, s.name, rest, err, tc.sub, tc.rest)
		}
	}
}
