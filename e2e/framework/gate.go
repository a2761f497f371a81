package framework

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

// OneHookGate is node-gate's objects for gating the worker pool with one
// pre-update hook, in namespace (where the node-gate chart lets hook Jobs
// run): the rule "fence", whose jobSpec runs before each worker is
// released, the target "workers" on pool worker, and the run "workers",
// which the caller may give a maxUnavailable, a health gate, ...
func OneHookGate(namespace string) (*nodegatev1alpha1.MutexRule, *nodegatev1alpha1.MutexTarget, *nodegatev1alpha1.MutexRunConfig) {
	rule := &nodegatev1alpha1.MutexRule{ObjectMeta: metav1.ObjectMeta{Name: "fence", Namespace: namespace},
		Spec: nodegatev1alpha1.MutexRuleSpec{JobName: "fence", JobNamespace: namespace, Type: nodegatev1alpha1.RuleTypeKubernetes,
			JobSpec: &batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "fence", Image: "registry.example.com/fence:1", Command: []string{"/fence", "$(NODE_NAME)"}}}}}}}}
	target := &nodegatev1alpha1.MutexTarget{ObjectMeta: metav1.ObjectMeta{Name: "workers", Namespace: namespace},
		Spec: nodegatev1alpha1.MutexTargetSpec{MachineConfigPools: []string{"worker"}}}
	run := &nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Name: "workers", Namespace: namespace},
		Spec: nodegatev1alpha1.MutexRunConfigSpec{MutexRules: []nodegatev1alpha1.ObjectReference{{Name: rule.Name}},
			MutexTargets: []nodegatev1alpha1.ObjectReference{{Name: target.Name}}}}
	return rule, target, run
}
