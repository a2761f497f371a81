package controller

import (
	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/libs/runtime"
)

// ManagerOptions narrows the informers to what the planner reads, which is
// also what the chart's RBAC grants: the ControlPlaneMachineSet `cluster` and
// the Machines of openshift-machine-api only; of Nodes, only the role labels,
// the providerID and the Ready condition (the other nodes of a large cluster
// shrink to their name); of ClusterOperators, only the Degraded condition of
// etcd and kube-apiserver.
func ManagerOptions() runtime.Options {
	// The transforms replace the cache's default one for their type; each
	// drops managedFields too.
	return runtime.Options{Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
		&machinev1.ControlPlaneMachineSet{}: {Namespaces: map[string]cache.Config{
			Namespace: {FieldSelector: fields.OneTermEqualSelector("metadata.name", Name)},
		}},
		&machinev1beta1.Machine{}:   {Namespaces: map[string]cache.Config{Namespace: {}}},
		&corev1.Node{}:              {Transform: trimNode},
		&configv1.ClusterOperator{}: {Transform: trimClusterOperator},
	}}}
}

// controlPlaneRoleLabels are the Node labels the planner tells control-plane
// Nodes by.
var controlPlaneRoleLabels = []string{"node-role.kubernetes.io/master", "node-role.kubernetes.io/control-plane"}

// watchedOperators are the ClusterOperators the pre-flight checks read.
var watchedOperators = map[string]bool{"etcd": true, "kube-apiserver": true}

func trimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Generation:        m.Generation,
		CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp,
	}
}

// trimNode keeps the role labels, the providerID (a Node whose providerID
// matches a machine is that machine's before nodelink sets nodeRef) and the
// Ready condition without its heartbeat. A worker keeps only its identity.
func trimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	t := &corev1.Node{TypeMeta: n.TypeMeta, ObjectMeta: trimMeta(n.ObjectMeta)}
	for _, k := range controlPlaneRoleLabels {
		if v, ok := n.Labels[k]; ok {
			if t.Labels == nil {
				t.Labels = map[string]string{}
			}
			t.Labels[k] = v
		}
	}
	if t.Labels == nil {
		return t, nil
	}
	t.Spec.ProviderID = n.Spec.ProviderID
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			c.LastHeartbeatTime = metav1.Time{}
			t.Status.Conditions = []corev1.NodeCondition{c}
		}
	}
	return t, nil
}

// trimClusterOperator keeps the Degraded condition of the operators the
// pre-flight reads, and only the name of the others.
func trimClusterOperator(obj any) (any, error) {
	co, ok := obj.(*configv1.ClusterOperator)
	if !ok {
		return obj, nil
	}
	t := &configv1.ClusterOperator{TypeMeta: co.TypeMeta, ObjectMeta: trimMeta(co.ObjectMeta)}
	if !watchedOperators[co.Name] {
		return t, nil
	}
	for _, c := range co.Status.Conditions {
		if c.Type == configv1.OperatorDegraded {
			t.Status.Conditions = []configv1.ClusterOperatorStatusCondition{c}
		}
	}
	return t, nil
}
