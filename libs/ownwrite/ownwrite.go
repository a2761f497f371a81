// Package ownwrite lets a controller plan from its own writes while its
// informer cache still shows older versions of the objects it wrote.
//
// A controller's write is followed by events that start its next pass
// within milliseconds, usually before the watch has brought the write back
// into the cache. Planning from the older copy decides again what the last
// pass decided: the write repeats (and loses on the resourceVersion), a
// create repeats, and an Event of a transition is emitted twice. There are
// two ways out, one type each:
//
//   - Writes substitutes: the pass plans from the object as the controller
//     last wrote it. For objects a controller writes often and whole (its
//     own status, thousands of insights), where waiting would stall it.
//   - Expectations wait: the pass does not plan until the cache shows every
//     own create, update and delete; the watch event that shows the last
//     one wakes it. For controllers that take one decision at a time
//     (a machine replaced, a ClusterVersion patched) and for deletes, which
//     leave nothing to substitute.
//
// Writes' substitution is exact, not a guess about resourceVersion order:
// the cached copy is replaced only while it carries a resourceVersion that
// one of the controller's own writes went over. The API server accepted
// that write over it, so the write is newer. Writes come faster than their
// watch events under load, so the cache may be several own writes behind:
// every version replaced since the cache last caught up counts, and
// remembering only the last write's would take a cache showing an earlier
// own write for the truth. Any other version in the cache (the last write
// itself, or anything after it) is used as it is, and what was remembered
// is dropped.
package ownwrite

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MaxReplaced bounds what is remembered of a cache that never catches up;
// past it the chain starts again (a pass may then plan from a stale copy:
// a repeated write, which loses on the resourceVersion, never a lost one).
const MaxReplaced = 64

// Writes remembers a controller's own writes, per object. The zero value is
// ready to use, and safe for concurrent passes.
type Writes[T interface {
	comparable
	client.Object
}] struct {
	// Shared keeps and returns the written objects themselves instead of
	// copies, for a caller that never modifies an object it handed to Wrote
	// or got from Newest. It saves a copy per write and per lookup where
	// there are thousands of objects.
	Shared bool

	mu   sync.Mutex
	objs map[types.NamespacedName]chain[T]
}

type chain[T client.Object] struct {
	// replaced are the resourceVersions the writes went over since the
	// cache last showed a version none of them replaced.
	replaced map[string]bool
	// last is the last write, at the resourceVersion it left.
	last T
}

// Wrote records a write over resourceVersion over that left written (at the
// resourceVersion the API server answered). written is copied unless
// Shared.
//
// The writes of one object must be sequential (each sent after the
// previous one's answer): then a write also went over the version the
// previous one left, even when it was planned from an older one (over).
func (w *Writes[T]) Wrote(over string, written T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.objs == nil {
		w.objs = map[types.NamespacedName]chain[T]{}
	}
	key := client.ObjectKeyFromObject(written)
	c, ok := w.objs[key]
	if !ok || c.last.GetUID() != written.GetUID() || len(c.replaced) >= MaxReplaced {
		c = chain[T]{replaced: map[string]bool{}}
	} else {
		c.replaced[c.last.GetResourceVersion()] = true
	}
	c.replaced[over] = true
	c.last = w.copy(written)
	w.objs[key] = c
}

// Newest returns the object to plan from: a copy of the last write while
// cached is a version one of the writes replaced, or while the object is
// not cached yet (cached is nil: a write that created it); else cached, and
// what was remembered of key is dropped.
func (w *Writes[T]) Newest(key types.NamespacedName, cached T) T {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.objs[key]
	if !ok {
		return cached
	}
	var none T
	if cached == none || (c.replaced[cached.GetResourceVersion()] && cached.GetUID() == c.last.GetUID()) {
		return w.copy(c.last)
	}
	// The cache has the last write or something newer: it is the truth again.
	delete(w.objs, key)
	return cached
}

func (w *Writes[T]) copy(obj T) T {
	if w.Shared {
		return obj
	}
	return obj.DeepCopyObject().(T)
}

// Keys are the objects with writes remembered, in no particular order.
func (w *Writes[T]) Keys() []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]types.NamespacedName, 0, len(w.objs))
	for k := range w.objs {
		out = append(out, k)
	}
	return out
}

// Forget drops what is remembered of key: the object is gone, or the
// outcome of a write to it is unknown.
func (w *Writes[T]) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.objs, key)
}
