package plan

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

// Only progress within a round the API server already stores may be written
// in the background.
func TestDeferrable(t *testing.T) {
	stored := nodegatev1alpha1.MutexRunConfigStatus{
		RunID: "r1", Phase: nodegatev1alpha1.RunProgressing,
		Pools: []nodegatev1alpha1.PoolRecord{{Name: "worker", GatePool: "worker-gate", TargetConfig: "rendered-worker-a", OriginalPaused: ptr.To(false)}},
		Nodes: []nodegatev1alpha1.NodeRecord{{Name: "n1", Pool: "worker", Phase: nodegatev1alpha1.NodePending}},
	}
	change := func(f func(*nodegatev1alpha1.MutexRunConfigStatus)) nodegatev1alpha1.MutexRunConfigStatus {
		st := *stored.DeepCopy()
		f(&st)
		return st
	}
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
