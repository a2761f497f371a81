package controller

import (
	"context"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"

	"github.com/upshift-io/upshift/services/aromonitor/clusterstatus"
	"github.com/upshift-io/upshift/services/aromonitor/configcheck"
	"github.com/upshift-io/upshift/services/aromonitor/rounds"
)

// Field managers of the cluster configuration checks.
const (
	IngressCertificateFieldManager = "aro-monitor-ingress-certificate"
	ClusterDNSFieldManager         = "aro-monitor-cluster-dns"
)

// ConfirmAfter is when a failed round that the failure threshold holds back
// runs again, if nothing changes before: soon enough that a real
// misconfiguration is reported within minutes, not after the interval.
const ConfirmAfter = time.Minute

// ClusterVersionName is the ClusterVersion singleton's name.
const ClusterVersionName = "version"

// ClusterConfigReconciler (master role) decides ARO's
// DefaultIngressCertificate and DefaultClusterDNS from the default
// IngressController, the DNS operator's configuration, the ClusterVersion's
// cluster ID and the Cluster's domain, with ARO's rules (package
// configcheck). A round runs whenever one of them changes and at least once
// per interval; the conditions move with a hysteresis.
type ClusterConfigReconciler struct {
	Client   client.Client
	Recorder *events.Recorder
	Clock    clock.PassiveClock
}

// SetupWithManager: spec changes of the objects read (their status never
// matters here) and ARO operator's deployments start a round.
func (r *ClusterConfigReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	one := func(namespace, name string) builder.WatchesOption {
		return builder.WithPredicates(predicate.GenerationChangedPredicate{}, isNamed(types.NamespacedName{Namespace: namespace, Name: name}))
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("cluster-config").
		Watches(&arov1alpha1.Cluster{}, toCluster, specChanged()).
		Watches(&amv1alpha1.MonitorConfig{}, toCluster, specChanged()).
		Watches(&appsv1.Deployment{}, toCluster, aroOperatorDeployments()).
		Watches(&operatorv1.IngressController{}, toCluster, one(configcheck.IngressNamespace, configcheck.IngressName)).
		Watches(&operatorv1.DNS{}, toCluster, one("", configcheck.DNSName)).
		Watches(&configv1.ClusterVersion{}, toCluster, one("", ClusterVersionName)).
		Complete(r)
}

// configCheck is one of the two checks: its names and its round.
type configCheck struct {
	check   amv1alpha1.CheckName
	manager string
	typ     string
	words   rounds.Words
	round   func(ctx context.Context, c client.Client, cluster *arov1alpha1.Cluster) rounds.Result
}

var configChecks = []configCheck{
	{amv1alpha1.CheckIngressCertificate, IngressCertificateFieldManager, arov1alpha1.DefaultIngressCertificate,
		rounds.Words{Passing: configcheck.CertificateInUse, Recovering: "default ingress certificate in use again"}, ingressRound},
	{amv1alpha1.CheckClusterDNS, ClusterDNSFieldManager, arov1alpha1.DefaultClusterDNS,
		rounds.Words{Passing: "DNS configuration valid", Recovering: "DNS configuration valid again"}, dnsRound},
}

func ingressRound(ctx context.Context, c client.Client, cluster *arov1alpha1.Cluster) rounds.Result {
	cv := &configv1.ClusterVersion{}
	if err := c.Get(ctx, client.ObjectKey{Name: ClusterVersionName}, cv); err != nil {
		return configcheck.Ingress("", nil, "", err)
	}
	ic := &operatorv1.IngressController{}
	err := c.Get(ctx, types.NamespacedName{Namespace: configcheck.IngressNamespace, Name: configcheck.IngressName}, ic)
	return configcheck.Ingress(cv.Spec.ClusterID, ic, cluster.Spec.Domain, err)
}

func dnsRound(ctx context.Context, c client.Client, _ *arov1alpha1.Cluster) rounds.Result {
	dns := &operatorv1.DNS{}
	err := c.Get(ctx, client.ObjectKey{Name: configcheck.DNSName}, dns)
	return configcheck.DNS(dns, err)
}

// Reconcile runs a round of both checks.
func (r *ClusterConfigReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	snap, err := load(ctx, r.Client)
	if err != nil || snap == nil {
		return reconcile.Result{}, err
	}
	s := snap.settings
	now := r.Clock.Now()
	requeue := s.ClusterConfigInterval
	for _, cc := range configChecks {
		d, err := decideOwnership(ctx, r.Client, s.Ownership, cc.check)
		if err != nil {
			return reconcile.Result{}, err
		}
		prev := clusterstatus.FindCheck(snap.record.Checks, cc.check)
		w := checkWrite{check: cc.check, manager: cc.manager, owner: d,
			recorded: amv1alpha1.MonitorConfigStatus{Conditions: aroConditions(snap.record, cc.typ), Checks: []amv1alpha1.CheckStatus{prev}}}
		var cond operatorv1.OperatorCondition
		check := prev
		if !s.ClusterConfigChecks {
			// As ARO's checkers switched off (aro.checker.enabled false):
			// Unknown, with neither reason nor message, and no streak.
			check.ConsecutiveFailures, check.ConsecutiveSuccesses = 0, 0
			cond = clusterstatus.Condition(snap.record.Conditions, operatorv1.OperatorCondition{Type: cc.typ, Status: operatorv1.ConditionUnknown}, now)
		} else {
			cond, check = rounds.Fold(snap.record.Conditions, prev, cc.typ, cc.round(ctx, r.Client, snap.cluster), cc.words, now, s.ClusterConfigThresholds)
			if rounds.Pending(cond, check) {
				requeue = min(requeue, ConfirmAfter)
			}
		}
		w.next = amv1alpha1.MonitorConfigStatus{Conditions: []operatorv1.OperatorCondition{cond}, Checks: []amv1alpha1.CheckStatus{check}}
		if err := w.do(ctx, r.Client, r.Recorder, snap.cluster, now); err != nil {
			return reconcile.Result{}, err
		}
	}
	if !s.ClusterConfigChecks {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: wait.Jitter(requeue, 0.1)}, nil
}
