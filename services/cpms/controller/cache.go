package controller

import (
	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/nodes"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/libs/trim"
)

// ManagerOptions narrows the informers to what the planner reads, which is
// also what the chart's RBAC grants: the ControlPlaneMachineSet `cluster` and
// the Machines of openshift-machine-api only; of Nodes, only the role labels,
// the machine-config daemon's state, the providerID and the Ready condition
// (the other nodes of a large cluster shrink to their name); of
// ClusterOperators, only the Degraded condition of etcd and kube-apiserver;
// of ClusterVersion, only "version" and its Progressing condition.
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
		&configv1.ClusterVersion{}: {
			Field:     fields.OneTermEqualSelector("metadata.name", clusterVersionName),
			Transform: trimClusterVersion,
		},
	}}}
}

// watchedOperators are the ClusterOperators the pre-flight checks read.
var watchedOperators = map[string]bool{"etcd": true, "kube-apiserver": true}

// trimNode keeps, of control-plane Nodes, the role labels, the providerID
// (a Node whose providerID matches a machine is that machine's before
// nodelink sets nodeRef) and the Ready condition without its heartbeat. A
// worker keeps only its identity.
var trimNode = trim.Node{
	Keep:   nodes.ControlPlane,
	Labels: trim.Only(nodes.ControlPlaneRoleLabels...),
	// What tells that the MCO is updating the node (plan.mcoUpdating).
	Annotations: trim.Only(mcostate.MovingAnnotations...),
	Conditions:  []corev1.NodeConditionType{corev1.NodeReady},
	ProviderID:  true,
}.Transform()

// trimClusterOperator keeps the Degraded condition of the operators the
// pre-flight reads, and only the name of the others.
var trimClusterOperator = trim.Func(func(co *configv1.ClusterOperator) *configv1.ClusterOperator {
	t := &configv1.ClusterOperator{TypeMeta: co.TypeMeta, ObjectMeta: trim.Meta(co.ObjectMeta)}
	if !watchedOperators[co.Name] {
		return t
	}
	for _, c := range co.Status.Conditions {
		if c.Type == configv1.OperatorDegraded {
			t.Status.Conditions = []configv1.ClusterOperatorStatusCondition{c}
		}
	}
	return t
})

// clusterVersionName is the cluster's one ClusterVersion.
const clusterVersionName = "version"

// trimClusterVersion keeps the Progressing condition: the pre-flight holds
// a rollout while a cluster update is in progress.
var trimClusterVersion = trim.Func(func(cv *configv1.ClusterVersion) *configv1.ClusterVersion {
	t := &configv1.ClusterVersion{TypeMeta: cv.TypeMeta, ObjectMeta: trim.Meta(cv.ObjectMeta)}
	for _, c := range cv.Status.Conditions {
		if c.Type == configv1.OperatorProgressing {
			t.Status.Conditions = []configv1.ClusterOperatorStatusCondition{c}
		}
	}
	return t
})
