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
	st := func(up *configv1.ClusterOperatorStatusCondition) *configv1.ClusterVersion {
		s := configv1.ClusterVersionStatus{
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
		return &configv1.ClusterVersion{Status: s}
	}
	notUp := &configv1.ClusterOperatorStatusCondition{Type: "Upgradeable", Status: configv1.ConditionFalse, Reason: "AdminAckRequired", Message: "Ack, please."}
	const upMsg = `Precondition "ClusterVersionUpgradeable" failed because of "AdminAckRequired": Ack, please.`
	cases := []struct {
		name    string
		st      *configv1.ClusterVersion
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
		c.st.Spec.Channel = c.channel
		block, msg := SummarizePreconditions(Preconditions(c.st, c.target), c.force)
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

func TestOverridesUpgradeable(t *testing.T) {
	const (
		old   = "Disabling ownership via cluster version overrides prevents upgrades. Please remove overrides before continuing."
		since = "Disabling ownership via cluster version overrides prevents upgrades between minor or major versions. Please remove overrides before requesting a minor or major version update."
	)
	unmanaged := []configv1.ComponentOverride{
		{Kind: "Deployment", Group: "apps", Namespace: "openshift-machine-api", Name: "control-plane-machine-set-operator", Unmanaged: true},
	}
	managed := []configv1.ComponentOverride{
		{Kind: "Deployment", Group: "apps", Namespace: "openshift-machine-api", Name: "control-plane-machine-set-operator", Unmanaged: false},
	}
	cases := []struct {
		name      string
		overrides []configv1.ComponentOverride
		cvo       string
		want      *UpgradeableCheck
	}{
		{"no overrides", nil, "4.16.1", nil},
		{"a managed override is no override", managed, "4.16.1", nil},
		{"unmanaged, 4.16", unmanaged, "4.16.1", &UpgradeableCheck{Type: "UpgradeableClusterVersionOverrides", Reason: "ClusterVersionOverridesSet", Message: old}},
		{"one unmanaged among several", append(append([]configv1.ComponentOverride(nil), managed...), unmanaged...), "4.21.9", &UpgradeableCheck{Type: "UpgradeableClusterVersionOverrides", Reason: "ClusterVersionOverridesSet", Message: old}},
		{"unmanaged, 4.22", unmanaged, "4.22.0", &UpgradeableCheck{Type: "UpgradeableClusterVersionOverrides", Reason: "ClusterVersionOverridesSet", Message: since}},
		{"unmanaged, 5.0", unmanaged, "5.0.1", &UpgradeableCheck{Type: "UpgradeableClusterVersionOverrides", Reason: "ClusterVersionOverridesSet", Message: since}},
	}
	for _, c := range cases {
		if got := OverridesUpgradeable(c.overrides, c.cvo); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}

	// The preconditions of a cluster whose CVO reports the overrides check:
	// a minor update is refused; a z-stream too before 4.22, and from 4.22
	// on it only draws a warning.
	cv := func(current string, overrides []configv1.ComponentOverride, extra ...*UpgradeableCheck) *configv1.ClusterVersion {
		c := &configv1.ClusterVersion{Spec: configv1.ClusterVersionSpec{Channel: "stable", Overrides: overrides}}
		c.Status.Desired = configv1.Release{Version: current}
		c.Status.History = []configv1.UpdateHistory{{Version: current, State: configv1.CompletedUpdate}}
		c.Status.Conditions = UpgradeableConditions(append([]*UpgradeableCheck{OverridesUpgradeable(overrides, current)}, extra...), metav1.Now())
		return c
	}
	recommended := func(c *configv1.ClusterVersion, versions ...string) *configv1.ClusterVersion {
		for _, v := range versions {
			c.Status.AvailableUpdates = append(c.Status.AvailableUpdates, configv1.Release{Version: v})
		}
		return c
	}
	ops := &UpgradeableCheck{Type: UpgradeableClusterOperators, Reason: "R1", Message: "M1"}
	blocked := func(reason, msg string) string {
		return `Precondition "ClusterVersionUpgradeable" failed because of "` + reason + `": ` + msg
	}
	pre := []struct {
		name   string
		cv     *configv1.ClusterVersion
		target string
		block  bool
		msg    string
	}{
		{"4.16: a minor update is refused", recommended(cv("4.16.1", unmanaged), "4.17.0"), "4.17.0", true, blocked("ClusterVersionOverridesSet", old)},
		{"4.16: a z-stream is refused too", recommended(cv("4.16.1", unmanaged), "4.16.2"), "4.16.2", true, blocked("ClusterVersionOverridesSet", old)},
		{"4.16: a z-stream names the overrides even among other reasons", recommended(cv("4.16.1", unmanaged, ops), "4.16.2"), "4.16.2", true, blocked("ClusterVersionOverridesSet", old)},
		{"4.16: a minor update names every reason", recommended(cv("4.16.1", unmanaged, ops), "4.17.0"), "4.17.0", true,
			blocked("MultipleReasons", "Cluster should not be upgraded between minor versions for multiple reasons: ClusterVersionOverridesSet,R1\n* "+old+"\n* M1")},
		{"4.16: a managed override blocks nothing", recommended(cv("4.16.1", managed), "4.16.2", "4.17.0"), "4.17.0", false, ""},
		{"4.22: a minor update is refused", recommended(cv("4.22.1", unmanaged), "4.23.0"), "4.23.0", true, blocked("ClusterVersionOverridesSet", since)},
		{"4.22: a z-stream goes through with a warning", recommended(cv("4.22.1", unmanaged), "4.22.2"), "4.22.2", false,
			blocked("ClusterVersionOverridesSet", "Retarget from 4.22.1 to 4.22.2 is not blocked by ClusterVersionOverridesSet. But the cluster-version operator is not managing these resources; they are currently the responsibility of the agent that set the overrides: "+since)},
	}
	for _, c := range pre {
		block, msg := SummarizePreconditions(Preconditions(c.cv, c.target), false)
		if block != c.block || msg != c.msg {
			t.Errorf("%s: block=%v %q; want %v %q", c.name, block, msg, c.block, c.msg)
		}
	}
}

func TestUnmanaged(t *testing.T) {
	o := []configv1.ComponentOverride{
		{Kind: "Deployment", Group: "apps", Namespace: "openshift-machine-api", Name: "control-plane-machine-set-operator", Unmanaged: true},
		{Kind: "Deployment", Group: "apps", Namespace: "openshift-machine-api", Name: "machine-api-operator", Unmanaged: false},
	}
	cases := []struct {
		name, ns, obj string
		want          bool
	}{
		{"the overridden Deployment", "openshift-machine-api", "control-plane-machine-set-operator", true},
		{"an override that is not unmanaged", "openshift-machine-api", "machine-api-operator", false},
		{"another namespace", "openshift-etcd", "control-plane-machine-set-operator", false},
	}
	for _, c := range cases {
		if got := Unmanaged(o, "apps", "Deployment", c.ns, c.obj); got != c.want {
			t.Errorf("%s: Unmanaged = %v", c.name, got)
		}
	}
	if Unmanaged(o, "", "ConfigMap", "openshift-machine-api", "control-plane-machine-set-operator") {
		t.Error("another kind is unmanaged")
	}
}
