package credentials

import (
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
)

// A known expiry within the warning is warned about once: the next pass,
// whose status records the expiry warned for, warns no more, also while the
// condition is not True; a new expiry is warned about again.
func TestPlanWarnsOncePerExpiry(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	expires := now.Add(10 * 24 * time.Hour)
	cluster := &arov1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: arov1alpha1.SingletonName}}
	in := Input{Cluster: cluster, Enabled: true, Now: now, Interval: time.Hour, ExpiryWarning: 30 * 24 * time.Hour,
		Outcome:  Classify(nil, nil),
		Identity: Identity{Kind: "ServicePrincipal", ClientID: "c", Version: "1", Expires: &expires}}
	first := Plan(in)
	if got := reasons(first); len(got) != 1 || got[0] != EventExpiring {
		t.Fatalf("first pass Events %v, want one %s", got, EventExpiring)
	}
	if first.Requeue != time.Hour || first.Result != "True" {
		t.Fatalf("requeue %v result %s", first.Requeue, first.Result)
	}

	in.Prev = first.Status
	in.Now = now.Add(15 * time.Minute)
	in.Outcome = Outcome{Status: metav1.ConditionUnknown, Reason: arov1alpha1.ReasonValidationUnavailable, Message: "AAD is down"}
	second := Plan(in)
	if got := reasons(second); len(got) != 0 {
		t.Fatalf("second pass Events %v, want none", got)
	}
	if second.Requeue != RetryInterval {
		t.Fatalf("requeue %v while not True, want %v", second.Requeue, RetryInterval)
	}

	in.Prev = second.Status
	later := expires.Add(24 * time.Hour)
	in.Identity.Expires = &later
	in.Outcome = Classify(nil, nil)
	third := Plan(in)
	if got := reasons(third); len(got) != 2 || got[0] != EventExpiring || got[1] != EventValid {
		t.Fatalf("third pass Events %v, want %s for the new expiry and %s", got, EventExpiring, EventValid)
	}
	c := third.Status.Conditions[0]
	if c.Status != operatorv1.ConditionTrue || c.LastTransitionTime.Time != in.Now {
		t.Fatalf("condition %+v", c)
	}
}

// Off, the check says so and keeps no identity record.
func TestPlanOff(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	out := Plan(Input{Cluster: &arov1alpha1.Cluster{}, Now: now, Interval: time.Hour})
	c := out.Status.Conditions[0]
	if c.Status != operatorv1.ConditionUnknown || c.Message != "the check is off: aro.checker.enabled is false" || out.Status.Credentials != nil {
		t.Fatalf("status %+v", out.Status)
	}
	if out.Requeue != RetryInterval || len(out.Events) != 0 {
		t.Fatalf("requeue %v events %v", out.Requeue, out.Events)
	}
}

func reasons(o Output) []string {
	var out []string
	for _, e := range o.Events {
		out = append(out, e.Reason)
	}
	return out
}
