package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cacheView answers Get from a fixed set of Machines: the state of an
// informer cache at one instant. (The barrier only ever reads one object by
// key; the reconciler around it is tested against a real apiserver.)
type cacheView map[string]*machinev1beta1.Machine

func (c cacheView) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	m, ok := c[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: "machine.openshift.io", Resource: "machines"}, key.Name)
	}
	m.DeepCopyInto(obj.(*machinev1beta1.Machine))
	return nil
}

func (c cacheView) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("not used")
}

func machine(name, uid, rv string, deleting bool) *machinev1beta1.Machine {
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, UID: types.UID(uid), ResourceVersion: rv}}
	if deleting {
		m.DeletionTimestamp = &metav1.Time{}
	}
	return m
}

func TestBarrier(t *testing.T) {
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	written := machine("c1-master-abcde-0", "u1", "120", false)
	cases := []struct {
		name   string
		expect func(b *barrier)
		view   cacheView
		at     time.Time
		// wantUnmet, wantExpired: number of expectations in each outcome.
		wantUnmet, wantExpired int
	}{
		{"a create the cache has not seen holds the plan", func(b *barrier) { b.expectSeen(&machinev1beta1.Machine{}, written, false, now, time.Minute) },
			cacheView{}, now, 1, 0},
		{"a create seen at its version", func(b *barrier) { b.expectSeen(&machinev1beta1.Machine{}, written, false, now, time.Minute) },
			cacheView{written.Name: machine(written.Name, "u1", "120", false)}, now, 0, 0},
		{"an older version of a patched object holds the plan (numeric order, not text)", func(b *barrier) { b.expectSeen(&machinev1beta1.Machine{}, written, true, now, time.Minute) },
			cacheView{written.Name: machine(written.Name, "u1", "99", false)}, now, 1, 0},
		{"a later version passes", func(b *barrier) { b.expectSeen(&machinev1beta1.Machine{}, written, true, now, time.Minute) },
			cacheView{written.Name: machine(written.Name, "u1", "1000", false)}, now, 0, 0},
		{"a patched object deleted since passes", func(b *barrier) { b.expectSeen(&machinev1beta1.Machine{}, written, true, now, time.Minute) },
			cacheView{}, now, 0, 0},
		{"a create seen as a namesake does not pass", func(b *barrier) { b.expectSeen(&machinev1beta1.Machine{}, written, false, now, time.Minute) },
			cacheView{written.Name: machine(written.Name, "other", "500", false)}, now, 1, 0},
		{"a create that met AlreadyExists passes on any version", func(b *barrier) {
			b.expectSeen(&machinev1beta1.Machine{}, machine(written.Name, "", "", false), false, now, time.Minute)
		}, cacheView{written.Name: machine(written.Name, "u0", "7", false)}, now, 0, 0},
		{"a delete the cache has not seen holds the plan", func(b *barrier) {
			b.expectGone(&machinev1beta1.Machine{}, client.ObjectKey{Namespace: Namespace, Name: "c1-master-0"}, "u0", now, time.Minute)
		}, cacheView{"c1-master-0": machine("c1-master-0", "u0", "5", false)}, now, 1, 0},
		{"a delete seen as a deletionTimestamp", func(b *barrier) {
			b.expectGone(&machinev1beta1.Machine{}, client.ObjectKey{Namespace: Namespace, Name: "c1-master-0"}, "u0", now, time.Minute)
		}, cacheView{"c1-master-0": machine("c1-master-0", "u0", "6", true)}, now, 0, 0},
		{"a delete seen as absence", func(b *barrier) {
			b.expectGone(&machinev1beta1.Machine{}, client.ObjectKey{Namespace: Namespace, Name: "c1-master-0"}, "u0", now, time.Minute)
		}, cacheView{}, now, 0, 0},
		{"an expectation past its deadline is dropped and reported", func(b *barrier) { b.expectSeen(&machinev1beta1.Machine{}, written, false, now, time.Minute) },
			cacheView{}, now.Add(time.Minute), 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b barrier
			tc.expect(&b)
			wait, unmet, expired, err := b.check(context.Background(), tc.view, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			if len(unmet) != tc.wantUnmet || len(expired) != tc.wantExpired {
				t.Fatalf("unmet %v, expired %v; want %d and %d", unmet, expired, tc.wantUnmet, tc.wantExpired)
			}
			if tc.wantUnmet > 0 && wait != time.Minute-tc.at.Sub(now) {
				t.Fatalf("wait %v, want the time left to the deadline", wait)
			}
			// What is met or expired is forgotten.
			if _, unmet2, expired2, _ := b.check(context.Background(), tc.view, tc.at); len(unmet2) != tc.wantUnmet || len(expired2) != 0 {
				t.Fatalf("second check: unmet %v, expired %v", unmet2, expired2)
			}
		})
	}
}
