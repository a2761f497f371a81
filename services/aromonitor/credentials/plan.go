package credentials

import (
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/services/aromonitor/clusterstatus"
)

// Reasons of the credential check's Events, and their action.
const (
	EventInvalid  = "ServicePrincipalInvalid"
	EventValid    = "ServicePrincipalValid"
	EventExpiring = "CredentialsExpiring"
	EventAction   = "Validate"
)

// RetryInterval bounds the wait before the next check while the condition
// is not True: a fixed secret, or AAD back, is seen within it.
const RetryInterval = time.Minute

// Identity is what the check learnt of the identity it used; zero when it
// could not read one.
type Identity struct {
	// Kind is "ServicePrincipal" or "WorkloadIdentity".
	Kind     string
	ClientID string
	// Version is the credentials Secret's resourceVersion.
	Version string
	// Expires is the client secret's expiry, when known.
	Expires *time.Time
}

// Input is one credential check's input.
type Input struct {
	// Cluster is the ARO Cluster, what the Events are about.
	Cluster *arov1alpha1.Cluster
	// Prev is aro-monitor's status as read: the previous check's record.
	Prev amv1alpha1.MonitorConfigStatus
	// Enabled is ARO's aro.checker.enabled: off, the check says so and asks
	// nothing of AAD.
	Enabled bool
	// Outcome and Identity are what the token requests gave (unused when
	// the check is off).
	Outcome  Outcome
	Identity Identity
	Now      time.Time
	// Interval is the time between checks; ExpiryWarning how long ahead of
	// a known expiry to warn.
	Interval      time.Duration
	ExpiryWarning time.Duration
}

// Output is what to write, to record and when to check again.
type Output struct {
	// Status holds the check's fields only: ServicePrincipalValid, the
	// check's record and status.credentials.
	Status amv1alpha1.MonitorConfigStatus
	// Events are recorded once Status is written.
	Events []events.Event
	// Requeue is when the next check is due.
	Requeue time.Duration
	// Result is the condition's status, for the metrics.
	Result string
}

// Plan decides one credential check: the condition ARO defines, the
// identity's record (with the time a Secret version was first seen, and the
// expiry warned about), a Warning once per expiry, and an Event when the
// condition turns False or back to True.
func Plan(in Input) Output {
	prev := in.Prev
	check := clusterstatus.FindCheck(prev.Checks, amv1alpha1.CheckCredentials)
	check.LastCheckTime = clusterstatus.Time(in.Now)
	out := Output{Requeue: in.Interval}

	res := in.Outcome
	var expiring string
	if !in.Enabled {
		res = Outcome{Status: metav1.ConditionUnknown, Reason: arov1alpha1.ReasonValidationUnavailable,
			Message: "the check is off: aro.checker.enabled is false"}
	} else if id := in.Identity; id.ClientID != "" {
		last := prev.Credentials
		if last == nil {
			last = &amv1alpha1.CredentialStatus{}
		}
		cr := &amv1alpha1.CredentialStatus{Kind: id.Kind, ClientID: id.ClientID, AADErrorCode: res.Code,
			SecretResourceVersion: id.Version, SecretUpdatedTime: last.SecretUpdatedTime, ExpiryWarnedFor: last.ExpiryWarnedFor}
		// The cache strips managed fields, and the Secret holds no other
		// time of change: a version is dated when first seen.
		if id.Version != last.SecretResourceVersion || last.SecretUpdatedTime == nil {
			cr.SecretUpdatedTime = clusterstatus.Time(in.Now)
		}
		if id.Expires != nil {
			cr.ExpiresTime = clusterstatus.Time(*id.Expires)
		}
		expiring = Expiry(id.Expires, in.Now, in.ExpiryWarning)
		// Once per expiry, whatever the condition's message says.
		if expiring != "" {
			at := clusterstatus.Time(*id.Expires)
			if last.ExpiryWarnedFor == nil || !last.ExpiryWarnedFor.Equal(at) {
				out.Events = append(out.Events, events.Warning(in.Cluster, EventExpiring, EventAction, expiring))
			}
			cr.ExpiryWarnedFor = at
		}
		out.Status.Credentials = cr
	}
	if res.Status == metav1.ConditionTrue {
		check.LastSuccessTime = clusterstatus.Time(in.Now)
		if expiring != "" {
			res.Message += "; " + expiring
		}
	} else {
		out.Requeue = min(out.Requeue, RetryInterval)
	}
	cond := operatorv1.OperatorCondition{Type: arov1alpha1.ServicePrincipalValid, Status: operatorv1.ConditionStatus(res.Status),
		Reason: res.Reason, Message: res.Message}
	out.Events = append(out.Events, transitionEvents(in.Cluster, prev.Conditions, cond)...)
	out.Result = string(res.Status)
	out.Status.Conditions = []operatorv1.OperatorCondition{clusterstatus.Condition(prev.Conditions, cond, in.Now)}
	out.Status.Checks = []amv1alpha1.CheckStatus{check}
	return out
}

// transitionEvents: a Warning when the condition turns False, and a Normal
// when it turns True from False or Unknown (not on the first check).
func transitionEvents(cluster *arov1alpha1.Cluster, conds []operatorv1.OperatorCondition, cond operatorv1.OperatorCondition) []events.Event {
	var prev operatorv1.ConditionStatus
	if c := clusterstatus.ConditionByType(conds, cond.Type); c != nil {
		prev = c.Status
	}
	switch {
	case cond.Status == operatorv1.ConditionFalse && prev != operatorv1.ConditionFalse:
		return []events.Event{events.Warning(cluster, EventInvalid, EventAction, cond.Message)}
	case cond.Status == operatorv1.ConditionTrue && prev != "" && prev != operatorv1.ConditionTrue:
		return []events.Event{events.Normal(cluster, EventValid, EventAction, cond.Message)}
	}
	return nil
}
