// Package cachestore reads a controller-runtime cache's informer stores
// directly. A component that reads thousands of cached objects of a kind on
// every pass (Nodes, insights) reads them here rather than listing them:
// even without the deep copy, a list copies every object's struct into the
// list's items (meta.SetList), and with the collection of those copies that
// was a tenth of a controller's CPU at 500 to 5,000 nodes. A store hands out
// the cached objects themselves, which the reader must never modify.
package cachestore

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Of is the store behind c's informer for obj's kind, which the
// controller's watch of that kind keeps synced before any pass runs. It
// does not wait for the cache to start. A kind cached per namespace (the
// cache's namespaced mode) has one informer per namespace and no store of
// its own: Of says so. Cluster-scoped kinds always have one.
func Of(c cache.Cache, obj client.Object) (toolscache.Store, error) {
	inf, err := c.GetInformer(context.Background(), obj, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("informer for %T: %w", obj, err)
	}
	withStore, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return nil, fmt.Errorf("the cache's informer for %T (%T) has no store to read", obj, inf)
	}
	return withStore.GetStore(), nil
}

// Items are the objects of a store of T, in no particular order.
func Items[T any](s toolscache.Store) []T {
	objs := s.List()
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}
