package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/optionalkind"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/libs/trim"
)

// PrototypeConfigMap is the ConfigMap of the CVO's update-status prototype
// that the controller keeps current when it exists, and its key.
const (
	PrototypeConfigMap = "status-api-cm-prototype"
	PrototypeKey       = "usc-cv-version"
)

// ManagerOptions narrows the informers to what the controller reads: the
// prototype ConfigMap only (RBAC grants that one name only), of each Node
// only the fields the assessment reads (nodeFields), and of each
// NodeProgressInsight what the plan compares (trimInsight).
func ManagerOptions(namespace string) runtime.Options {
	byObject := map[client.Object]cache.ByObject{
		// These replace the cache's default transform; both drop
		// managedFields too.
		&corev1.Node{}:                        {Transform: nodeFields.Transform()},
		&updatev1alpha1.NodeProgressInsight{}: {Transform: trim.Func(trimInsight)},
	}
	// Watched only until node-gate's CRD exists (nodegate.go); RBAC grants
	// that one name only.
	crd, crdEntry := optionalkind.CacheEntry(gating.RunsCRD)
	byObject[crd] = crdEntry
	if namespace != "" {
		byObject[&corev1.ConfigMap{}] = cache.ByObject{Namespaces: map[string]cache.Config{
			namespace: {FieldSelector: fields.OneTermEqualSelector("metadata.name", PrototypeConfigMap)},
		}}
	}
	// node-gate's runs are trimmed by the default transform (libs/gating).
	return runtime.Options{Cache: cache.Options{ByObject: byObject, DefaultTransform: trim.Func(gating.TrimRun)}}
}

// trimInsight is the cache transform of NodeProgressInsights. The controller
// reads of a published insight its name, its labels and its whole status
// (published, plan.go): it keeps those, with the identity the informer
// needs (trim.Meta), and drops the rest (managedFields, owner references,
// annotations). The status strings are shared between insights
// (trim.Intern): on a large cluster most nodes carry the same pool, phase,
// reasons and messages.
func trimInsight(in *updatev1alpha1.NodeProgressInsight) *updatev1alpha1.NodeProgressInsight {
	s := in.Status
	t := &updatev1alpha1.NodeProgressInsight{
		TypeMeta:   metav1.TypeMeta{APIVersion: trim.Intern(in.APIVersion), Kind: trim.Intern(in.Kind)},
		ObjectMeta: trim.Meta(in.ObjectMeta),
		Status: updatev1alpha1.NodeStatusInsight{
			Name:                sameAs(s.Name, in.Name),
			Resource:            internRef(s.Resource, in.Name),
			PoolResource:        updatev1alpha1.PoolResourceRef{ResourceRef: internRef(s.PoolResource.ResourceRef, "")},
			ScopeType:           updatev1alpha1.ScopeType(trim.Intern(string(s.ScopeType))),
			Version:             trim.Intern(s.Version),
			EstimatedToComplete: s.EstimatedToComplete,
			Message:             trim.Intern(s.Message),
		},
	}
	t.Labels = trim.InternMap(in.Labels, "")
	if s.Conditions != nil {
		t.Status.Conditions = make([]metav1.Condition, len(s.Conditions))
		for i, c := range s.Conditions {
			c.Type, c.Status = trim.Intern(c.Type), metav1.ConditionStatus(trim.Intern(string(c.Status)))
			c.Reason, c.Message = trim.Intern(c.Reason), trim.Intern(c.Message)
			t.Status.Conditions[i] = c
		}
	}
	return t
}

// internRef is r with shared strings; a name equal to self is self.
func internRef(r updatev1alpha1.ResourceRef, self string) updatev1alpha1.ResourceRef {
	return updatev1alpha1.ResourceRef{Group: trim.Intern(r.Group), Resource: trim.Intern(r.Resource), Name: sameAs(r.Name, self)}
}

// sameAs is self when s equals it (one string instead of two equal ones),
// else s's shared copy.
func sameAs(s, self string) string {
	if s == self {
		return self
	}
	return trim.Intern(s)
}
