package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// SetupWithManagerObserved is SetupWithManager with the result of each
// reconcile the controller runs handed to observe, so that a spec sees the
// requeue the controller asked for.
func (r *Reconciler) SetupWithManagerObserved(mgr ctrl.Manager, observe func(reconcile.Result, error)) error {
	return r.setupWithManager(mgr, reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		observe(res, err)
		return res, err
	}))
}
