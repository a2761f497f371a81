package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// applyStatus server-side applies obj's status as FieldManager and returns
// the resourceVersion the write left.
func applyStatus(ctx context.Context, c client.Client, obj client.Object) (string, error) {
	u, err := asUnstructured(obj)
	if err != nil {
		return "", err
	}
	// The response is decoded into u.
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return "", err
	}
	return u.GetResourceVersion(), nil
}

// asUnstructured is obj to be applied. The types have no generated apply
// configurations, so obj goes through unstructured; it must carry
// apiVersion, kind and name, and every field the controller owns.
func asUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: u}, nil
}

// nodeWriters is the number of NodeProgressInsight writes in flight at
// once. When a pool moves a wave of nodes at once, writing their insights
// one after another would hold every insight of the wave back by the sum of
// the others' round trips. The client's QPS limit (150, burst 300, in the
// chart) is the bound that matters: at 16 writers a loaded apiserver's
// round trips held the first wave of a 5,000-node update (500 nodes) below
// it.
const nodeWriters = 64

// publishNode executes one node's write: one apply of the whole insight,
// or a delete when insight is nil. It returns the insight as written (nil
// after a delete), a new object: insight is not modified.
func publishNode(ctx context.Context, c client.Client, name string, insight *updatev1alpha1.NodeProgressInsight) (*updatev1alpha1.NodeProgressInsight, error) {
	if insight == nil {
		key := &updatev1alpha1.NodeProgressInsight{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Delete(ctx, key); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("deleting NodeProgressInsight %s: %w", name, err)
		}
		writes.WithLabelValues("nodeprogressinsight").Inc()
		return nil, nil
	}
	u, err := asUnstructured(insight)
	if err != nil {
		return nil, err
	}
	// The response is decoded into u.
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("publishing NodeProgressInsight %s: %w", name, err)
	}
	writes.WithLabelValues("nodeprogressinsight").Inc()
	written := *insight
	written.UID, written.ResourceVersion = u.GetUID(), u.GetResourceVersion()
	return &written, nil
}

// publishPrototype keeps key PrototypeKey of the prototype ConfigMap equal to
// the ClusterVersion insight as YAML, when that ConfigMap exists. It never
// creates the ConfigMap: a JSON merge patch fails on a missing object, where
// an apply would create it.
func (r *Reconciler) publishPrototype(ctx context.Context, cp *updatev1alpha1.ControlPlane) error {
	if r.Namespace == "" || cp == nil || cp.ClusterVersion == nil {
		return nil
	}
	cm := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: PrototypeConfigMap}, cm)
	present := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading ConfigMap %s/%s: %w", r.Namespace, PrototypeConfigMap, err)
	}
	if r.prototypeSeen == nil || *r.prototypeSeen != present {
		if present {
			log.FromContext(ctx).Info("prototype ConfigMap found; keeping its key current",
				"configMap", r.Namespace+"/"+PrototypeConfigMap, "key", PrototypeKey)
		} else {
			log.FromContext(ctx).Info("prototype ConfigMap does not exist; not writing it",
				"configMap", r.Namespace+"/"+PrototypeConfigMap)
		}
		r.prototypeSeen = &present
	}
	if !present {
		return nil
	}
	// sigs.k8s.io/yaml goes through JSON, so the keys are the API's JSON
	// field names (the old prototype's yaml.v3 names were a bug).
	value, err := yaml.Marshal(cp.ClusterVersion)
	if err != nil {
		return err
	}
	if cm.Data[PrototypeKey] == string(value) {
		return nil
	}
	before := cm.DeepCopy()
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[PrototypeKey] = string(value)
	if err := r.Client.Patch(ctx, cm, client.MergeFrom(before), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("updating ConfigMap %s/%s: %w", r.Namespace, PrototypeConfigMap, client.IgnoreNotFound(err))
	}
	writes.WithLabelValues("configmap").Inc()
	return nil
}
