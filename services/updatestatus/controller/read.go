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

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
)

// readOnly lists objects straight from the informer cache, without the deep
// copy controller-runtime makes by default: every recomputation lists every
// Node, and on a large cluster copying them all would dominate its cost. The
// assessment never modifies its input, and nothing here does either.
var readOnly = client.UnsafeDisableDeepCopy

// publishedState is what the controller published before, as the cache has it.
type publishedState struct {
	status *updatev1alpha1.UpgradeStatus // nil before the first computation
	nodes  map[string]*updatev1alpha1.NodeProgressInsight
}

func (p publishedState) previous() *assess.Previous {
	prev := &assess.Previous{Nodes: make(map[string]updatev1alpha1.NodeStatusInsight, len(p.nodes))}
	if p.status != nil {
		prev.Status = &p.status.Status
	}
	for name, npi := range p.nodes {
		prev.Nodes[name] = npi.Status
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
	npis := &updatev1alpha1.NodeProgressInsightList{}
	if err := r.Client.List(ctx, npis, readOnly); err != nil {
		return p, fmt.Errorf("listing NodeProgressInsights: %w", err)
	}
	p.nodes = make(map[string]*updatev1alpha1.NodeProgressInsight, len(npis.Items))
	for i := range npis.Items {
		p.nodes[npis.Items[i].Name] = &npis.Items[i]
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
	nodes := &corev1.NodeList{}
	mcs := &metav1.PartialObjectMetadataList{}
	mcs.SetGroupVersionKind(mcfgv1.GroupVersion.WithKind("MachineConfigList"))
	for _, l := range []client.ObjectList{cos, pools, nodes, mcs} {
		if err := r.Client.List(ctx, l, readOnly); err != nil {
			return s, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	s.ClusterOperators, s.MachineConfigPools, s.Nodes = cos.Items, pools.Items, nodes.Items
	var known bool
	s.MCOImage, known = r.mcoImage(ctx, s.ClusterOperators)
	s.MCOImageUnknown = !known
	s.MachineConfigs = make([]mcfgv1.MachineConfig, len(mcs.Items))
	for i := range mcs.Items {
		s.MachineConfigs[i].ObjectMeta = mcs.Items[i].ObjectMeta
	}
	return s, nil
}
