package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/optionalkind"
)

// node-gate's runs are read when node-gate is installed, so that the pools
// a run pauses are reported as gated by it (assess/gates.go). The
// controller does not need node-gate: libs/optionalkind watches the runs
// from the start when their CRD is served, and otherwise from the moment it
// is established (node-gate's chart installed after this one).

// setupNodeGate watches the runs, now or once node-gate is installed.
func (r *Reconciler) setupNodeGate(mgr ctrl.Manager, ctl controller.Controller, toCluster handler.EventHandler) error {
	var err error
	r.runs, err = optionalkind.Setup(mgr, ctl, &nodegatev1alpha1.MutexRunConfig{}, gating.RunsCRD, toCluster)
	return err
}

// listRuns returns the runs; nil while node-gate is not installed.
func (r *Reconciler) listRuns(ctx context.Context) ([]nodegatev1alpha1.MutexRunConfig, error) {
	if !r.runs.Watched() {
		return nil, nil
	}
	runs := &nodegatev1alpha1.MutexRunConfigList{}
	if err := r.Client.List(ctx, runs, readOnly); err != nil {
		return nil, err
	}
	return runs.Items, nil
}
