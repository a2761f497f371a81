package ownwrite

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultTimeout is how long an expectation waits for the cache when
// Expectations.Timeout is not set.
const DefaultTimeout = 30 * time.Second

// Expectations hold a controller's next plan until its informer cache shows
// the controller's own last writes: a Machine it created, one it deleted, a
// ClusterVersion it patched. It is the expectations pattern of the
// ReplicaSet and cluster-api controllers, keyed by object, UID and
// resourceVersion. After each write the reconciler records what the cache
// must show; Check tells whether the cache shows it yet. The watch event
// that meets an expectation is also what wakes the reconciler, so nothing
// polls.
//
// Writes returns the written object to plan from instead; Expectations
// suit the writes that leave no object to substitute (a delete, a create
// that met AlreadyExists) and controllers that take one decision at a time.
//
// An expectation not met within Timeout is dropped and reported by Check:
// planning then goes ahead, and deterministic names (or UID preconditions)
// must turn a repeated create or delete into a harmless error.
//
// The zero value is ready to use and safe for concurrent reconcilers.
type Expectations struct {
	// Timeout bounds the wait for one write; DefaultTimeout when zero.
	Timeout time.Duration

	mu      sync.Mutex
	pending map[string]expectation
}

type expectation struct {
	obj      client.Object // an empty object of the kind, for the cache read
	key      types.NamespacedName
	uid      types.UID // the object written (empty: any)
	minRV    string    // the cache shows this resourceVersion or a later one (empty: any)
	gone     bool      // the cache shows the object deleting, replaced or absent
	absentOK bool      // an absent object meets a minRV expectation (deleted since)
	deadline time.Time
}

func (e expectation) String() string {
	kind := reflect.TypeOf(e.obj).Elem().Name()
	if u, ok := e.obj.(*unstructured.Unstructured); ok {
		kind = u.GetKind()
	}
	if e.gone {
		return fmt.Sprintf("%s %s (uid %s) deleting or gone", kind, e.key, e.uid)
	}
	if e.minRV == "" {
		return fmt.Sprintf("%s %s present", kind, e.key)
	}
	return fmt.Sprintf("%s %s at resourceVersion %s or later", kind, e.key, e.minRV)
}

// Created records a create: the cache must show created (its UID) at the
// resourceVersion the API server answered, or later. A create that met
// AlreadyExists passes created without UID and resourceVersion: then any
// version of the object meets it.
func (x *Expectations) Created(created client.Object, now time.Time) {
	x.put(expectation{obj: emptyOf(created), key: client.ObjectKeyFromObject(created), uid: created.GetUID(),
		minRV: created.GetResourceVersion(), deadline: now.Add(x.timeout())})
}

// Updated records an update or a patch: the cache must show updated at the
// resourceVersion the API server answered or later, or no longer show it
// (deleted since).
func (x *Expectations) Updated(updated client.Object, now time.Time) {
	x.put(expectation{obj: emptyOf(updated), key: client.ObjectKeyFromObject(updated), uid: updated.GetUID(),
		minRV: updated.GetResourceVersion(), absentOK: true, deadline: now.Add(x.timeout())})
}

// Deleted records a delete of the object with deleted's UID (any object of
// that name when the UID is empty): the cache must show it deleting, gone,
// or replaced by a namesake.
func (x *Expectations) Deleted(deleted client.Object, now time.Time) {
	x.put(expectation{obj: emptyOf(deleted), key: client.ObjectKeyFromObject(deleted), uid: deleted.GetUID(),
		gone: true, deadline: now.Add(x.timeout())})
}

func (x *Expectations) timeout() time.Duration {
	if x.Timeout > 0 {
		return x.Timeout
	}
	return DefaultTimeout
}

func (x *Expectations) put(e expectation) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.pending == nil {
		x.pending = map[string]expectation{}
	}
	// One expectation per object: a later write of it supersedes the earlier.
	x.pending[fmt.Sprintf("%T/%s", e.obj, e.key)] = e
}

// Pending is what Check found: the expectations the cache does not meet
// yet, and those dropped unmet past their deadline.
type Pending struct {
	// Unmet describes the writes the cache does not show yet, sorted.
	Unmet []string
	// Expired describes the writes dropped past their deadline, sorted:
	// worth a log line.
	Expired []string
	// Wait is how long until the last unmet expectation expires: the bound
	// of a requeue, in case the watch event never comes.
	Wait time.Duration
}

// Met reports whether the cache shows every own write: planning may go on.
func (p Pending) Met() bool { return len(p.Unmet) == 0 }

// Check drops the expectations the cache (c) meets and those past their
// deadline.
func (x *Expectations) Check(ctx context.Context, c client.Reader, now time.Time) (Pending, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out Pending
	for k, e := range x.pending {
		ok, err := e.met(ctx, c)
		if err != nil {
			return Pending{}, err
		}
		switch {
		case ok:
			delete(x.pending, k)
		case !now.Before(e.deadline):
			delete(x.pending, k)
			out.Expired = append(out.Expired, e.String())
		default:
			out.Unmet = append(out.Unmet, e.String())
			out.Wait = max(out.Wait, e.deadline.Sub(now))
		}
	}
	sort.Strings(out.Unmet)
	sort.Strings(out.Expired)
	return out, nil
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
	return AtLeast(obj.GetResourceVersion(), e.minRV), nil
}

// AtLeast reports whether resourceVersion rv is minRV or later (any rv when
// minRV is empty). Resource versions of an etcd-backed API server compare
// as numbers; where they do not parse, only equality can be known.
func AtLeast(rv, minRV string) bool {
	if minRV == "" {
		return true
	}
	cmp, err := resourceversion.CompareResourceVersion(rv, minRV)
	if err != nil {
		return rv == minRV
	}
	return cmp >= 0
}

// emptyOf is a new, empty object of obj's type (and kind, for unstructured
// objects), for reading it from a cache.
func emptyOf(obj client.Object) client.Object {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		e := &unstructured.Unstructured{}
		e.SetGroupVersionKind(u.GroupVersionKind())
		return e
	}
	return reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
}
