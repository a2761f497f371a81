package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

// ownWrites lets a pass read the run as this controller last wrote it when
// the cache has not caught up with that write yet.
//
// Every write to a run (its status before each action) is followed by
// events that start the next pass within milliseconds, usually before the
// watch has brought the write back into the cache. Planning on the older
// copy would decide again what the last pass decided, and its write would
// lose on the resourceVersion and wait conflictRetry: on a 500-node run
// that was most of the time between a node finishing and the next node
// starting.
//
// The substitution is exact, not a guess about resourceVersion order: the
// cached copy is replaced only while it still carries the very
// resourceVersion this controller's write replaced, which the API server
// accepted, so the written copy is newer. Any other version in the cache
// (the write itself, or anything after it) is used as it is.
type ownWrites struct {
	mu   sync.Mutex
	runs map[types.NamespacedName]ownWrite
}

type ownWrite struct {
	// replaced is the resourceVersion the write went over.
	replaced string
	run      *nodegatev1alpha1.MutexRunConfig
}

func (w *ownWrites) remember(replaced string, run *nodegatev1alpha1.MutexRunConfig) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.runs == nil {
		w.runs = map[types.NamespacedName]ownWrite{}
	}
	w.runs[types.NamespacedName{Namespace: run.Namespace, Name: run.Name}] = ownWrite{replaced: replaced, run: run.DeepCopy()}
}

// newest returns the run as last written by this controller when cached
// is the copy that write replaced, else cached.
func (w *ownWrites) newest(cached *nodegatev1alpha1.MutexRunConfig) *nodegatev1alpha1.MutexRunConfig {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := types.NamespacedName{Namespace: cached.Namespace, Name: cached.Name}
	own, ok := w.runs[key]
	if !ok {
		return cached
	}
	if cached.ResourceVersion == own.replaced && cached.UID == own.run.UID {
		return own.run.DeepCopy()
	}
	// The cache has the write or something newer: it is the truth again.
	delete(w.runs, key)
	return cached
}

// forget drops what is remembered of a run that is gone.
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.runs, key)
}
