package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// barrier holds the next plan until the cache shows this process's own last
// writes — the planner trusts its snapshot to include its own decisions (a
// machine it created, one it deleted, the remediation budget it spent, the
// status it wrote). It is the expectations pattern of the ReplicaSet and
// cluster-api controllers, keyed by object and resourceVersion or UID:
// after each write the reconciler records what the cache must show, and
// Reconcile does not plan while an expectation is unmet. The watch event that
// meets it is also what wakes the reconciler, so nothing polls.
//
// An expectation that is not met within its timeout is dropped and logged:
// planning then goes ahead, and the planner's deterministic machine names
// turn a create it repeats into AlreadyExists instead of a second machine.
type barrier struct {
	mu      sync.Mutex
	pending map[string]expectation
}

type expectation struct {
	obj      client.Object // an empty object of the kind, for the cache read
	key      types.NamespacedName
	uid      types.UID // the object written (empty: any)
	minRV    string    // seen: the cache shows this resourceVersion or a later one (empty: any)
	gone     bool      // seen: the cache shows the object deleting, replaced or absent
	absentOK bool      // an absent object meets a minRV expectation (it was deleted since)
	deadline time.Time
}

func (e expectation) String() string {
	if e.gone {
		return fmt.Sprintf("%T %s (uid %s) deleting or gone", e.obj, e.key, e.uid)
	}
	return fmt.Sprintf("%T %s at resourceVersion %s or later", e.obj, e.key, e.minRV)
}

func expectKey(obj client.Object, key types.NamespacedName) string {
	return fmt.Sprintf("%T/%s", obj, key)
}

// expectSeen records that the cache must show written (returned by a write)
// at its resourceVersion or later. absentOK: an absent object counts (it was
// deleted since); otherwise absence means the cache has not seen the create.
func (b *barrier) expectSeen(empty, written client.Object, absentOK bool, now time.Time, timeout time.Duration) {
	key := client.ObjectKeyFromObject(written)
	b.put(expectKey(empty, key), expectation{obj: empty, key: key, uid: written.GetUID(), minRV: written.GetResourceVersion(), absentOK: absentOK, deadline: now.Add(timeout)})
}

// expectGone records that the cache must show the object uid as deleting or
// gone (or replaced by a namesake).
func (b *barrier) expectGone(empty client.Object, key types.NamespacedName, uid types.UID, now time.Time, timeout time.Duration) {
	b.put(expectKey(empty, key), expectation{obj: empty, key: key, uid: uid, gone: true, deadline: now.Add(timeout)})
}

func (b *barrier) put(k string, e expectation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending == nil {
		b.pending = map[string]expectation{}
	}
	b.pending[k] = e
}

// check drops the expectations the cache meets and those past their deadline
// (returned as expired, for the log). wait is how long until the last unmet
// one expires; zero when every expectation is met.
func (b *barrier) check(ctx context.Context, c client.Reader, now time.Time) (wait time.Duration, unmet, expired []string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, e := range b.pending {
		ok, err := e.met(ctx, c)
		if err != nil {
			return 0, nil, nil, err
		}
		switch {
		case ok:
			delete(b.pending, k)
		case !now.Before(e.deadline):
			delete(b.pending, k)
			expired = append(expired, e.String())
		default:
			unmet = append(unmet, e.String())
			if d := e.deadline.Sub(now); d > wait {
				wait = d
			}
		}
	}
	return wait, unmet, expired, nil
}

func (e expectation) met(ctx context.Context, c client.Reader) (bool, error) {
	obj := e.obj.DeepCopyObject().(client.Object)
	err := c.Get(ctx, e.key, obj)
	if apierrors.IsNotFound(err) {
		return e.gone || e.absentOK, nil
	}
	if err != nil {
		return false, err
	}
	if e.uid != "" && obj.GetUID() != e.uid {
		// Another object of that name: ours was deleted and replaced.
		return e.gone || e.absentOK, nil
	}
	if e.gone {
		return obj.GetDeletionTimestamp() != nil, nil
	}
	if e.minRV == "" {
		return true, nil // any version: the cache has the object
	}
	cmp, err := resourceversion.CompareResourceVersion(obj.GetResourceVersion(), e.minRV)
	if err != nil {
		// Not comparable (not an etcd-backed apiserver): equality is all
		// that can be known.
		return obj.GetResourceVersion() == e.minRV, nil
	}
	return cmp >= 0, nil
}
