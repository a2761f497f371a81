package controller

import (
	"sort"
	"sync"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

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
