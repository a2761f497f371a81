package controller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/services/aromonitor/azure"
	"github.com/upshift-io/upshift/services/aromonitor/clusterstatus"
	"github.com/upshift-io/upshift/services/aromonitor/credentials"
)

// CredentialsFieldManager owns the credential check's status fields.
const CredentialsFieldManager = "aro-monitor-credentials"

// Events of the credential check.
const (
	EventCredentialsInvalid  = credentials.EventInvalid
	EventCredentialsValid    = credentials.EventValid
	EventCredentialsExpiring = credentials.EventExpiring
)

// CredentialsReconciler acquires tokens with the cluster's Azure identity,
// for ARM and for Microsoft Graph, and sets ServicePrincipalValid as ARO
// does. The credentials Secret is watched, so a rotation is checked at once.
type CredentialsReconciler struct {
	Client      client.Client
	Recorder    *events.Recorder
	Clock       clock.PassiveClock
	Azure       *azure.Factory
	Credentials types.NamespacedName
	// Observe records a check's outcome for the metrics (may be nil).
	Observe func(status string)
}

// SetupWithManager watches the Cluster's spec, the MonitorConfig's, the
// credentials Secret and ARO operator's deployments.
func (r *CredentialsReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("credentials").
		Watches(&arov1alpha1.Cluster{}, toCluster, specChanged()).
		Watches(&amv1alpha1.MonitorConfig{}, toCluster, specChanged()).
		Watches(&corev1.Secret{}, toCluster, named(r.Credentials)).
		Watches(&appsv1.Deployment{}, toCluster, aroOperatorDeployments()).
		Complete(r)
}

// Reconcile runs the check once: read, ask AAD, plan, write, record.
func (r *CredentialsReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	snap, err := load(ctx, r.Client)
	if err != nil || snap == nil {
		return reconcile.Result{}, err
	}
	d, err := decideOwnership(ctx, r.Client, snap.settings.Ownership, amv1alpha1.CheckCredentials)
	if err != nil {
		return reconcile.Result{}, err
	}
	in := credentials.Input{Cluster: snap.cluster, Prev: snap.record, Enabled: snap.settings.CredentialsCheck, Now: r.Clock.Now(),
		Interval: snap.settings.CredentialsInterval, ExpiryWarning: snap.settings.ExpiryWarning}
	if in.Enabled {
		var id azure.Identity
		in.Outcome, id = r.check(ctx, snap.cluster.Spec)
		in.Identity = credentials.Identity{Kind: id.Kind(), ClientID: id.ClientID, Version: id.Version, Expires: id.Expires}
	}
	plan := credentials.Plan(in)
	if r.Observe != nil {
		r.Observe(plan.Result)
	}
	// Every check is recorded (its times move), so recorded holds only the
	// previous record, for the Event of a change of hands.
	w := checkWrite{check: amv1alpha1.CheckCredentials, manager: CredentialsFieldManager, owner: d, next: plan.Status,
		recorded: amv1alpha1.MonitorConfigStatus{Checks: []amv1alpha1.CheckStatus{clusterstatus.FindCheck(snap.record.Checks, amv1alpha1.CheckCredentials)}}}
	if err := w.do(ctx, r.Client, r.Recorder, snap.cluster, in.Now); err != nil {
		return reconcile.Result{}, err
	}
	r.Recorder.Record(plan.Events...)
	// Jittered, so that the replicas' checks of many clusters spread out.
	return reconcile.Result{RequeueAfter: wait.Jitter(plan.Requeue, 0.1)}, nil
}

// check acquires an ARM token, then a Graph token whose roles are checked.
func (r *CredentialsReconciler) check(ctx context.Context, spec arov1alpha1.ClusterSpec) (credentials.Outcome, azure.Identity) {
	unavailable := func(err error) credentials.Outcome {
		return credentials.Outcome{Status: metav1.ConditionUnknown, Reason: arov1alpha1.ReasonValidationUnavailable, Message: err.Error()}
	}
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, r.Credentials, secret); err != nil {
		return unavailable(fmt.Errorf("reading the credentials Secret %s: %w", r.Credentials, err)), azure.Identity{}
	}
	id, err := azure.IdentityFromSecret(secret)
	if err != nil {
		return unavailable(err), id
	}
	cloudCfg, err := r.Azure.CloudFor(spec.AZEnvironment)
	if err != nil {
		return unavailable(err), id
	}
	cred, err := r.Azure.Credential(id, cloudCfg)
	if err != nil {
		return unavailable(err), id
	}
	armScope, graphScope := r.Azure.Scopes(spec.AZEnvironment, cloudCfg)
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := azure.Token(tctx, cred, armScope); err != nil {
		return credentials.Classify(err, nil), id
	}
	tok, err := azure.Token(tctx, cred, graphScope)
	if err != nil {
		return credentials.Classify(err, nil), id
	}
	roles, err := credentials.Roles(tok)
	if err != nil {
		return unavailable(err), id
	}
	return credentials.Classify(nil, roles), id
}
