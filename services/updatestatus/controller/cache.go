package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/libs/runtime"
)

// PrototypeConfigMap is the ConfigMap of the CVO's update-status prototype
// that the controller keeps current when it exists, and its key.
const (
	PrototypeConfigMap = "status-api-cm-prototype"
	PrototypeKey       = "usc-cv-version"
)

// ManagerOptions narrows the informers to what the controller reads: the
// prototype ConfigMap only (RBAC grants that one name only), and Nodes without
// their image lists, the largest part of a Node that nobody here reads.
func ManagerOptions(namespace string) runtime.Options {
	byObject := map[client.Object]cache.ByObject{
		&corev1.Node{}: {Transform: stripNodeImages},
	}
	if namespace != "" {
		byObject[&corev1.ConfigMap{}] = cache.ByObject{Namespaces: map[string]cache.Config{
			namespace: {FieldSelector: fields.OneTermEqualSelector("metadata.name", PrototypeConfigMap)},
		}}
	}
	return runtime.Options{Cache: cache.Options{ByObject: byObject}}
}

// stripNodeImages replaces the cache's default transform for Nodes, so it
// drops managedFields too.
func stripNodeImages(obj any) (any, error) {
	if n, ok := obj.(*corev1.Node); ok {
		n.ManagedFields = nil
		n.Status.Images = nil
	}
	return obj, nil
}
