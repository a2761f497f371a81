package controller

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// applyStatus server-side applies obj's status as FieldManager. The types
// have no generated apply configurations, so obj goes through unstructured;
// it must carry apiVersion, kind and name, and every status field we own.
func applyStatus(ctx context.Context, c client.Client, obj client.Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	ac := client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u})
	return c.Status().Apply(ctx, ac, client.FieldOwner(FieldManager), client.ForceOwnership)
}

// nodeWriters bounds the concurrent NodeProgressInsight writes of one
// recomputation. When a pool moves a wave of nodes at once, writing their
// insights one after another would hold every insight of the wave back by
// the sum of the others' round trips; the client's QPS limit still applies.
const nodeWriters = 16

// publishNodes makes the NodeProgressInsights match the desired node
// insights: it creates the missing ones (owned by their Node, so they go when
// the Node goes), writes the status of those that changed, and deletes those
// of nodes that no longer have an insight.
func (r *Reconciler) publishNodes(ctx context.Context, published map[string]*updatev1alpha1.NodeProgressInsight,
	desired []updatev1alpha1.NodeStatusInsight, nodes []corev1.Node) error {
	nodeUIDs := make(map[string]metav1.OwnerReference, len(nodes))
	for i := range nodes {
		nodeUIDs[nodes[i].Name] = metav1.OwnerReference{
			APIVersion: "v1", Kind: "Node", Name: nodes[i].Name, UID: nodes[i].UID,
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(nodeWriters)
	keep := make(map[string]bool, len(desired))
	for i := range desired {
		insight := &desired[i]
		keep[insight.Name] = true
		pub := published[insight.Name]
		if pub != nil && equality.Semantic.DeepEqual(&pub.Status, insight) {
			continue
		}
		owner, nodeExists := nodeUIDs[insight.Name]
		if pub == nil && !nodeExists {
			continue // the node went away since the snapshot
		}
		g.Go(func() error { return r.publishNode(gctx, insight, pub == nil, owner) })
	}
	for name, pub := range published {
		if keep[name] {
			continue
		}
		g.Go(func() error {
			if err := r.Client.Delete(gctx, pub); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting NodeProgressInsight %s: %w", name, err)
			}
			writes.WithLabelValues("nodeprogressinsight").Inc()
			return nil
		})
	}
	return g.Wait()
}

// publishNode creates a node's insight if it is new, then applies its status.
func (r *Reconciler) publishNode(ctx context.Context, insight *updatev1alpha1.NodeStatusInsight, create bool, owner metav1.OwnerReference) error {
	if create {
		npi := &updatev1alpha1.NodeProgressInsight{ObjectMeta: metav1.ObjectMeta{
			Name: insight.Name, OwnerReferences: []metav1.OwnerReference{owner},
		}}
		if err := r.Client.Create(ctx, npi, client.FieldOwner(FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating NodeProgressInsight %s: %w", insight.Name, err)
		}
		writes.WithLabelValues("nodeprogressinsight").Inc()
	}
	npi := &updatev1alpha1.NodeProgressInsight{
		TypeMeta:   metav1.TypeMeta{APIVersion: updatev1alpha1.GroupVersion.String(), Kind: "NodeProgressInsight"},
		ObjectMeta: metav1.ObjectMeta{Name: insight.Name},
		Status:     *insight,
	}
	if err := applyStatus(ctx, r.Client, npi); err != nil {
		return fmt.Errorf("publishing NodeProgressInsight %s: %w", insight.Name, err)
	}
	writes.WithLabelValues("nodeprogressinsight").Inc()
	return nil
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
