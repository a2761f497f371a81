package nodes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestReady(t *testing.T) {
	node := func(conds ...corev1.NodeCondition) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: conds}}
	}
	for _, tc := range []struct {
		name string
		n    *corev1.Node
		want bool
	}{
		{"no conditions", node(), false},
		{"ready", node(corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}), true},
		{"not ready", node(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse}), false},
		{"unknown", node(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}), false},
	} {
		if got := Ready(tc.n); got != tc.want {
			t.Errorf("%s: Ready = %v, want %v", tc.name, got, tc.want)
		}
		if c := ReadyCondition(tc.n); (c != nil) != (tc.name != "no conditions") {
			t.Errorf("%s: ReadyCondition = %v", tc.name, c)
		}
	}
}
