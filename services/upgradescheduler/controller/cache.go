package controller

import (
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/optionalkind"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/libs/trim"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

// ManagerOptions narrows the informers to what the scheduler reads: its
// ConfigMap by name and the UpgradeConfigs in its namespace, ClusterVersion
// "version", MachineSets and Machines in openshift-machine-api only, and of
// Nodes, ClusterOperators and PodDisruptionBudgets (the cluster-wide lists
// that grow with the cluster) only the fields the planner reads. That is also
// what the chart's RBAC grants by name and namespace.
func ManagerOptions(namespace string) runtime.Options {
	byName := fields.OneTermEqualSelector("metadata.name", config.ConfigMapName)
	configMaps := cache.ByObject{Field: byName}
	upgradeConfigs := cache.ByObject{}
	if namespace != "" {
		configMaps = cache.ByObject{Namespaces: map[string]cache.Config{namespace: {FieldSelector: byName}}}
		upgradeConfigs = cache.ByObject{Namespaces: map[string]cache.Config{namespace: {}}}
	}
	// One entry per type: the keys are pointers, so a second entry for the
	// same type would be a second key, and which one the cache uses would
	// depend on map order (a cluster-wide watch the RBAC refuses).
	crd, crdEntry := optionalkind.CacheEntry(gating.RunsCRD)
	return runtime.Options{Cache: cache.Options{DefaultTransform: trim.Func(gating.TrimRun), ByObject: map[client.Object]cache.ByObject{
		// node-gate's run CRD by name, watched until node-gate is
		// installed; the runs themselves are trimmed by the default
		// transform (libs/gating).
		crd: crdEntry,
		// The transforms replace the cache's default one for their type;
		// each drops managedFields too.
		&corev1.Node{}:                  {Transform: nodeFields.Transform()},
		&configv1.ClusterOperator{}:     {Transform: trimClusterOperator},
		&policyv1.PodDisruptionBudget{}: {Transform: trimPDB},
		&configv1.ClusterVersion{}:      {Field: fields.OneTermEqualSelector("metadata.name", "version")},
		&machinev1beta1.MachineSet{}:    {Namespaces: map[string]cache.Config{plan.MachineAPINamespace: {}}},
		&machinev1beta1.Machine{}:       {Namespaces: map[string]cache.Config{plan.MachineAPINamespace: {}}},
		&corev1.ConfigMap{}:             configMaps,
		// The UpgradeConfigs keep their managedFields (a few objects): the
		// status write reads them to take over fields written by update.
		&upgradev1alpha1.UpgradeConfig{}: upgradeConfigs,
	}}}
}

// trimMeta keeps an object's identity and lifecycle (libs/trim) and its
// labels.
func trimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	t := trim.Meta(m)
	t.Labels = m.Labels
	return t
}

// nodeFields is what the health checks, the surge readiness check and the
// node predicate read of a Node: its labels, the MCO's state annotations,
// cordoning, the cordon and pressure taints, and the Ready condition.
// Images, capacity, addresses and the other conditions are most of a Node's
// size.
var nodeFields = trim.Node{
	Labels:        trim.All,
	Annotations:   trim.Only(plan.NodeAnnotations...),
	Conditions:    []corev1.NodeConditionType{corev1.NodeReady},
	Unschedulable: true,
	Taints:        plan.NodeTaints,
}

// trimClusterOperator keeps the conditions: the health check reads Degraded
// and Available; versions and related objects are not read.
func trimClusterOperator(obj any) (any, error) {
	co, ok := obj.(*configv1.ClusterOperator)
	if !ok {
		return obj, nil
	}
	return &configv1.ClusterOperator{
		TypeMeta:   co.TypeMeta,
		ObjectMeta: trimMeta(co.ObjectMeta),
		Status:     configv1.ClusterOperatorStatus{Conditions: co.Status.Conditions},
	}, nil
}

// trimPDB keeps the counts the drain-blocking check reads, the selector
// that tells which pods of a blocked drain it guards (plan/drains.go), and
// the bounds MUO's PreHealthCheck judges (plan/muohealth.go).
func trimPDB(obj any) (any, error) {
	pdb, ok := obj.(*policyv1.PodDisruptionBudget)
	if !ok {
		return obj, nil
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   pdb.TypeMeta,
		ObjectMeta: trimMeta(pdb.ObjectMeta),
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: pdb.Spec.Selector,
			MaxUnavailable: pdb.Spec.MaxUnavailable, MinAvailable: pdb.Spec.MinAvailable},
		Status: policyv1.PodDisruptionBudgetStatus{
			ObservedGeneration: pdb.Status.ObservedGeneration,
			DisruptionsAllowed: pdb.Status.DisruptionsAllowed,
			CurrentHealthy:     pdb.Status.CurrentHealthy,
			DesiredHealthy:     pdb.Status.DesiredHealthy,
			ExpectedPods:       pdb.Status.ExpectedPods,
		},
	}, nil
}
