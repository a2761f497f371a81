package controller

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/clusterstatus"
	"github.com/upshift-io/upshift/services/aromonitor/metrics"
)

// StatusMetricsReconciler (master role) exports what the Cluster's status
// says: the status of every condition aro-monitor writes, when the checks
// that run once per cluster (credentials, NSG) last passed, and the client
// secret's expiry. Reading the status rather than each check's own outcome
// keeps one source of truth: the gauges say what ARO's resource provider
// reads, whichever replica or agent wrote it.
type StatusMetricsReconciler struct {
	Client  client.Client
	Metrics *metrics.Metrics
}

// ConditionTypes are the Cluster conditions aro-monitor writes.
var ConditionTypes = []string{
	arov1alpha1.InternetReachableFromMaster, arov1alpha1.InternetReachableFromWorker,
	arov1alpha1.ServicePrincipalValid, arov1alpha1.NSGAssociated, arov1alpha1.RemediationSuppressed,
}

// SetupWithManager watches the Cluster, status included.
func (r *StatusMetricsReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("status-metrics").
		For(&arov1alpha1.Cluster{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == arov1alpha1.SingletonName
		}))).
		Complete(r)
}

// Reconcile sets the gauges from the status.
func (r *StatusMetricsReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	cluster := &arov1alpha1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: arov1alpha1.SingletonName}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			// No Cluster, no conditions: nothing to alert on.
			for _, t := range ConditionTypes {
				r.Metrics.ConditionAbsent(t)
			}
			r.Metrics.SecretExpiry(nil)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	for _, t := range ConditionTypes {
		if c := clusterstatus.ConditionByType(cluster.Status.Conditions, t); c != nil {
			r.Metrics.Condition(t, string(c.Status))
		} else {
			r.Metrics.ConditionAbsent(t)
		}
	}
	for _, name := range []arov1alpha1.CheckName{arov1alpha1.CheckCredentials, arov1alpha1.CheckNSG} {
		if c := clusterstatus.FindCheck(cluster.Status.Checks, name); c.LastSuccessTime != nil {
			r.Metrics.Success(name, "", c.LastSuccessTime.Time)
		}
	}
	if cr := cluster.Status.Credentials; cr != nil && cr.ExpiresTime != nil {
		t := cr.ExpiresTime.Time
		r.Metrics.SecretExpiry(&t)
	} else {
		r.Metrics.SecretExpiry(nil)
	}
	return reconcile.Result{}, nil
}
