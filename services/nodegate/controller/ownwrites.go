package controller

import (
	"sort"
	"sync"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
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
// cached copy is replaced only while it carries a resourceVersion that one
// of this controller's writes replaced, which the API server accepted, so
// the last written copy is newer. Writes come faster than their watch
// events under load, so the cache may be several own writes behind: every
// version replaced since the cache last caught up counts. Any other version
// in the cache (the last write itself, or anything after it) is used as it
// is, and the remembered writes are dropped.
type ownWrites struct {
	mu   sync.Mutex
	runs map[types.NamespacedName]ownWrite
}

type ownWrite struct {
	// replaced are the resourceVersions this controller's writes went over
	// since the cache last caught up.
	replaced map[string]bool
	run      *nodegatev1alpha1.MutexRunConfig
}

// maxReplaced bounds what is remembered of a cache that never catches up;
// past it the chain starts again (a pass may then read a stale copy, and its
// write lose on the resourceVersion: slower, never wrong).
const maxReplaced = 64

func (w *ownWrites) remember(replaced string, run *nodegatev1alpha1.MutexRunConfig) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.runs == nil {
		w.runs = map[types.NamespacedName]ownWrite{}
	}
	key := types.NamespacedName{Namespace: run.Namespace, Name: run.Name}
	own, ok := w.runs[key]
	if !ok || own.run.UID != run.UID || len(own.replaced) >= maxReplaced {
		own = ownWrite{replaced: map[string]bool{}}
	}
	own.replaced[replaced] = true
	own.run = run.DeepCopy()
	w.runs[key] = own
}

// newest returns the run as last written by this controller when cached
// is a copy one of its writes replaced, else cached.
func (w *ownWrites) newest(cached *nodegatev1alpha1.MutexRunConfig) *nodegatev1alpha1.MutexRunConfig {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := types.NamespacedName{Namespace: cached.Namespace, Name: cached.Name}
	own, ok := w.runs[key]
	if !ok {
		return cached
	}
	if own.replaced[cached.ResourceVersion] && cached.UID == own.run.UID {
		return own.run.DeepCopy()
	}
	// The cache has the last write or something newer: it is the truth again.
	delete(w.runs, key)
	return cached
}

// forget drops what is remembered of a run that is gone.
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.runs, key)
}

// poolWrites makes a pass read the MachineConfigPools node-gate itself
// wrote as they are since that write, not as a lagging cache still shows
// them.
//
// The planner decides from what it reads: a pass that paused a pool,
// followed by a pass whose cache still shows the pool unpaused, takes the
// pool for restored (unpaused, as it was before the run) and drops the
// recorded original; the pause then lands and the pool stays paused for
// good. So after each pool write the next passes read that pool from the
// API server until the cache shows the written version or a
// version read since: both are at least as new as the write.
type poolWrites struct {
	mu sync.Mutex
	// reach maps a pool to the resourceVersion the cache must show before
	// it is read from the cache again.
	reach map[string]string
}

// wrote records a write of pool that left it at resourceVersion rv.
func (w *poolWrites) wrote(pool, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reach == nil {
		w.reach = map[string]string{}
	}
	w.reach[pool] = rv
}

// deleted forgets a pool node-gate deleted: there is nothing to read back.
func (w *poolWrites) deleted(pool string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.reach, pool)
}

// fresh returns the pools to plan with: cached, except the pools written
// since the cache last caught up with them, which get reads live (a pool
// created but not yet cached is added; one gone meanwhile is dropped).
func (w *poolWrites) fresh(cached []mcfgv1.MachineConfigPool, get func(name string) (*mcfgv1.MachineConfigPool, error)) ([]mcfgv1.MachineConfigPool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.reach) == 0 {
		return cached, nil
	}
	out := make([]mcfgv1.MachineConfigPool, 0, len(cached)+len(w.reach))
	// readLive reads a pending pool from the API server in place of its
	// cached copy (old; nil: not in the cache yet).
	readLive := func(name string, old *mcfgv1.MachineConfigPool) error {
		live, err := get(name)
		if err != nil {
			return err
		}
		if live == nil {
			// Gone meanwhile: nothing to read back.
			delete(w.reach, name)
			return nil
		}
		w.reach[name] = live.ResourceVersion
		if old != nil && !poolViewChanged(old, live) {
			// The cache shows what the planner reads of the live pool
			// (only, say, the MCO's counters moved since): it has the
			// write, whatever version it is at.
			delete(w.reach, name)
		}
		out = append(out, *live)
		return nil
	}
	seen := map[string]bool{}
	for i := range cached {
		p := &cached[i]
		seen[p.Name] = true
		rv, pending := w.reach[p.Name]
		switch {
		case !pending:
			out = append(out, *p)
		case p.ResourceVersion == rv:
			delete(w.reach, p.Name)
			out = append(out, *p)
		default:
			if err := readLive(p.Name, p); err != nil {
				return nil, err
			}
		}
	}
	for name := range w.reach {
		if !seen[name] {
			if err := readLive(name, nil); err != nil {
				return nil, err
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
