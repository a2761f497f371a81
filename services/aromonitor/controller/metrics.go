package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/clusterstatus"
	"github.com/upshift-io/upshift/services/aromonitor/metrics"
)

// StatusMetricsReconciler (master role) exports what aro-monitor's record
// (the MonitorConfig's status) says: the status of every condition it
// decides, who owns each check, when the checks that run once per cluster
// (all but the egress checks) last passed, and the client secret's expiry. Reading
// the record rather than each check's own outcome keeps one source of
// truth, whichever replica or agent wrote it; ARO's types say what
// aro-monitor found, whether or not it is the one writing them to the
// Cluster.
type StatusMetricsReconciler struct {
	Client  client.Client
	Metrics *metrics.Metrics
}

// ConditionTypes are the conditions aro-monitor decides.
var ConditionTypes = []string{
	arov1alpha1.InternetReachableFromMaster, arov1alpha1.InternetReachableFromWorker,
	arov1alpha1.ServicePrincipalValid, arov1alpha1.MachineValid, arov1alpha1.DefaultIngressCertificate, arov1alpha1.DefaultClusterDNS,
	amv1alpha1.NSGAssociated, amv1alpha1.RemediationSuppressed, amv1alpha1.SubnetServiceEndpoints,
	amv1alpha1.DaemonSetsAvailable, amv1alpha1.PodsHealthy,
}

// Checks are aro-monitor's checks.
var Checks = []amv1alpha1.CheckName{amv1alpha1.CheckInternetMaster, amv1alpha1.CheckInternetWorker,
	amv1alpha1.CheckCredentials, amv1alpha1.CheckNSG, amv1alpha1.CheckMachines,
	amv1alpha1.CheckIngressCertificate, amv1alpha1.CheckClusterDNS, amv1alpha1.CheckDaemonSets, amv1alpha1.CheckPods}

// roundChecks are the checks that run once per cluster, whose last success
// is exported.
var roundChecks = []amv1alpha1.CheckName{amv1alpha1.CheckCredentials, amv1alpha1.CheckNSG, amv1alpha1.CheckMachines,
	amv1alpha1.CheckIngressCertificate, amv1alpha1.CheckClusterDNS, amv1alpha1.CheckDaemonSets, amv1alpha1.CheckPods}

// SetupWithManager watches the MonitorConfig, status included.
func (r *StatusMetricsReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("status-metrics").
		For(&amv1alpha1.MonitorConfig{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == amv1alpha1.SingletonName
		}))).
		Complete(r)
}

// Reconcile sets the gauges from the record.
func (r *StatusMetricsReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	mc := &amv1alpha1.MonitorConfig{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, mc); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	}
	// Without a MonitorConfig (not yet created, or deleted), nothing is
	// recorded: no condition to alert on.
	st := mc.Status
	for _, t := range ConditionTypes {
		if c := clusterstatus.ConditionByType(st.Conditions, t); c != nil {
			r.Metrics.Condition(t, string(c.Status))
		} else {
			r.Metrics.ConditionAbsent(t)
		}
	}
	for _, name := range Checks {
		r.Metrics.Ownership(name, clusterstatus.FindCheck(st.Checks, name).Ownership)
	}
	for _, name := range roundChecks {
		if c := clusterstatus.FindCheck(st.Checks, name); c.LastSuccessTime != nil {
			r.Metrics.Success(name, "", c.LastSuccessTime.Time)
		}
	}
	if cr := st.Credentials; cr != nil && cr.ExpiresTime != nil {
		t := cr.ExpiresTime.Time
		r.Metrics.SecretExpiry(&t)
	} else {
		r.Metrics.SecretExpiry(nil)
	}
	return reconcile.Result{}, nil
}
