package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/runtime"
)

// PrototypeConfigMap is the ConfigMap of the CVO's update-status prototype
// that the controller keeps current when it exists, and its key.
const (
	PrototypeConfigMap = "status-api-cm-prototype"
	PrototypeKey       = "usc-cv-version"
)

// ManagerOptions narrows the informers to what the controller reads: the
// prototype ConfigMap only (RBAC grants that one name only), of each Node
// only the fields the assessment reads (trimNode), and of each
// NodeProgressInsight what the plan compares (trimInsight).
func ManagerOptions(namespace string) runtime.Options {
	byObject := map[client.Object]cache.ByObject{
		// These replace the cache's default transform; both drop
		// managedFields too.
		&corev1.Node{}:                        {Transform: trimNode},
		&updatev1alpha1.NodeProgressInsight{}: {Transform: trimInsight},
	}
	if namespace != "" {
		byObject[&corev1.ConfigMap{}] = cache.ByObject{Namespaces: map[string]cache.Config{
			namespace: {FieldSelector: fields.OneTermEqualSelector("metadata.name", PrototypeConfigMap)},
		}}
	}
	return runtime.Options{Cache: cache.Options{ByObject: byObject}}
}

// trimInsight is the cache transform of NodeProgressInsights. The controller
// reads of a published insight its name, its labels and its whole status
// (published, plan.go): it keeps those, with the identity the informer
// needs, and drops the rest (managedFields, owner references, annotations).
// The status strings are shared between insights (intern): on a large
// cluster most nodes carry the same pool, phase, reasons and messages.
func trimInsight(obj any) (any, error) {
	in, ok := obj.(*updatev1alpha1.NodeProgressInsight)
	if !ok {
		return obj, nil
	}
	s := in.Status
	t := &updatev1alpha1.NodeProgressInsight{
		TypeMeta: metav1.TypeMeta{APIVersion: intern(in.APIVersion), Kind: intern(in.Kind)},
		ObjectMeta: metav1.ObjectMeta{
			Name:              in.Name,
			UID:               in.UID,
			ResourceVersion:   in.ResourceVersion,
			CreationTimestamp: in.CreationTimestamp,
			DeletionTimestamp: in.DeletionTimestamp,
			Labels:            internMap(in.Labels, ""),
		},
		Status: updatev1alpha1.NodeStatusInsight{
			Name:                sameAs(s.Name, in.Name),
			Resource:            internRef(s.Resource, in.Name),
			PoolResource:        updatev1alpha1.PoolResourceRef{ResourceRef: internRef(s.PoolResource.ResourceRef, "")},
			ScopeType:           updatev1alpha1.ScopeType(intern(string(s.ScopeType))),
			Version:             intern(s.Version),
			EstimatedToComplete: s.EstimatedToComplete,
			Message:             intern(s.Message),
		},
	}
	if s.Conditions != nil {
		t.Status.Conditions = make([]metav1.Condition, len(s.Conditions))
		for i, c := range s.Conditions {
			c.Type, c.Status = intern(c.Type), metav1.ConditionStatus(intern(string(c.Status)))
			c.Reason, c.Message = intern(c.Reason), intern(c.Message)
			t.Status.Conditions[i] = c
		}
	}
	return t, nil
}

// internRef is r with shared strings; a name equal to self is self.
func internRef(r updatev1alpha1.ResourceRef, self string) updatev1alpha1.ResourceRef {
	return updatev1alpha1.ResourceRef{Group: intern(r.Group), Resource: intern(r.Resource), Name: sameAs(r.Name, self)}
}

// sameAs is self when s equals it (one string instead of two equal ones),
// else s's shared copy.
func sameAs(s, self string) string {
	if s == self {
		return self
	}
	return intern(s)
}
