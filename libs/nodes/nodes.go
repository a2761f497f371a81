// Package nodes answers the questions every component asks of a Node.
package nodes

import corev1 "k8s.io/api/core/v1"

// ReadyCondition is n's Ready condition, or nil when it has none (a node
// the kubelet has not reported on yet).
func ReadyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// Ready reports whether n's Ready condition is True. A node without one is
// not ready.
func Ready(n *corev1.Node) bool {
	c := ReadyCondition(n)
	return c != nil && c.Status == corev1.ConditionTrue
}
