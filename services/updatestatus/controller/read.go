package controller

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/cachestore"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
)

// readOnly lists objects straight from the informer cache, without the deep
// copy controller-runtime makes by default. The assessment never modifies
// its input, and nothing here does either.
var readOnly = client.UnsafeDisableDeepCopy

// publishedState is what the controller published before, as the cache has it.
type publishedState struct {
	status *updatev1alpha1.UpgradeStatus // nil before the first computation
	nodes  map[string]*updatev1alpha1.NodeProgressInsight
}

func (p publishedState) previous() *assess.Previous {
	prev := &assess.Previous{Nodes: make(map[string]*updatev1alpha1.NodeStatusInsight, len(p.nodes))}
	if p.status != nil {
		prev.Status = &p.status.Status
	}
	for name, npi := range p.nodes {
		prev.Nodes[name] = &npi.Status
	}
	return prev
}

func (r *Reconciler) published(ctx context.Context) (publishedState, error) {
	var p publishedState
	us := &updatev1alpha1.UpgradeStatus{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: updatev1alpha1.UpgradeStatusName}, us); {
	case err == nil:
		p.status = us
	case !apierrors.IsNotFound(err):
		return p, fmt.Errorf("reading UpgradeStatus: %w", err)
	}
	npis := cachestore.Items[*updatev1alpha1.NodeProgressInsight](r.insightStore)
	p.nodes = make(map[string]*updatev1alpha1.NodeProgressInsight, len(npis))
	for _, npi := range npis {
		p.nodes[npi.Name] = npi
	}
	return p, nil
}

// snapshot reads the assessment's input from the cache. A missing
// ClusterVersion is not an error here: the assessment says what it lacks.
func (r *Reconciler) snapshot(ctx context.Context) (assess.Snapshot, error) {
	s := assess.Snapshot{Now: r.Clock.Now()}
	cv := &configv1.ClusterVersion{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv); {
	case err == nil:
		s.ClusterVersion = cv
	case !apierrors.IsNotFound(err):
		return s, fmt.Errorf("reading ClusterVersion: %w", err)
	}
	cos := &configv1.ClusterOperatorList{}
	pools := &mcfgv1.MachineConfigPoolList{}
	mcs := &metav1.PartialObjectMetadataList{}
	mcs.SetGroupVersionKind(mcfgv1.GroupVersion.WithKind("MachineConfigList"))
	for _, l := range []client.ObjectList{cos, pools, mcs} {
		if err := r.Client.List(ctx, l, readOnly); err != nil {
			return s, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	s.ClusterOperators, s.MachineConfigPools = cos.Items, pools.Items
	runs, err := r.listRuns(ctx)
	if err != nil {
		return s, fmt.Errorf("listing node-gate's MutexRunConfigs: %w", err)
	}
	s.NodeGateRuns = runs
	s.Nodes = cachestore.Items[*corev1.Node](r.nodeStore)
	var known bool
	s.MCOImage, known = r.mcoImage(ctx, s.ClusterOperators)
	s.MCOImageUnknown = !known
	s.MachineConfigs = make([]mcfgv1.MachineConfig, len(mcs.Items))
	for i := range mcs.Items {
		s.MachineConfigs[i].ObjectMeta = mcs.Items[i].ObjectMeta
	}
	return s, nil
}

// Nodes and NodeProgressInsights, thousands of each, are read from their
// informers' stores (libs/cachestore) rather than listed: at 5,000 nodes
// the two lists' copies were a third of all the controller allocated and a
// tenth of its CPU.

// nodeOwner looks up the owner reference of the insight of a Node by name,
// as the informer's store has the Node; false when there is no such Node.
func (r *Reconciler) nodeOwner() func(name string) (metav1.OwnerReference, bool) {
	return func(name string) (metav1.OwnerReference, bool) {
		obj, exists, err := r.nodeStore.GetByKey(name) // a cluster-scoped object's key is its name
		n, ok := obj.(*corev1.Node)
		if err != nil || !exists || !ok {
			return metav1.OwnerReference{}, false
		}
		return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}, true
	}
}

// prototype reads key PrototypeKey of the prototype ConfigMap; nil when
// the ConfigMap does not exist or is not kept (no namespace).
func (r *Reconciler) prototype(ctx context.Context) (*prototypeState, error) {
	if r.Namespace == "" {
		return nil, nil
	}
	cm := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: PrototypeConfigMap}, cm)
	present := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", r.Namespace, PrototypeConfigMap, err)
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
		return nil, nil
	}
	return &prototypeState{value: cm.Data[PrototypeKey]}, nil
}
