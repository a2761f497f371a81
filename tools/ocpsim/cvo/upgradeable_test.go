package cvo

import (
	"reflect"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func co(name string, up configv1.ConditionStatus, reason, msg string) configv1.ClusterOperator {
	c := configv1.ClusterOperator{}
	c.Name = name
	c.Status.Conditions = []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorUpgradeable, Status: up, Reason: reason, Message: msg}}
	return c
}

func TestOperatorsUpgradeable(t *testing.T) {
	healthy := co("dns", configv1.ConditionTrue, "AsExpected", "")
	olm := co("operator-lifecycle-manager", configv1.ConditionFalse, "IncompatibleOperatorsInstalled", "ClusterServiceVersions blocking cluster upgrade: x")
	cco := co("cloud-credential", configv1.ConditionFalse, "MissingUpgradeableAnnotation", "Upgradeable annotation is missing")
	if got := OperatorsUpgradeable([]configv1.ClusterOperator{healthy}); got != nil {
		t.Errorf("healthy: %+v", got)
	}
	if got, want := OperatorsUpgradeable([]configv1.ClusterOperator{healthy, olm}), (&UpgradeableCheck{Type: "UpgradeableClusterOperators", Reason: "IncompatibleOperatorsInstalled",
		Message: "Cluster operator operator-lifecycle-manager should not be upgraded between minor versions: ClusterServiceVersions blocking cluster upgrade: x"}); !reflect.DeepEqual(got, want) {
		t.Errorf("one operator: %+v", got)
	}
	if got, want := OperatorsUpgradeable([]configv1.ClusterOperator{olm, healthy, cco}), (&UpgradeableCheck{Type: "UpgradeableClusterOperators", Reason: "ClusterOperatorsNotUpgradeable",
		Message: "Multiple cluster operators should not be upgraded between minor versions:\n" +
			"* Cluster operator cloud-credential should not be upgraded between minor versions: MissingUpgradeableAnnotation: Upgradeable annotation is missing\n" +
			"* Cluster operator operator-lifecycle-manager should not be upgraded between minor versions: IncompatibleOperatorsInstalled: ClusterServiceVersions blocking cluster upgrade: x"}); !reflect.DeepEqual(got, want) {
		t.Errorf("two operators: %+v", got)
	}
}

func TestUpgradeableConditions(t *testing.T) {
	now := metav1.Now()
	ops := &UpgradeableCheck{Type: UpgradeableClusterOperators, Reason: "R1", Message: "M1"}
	ack := AdminAckRequired("4.16.3")
	if ack.Message != "Kubernetes 1.30 and therefore OpenShift 4.17 remove several APIs which require admin consideration. Please see the knowledge article https://access.redhat.com/articles/6955381 for details and instructions." {
		t.Errorf("admin-ack message %q", ack.Message)
	}
	if got := UpgradeableConditions([]*UpgradeableCheck{nil}, now); got != nil {
		t.Errorf("nothing fails: %+v", got)
	}
	one := UpgradeableConditions([]*UpgradeableCheck{nil, ops}, now)
	if len(one) != 1 || one[0].Type != "Upgradeable" || one[0].Status != configv1.ConditionFalse || one[0].Reason != "R1" || one[0].Message != "M1" {
		t.Errorf("one check: %+v", one)
	}
	two := UpgradeableConditions([]*UpgradeableCheck{ops, ack}, now)
	if len(two) != 3 || two[0].Type != UpgradeableClusterOperators || two[1].Type != UpgradeableAdminAckRequired || two[2].Type != "Upgradeable" || two[2].Reason != "MultipleReasons" ||
		two[2].Message != "Cluster should not be upgraded between minor versions for multiple reasons: R1,AdminAckRequired\n* M1\n* "+ack.Message {
		t.Errorf("two checks: %+v", two)
	}

	conds := []configv1.ClusterOperatorStatusCondition{{Type: "Failing", Status: configv1.ConditionFalse}}
	SetUpgradeable(&conds, two, now)
	if len(conds) != 4 {
		t.Errorf("after two checks: %+v", conds)
	}
	SetUpgradeable(&conds, one, now)
	if len(conds) != 2 || FindCondition(conds, UpgradeableAdminAckRequired) != nil || FindCondition(conds, "Upgradeable").Reason != "R1" {
		t.Errorf("after one check: %+v", conds)
	}
	SetUpgradeable(&conds, nil, now)
	if len(conds) != 1 || conds[0].Type != "Failing" {
		t.Errorf("after none: %+v", conds)
	}
}

func TestPreconditions(t *testing.T) {
	st := func(up *configv1.ClusterOperatorStatusCondition) *configv1.ClusterVersionStatus {
		s := &configv1.ClusterVersionStatus{
			Desired:          configv1.Release{Version: "4.16.1"},
			History:          []configv1.UpdateHistory{{Version: "4.16.1", State: configv1.CompletedUpdate}},
			AvailableUpdates: []configv1.Release{{Version: "4.16.2"}, {Version: "4.17.0"}},
			ConditionalUpdates: []configv1.ConditionalUpdate{
				{Release: configv1.Release{Version: "4.16.3"}, Conditions: []metav1.Condition{{Type: "Recommended", Status: metav1.ConditionFalse, Reason: "ARisk", Message: "A is broken. https://example.com/a"}}},
				{Release: configv1.Release{Version: "4.17.1"}, Conditions: []metav1.Condition{{Type: "Recommended", Status: metav1.ConditionFalse, Reason: "ARisk", Message: "A is broken. https://example.com/a"}}},
			},
		}
		if up != nil {
			s.Conditions = append(s.Conditions, *up)
		}
		return s
	}
	notUp := &configv1.ClusterOperatorStatusCondition{Type: "Upgradeable", Status: configv1.ConditionFalse, Reason: "AdminAckRequired", Message: "Ack, please."}
	const upMsg = `Precondition "ClusterVersionUpgradeable" failed because of "AdminAckRequired": Ack, please.`
	cases := []struct {
		name    string
		st      *configv1.ClusterVersionStatus
		channel string
		target  string
		force   bool
		block   bool
		msg     string
	}{
		{"recommended z-stream", st(nil), "stable-4.16", "4.16.2", false, false, ""},
		{"Upgradeable=False does not block a z-stream", st(notUp), "stable-4.16", "4.16.2", false, false, ""},
		{"Upgradeable=False blocks a minor update", st(notUp), "stable-4.16", "4.17.0", false, true, upMsg},
		{"force goes through", st(notUp), "stable-4.16", "4.17.0", true, false, "Forced through blocking failures: " + upMsg},
		{"Upgradeable=True", st(&configv1.ClusterOperatorStatusCondition{Type: "Upgradeable", Status: configv1.ConditionTrue}), "stable-4.16", "4.17.0", false, false, ""},
		{"a not recommended update only warns", st(nil), "stable-4.16", "4.16.3", false, false, "Precondition \"ClusterVersionRecommendedUpdate\" failed because of \"ARisk\": Update from 4.16.1 to 4.16.3 is not recommended:\n\nA is broken. https://example.com/a"},
		{"both", st(notUp), "stable-4.16", "4.17.1", false, true, "Multiple precondition checks failed:\n* " + upMsg + "\n* " + "Precondition \"ClusterVersionRecommendedUpdate\" failed because of \"ARisk\": Update from 4.16.1 to 4.17.1 is not recommended:\n\nA is broken. https://example.com/a"},
		{"no channel", st(nil), "", "4.16.2", false, false, `Precondition "ClusterVersionRecommendedUpdate" failed because of "NoChannel": Configured channel is unset, so the recommended status of updating from 4.16.1 to 4.16.2 is unknown.`},
	}
	for _, c := range cases {
		block, msg := SummarizePreconditions(Preconditions(c.st, c.channel, c.target), c.force)
		if block != c.block || msg != c.msg {
			t.Errorf("%s: block=%v %q; want %v %q", c.name, block, msg, c.block, c.msg)
		}
	}
	if got := PreconditionsFailed("4.17.0", "quay.io/r@sha256:1", upMsg); got != `Preconditions failed for payload loaded version="4.17.0" image="quay.io/r@sha256:1": `+upMsg {
		t.Errorf("PreconditionsFailed = %q", got)
	}
	if CurrentVersion([]configv1.UpdateHistory{{Version: "4.17.0", State: configv1.PartialUpdate}, {Version: "4.16.1", State: configv1.CompletedUpdate}}) != "4.16.1" ||
		CurrentVersion([]configv1.UpdateHistory{{Version: "4.17.0", State: configv1.PartialUpdate}, {Version: "4.16.0", State: configv1.PartialUpdate}}) != "4.16.0" {
		t.Error("CurrentVersion")
	}
}
