package plan

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

// changeOf returns a function that gives a copy of st changed by f.
func changeOf(st nodegatev1alpha1.MutexRunConfigStatus) func(f func(*nodegatev1alpha1.MutexRunConfigStatus)) nodegatev1alpha1.MutexRunConfigStatus {
	return func(f func(*nodegatev1alpha1.MutexRunConfigStatus)) nodegatev1alpha1.MutexRunConfigStatus {
		s := *st.DeepCopy()
		f(&s)
		return s
	}
}

// Only progress within a round the API server already stores may be written
// in the background.
func TestDeferrable(t *testing.T) {
	stored := nodegatev1alpha1.MutexRunConfigStatus{
		RunID: "r1", Phase: nodegatev1alpha1.RunProgressing,
		Pools: []nodegatev1alpha1.PoolRecord{{Name: "worker", GatePool: "worker-gate", TargetConfig: "rendered-worker-a", OriginalPaused: ptr.To(false)}},
		Nodes: []nodegatev1alpha1.NodeRecord{{Name: "n1", Pool: "worker", Phase: nodegatev1alpha1.NodePending}},
	}
	change := changeOf(stored)
	for _, tc := range []struct {
		name    string
		stored  nodegatev1alpha1.MutexRunConfigStatus
		decided nodegatev1alpha1.MutexRunConfigStatus
		want    bool
	}{
		{"a node's progress", stored, change(func(s *nodegatev1alpha1.MutexRunConfigStatus) {
			s.Nodes[0].Phase = nodegatev1alpha1.NodePreHooks
			s.Progress = "0/1"
		}), true},
		{"no round stored yet", change(func(s *nodegatev1alpha1.MutexRunConfigStatus) { s.RunID = "" }), stored, false},
		{"a new round", stored, change(func(s *nodegatev1alpha1.MutexRunConfigStatus) { s.RunID = "r2" }), false},
		{"another phase", stored, change(func(s *nodegatev1alpha1.MutexRunConfigStatus) { s.Phase = nodegatev1alpha1.RunPaused }), false},
		{"paused by a failure", stored, change(func(s *nodegatev1alpha1.MutexRunConfigStatus) { s.PausedGeneration = 3 }), false},
		{"a pool's target re-rendered", stored, change(func(s *nodegatev1alpha1.MutexRunConfigStatus) { s.Pools[0].TargetConfig = "rendered-worker-b" }), false},
		{"an original recorded", stored, change(func(s *nodegatev1alpha1.MutexRunConfigStatus) {
			s.Pools[0].OriginalMaxUnavailable = &nodegatev1alpha1.RecordedMaxUnavailable{}
		}), false},
		{"a drain's clock started", stored, change(func(s *nodegatev1alpha1.MutexRunConfigStatus) {
			s.Nodes[0].Drain = &commonv1alpha1.DrainRecord{Request: "drain-1"}
		}), false},
		{"a drain ended", change(func(s *nodegatev1alpha1.MutexRunConfigStatus) {
			s.Nodes[0].Drain = &commonv1alpha1.DrainRecord{Request: "drain-1"}
		}), change(func(s *nodegatev1alpha1.MutexRunConfigStatus) {
			s.Nodes[0].Drain = &commonv1alpha1.DrainRecord{Request: "drain-1", CompletionTime: &metav1.Time{}}
		}), false},
		{"a drain record dropped with its node", change(func(s *nodegatev1alpha1.MutexRunConfigStatus) {
			s.Nodes[0].Drain = &commonv1alpha1.DrainRecord{Request: "drain-1"}
		}), change(func(s *nodegatev1alpha1.MutexRunConfigStatus) { s.Nodes = nil }), false},
	} {
		if got := Deferrable(tc.stored, tc.decided); got != tc.want {
			t.Errorf("%s: Deferrable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// bare, and so sameRecord's fast path, must look at every field of a node
// record but its name, pool and phase: each other field set alone makes a
// record that is not bare, and that differs from the record without it
// both for sameRecord and for equality.Semantic.
func TestBareSeesEveryField(t *testing.T) {
	base := nodegatev1alpha1.NodeRecord{Name: "n1", Pool: "worker", Phase: nodegatev1alpha1.NodeCompleted}
	if !bare(&base) {
		t.Fatal("a record with only name, pool and phase is not bare")
	}
	typ := reflect.TypeOf(base)
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if f.Name == "Name" || f.Name == "Pool" || f.Name == "Phase" {
			continue
		}
		r := base
		v := reflect.ValueOf(&r).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
			if t, ok := v.Interface().(*metav1.Time); ok {
				*t = metav1.Unix(1, 0)
			}
		case reflect.Slice:
			v.Set(reflect.MakeSlice(f.Type, 1, 1))
		default:
			t.Fatalf("field %s of kind %s: teach this test (and bare) about it", f.Name, v.Kind())
		}
		if bare(&r) {
			t.Errorf("a record with %s set is bare", f.Name)
		}
		if sameRecord(&base, &r) || equality.Semantic.DeepEqual(&base, &r) {
			t.Errorf("a record with %s set is the same as one without", f.Name)
		}
		c := *r.DeepCopy()
		if !sameRecord(&r, &c) {
			t.Errorf("a record with %s set differs from its copy", f.Name)
		}
	}
}

// sameStatus agrees with equality.Semantic on statuses that differ in one
// record, in the number of records, or outside the records.
func TestSameStatus(t *testing.T) {
	st := nodegatev1alpha1.MutexRunConfigStatus{RunID: "r1", Progress: "1/3", Nodes: []nodegatev1alpha1.NodeRecord{
		{Name: "a", Pool: "worker", Phase: nodegatev1alpha1.NodeCompleted},
		{Name: "b", Pool: "worker", Phase: nodegatev1alpha1.NodeReleased, StartTime: &metav1.Time{Time: time.Unix(10, 0)}},
		{Name: "c", Pool: "worker", Phase: nodegatev1alpha1.NodePending},
	}}
	change := changeOf(st)
	for _, tc := range []struct {
		name  string
		other nodegatev1alpha1.MutexRunConfigStatus
	}{
		{"a copy", change(func(*nodegatev1alpha1.MutexRunConfigStatus) {})},
		{"the same time in another location", change(func(s *nodegatev1alpha1.MutexRunConfigStatus) {
			s.Nodes[1].StartTime = &metav1.Time{Time: time.Unix(10, 0).In(time.FixedZone("x", 3600))}
		})},
		{"empty hooks for none", change(func(s *nodegatev1alpha1.MutexRunConfigStatus) { s.Nodes[0].Hooks = []nodegatev1alpha1.HookRecord{} })},
		{"a bare record's phase", change(func(s *nodegatev1alpha1.MutexRunConfigStatus) { s.Nodes[2].Phase = nodegatev1alpha1.NodePreHooks })},
		{"a record's time", change(func(s *nodegatev1alpha1.MutexRunConfigStatus) {
			s.Nodes[1].StartTime = &metav1.Time{Time: time.Unix(11, 0)}
		})},
		{"a record fewer", change(func(s *nodegatev1alpha1.MutexRunConfigStatus) { s.Nodes = s.Nodes[:2] })},
		{"the progress", change(func(s *nodegatev1alpha1.MutexRunConfigStatus) { s.Progress = "2/3" })},
		{"no records for empty", change(func(s *nodegatev1alpha1.MutexRunConfigStatus) { s.Nodes = nil })},
	} {
		want := equality.Semantic.DeepEqual(&st, &tc.other)
		if got := sameStatus(&st, &tc.other); got != want {
			t.Errorf("%s: sameStatus = %v, equality.Semantic = %v", tc.name, got, want)
		}
	}
	if !sameStatus(&nodegatev1alpha1.MutexRunConfigStatus{}, &nodegatev1alpha1.MutexRunConfigStatus{Nodes: []nodegatev1alpha1.NodeRecord{}}) {
		t.Error("no records and an empty list differ")
	}
}
