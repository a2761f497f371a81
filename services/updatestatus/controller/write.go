package controller

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	updateac "github.com/upshift-io/upshift/api/update/v1alpha1/applyconfiguration/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/apply"
)

// The controller owns the whole UpgradeStatus status and the whole
// NodeProgressInsight (labels, owner reference, status): each write applies
// all of it, as a typed apply configuration (libs/apply), which a JSON round
// trip fills from the typed object. A field the API type gains is then
// written without a change here; one left out of an apply would be removed.

// asApplyConfiguration is the apply configuration holding in's fields: the
// JSON of in decoded into out.
func asApplyConfiguration[T any](in any, out *T) (*T, error) {
	data, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	return out, nil
}

// statusApplyConfiguration is the apply configuration of the UpgradeStatus
// name with status st.
func statusApplyConfiguration(name string, st *updatev1alpha1.UpgradeStatusStatus) (*updateac.UpgradeStatusApplyConfiguration, error) {
	sac, err := asApplyConfiguration(st, updateac.UpgradeStatusStatus())
	if err != nil {
		return nil, err
	}
	return updateac.UpgradeStatus(name).WithStatus(sac), nil
}

// insightApplyConfiguration is the apply configuration of insight: its
// name, labels, owner references and status.
func insightApplyConfiguration(insight *updatev1alpha1.NodeProgressInsight) (*updateac.NodeProgressInsightApplyConfiguration, error) {
	sac, err := asApplyConfiguration(&insight.Status, &updateac.NodeStatusInsightApplyConfiguration{})
	if err != nil {
		return nil, err
	}
	ac := updateac.NodeProgressInsight(insight.Name).WithLabels(insight.Labels).WithStatus(sac)
	for _, o := range insight.OwnerReferences {
		ac.WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion(o.APIVersion).WithKind(o.Kind).WithName(o.Name).WithUID(o.UID))
	}
	return ac, nil
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
func publishNode(ctx context.Context, c client.Client, m *Metrics, name string, insight *updatev1alpha1.NodeProgressInsight) (*updatev1alpha1.NodeProgressInsight, error) {
	if insight == nil {
		key := &updatev1alpha1.NodeProgressInsight{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Delete(ctx, key); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("deleting NodeProgressInsight %s: %w", name, err)
		}
		m.writes.WithLabelValues(kindInsight).Inc()
		return nil, nil
	}
	ac, err := insightApplyConfiguration(insight)
	if err != nil {
		return nil, err
	}
	// The response is decoded into ac.
	rv, err := apply.Object(ctx, c, ac, FieldManager)
	if err != nil {
		return nil, fmt.Errorf("publishing NodeProgressInsight %s: %w", name, err)
	}
	m.writes.WithLabelValues(kindInsight).Inc()
	written := *insight
	written.ResourceVersion = rv
	if uid := ac.ObjectMetaApplyConfiguration.UID; uid != nil {
		written.UID = *uid
	}
	return &written, nil
}

// applyUpgradeStatus applies obj's status; it returns the resourceVersion
// the write left.
func applyUpgradeStatus(ctx context.Context, c client.Client, m *Metrics, obj *updatev1alpha1.UpgradeStatus) (string, error) {
	ac, err := statusApplyConfiguration(obj.Name, &obj.Status)
	if err != nil {
		return "", err
	}
	rv, err := apply.Status(ctx, c, ac, FieldManager)
	if err != nil {
		return "", fmt.Errorf("publishing UpgradeStatus status: %w", err)
	}
	m.writes.WithLabelValues(kindStatus).Inc()
	return rv, nil
}

// writePrototype sets key PrototypeKey of the prototype ConfigMap to value.
// It never creates the ConfigMap: a JSON merge patch fails on a missing
// object, where an apply would create it. One deleted meanwhile is not an
// error: its deletion starts the next recomputation, which finds it absent.
func (r *Reconciler) writePrototype(ctx context.Context, value string) error {
	patch, err := json.Marshal(map[string]any{"data": map[string]string{PrototypeKey: value}})
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: PrototypeConfigMap}}
	if err := r.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("updating ConfigMap %s/%s: %w", r.Namespace, PrototypeConfigMap, err)
	}
	r.Metrics.writes.WithLabelValues(kindConfigMap).Inc()
	return nil
}
