package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
)

// ConfigFieldManager owns status.effectiveConfiguration.
const ConfigFieldManager = "aro-monitor-config"

// ConfigReconciler (master role) keeps the MonitorConfig that holds
// aro-monitor's record: it creates one, with every setting at its default,
// when there is none (the checks wait for it), and publishes the settings in
// force after ARO's flags as status.effectiveConfiguration.
type ConfigReconciler struct {
	Client client.Client
}

// SetupWithManager watches the MonitorConfig's spec (its creation and
// deletion too; not the checks' status writes) and the Cluster's spec
// (ARO's flags narrow the settings).
func (r *ConfigReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("config").
		Watches(&amv1alpha1.MonitorConfig{}, toCluster, specChanged()).
		Watches(&arov1alpha1.Cluster{}, toCluster, specChanged()).
		Complete(r)
}

// Reconcile creates the MonitorConfig if need be and writes the effective
// configuration when it changed.
func (r *ConfigReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	mc := &amv1alpha1.MonitorConfig{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, mc); {
	case apierrors.IsNotFound(err):
		// Created with an empty spec: the CRD's defaults fill it in, and
		// an administrator's later apply of their own settings merges.
		mc = &amv1alpha1.MonitorConfig{ObjectMeta: metav1.ObjectMeta{Name: amv1alpha1.SingletonName}}
		if err := r.Client.Create(ctx, mc); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, err
		}
		log.FromContext(ctx).Info("created the MonitorConfig to keep aro-monitor's record", "name", amv1alpha1.SingletonName)
		return reconcile.Result{}, nil // its creation is watched
	case err != nil:
		return reconcile.Result{}, err
	}
	snap, err := load(ctx, r.Client)
	if err != nil || snap == nil {
		return reconcile.Result{}, err
	}
	eff := snap.settings.Status()
	if equality.Semantic.DeepEqual(mc.Status.EffectiveConfiguration, eff) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, applyStatus(ctx, r.Client, ConfigFieldManager, amv1alpha1.MonitorConfigStatus{EffectiveConfiguration: eff})
}
