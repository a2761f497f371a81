package nsg

import (
	"errors"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
)

// A pass over two subnets: one drifted and repaired (its record stored
// mid-pass, the other's carried as it was), one whose re-association never
// reached ARM (nothing counted against the budget). The Events follow what
// happened, and the failure brings the next pass forward.
func TestPassReassociations(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	a := Subnet{ID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/A", Name: "A", ExpectedNSG: "nsg"}
	b := Subnet{ID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/B", Name: "B", ExpectedNSG: "nsg"}
	cluster := &arov1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: arov1alpha1.SingletonName}}
	prev := amv1alpha1.MonitorConfigStatus{Subnets: []amv1alpha1.SubnetStatus{{ID: "old-b-record", ExpectedNSG: "nsg"}}}
	p := &Pass{Cluster: cluster, Prev: prev, Policy: policy, Interval: time.Hour, Now: now}

	if !p.Subnet(a, "") {
		t.Fatal("a drifted subnet in Remediate mode is not re-associated")
	}
	if !p.Reassociated(true, nil) {
		t.Fatal("a re-association that reached ARM is not stored at once")
	}
	progress := p.Progress([]Subnet{b})
	if len(progress.Subnets) != 1 || len(progress.Subnets[0].Remediations) != 1 || progress.Subnets[0].AttachedNSG != "nsg" {
		t.Fatalf("mid-pass subnets %+v", progress.Subnets)
	}

	if !p.Subnet(b, "other") {
		t.Fatal("b is not re-associated")
	}
	if p.Reassociated(false, errors.New("rate limited")) {
		t.Fatal("a re-association that never reached ARM is stored as spent")
	}
	res := p.Done()
	if len(res.Status.Subnets) != 2 || len(res.Status.Subnets[1].Remediations) != 0 {
		t.Fatalf("subnets %+v", res.Status.Subnets)
	}
	var reasons []string
	for _, e := range res.Events {
		reasons = append(reasons, e.Reason)
		if e.Regarding == nil {
			t.Fatalf("event %+v about nothing", e)
		}
	}
	if len(reasons) != 2 || reasons[0] != EventReassociated || reasons[1] != EventReassociationFailed {
		t.Fatalf("events %v", reasons)
	}
	if res.Requeue != RetryInterval || len(res.Errors) != 1 {
		t.Fatalf("requeue %v errors %v", res.Requeue, res.Errors)
	}
	// b was not judged on a read it could not act on: Unknown, not False.
	assoc := res.Status.Conditions[0]
	if assoc.Type != amv1alpha1.NSGAssociated || assoc.Status != operatorv1.ConditionUnknown || assoc.Reason != ReasonARMUnavailable {
		t.Fatalf("NSGAssociated %+v", assoc)
	}
}
