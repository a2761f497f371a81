package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/upshift-io/upshift/libs/trim"
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

// nodeFields is what the cache keeps of a Node: what the assessment reads
// (assess.NodeAnnotations, assess.NodeConditions, every label and
// spec.unschedulable) and the identity the informer and the insights' owner
// references need. Images, volumes, addresses, nodeInfo, daemon endpoints,
// capacity, taints, managedFields, the other annotations and conditions and
// heartbeat times go: on a large cluster the cache of Nodes is most of the
// controller's memory. The strings that repeat from node to node are shared.
var nodeFields = trim.Node{
	Labels:        trim.All,
	Annotations:   trim.Only(assess.NodeAnnotations...),
	Conditions:    assess.NodeConditions,
	Unschedulable: true,
	Intern:        true,
}
