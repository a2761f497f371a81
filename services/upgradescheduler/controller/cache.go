package controller

import (
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

// ManagerOptions narrows the informers to what the scheduler reads: its
// ConfigMap by name and the UpgradeConfigs in its namespace, MachineSets and
// Machines in openshift-machine-api only, and Nodes without their image
// lists. That is also what the chart's RBAC can grant by name and namespace.
func ManagerOptions(namespace string) runtime.Options {
	byObject := map[client.Object]cache.ByObject{
		&corev1.Node{}:                   {Transform: stripNode},
		&machinev1beta1.MachineSet{}:     {Namespaces: map[string]cache.Config{plan.MachineAPINamespace: {}}},
		&machinev1beta1.Machine{}:        {Namespaces: map[string]cache.Config{plan.MachineAPINamespace: {}}},
		&corev1.ConfigMap{}:              {Field: fields.OneTermEqualSelector("metadata.name", config.ConfigMapName)},
		&upgradev1alpha1.UpgradeConfig{}: {},
	}
	if namespace != "" {
		byObject[&corev1.ConfigMap{}] = cache.ByObject{Namespaces: map[string]cache.Config{
			namespace: {FieldSelector: fields.OneTermEqualSelector("metadata.name", config.ConfigMapName)},
		}}
		byObject[&upgradev1alpha1.UpgradeConfig{}] = cache.ByObject{Namespaces: map[string]cache.Config{namespace: {}}}
	}
	return runtime.Options{Cache: cache.Options{ByObject: byObject}}
}

// stripNode drops what the health checks never read (and managedFields,
// which the default transform would have dropped).
func stripNode(obj any) (any, error) {
	if n, ok := obj.(*corev1.Node); ok {
		n.ManagedFields = nil
		n.Status.Images = nil
	}
	return obj, nil
}
