package controller

import (
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func poolAt(name, rv string, paused bool) mcfgv1.MachineConfigPool {
	p := mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
	p.Spec.Paused = paused
	return p
}

// A pool node-gate wrote is read live until the cache shows the written
// version or one read since; pools not written come from the cache.
func TestPoolWrites(t *testing.T) {
	var w poolWrites
	live := map[string]mcfgv1.MachineConfigPool{}
	reads := 0
	get := func(name string) (*mcfgv1.MachineConfigPool, error) {
		reads++
		if p, ok := live[name]; ok {
			return &p, nil
		}
		return nil, nil
	}
	paused := func(pools []mcfgv1.MachineConfigPool) map[string]bool {
		out := map[string]bool{}
		for _, p := range pools {
			out[p.Name] = p.Spec.Paused
		}
		return out
	}
	cached := []mcfgv1.MachineConfigPool{poolAt("worker", "5", false), poolAt("infra", "6", false)}
	if got, _ := w.fresh(cached, get); len(got) != 2 || reads != 0 {
		t.Fatalf("nothing written: got %d pools after %d live reads", len(got), reads)
	}
	// node-gate paused worker (now at 7); the cache still shows 5.
	w.wrote("worker", "7")
	live["worker"] = poolAt("worker", "7", true)
	got, err := w.fresh(cached, get)
	if err != nil || !paused(got)["worker"] || paused(got)["infra"] || reads != 1 {
		t.Fatalf("lagging cache: paused %v, err %v, %d live reads", paused(got), err, reads)
	}
	// The MCO wrote the pool's status meanwhile (8): the cache that shows 7
	// is caught up with the write too.
	live["worker"] = poolAt("worker", "8", true)
	cached[0] = poolAt("worker", "7", true)
	if got, _ := w.fresh(cached, get); !paused(got)["worker"] || reads != 1 {
		t.Fatalf("cache at the written version: paused %v, %d live reads", paused(got), reads)
	}
	// A gate pool created but not yet cached is read live and added; once
	// the cache shows the version read, it is the cache's again.
	w.wrote("worker-gate", "9")
	live["worker-gate"] = poolAt("worker-gate", "10", true)
	got, _ = w.fresh(cached, get)
	if _, ok := paused(got)["worker-gate"]; !ok || reads != 2 {
		t.Fatalf("created pool missing: %v after %d live reads", paused(got), reads)
	}
	withGate := append(cached, poolAt("worker-gate", "10", true))
	if got, _ := w.fresh(withGate, get); len(got) != 3 || reads != 2 {
		t.Fatalf("cache at the version read: %d pools, %d live reads", len(got), reads)
	}
	// The cache never at the exact version read (the MCO's status writes
	// keep moving it) but showing the written spec: caught up all the same.
	w.wrote("worker", "20")
	live["worker"] = poolAt("worker", "22", false)
	lagging := []mcfgv1.MachineConfigPool{poolAt("worker", "21", false), withGate[1], withGate[2]}
	if got, _ := w.fresh(lagging, get); paused(got)["worker"] || reads != 3 {
		t.Fatalf("cache with the written spec: paused %v, %d live reads", paused(got), reads)
	}
	if got, _ := w.fresh(lagging, get); paused(got)["worker"] || reads != 3 {
		t.Fatalf("read live again once the cache showed the written spec: %d live reads", reads)
	}
	// A pool deleted by someone else while pending is dropped, not kept.
	w.wrote("infra", "11")
	delete(live, "infra")
	if got, _ := w.fresh(withGate, get); paused(got)["infra"] || len(got) != 2 {
		t.Fatalf("deleted pool kept: %v", paused(got))
	}
	if len(w.reach) != 0 {
		t.Fatalf("pending reads left: %v", w.reach)
	}
}
