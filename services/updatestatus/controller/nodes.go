package controller

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/upshift-io/upshift/services/updatestatus/assess"
)

// nodeChanged passes the Node updates the assessment can see (the fields
// assess.NodeAnnotations and assess.NodeConditions describe) and drops the
// rest: kubelet heartbeats, image lists, other annotations and conditions,
// which on a large cluster are most Node events.
var nodeChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Node)
	n, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return assessedNodeChanged(o, n)
}}

// assessedNodeChanged compares what the assessment reads of two Nodes.
func assessedNodeChanged(o, n *corev1.Node) bool {
	if o.UID != n.UID || o.Spec.Unschedulable != n.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(o.Labels, n.Labels) {
		return true
	}
	for _, k := range assess.NodeAnnotations {
		ov, ook := o.Annotations[k]
		nv, nok := n.Annotations[k]
		if ov != nv || ook != nok {
			return true
		}
	}
	for _, t := range assess.NodeConditions {
		oc, nc := findNodeCondition(o, t), findNodeCondition(n, t)
		if (oc == nil) != (nc == nil) {
			return true
		}
		if oc != nil && (oc.Status != nc.Status || oc.Reason != nc.Reason || oc.Message != nc.Message ||
			!oc.LastTransitionTime.Equal(&nc.LastTransitionTime)) {
			return true
		}
	}
	return false
}

func findNodeCondition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// trimNode is the cache transform of Nodes: it keeps what the assessment
// reads (and the identity the informer and the insights' owner references
// need) and drops the rest — images, volumes, addresses, nodeInfo, daemon
// endpoints, capacity, taints, managedFields, annotations and conditions the
// assessment does not read, and heartbeat times. On a large cluster the
// cache of Nodes is most of the controller's memory.
func trimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	t := &corev1.Node{
		TypeMeta: n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              n.Name,
			UID:               n.UID,
			ResourceVersion:   n.ResourceVersion,
			CreationTimestamp: n.CreationTimestamp,
			DeletionTimestamp: n.DeletionTimestamp,
			// Shared strings: most labels are the same on every node.
			Labels: internMap(n.Labels, n.Name),
		},
		Spec: corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable},
	}
	for _, k := range assess.NodeAnnotations {
		if v, ok := n.Annotations[k]; ok {
			if t.Annotations == nil {
				t.Annotations = make(map[string]string, len(assess.NodeAnnotations))
			}
			// k is the package's own string; the values (rendered
			// configs, states) are those of the pool's other nodes.
			t.Annotations[k] = intern(v)
		}
	}
	for _, c := range n.Status.Conditions {
		if slices.Contains(assess.NodeConditions, c.Type) {
			c.LastHeartbeatTime = metav1.Time{}
			c.Type, c.Status = corev1.NodeConditionType(intern(string(c.Type))), corev1.ConditionStatus(intern(string(c.Status)))
			c.Reason, c.Message = intern(c.Reason), intern(c.Message)
			t.Status.Conditions = append(t.Status.Conditions, c)
		}
	}
	return t, nil
}
