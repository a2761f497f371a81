package runtime

import (
	"context"
	"errors"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// cacheSyncProbeWait bounds how long one /readyz request waits for the
// caches: well under the kubelet's default probe timeout of one second.
const cacheSyncProbeWait = 250 * time.Millisecond

// CacheSynced is a readiness check that passes once the cache has started
// and every informer in it has synced. Informers join the cache when a
// controller starts watching, which under leader election happens only on
// the leader: there the check fails again, briefly, right after election
// until the controllers' informers have listed everything. A standby replica
// is ready once its cache has started; readiness never waits for leadership,
// or a rolling update whose new pod must be ready before the old leader
// leaves would never finish.
func CacheSynced(c cache.Cache, wait time.Duration) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), wait)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("informer caches have not synced yet")
		}
		return nil
	}
}
