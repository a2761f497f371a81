// Package apply writes with server-side apply, the way every Upshift
// component shares an object with another writer: each component applies
// only the fields it owns, under its own field manager, and forces
// ownership of them (by the single-writer rule nobody else writes them, so
// a conflict can only be a stale owner such as an earlier full update).
//
// The configurations are the typed apply configurations generated from the
// API types (api/<group>/v1alpha1/applyconfiguration, `make generate`);
// FromObject covers the types that have none.
package apply

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Status applies the status fields set in ac as manager, through the
// status subresource, and returns the resourceVersion the write left. ac
// names the object (apiVersion, kind, name, namespace) and sets only the
// manager's fields: a field the manager owned and ac leaves out is removed.
// The API server's answer is decoded into ac.
func Status(ctx context.Context, c client.Client, ac runtime.ApplyConfiguration, manager string) (string, error) {
	if err := c.Status().Apply(ctx, ac, client.FieldOwner(manager), client.ForceOwnership); err != nil {
		return "", err
	}
	return resourceVersion(ac)
}

// Object applies the fields set in ac as manager (for kinds without a
// status subresource, whose one writer sets the status with the rest), and
// returns the resourceVersion the write left.
func Object(ctx context.Context, c client.Client, ac runtime.ApplyConfiguration, manager string) (string, error) {
	if err := c.Apply(ctx, ac, client.FieldOwner(manager), client.ForceOwnership); err != nil {
		return "", err
	}
	return resourceVersion(ac)
}

// FromObject is an apply configuration of obj, for a type without
// generated ones. obj must carry apiVersion, kind, name (and namespace) and
// exactly the fields its writer owns: zero fields marked omitempty are left
// out, every other field is sent.
func FromObject(obj client.Object) (runtime.ApplyConfiguration, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	// The API server sets these; sent empty they would be refused or mean
	// "no precondition" by accident.
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	return client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u}), nil
}

// resourceVersion reads metadata.resourceVersion from an apply
// configuration the API server's answer was decoded into: a generated one
// (its ObjectMeta apply configuration's ResourceVersion) or FromObject's.
func resourceVersion(ac runtime.ApplyConfiguration) (string, error) {
	if u, ok := ac.(interface{ GetResourceVersion() string }); ok {
		return u.GetResourceVersion(), nil
	}
	v := reflect.ValueOf(ac)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		// The field is promoted from an embedded *ObjectMetaApplyConfiguration,
		// which is nil until something set metadata.
		if sf, ok := v.Type().FieldByName("ResourceVersion"); ok && sf.Type == reflect.TypeFor[*string]() {
			f, err := v.FieldByIndexErr(sf.Index)
			if err != nil || f.IsNil() {
				return "", nil
			}
			return f.Elem().String(), nil
		}
	}
	return "", fmt.Errorf("apply configuration %T has no resourceVersion", ac)
}
