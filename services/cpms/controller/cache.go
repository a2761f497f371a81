package controller

import (
	"context"
	"fmt"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/nodes"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/libs/trim"
	"github.com/upshift-io/upshift/services/cpms/plan"
	"github.com/upshift-io/upshift/services/cpms/platform"
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
		&configv1.Infrastructure{}: {
			Field:     fields.OneTermEqualSelector("metadata.name", platform.InfrastructureName),
			Transform: trimInfrastructure,
		},
		&appsv1.Deployment{}: {
			Namespaces: map[string]cache.Config{Namespace: {FieldSelector: fields.OneTermEqualSelector("metadata.name", CPMSOperatorDeployment)}},
			Transform:  trimDeployment,
		},
	}}}
}

// trimInfrastructure keeps the spec (vSphere and Nutanix failure domains
// are defined there, and the set names them), the infrastructure name (the
// default vSphere folder and template derive from it; the generator's
// cluster label) and the platform type (what the generator builds for).
var trimInfrastructure = trim.Func(func(i *configv1.Infrastructure) *configv1.Infrastructure {
	t := &configv1.Infrastructure{TypeMeta: i.TypeMeta, ObjectMeta: trim.Meta(i.ObjectMeta), Spec: i.Spec}
	t.Status.InfrastructureName = i.Status.InfrastructureName
	if ps := i.Status.PlatformStatus; ps != nil {
		t.Status.PlatformStatus = &configv1.PlatformStatus{Type: ps.Type}
	}
	return t
})

// WithARO adds to ManagerOptions the ARO Cluster `cluster`, trimmed to the
// operator flag that decides whether the ARO operator deletes an Active set
// (plan.AROCPMSFlag). Only on ARO (--aro): elsewhere the kind is not served.
func WithARO(o runtime.Options) runtime.Options {
	o.Cache.ByObject[&arov1alpha1.Cluster{}] = cache.ByObject{
		Field:     fields.OneTermEqualSelector("metadata.name", aroClusterName),
		Transform: trimAROCluster,
	}
	return o
}

// aroClusterName is ARO's one Cluster.
const aroClusterName = "cluster"

var trimAROCluster = trim.Func(func(c *arov1alpha1.Cluster) *arov1alpha1.Cluster {
	t := &arov1alpha1.Cluster{TypeMeta: c.TypeMeta, ObjectMeta: trim.Meta(c.ObjectMeta)}
	if v, ok := c.Spec.OperatorFlags[plan.AROCPMSFlag]; ok {
		t.Spec.OperatorFlags = map[string]string{plan.AROCPMSFlag: v}
	}
	return t
})

// aroCluster reads what the planner needs of ARO's Cluster.
func aroCluster(c *arov1alpha1.Cluster) *plan.AROCluster {
	// The ARO operator accepts only a literal true, in any case.
	return &plan.AROCluster{CPMSEnabled: strings.EqualFold(c.Spec.OperatorFlags[plan.AROCPMSFlag], "true")}
}

// CPMSOperatorDeployment is the Deployment of OpenShift's own
// control-plane-machine-set operator in the payload (namespace
// openshift-machine-api). Whether it runs chooses the plan.Mode.
const CPMSOperatorDeployment = "control-plane-machine-set-operator"

// trimDeployment keeps what tells whether the operator runs: the replicas
// asked for and those available.
var trimDeployment = trim.Func(func(d *appsv1.Deployment) *appsv1.Deployment {
	return &appsv1.Deployment{TypeMeta: d.TypeMeta, ObjectMeta: trim.Meta(d.ObjectMeta),
		Spec:   appsv1.DeploymentSpec{Replicas: d.Spec.Replicas},
		Status: appsv1.DeploymentStatus{AvailableReplicas: d.Status.AvailableReplicas}}
})

// getOptional reads key into obj; a nil T when the object does not exist
// (a cluster may have no ClusterVersion, Infrastructure, operator
// Deployment or ARO Cluster, and that is an answer, not an error).
func getOptional[T client.Object](ctx context.Context, c client.Reader, key client.ObjectKey, obj T) (T, error) {
	var none T
	if err := c.Get(ctx, key, obj); err != nil {
		return none, client.IgnoreNotFound(err)
	}
	return obj, nil
}

// readCPMSOperator reads what the cluster runs of the upstream operator
// (the reconciler's mode, the generator's go-ahead).
func readCPMSOperator(ctx context.Context, c client.Reader) (plan.CPMSOperator, error) {
	d, err := getOptional(ctx, c, client.ObjectKey{Namespace: Namespace, Name: CPMSOperatorDeployment}, &appsv1.Deployment{})
	if err != nil {
		return plan.CPMSOperator{}, err
	}
	return cpmsOperator(d), nil
}

// cpmsOperator reads what the cluster runs of the upstream operator from
// its Deployment (nil when there is none).
func cpmsOperator(d *appsv1.Deployment) plan.CPMSOperator {
	if d == nil {
		return plan.CPMSOperator{Description: fmt.Sprintf("no deployment %s/%s", Namespace, CPMSOperatorDeployment)}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	desc := fmt.Sprintf("deployment %s/%s: %d of %d replicas available", Namespace, CPMSOperatorDeployment, d.Status.AvailableReplicas, want)
	if d.DeletionTimestamp != nil {
		return plan.CPMSOperator{Description: fmt.Sprintf("deployment %s/%s is being deleted", Namespace, CPMSOperatorDeployment)}
	}
	return plan.CPMSOperator{Running: want > 0 || d.Status.AvailableReplicas > 0, Description: desc}
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
