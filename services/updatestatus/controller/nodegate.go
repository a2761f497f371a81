package controller

import (
	"context"
	"sync/atomic"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/trim"
)

// node-gate's runs are read when node-gate is installed, so that the pools
// a run pauses are reported as gated by it (assess/gates.go). The
// controller does not need node-gate: without its CRD there is nothing to
// read, and a watch of a kind the API server does not serve would keep the
// controller from starting. So the runs are watched from the start when
// their CRD is served, and otherwise from the moment it is established
// (node-gate's chart installed after this one): the controller watches that
// one CRD by name until then.

// RunsCRD is the name of node-gate's MutexRunConfig CRD.
const RunsCRD = "mutexrunconfigs." + "nodegate.upshift.io"

// nodeGateRuns follows whether the runs are watched.
type nodeGateRuns struct {
	ctl       controller.Controller
	mgr       ctrl.Manager
	toCluster handler.EventHandler
	// established is set when the CRD is seen established; watching once
	// the runs' watch is started (by the reconciler, never from an event
	// handler, which would block the controller's start).
	established, watching atomic.Bool
}

// setupNodeGate starts watching the runs now, or the CRD until it exists.
func (r *Reconciler) setupNodeGate(mgr ctrl.Manager, ctl controller.Controller, toCluster handler.EventHandler) error {
	r.runs = &nodeGateRuns{ctl: ctl, mgr: mgr, toCluster: toCluster}
	_, err := mgr.GetRESTMapper().RESTMapping(nodegatev1alpha1.GroupVersion.WithKind("MutexRunConfig").GroupKind(),
		nodegatev1alpha1.GroupVersion.Version)
	switch {
	case err == nil:
		r.runs.watching.Store(true)
		return ctl.Watch(source.Kind(mgr.GetCache(), client.Object(&nodegatev1alpha1.MutexRunConfig{}), toCluster))
	case !meta.IsNoMatchError(err):
		return err
	}
	log := mgr.GetLogger().WithName("updatestatus")
	log.Info("node-gate is not installed: watching for its CRD; until then no pool is reported as gated", "crd", RunsCRD)
	onCRD := func(o client.Object) {
		crd, ok := o.(*apiextensionsv1.CustomResourceDefinition)
		if ok && crd.Name == RunsCRD && crdEstablished(crd) {
			r.runs.established.Store(true)
		}
	}
	crdEvents := handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			onCRD(e.Object)
			q.Add(clusterRequest)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			onCRD(e.ObjectNew)
			q.Add(clusterRequest)
		},
	}
	return ctl.Watch(source.Kind(mgr.GetCache(), client.Object(&apiextensionsv1.CustomResourceDefinition{}), handler.EventHandler(crdEvents)))
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// list returns the runs, starting their watch first if their CRD has just
// been established; nil while node-gate is not installed.
func (n *nodeGateRuns) list(ctx context.Context, c client.Reader) ([]nodegatev1alpha1.MutexRunConfig, error) {
	if n == nil {
		return nil, nil
	}
	if !n.watching.Load() {
		if !n.established.Load() {
			return nil, nil
		}
		if err := n.ctl.Watch(source.Kind(n.mgr.GetCache(), client.Object(&nodegatev1alpha1.MutexRunConfig{}), n.toCluster)); err != nil {
			return nil, err
		}
		n.watching.Store(true)
		n.mgr.GetLogger().WithName("updatestatus").Info("node-gate is installed: reading its runs", "crd", RunsCRD)
	}
	runs := &nodegatev1alpha1.MutexRunConfigList{}
	if err := c.List(ctx, runs, readOnly); err != nil {
		return nil, err
	}
	return runs.Items, nil
}

// trimDefault is the cache's transform of the kinds ManagerOptions does not
// name: runs are trimmed (trimRun), the rest is kept.
func trimDefault(obj any) (any, error) {
	if run, ok := obj.(*nodegatev1alpha1.MutexRunConfig); ok {
		return trimRun(run), nil
	}
	return obj, nil
}

// trimRun is the cache transform of MutexRunConfigs: the assessment reads
// a run's namespace, name and status only.
func trimRun(in *nodegatev1alpha1.MutexRunConfig) *nodegatev1alpha1.MutexRunConfig {
	return &nodegatev1alpha1.MutexRunConfig{TypeMeta: in.TypeMeta, ObjectMeta: trim.Meta(in.ObjectMeta), Status: in.Status}
}
