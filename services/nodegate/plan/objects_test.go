package plan

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

func TestRuleStatus(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	rule := &nodegatev1alpha1.MutexRule{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ops", Generation: 3},
		Spec: nodegatev1alpha1.MutexRuleSpec{JobNamespace: "ops"}}
	for _, tc := range []struct {
		name       string
		typ        string
		jobNS      string
		namespaces []string
		others     map[string][]string
		want       string
	}{
		{"valid", "", "ops", []string{"ops"}, nil, "True/ValidConfig/"},
		{"any namespace allowed", "", "ops", nil, nil, "True/ValidConfig/"},
		{"a namespace node-gate may not use", "", "ops", []string{"hooks"}, nil, `False/InvalidConfig/spec.jobNamespace "ops" is not one of node-gate's job namespaces [hooks]`},
		{"an unsupported type", "ansible", "ops", nil, nil, `False/InvalidConfig/spec.type "ansible" is not supported`},
		{"another namespace, not listed for the rule's", "", "hooks", []string{"ops", "hooks"}, map[string][]string{"team-b": {"hooks"}},
			`False/InvalidConfig/spec.jobNamespace "hooks": the rules of namespace ops may run hook Jobs only in ops (the chart's ruleJobNamespaces)`},
		{"another namespace, listed for the rule's", "", "hooks", []string{"ops", "hooks"}, map[string][]string{"ops": {"hooks"}}, "True/ValidConfig/"},
		{"another namespace, others listed", "", "db", nil, map[string][]string{"ops": {"hooks", "batch"}},
			`False/InvalidConfig/spec.jobNamespace "db": the rules of namespace ops may run hook Jobs only in ops or in hooks, batch (the chart's ruleJobNamespaces)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rule.DeepCopy()
			r.Spec.Type = nodegatev1alpha1.RuleType(tc.typ)
			r.Spec.JobNamespace = tc.jobNS
			st := RuleStatus(r, JobPlaces{Namespaces: tc.namespaces, ForRuleNamespace: tc.others}, now)
			c := meta.FindStatusCondition(st.Conditions, ConditionValidConfig)
			if c == nil {
				t.Fatal("no ValidConfig")
			}
			got := string(c.Status) + "/" + c.Reason + "/"
			if c.Status == metav1.ConditionFalse {
				got += c.Message
			}
			if !strings.HasPrefix(got, tc.want) || st.ObservedGeneration != 3 || c.ObservedGeneration != 3 {
				t.Fatalf("got %s (generation %d), want %s", got, st.ObservedGeneration, tc.want)
			}
		})
	}
	// An unchanged verdict keeps its transition time: no write.
	first := RuleStatus(rule, JobPlaces{}, now)
	again := rule.DeepCopy()
	again.Status = first
	if st := RuleStatus(again, JobPlaces{}, now.Add(time.Hour)); !st.Conditions[0].LastTransitionTime.Equal(&first.Conditions[0].LastTransitionTime) {
		t.Fatalf("transition time moved: %v", st.Conditions[0].LastTransitionTime)
	}
}

func TestTargetStatus(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	w := newWorld(t, 3)
	in := w.input()
	target := &nodegatev1alpha1.MutexTarget{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ops", Generation: 2},
		Spec: nodegatev1alpha1.MutexTargetSpec{MachineConfigPools: []string{"worker"}}}
	st := TargetStatus(target, in.Pools, in.Nodes, now)
	if strings.Join(st.Nodes, ",") != "w00,w01,w02" {
		t.Fatalf("nodes %v", st.Nodes)
	}
	for _, typ := range []string{ConditionValidConfig, ConditionNodeListGathered} {
		if c := meta.FindStatusCondition(st.Conditions, typ); c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonPoolFetchSucceeded {
			t.Fatalf("%s: %+v", typ, c)
		}
	}
	target.Spec.MachineConfigPools = []string{"worker", "gpu"}
	target.Status = st
	st = TargetStatus(target, in.Pools, in.Nodes, now)
	if strings.Join(st.Nodes, ",") != "w00,w01,w02" {
		t.Fatalf("the nodes of the pools that exist stay listed: %v", st.Nodes)
	}
	for _, typ := range []string{ConditionValidConfig, ConditionNodeListGathered} {
		c := meta.FindStatusCondition(st.Conditions, typ)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonPoolFetchFailed || !strings.Contains(c.Message, "gpu") {
			t.Fatalf("%s with a missing pool: %+v", typ, c)
		}
	}
}

// A rule whose Jobs could run as node-gate's own ServiceAccount is refused
// behind the admission policy, naming the field, whichever template and
// spelling names it; the same name in another namespace is another account.
func TestRuleNamingNodeGatesAccount(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	own := types.NamespacedName{Namespace: "upshift", Name: "upshift-node-gate"}
	as := func(name string) *batchv1.JobSpec {
		return &batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{ServiceAccountName: name}}}
	}
	deprecated := func(name string) *batchv1.JobSpec {
		return &batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{ServiceAccountName: "hooks", DeprecatedServiceAccount: name}}}
	}
	for _, tc := range []struct {
		name  string
		jobNS string
		own   types.NamespacedName
		spec  func(*nodegatev1alpha1.MutexRuleSpec)
		want  string // the message's field; "" for valid
	}{
		{"jobSpec", "upshift", own, func(s *nodegatev1alpha1.MutexRuleSpec) { s.JobSpec = as(own.Name) }, "spec.jobSpec.template.spec.serviceAccountName"},
		{"cleanUpJobSpec, old spelling", "upshift", own, func(s *nodegatev1alpha1.MutexRuleSpec) { s.CleanUpJobSpec = deprecated(own.Name) },
			"spec.cleanUpJobSpec.template.spec.serviceAccountName"},
		{"the second pre-hook", "upshift", own, func(s *nodegatev1alpha1.MutexRuleSpec) {
			s.PreHooks = []nodegatev1alpha1.Hook{{Name: "a", JobSpec: *as("hooks")}, {Name: "b", JobSpec: *as(own.Name)}}
		}, "spec.preHooks[1].jobSpec.template.spec.serviceAccountName"},
		{"a post-hook", "upshift", own, func(s *nodegatev1alpha1.MutexRuleSpec) {
			s.PostHooks = []nodegatev1alpha1.Hook{{Name: "a", JobSpec: *deprecated(own.Name)}}
		}, "spec.postHooks[0].jobSpec.template.spec.serviceAccountName"},
		{"another account", "upshift", own, func(s *nodegatev1alpha1.MutexRuleSpec) { s.JobSpec = as("hooks") }, ""},
		{"the same name in another namespace", "team-a", own, func(s *nodegatev1alpha1.MutexRuleSpec) { s.JobSpec = as(own.Name) }, ""},
		{"node-gate's account not known", "upshift", types.NamespacedName{Namespace: "upshift"}, func(s *nodegatev1alpha1.MutexRuleSpec) { s.JobSpec = as(own.Name) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &nodegatev1alpha1.MutexRule{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: tc.jobNS},
				Spec: nodegatev1alpha1.MutexRuleSpec{JobNamespace: tc.jobNS}}
			tc.spec(&r.Spec)
			reason, msg := ruleProblem(r, JobPlaces{Own: tc.own})
			if tc.want == "" {
				if reason != "" {
					t.Fatalf("refused: %s %s", reason, msg)
				}
				return
			}
			if want := tc.want + ": a hook cannot run as node-gate's own ServiceAccount upshift/upshift-node-gate"; reason != ReasonServiceAccount || msg != want {
				t.Fatalf("got %s %q, want %s %q", reason, msg, ReasonServiceAccount, want)
			}
			if c := RuleStatus(r, JobPlaces{Own: tc.own}, now).Conditions[0]; c.Status != metav1.ConditionFalse || c.Message != msg {
				t.Fatalf("rule status %+v", c)
			}
		})
	}
}
