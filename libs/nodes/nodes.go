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

// ControlPlaneRoleLabels are the labels that make a Node a control-plane
// node: OpenShift's older master role and the upstream control-plane role.
var ControlPlaneRoleLabels = []string{"node-role.kubernetes.io/master", "node-role.kubernetes.io/control-plane"}

// ControlPlane reports whether n carries a control-plane role label.
func ControlPlane(n *corev1.Node) bool { return HasControlPlaneRole(n.Labels) }

// HasControlPlaneRole reports whether a Node's labels carry a control-plane
// role.
func HasControlPlaneRole(labels map[string]string) bool {
	for _, l := range ControlPlaneRoleLabels {
		if _, ok := labels[l]; ok {
			return true
		}
	}
	return false
}
