package ownwrite

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cacheView answers Get from a fixed set of ConfigMaps: the state of an
// informer cache at one instant. (Expectations only ever read one object by
// key; the reconcilers around them are tested against a real apiserver.)
type cacheView map[string]*corev1.ConfigMap

func (c cacheView) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	cm, ok := c[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	cm.DeepCopyInto(obj.(*corev1.ConfigMap))
	return nil
}

func (c cacheView) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("not used")
}

func cm(name, uid, rv string, deleting bool) *corev1.ConfigMap {
	o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), ResourceVersion: rv}}
	if deleting {
		o.DeletionTimestamp = &metav1.Time{}
	}
	return o
}

func TestExpectations(t *testing.T) {
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	written := cm("obj", "u1", "120", false)
	cases := []struct {
		name   string
		expect func(x *Expectations)
		view   cacheView
		at     time.Time
		// wantUnmet, wantExpired: number of expectations in each outcome.
		wantUnmet, wantExpired int
	}{
		{"a create the cache has not seen holds the plan", func(x *Expectations) { x.Created(written, now) },
			cacheView{}, now, 1, 0},
		{"a create seen at its version", func(x *Expectations) { x.Created(written, now) },
			cacheView{"obj": cm("obj", "u1", "120", false)}, now, 0, 0},
		{"an older version of an updated object holds the plan (numeric order, not text)", func(x *Expectations) { x.Updated(written, now) },
			cacheView{"obj": cm("obj", "u1", "99", false)}, now, 1, 0},
		{"a later version passes", func(x *Expectations) { x.Updated(written, now) },
			cacheView{"obj": cm("obj", "u1", "1000", false)}, now, 0, 0},
		{"an updated object deleted since passes", func(x *Expectations) { x.Updated(written, now) },
			cacheView{}, now, 0, 0},
		{"a create seen as a namesake does not pass", func(x *Expectations) { x.Created(written, now) },
			cacheView{"obj": cm("obj", "u2", "130", false)}, now, 1, 0},
		{"a create that met AlreadyExists passes on any version", func(x *Expectations) { x.Created(cm("obj", "", "", false), now) },
			cacheView{"obj": cm("obj", "u2", "5", false)}, now, 0, 0},
		{"a delete the cache has not seen holds the plan", func(x *Expectations) { x.Deleted(cm("obj", "u0", "", false), now) },
			cacheView{"obj": cm("obj", "u0", "100", false)}, now, 1, 0},
		{"a delete seen as a deletionTimestamp", func(x *Expectations) { x.Deleted(cm("obj", "u0", "", false), now) },
			cacheView{"obj": cm("obj", "u0", "101", true)}, now, 0, 0},
		{"a delete seen as absence", func(x *Expectations) { x.Deleted(cm("obj", "u0", "", false), now) },
			cacheView{}, now, 0, 0},
		{"a delete seen as a namesake", func(x *Expectations) { x.Deleted(cm("obj", "u0", "", false), now) },
			cacheView{"obj": cm("obj", "u9", "150", false)}, now, 0, 0},
		{"an expectation past its deadline is dropped and reported", func(x *Expectations) { x.Created(written, now) },
			cacheView{}, now.Add(DefaultTimeout), 0, 1},
		{"a later write of one object supersedes the earlier", func(x *Expectations) {
			x.Created(written, now)
			x.Updated(cm("obj", "u1", "121", false), now)
		}, cacheView{"obj": cm("obj", "u1", "120", false)}, now, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var x Expectations
			tc.expect(&x)
			p, err := x.Check(context.Background(), tc.view, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Unmet) != tc.wantUnmet || len(p.Expired) != tc.wantExpired || p.Met() != (tc.wantUnmet == 0) {
				t.Fatalf("unmet %v, expired %v; want %d unmet, %d expired", p.Unmet, p.Expired, tc.wantUnmet, tc.wantExpired)
			}
			if tc.wantUnmet > 0 && p.Wait != DefaultTimeout-tc.at.Sub(now) {
				t.Fatalf("wait %s, want the rest of the timeout", p.Wait)
			}
			// What was met or expired is gone; what is unmet stays.
			if p2, _ := x.Check(context.Background(), tc.view, tc.at); len(p2.Unmet) != tc.wantUnmet || len(p2.Expired) != 0 {
				t.Fatalf("second check: unmet %v, expired %v", p2.Unmet, p2.Expired)
			}
		})
	}
}

func TestExpectationsTimeout(t *testing.T) {
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	x := Expectations{Timeout: time.Second}
	x.Created(cm("obj", "u1", "7", false), now)
	if p, _ := x.Check(context.Background(), cacheView{}, now.Add(999*time.Millisecond)); p.Met() || p.Wait != time.Millisecond {
		t.Fatalf("within the timeout: %+v", p)
	}
	if p, _ := x.Check(context.Background(), cacheView{}, now.Add(time.Second)); !p.Met() || len(p.Expired) != 1 {
		t.Fatalf("at the timeout: %+v", p)
	}
}

// Unstructured objects keep their kind for the cache read and the message.
func TestExpectationsUnstructured(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "fileintegrity.openshift.io", Version: "v1alpha1", Kind: "FileIntegrity"})
	u.SetNamespace("ns")
	u.SetName("fi")
	u.SetResourceVersion("3")
	e := emptyOf(u).(*unstructured.Unstructured)
	if e.GetKind() != "FileIntegrity" || e.GetName() != "" {
		t.Fatalf("emptyOf: %v", e.Object)
	}
	var x Expectations
	x.Updated(u, time.Time{})
	for _, e := range x.pending {
		if got, want := e.String(), "FileIntegrity ns/fi at resourceVersion 3 or later"; got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

func TestAtLeast(t *testing.T) {
	for _, tc := range []struct {
		rv, min string
		want    bool
	}{
		{"5", "", true}, {"10", "9", true}, {"9", "10", false}, {"10", "10", true},
		{"abc", "abc", true}, {"abc", "abd", false},
	} {
		if got := AtLeast(tc.rv, tc.min); got != tc.want {
			t.Errorf("AtLeast(%q, %q) = %v, want %v", tc.rv, tc.min, got, tc.want)
		}
	}
}
