package controller

import (
	"context"
	"fmt"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/azure"
	"github.com/upshift-io/upshift/services/aromonitor/credentials"
)

// CredentialsFieldManager owns the credential check's status fields.
const CredentialsFieldManager = "aro-monitor-credentials"

// Events of the credential check.
const (
	EventCredentialsInvalid  = "ServicePrincipalInvalid"
	EventCredentialsValid    = "ServicePrincipalValid"
	EventCredentialsExpiring = "CredentialsExpiring"
)

// CredentialsReconciler acquires tokens with the cluster's Azure identity,
// for ARM and for Microsoft Graph, and sets ServicePrincipalValid as ARO
// does. The credentials Secret is watched, so a rotation is checked at once.
type CredentialsReconciler struct {
	Client      client.Client
	Recorder    events.EventRecorder
	Clock       clock.PassiveClock
	Azure       *azure.Factory
	Credentials types.NamespacedName
	// Observe records a check's outcome for the metrics (may be nil).
	Observe func(status string)
}

// SetupWithManager watches the Cluster's spec, the MonitorConfig and the
// credentials Secret.
func (r *CredentialsReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{clusterKey}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("credentials").
		Watches(&arov1alpha1.Cluster{}, one, specChanged()).
		Watches(&amv1alpha1.MonitorConfig{}, one).
		Watches(&corev1.Secret{}, one, named(r.Credentials)).
		Complete(r)
}

// Reconcile runs the check once.
func (r *CredentialsReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	snap, err := load(ctx, r.Client)
	if err != nil || snap == nil {
		return reconcile.Result{}, err
	}
	now := r.Clock.Now()
	interval := snap.settings.CredentialsInterval
	check := findCheck(snap.cluster.Status.Checks, arov1alpha1.CheckCredentials)
	check.LastCheckTime = ptrTime(now)
	st := arov1alpha1.ClusterStatus{}

	var out credentials.Outcome
	var expiring string
	if !snap.settings.CredentialsCheck {
		out = credentials.Outcome{Status: metav1.ConditionUnknown, Reason: arov1alpha1.ReasonValidationUnavailable,
			Message: "the check is off: aro.checker.enabled is false"}
	} else {
		var id azure.Identity
		out, id = r.check(ctx, snap.cluster.Spec)
		if id.ClientID != "" {
			prev := snap.cluster.Status.Credentials
			if prev == nil {
				prev = &arov1alpha1.CredentialStatus{}
			}
			st.Credentials = &arov1alpha1.CredentialStatus{Kind: id.Kind(), ClientID: id.ClientID, AADErrorCode: out.Code,
				SecretResourceVersion: id.Version, SecretUpdatedTime: prev.SecretUpdatedTime, ExpiryWarnedFor: prev.ExpiryWarnedFor}
			// The cache strips managed fields, and the Secret holds no other
			// time of change: a version is dated when first seen.
			if id.Version != prev.SecretResourceVersion || prev.SecretUpdatedTime == nil {
				st.Credentials.SecretUpdatedTime = ptrTime(now)
			}
			if id.Expires != nil {
				st.Credentials.ExpiresTime = ptrTime(*id.Expires)
			}
			expiring = credentials.Expiry(id.Expires, now, snap.settings.ExpiryWarning)
			// Once per expiry, whatever the condition's message says.
			if expiring != "" {
				at := ptrTime(*id.Expires)
				if prev.ExpiryWarnedFor == nil || !prev.ExpiryWarnedFor.Equal(at) {
					r.Recorder.Eventf(snap.cluster, nil, corev1.EventTypeWarning, EventCredentialsExpiring, "Validate", "%s", expiring)
				}
				st.Credentials.ExpiryWarnedFor = at
			}
		}
	}
	if out.Status == metav1.ConditionTrue {
		check.LastSuccessTime = ptrTime(now)
		if expiring != "" {
			out.Message += "; " + expiring
		}
	} else {
		interval = min(interval, time.Minute)
	}
	cond := operatorv1.OperatorCondition{Type: arov1alpha1.ServicePrincipalValid, Status: operatorv1.ConditionStatus(out.Status),
		Reason: out.Reason, Message: out.Message}
	r.events(snap.cluster, cond)
	if r.Observe != nil {
		r.Observe(string(out.Status))
	}
	st.Conditions = []operatorv1.OperatorCondition{condition(snap.cluster.Status.Conditions, cond, now)}
	st.Checks = []arov1alpha1.CheckStatus{check}
	return reconcile.Result{RequeueAfter: wait.Jitter(interval, 0.1)}, applyStatus(ctx, r.Client, CredentialsFieldManager, st)
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

// events records a Warning when the condition turns False, and a Normal
// when it turns True from False or Unknown (not on the first check). The
// expiry's Warning is recorded by Reconcile, once per expiry.
func (r *CredentialsReconciler) events(cluster *arov1alpha1.Cluster, cond operatorv1.OperatorCondition) {
	var prev operatorv1.OperatorCondition
	for _, c := range cluster.Status.Conditions {
		if c.Type == cond.Type {
			prev = c
		}
	}
	switch {
	case cond.Status == operatorv1.ConditionFalse && prev.Status != operatorv1.ConditionFalse:
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, EventCredentialsInvalid, "Validate", "%s", cond.Message)
	case cond.Status == operatorv1.ConditionTrue && prev.Status != "" && prev.Status != operatorv1.ConditionTrue:
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, EventCredentialsValid, "Validate", "%s", cond.Message)
	}
}
