package cachestore

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// Items hands out the stored objects themselves, of the type asked for.
func TestItemsAreTheStoredObjects(t *testing.T) {
	s := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	a := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	b := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	for _, n := range []*corev1.Node{a, b} {
		if err := s.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	got := Items[*corev1.Node](s)
	if len(got) != 2 || !slices.Contains(got, a) || !slices.Contains(got, b) {
		t.Fatalf("Items = %v, want the stored pointers a and b", got)
	}
	if other := Items[*corev1.Pod](s); len(other) != 0 {
		t.Fatalf("Items of another type = %v, want none", other)
	}
}
