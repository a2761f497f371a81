package main

import (
	"reflect"
	"testing"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/upshift-io/upshift/services/nodegate/plan"
)

// TestJobsCachedOnlyInJobNamespaces: one Job entry, with both the hook
// label selector and the namespaces. (An earlier version looked the Job
// entry up by a new pointer and added a second, cluster-wide one: which of
// the two the cache used depended on map order, and the cluster-wide
// informer, refused by the chart's RBAC, never synced.)
func TestJobsCachedOnlyInJobNamespaces(t *testing.T) {
	opts := cacheOptions("a, b", "own")
	jobs := 0
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*batchv1.Job); !ok {
			continue
		}
		jobs++
		if by.Label == nil || by.Label.String() != plan.RunLabel {
			t.Errorf("Job label selector %v, want %s (exists)", by.Label, plan.RunLabel)
		}
		if len(by.Namespaces) != 2 {
			t.Errorf("Job namespaces %v, want a and b", by.Namespaces)
		}
		if _, ok := by.Namespaces["a"]; !ok {
			t.Errorf("namespace a missing: %v", by.Namespaces)
		}
		if _, ok := by.Namespaces["b"]; !ok {
			t.Errorf("namespace b missing: %v", by.Namespaces)
		}
	}
	if jobs != 1 {
		t.Fatalf("%d Job entries in the cache options, want 1", jobs)
	}
	if got := jobNamespaceList("", "own"); len(got) != 1 || got[0] != "own" {
		t.Fatalf("default job namespaces %v, want [own]", got)
	}
}

func TestSplitList(t *testing.T) {
	if got := splitList(" worker, ,infra "); len(got) != 2 || got[0] != "worker" || got[1] != "infra" {
		t.Fatalf("splitList: %q", got)
	}
	if got := splitList(""); got != nil {
		t.Fatalf("empty flag: %q, want none (no restriction)", got)
	}
}

func TestParseRuleJobNamespaces(t *testing.T) {
	got, err := parseRuleJobNamespaces("team-a=hooks, batch; team-b=x;")
	if err != nil || !reflect.DeepEqual(got, map[string][]string{"team-a": {"hooks", "batch"}, "team-b": {"x"}}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if got, err := parseRuleJobNamespaces(""); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v, %v", got, err)
	}
	for _, bad := range []string{"team-a", "=hooks", "team-a=", "team-a=,"} {
		if _, err := parseRuleJobNamespaces(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
