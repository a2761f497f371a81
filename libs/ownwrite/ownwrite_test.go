package ownwrite

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var key = types.NamespacedName{Namespace: "ns", Name: "obj"}

func at(uid, rv, note string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: types.UID(uid), ResourceVersion: rv},
		Data: map[string]string{"note": note}}
}

func note(cm *corev1.ConfigMap) string {
	if cm == nil {
		return "<nil>"
	}
	return cm.Data["note"] + "@" + cm.ResourceVersion
}

func expect(t *testing.T, w *Writes[*corev1.ConfigMap], cached *corev1.ConfigMap, want, why string) {
	t.Helper()
	if got := note(w.Newest(key, cached)); got != want {
		t.Fatalf("%s: got %s, want %s", why, got, want)
	}
}

func TestNewest(t *testing.T) {
	var w Writes[*corev1.ConfigMap]
	expect(t, &w, at("u1", "1", "cached"), "cached@1", "nothing written")
	expect(t, &w, nil, "<nil>", "nothing written, nothing cached")

	// Two writes before the cache shows either: over 1 (leaving 2), then,
	// planned from that write, over 2 (leaving 3).
	w.Wrote("1", at("u1", "2", "first"))
	w.Wrote("2", at("u1", "3", "second"))
	expect(t, &w, at("u1", "1", "cached"), "second@3", "cache two writes behind")
	expect(t, &w, at("u1", "2", "cached"), "second@3", "cache one write behind")
	expect(t, &w, nil, "second@3", "not cached yet (the write created it)")
	// The cache shows the last write: it is the truth again, and the chain
	// is dropped (an older version never comes back).
	expect(t, &w, at("u1", "3", "cached"), "cached@3", "cache at the last write")
	expect(t, &w, at("u1", "1", "cached"), "cached@1", "chain kept after the cache caught up")

	// Anything newer than the last write wins too.
	w.Wrote("10", at("u1", "11", "written"))
	expect(t, &w, at("u1", "12", "someone else"), "someone else@12", "cache past the write")
	expect(t, &w, at("u1", "10", "cached"), "cached@10", "chain kept after the cache moved on")

	// An object of the same name re-created (another UID) is never replaced.
	w.Wrote("20", at("u1", "21", "written"))
	expect(t, &w, at("u2", "20", "recreated"), "recreated@20", "other UID")

	// A write whose outcome is unknown, or an object gone: forgotten.
	w.Wrote("30", at("u1", "31", "written"))
	w.Forget(key)
	expect(t, &w, at("u1", "30", "cached"), "cached@30", "forgotten write")
}

// Writes planned from a cache that showed none of them (each over the same
// cached version) still form a chain: each went over the one before it.
func TestWritesPlannedFromTheSameVersion(t *testing.T) {
	var w Writes[*corev1.ConfigMap]
	w.Wrote("1", at("u1", "2", "first"))
	w.Wrote("1", at("u1", "3", "second"))
	expect(t, &w, at("u1", "2", "cached"), "second@3", "cache at the first write")
	expect(t, &w, at("u1", "1", "cached"), "second@3", "cache before both")
	if keys := w.Keys(); len(keys) != 1 || keys[0] != key {
		t.Fatalf("Keys: got %v, want [%v]", keys, key)
	}
	expect(t, &w, at("u1", "3", "cached"), "cached@3", "cache at the last write")
	if keys := w.Keys(); len(keys) != 0 {
		t.Fatalf("Keys after the cache caught up: got %v, want none", keys)
	}
}

// What is remembered and what is returned are copies: neither the writer
// nor a planner changing its object changes the other's.
func TestCopies(t *testing.T) {
	var w Writes[*corev1.ConfigMap]
	written := at("u1", "2", "written")
	w.Wrote("1", written)
	written.Data["note"] = "changed by the writer"
	w.Newest(key, at("u1", "1", "")).Data["note"] = "changed by a planner"
	expect(t, &w, at("u1", "1", ""), "written@2", "remembered copy")
}

// Shared keeps and returns the objects themselves.
func TestShared(t *testing.T) {
	w := Writes[*corev1.ConfigMap]{Shared: true}
	written := at("u1", "2", "written")
	w.Wrote("1", written)
	if got := w.Newest(key, at("u1", "1", "")); got != written {
		t.Fatalf("got %p (%s), want the written object %p", got, note(got), written)
	}
}

// A cache that never catches up is remembered for MaxReplaced writes; then
// the chain starts again.
func TestMaxReplaced(t *testing.T) {
	var w Writes[*corev1.ConfigMap]
	for i := range MaxReplaced {
		w.Wrote(fmt.Sprint(i), at("u1", fmt.Sprint(i+1), "written"))
	}
	expect(t, &w, at("u1", "0", "cached"), fmt.Sprintf("written@%d", MaxReplaced), "within the bound")
	w.Wrote(fmt.Sprint(MaxReplaced), at("u1", fmt.Sprint(MaxReplaced+1), "written"))
	expect(t, &w, at("u1", "0", "cached"), "cached@0", "past the bound, the chain started again")
}
