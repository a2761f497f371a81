package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

func runAt(uid, rv, runID string) *nodegatev1alpha1.MutexRunConfig {
	return &nodegatev1alpha1.MutexRunConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "run", UID: types.UID(uid), ResourceVersion: rv},
		Status:     nodegatev1alpha1.MutexRunConfigStatus{RunID: runID},
	}
}

// A cached run is replaced by the last own write only while it is exactly
// the version that write replaced.
func TestOwnWrites(t *testing.T) {
	var w ownWrites
	if got := w.newest(runAt("u1", "10", "cached")); got.Status.RunID != "cached" {
		t.Fatalf("nothing written: got %q", got.Status.RunID)
	}
	w.remember("10", runAt("u1", "11", "written"))
	// The cache still holds the replaced version: the write is newer.
	if got := w.newest(runAt("u1", "10", "cached")); got.Status.RunID != "written" || got.ResourceVersion != "11" {
		t.Fatalf("stale cache: got %q at %s", got.Status.RunID, got.ResourceVersion)
	}
	// A run of the same name re-created (another UID) is never replaced.
	if got := w.newest(runAt("u2", "10", "recreated")); got.Status.RunID != "recreated" {
		t.Fatalf("other UID: got %q", got.Status.RunID)
	}
	// The recreated run's pass dropped the entry: the cache is truth again.
	if got := w.newest(runAt("u1", "10", "cached")); got.Status.RunID != "cached" {
		t.Fatalf("entry kept after the cache moved on: got %q", got.Status.RunID)
	}
	// Caught up (or newer): the cache wins and the entry goes.
	w.remember("20", runAt("u1", "21", "written"))
	if got := w.newest(runAt("u1", "22", "someone else")); got.Status.RunID != "someone else" {
		t.Fatalf("newer cache: got %q", got.Status.RunID)
	}
	if got := w.newest(runAt("u1", "20", "cached")); got.Status.RunID != "cached" {
		t.Fatalf("entry kept after the cache caught up: got %q", got.Status.RunID)
	}
	// The returned copy is the caller's to change.
	w.remember("30", runAt("u1", "31", "written"))
	w.newest(runAt("u1", "30", "")).Status.RunID = "changed"
	if got := w.newest(runAt("u1", "30", "")); got.Status.RunID != "written" {
		t.Fatalf("remembered copy changed by a caller: %q", got.Status.RunID)
	}
	w.forget(types.NamespacedName{Namespace: "ns", Name: "run"})
	if got := w.newest(runAt("u1", "30", "cached")); got.Status.RunID != "cached" {
		t.Fatalf("forgotten run still replaced: %q", got.Status.RunID)
	}
}
