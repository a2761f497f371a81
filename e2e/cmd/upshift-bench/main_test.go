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

// --leave-out takes the observers and node-gate, never the scheduler (it
// requests the update) or a name it does not know.
func TestLeaveOut(t *testing.T) {
	for flag, want := range map[string][]string{
		"":                                     {},
		"node-gate":                            {"node-gate"},
		"mcp-tracker,update-status-controller": {"mcp-tracker", "update-status-controller"},
	} {
		got, err := leftOut(flag)
		if err != nil {
			t.Errorf("%q: %v", flag, err)
			continue
		}
		if len(got) != len(want) {
			t.Errorf("%q: %v, want %v", flag, got, want)
		}
		for _, w := range want {
			if !got[w] {
				t.Errorf("%q: %s not left out", flag, w)
			}
		}
	}
	for _, flag := range []string{"upgrade-scheduler", "node-gate,cpms-controller", "nodegate", "node-gate,"} {
		if _, err := leftOut(flag); err == nil {
			t.Errorf("%q: accepted", flag)
		}
	}
}
