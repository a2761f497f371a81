package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

// The mutex operator's conditions on MutexRules and MutexTargets, with its
// types and reasons: alert rules and scripts written for it read them.
const (
	ConditionValidConfig      = "ValidConfig"
	ConditionNodeListGathered = "NodeListGathered"

	ReasonValidConfig        = "ValidConfig"
	ReasonInvalidConfig      = "InvalidConfig"
	ReasonPoolFetchSucceeded = "MachineConfigPoolFetchSucceeded"
	ReasonPoolFetchFailed    = "MachineConfigPoolFetchFailed"
)

// ruleProblem says why node-gate cannot run rule's Jobs ("" when it can):
// what every run using it is blocked on, and what the rule's ValidConfig
// condition says.
func ruleProblem(rule *nodegatev1alpha1.MutexRule, jobs JobPlaces) (reason, message string) {
	if rule.Spec.Type != "" && rule.Spec.Type != nodegatev1alpha1.RuleTypeKubernetes {
		return ReasonInvalidRule, fmt.Sprintf("spec.type %q is not supported", rule.Spec.Type)
	}
	ns := rule.Spec.JobNamespace
	if len(jobs.Namespaces) > 0 && !slices.Contains(jobs.Namespaces, ns) {
		// node-gate may not create Jobs there: every create would be
		// Forbidden, pass after pass, with the pools already paused.
		return ReasonJobNamespace, fmt.Sprintf("spec.jobNamespace %q is not one of node-gate's job namespaces %v (the chart's jobNamespaces)",
			ns, jobs.Namespaces)
	}
	if other := jobs.ForRuleNamespace[rule.Namespace]; ns != rule.Namespace && !slices.Contains(other, ns) {
		// The admission policy refuses such a rule; one from before it
		// (or with the policy off) is refused here, before any Job.
		return ReasonJobNamespace, fmt.Sprintf("spec.jobNamespace %q: the rules of namespace %s may run hook Jobs only in %s%s (the chart's ruleJobNamespaces)",
			ns, rule.Namespace, rule.Namespace, listedOthers(other))
	}
	if field := runsAs(rule, jobs.Own); field != "" {
		// The admission policy refuses this whoever asks; here it is
		// refused for a rule from before the policy or with it removed.
		return ReasonServiceAccount, fmt.Sprintf("%s: a hook cannot run as node-gate's own ServiceAccount %s", field, jobs.Own)
	}
	return "", ""
}

// runsAs names the first of rule's Job templates whose pod could run as
// ServiceAccount sa ("" when none does, or sa is not known): one in sa's
// namespace naming sa by serviceAccountName or by its deprecated spelling
// serviceAccount (which the API server still honours), as the admission
// policy judges them.
func runsAs(rule *nodegatev1alpha1.MutexRule, sa types.NamespacedName) string {
	if sa.Name == "" || rule.Spec.JobNamespace != sa.Namespace {
		return ""
	}
	named := func(js *batchv1.JobSpec) bool {
		return js != nil && (js.Template.Spec.ServiceAccountName == sa.Name || js.Template.Spec.DeprecatedServiceAccount == sa.Name)
	}
	const field = ".template.spec.serviceAccountName"
	switch {
	case named(rule.Spec.JobSpec):
		return "spec.jobSpec" + field
	case named(rule.Spec.CleanUpJobSpec):
		return "spec.cleanUpJobSpec" + field
	}
	for _, stage := range []struct {
		name  string
		hooks []nodegatev1alpha1.Hook
	}{{"preHooks", rule.Spec.PreHooks}, {"postHooks", rule.Spec.PostHooks}} {
		for i := range stage.hooks {
			if named(&stage.hooks[i].JobSpec) {
				return fmt.Sprintf("spec.%s[%d].jobSpec%s", stage.name, i, field)
			}
		}
	}
	return ""
}

// listedOthers is " or in a, b" for the other namespaces listed, else "".
func listedOthers(other []string) string {
	if len(other) == 0 {
		return ""
	}
	return " or in " + strings.Join(other, ", ")
}

// RuleStatus is the status rule should carry: ValidConfig True (reason
// ValidConfig) when node-gate can run its Jobs, else False (InvalidConfig)
// saying why. The conditions of old keep their transition times; now stamps
// a change.
func RuleStatus(rule *nodegatev1alpha1.MutexRule, jobs JobPlaces, now time.Time) nodegatev1alpha1.MutexRuleStatus {
	st := *rule.Status.DeepCopy()
	st.ObservedGeneration = rule.Generation
	c := metav1.Condition{Type: ConditionValidConfig, Status: metav1.ConditionTrue, Reason: ReasonValidConfig,
		Message: "node-gate can run this rule's Jobs", ObservedGeneration: rule.Generation, LastTransitionTime: metav1.NewTime(now)}
	if _, msg := ruleProblem(rule, jobs); msg != "" {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonInvalidConfig, msg
	}
	meta.SetStatusCondition(&st.Conditions, c)
	return st
}

// TargetStatus is the status target should carry: status.nodes, the nodes
// the MCO places in its pools (PoolMembers), and ValidConfig and
// NodeListGathered, True (MachineConfigPoolFetchSucceeded) when every pool
// exists, else False (MachineConfigPoolFetchFailed) naming the missing
// ones. (The mutex operator wrote NodeListGathered True on that path; a
// list gathered without a pool is not complete, so node-gate says False.)
// The nodes of the pools that exist are listed either way.
func TargetStatus(target *nodegatev1alpha1.MutexTarget, pools []mcfgv1.MachineConfigPool, nodes []*corev1.Node, now time.Time) nodegatev1alpha1.MutexTargetStatus {
	st := *target.Status.DeepCopy()
	st.ObservedGeneration = target.Generation
	st.Nodes = PoolMembers(pools, nodes, target.Spec.MachineConfigPools)
	var missing []string
	for _, name := range target.Spec.MachineConfigPools {
		if !slices.ContainsFunc(pools, func(p mcfgv1.MachineConfigPool) bool { return p.Name == name }) {
			missing = append(missing, name)
		}
	}
	status, reason := metav1.ConditionTrue, ReasonPoolFetchSucceeded
	valid := fmt.Sprintf("every MachineConfigPool exists (%s)", strings.Join(target.Spec.MachineConfigPools, ", "))
	gathered := fmt.Sprintf("%d nodes in the pools", len(st.Nodes))
	if len(missing) > 0 {
		status, reason = metav1.ConditionFalse, ReasonPoolFetchFailed
		valid = "MachineConfigPools not found: " + strings.Join(missing, ", ")
		gathered = fmt.Sprintf("%d nodes in the pools found; not found: %s", len(st.Nodes), strings.Join(missing, ", "))
	}
	for _, c := range []metav1.Condition{
		{Type: ConditionValidConfig, Status: status, Reason: reason, Message: valid},
		{Type: ConditionNodeListGathered, Status: status, Reason: reason, Message: gathered},
	} {
		c.ObservedGeneration, c.LastTransitionTime = target.Generation, metav1.NewTime(now)
		meta.SetStatusCondition(&st.Conditions, c)
	}
	if len(st.Nodes) == 0 {
		st.Nodes = nil
	}
	return st
}
