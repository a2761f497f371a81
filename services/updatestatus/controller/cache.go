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
// prototype ConfigMap only (RBAC grants that one name only), and of each Node
// only the fields the assessment reads (trimNode).
func ManagerOptions(namespace string) runtime.Options {
	byObject := map[client.Object]cache.ByObject{
		// Replaces the cache's default transform for Nodes; trimNode drops
		// managedFields too.
		&corev1.Node{}: {Transform: trimNode},
	}
	if namespace != "" {
		byObject[&corev1.ConfigMap{}] = cache.ByObject{Namespaces: map[string]cache.Config{
			namespace: {FieldSelector: fields.OneTermEqualSelector("metadata.name", PrototypeConfigMap)},
		}}
	}
	return runtime.Options{Cache: cache.Options{ByObject: byObject}}
}
