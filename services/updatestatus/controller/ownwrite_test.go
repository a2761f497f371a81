package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

func statusAt(rv, note string) *updatev1alpha1.UpgradeStatus {
	return &updatev1alpha1.UpgradeStatus{ObjectMeta: metav1.ObjectMeta{Name: updatev1alpha1.UpgradeStatusName, ResourceVersion: rv,
		Annotations: map[string]string{"note": note}}}
}

// The cache may be several own writes behind: every version one of them
// went over stands for the last write, until the cache shows another.
func TestOwnWriteChain(t *testing.T) {
	var w ownWrite
	note := func(us *updatev1alpha1.UpgradeStatus) string { return us.Annotations["note"] }
	if got := w.newest(statusAt("1", "cached")); note(got) != "cached" {
		t.Fatalf("nothing written: got %q", note(got))
	}
	if got := w.newest(nil); got != nil {
		t.Fatalf("nothing written, nothing cached: got %v", got)
	}
	// Two writes before the cache shows either: over 1 (leaving 2), then,
	// planned on that write, over 2 (leaving 3).
	w.wrote("1", statusAt("2", "first"))
	w.wrote("2", statusAt("3", "second"))
	for _, rv := range []string{"1", "2"} {
		if got := w.newest(statusAt(rv, "cached")); note(got) != "second" {
			t.Fatalf("cache at %s, behind both writes: got %q, want the last write", rv, note(got))
		}
	}
	if got := w.newest(nil); note(got) != "second" {
		t.Fatalf("not cached yet: got %v, want the last write", got)
	}
	// The cache shows the last write: it is the truth again, and the chain
	// is dropped (an older version never comes back).
	if got := w.newest(statusAt("3", "cached")); note(got) != "cached" {
		t.Fatalf("cache at the last write: got %q", note(got))
	}
	if got := w.newest(statusAt("1", "cached")); note(got) != "cached" {
		t.Fatalf("chain kept after the cache caught up: got %q", note(got))
	}
	// A write whose outcome is unknown drops the chain.
	w.wrote("5", statusAt("6", "written"))
	w.forget()
	if got := w.newest(statusAt("5", "cached")); note(got) != "cached" {
		t.Fatalf("forgotten write still used: got %q", note(got))
	}
}
