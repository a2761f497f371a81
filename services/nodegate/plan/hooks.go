package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

// Names of the hooks made from a rule's mutex-operator fields.
const (
	LegacyPreHook  = "job"
	LegacyPostHook = "cleanup"
)

// hook is one hook of one rule, resolved.
type hook struct {
	rule  *nodegatev1alpha1.MutexRule
	key   string // namespace/name of the rule
	spec  nodegatev1alpha1.Hook
	stage nodegatev1alpha1.HookStage
}

// hooksOf lists a rule's hooks of one stage in the order they run: the
// mutex operator's jobSpec (or cleanUpJobSpec) first, placed off the node
// and pausing on failure as that operator did, then the Upshift hooks.
func hooksOf(rule *nodegatev1alpha1.MutexRule, stage nodegatev1alpha1.HookStage) []hook {
	key := rule.Namespace + "/" + rule.Name
	var out []hook
	legacy, name, extra := rule.Spec.JobSpec, LegacyPreHook, rule.Spec.PreHooks
	if stage == nodegatev1alpha1.StagePost {
		legacy, name, extra = rule.Spec.CleanUpJobSpec, LegacyPostHook, rule.Spec.PostHooks
	}
	if legacy != nil {
		out = append(out, hook{rule: rule, key: key, stage: stage, spec: nodegatev1alpha1.Hook{
			Name: name, JobSpec: *legacy, FailurePolicy: nodegatev1alpha1.FailurePause, Placement: nodegatev1alpha1.PlacementOffNode,
		}})
	}
	for _, h := range extra {
		if h.FailurePolicy == "" {
			h.FailurePolicy = nodegatev1alpha1.FailurePause
		}
		if h.Placement == "" {
			h.Placement = nodegatev1alpha1.PlacementAnywhere
		}
		out = append(out, hook{rule: rule, key: key, stage: stage, spec: h})
	}
	return out
}

func shortHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:10]
}

// JobName is the deterministic name of one attempt of a hook for a node in a
// round: the rule's jobName, a hash of what identifies the hook run, the
// attempt. Creating it twice is harmless (AlreadyExists), so a restart
// between creating a Job and recording it never runs the hook twice.
func JobName(jobName, runID, node, ruleKey, hookName string, stage nodegatev1alpha1.HookStage, attempt int32) string {
	return fmt.Sprintf("%s-%s-%d", jobName, shortHash(runID, node, ruleKey, string(stage), hookName), attempt)
}

// JobParams is what a hook Job is made for.
type JobParams struct {
	Node, Pool, TargetConfig, TargetVersion, RunID, RunKey string
	// Owner is set when the Job is in the run's namespace (owner references
	// cannot cross namespaces); Jobs elsewhere are found by their labels and
	// expire through ttlSecondsAfterFinished.
	Owner   *metav1.OwnerReference
	Attempt int32
}

// BuildJob makes one attempt of a hook for a node. The user's spec is kept;
// node-gate only appends its environment variables to every container,
// constrains placement (and, unless the hook runs on its node, prefers the
// nodes it does not hold), sets a deadline from the hook's timeout, a TTL
// when the spec has none (raised to MinJobTTL when shorter), and drops a
// selector the Job API would reject.
func BuildJob(h nodegatev1alpha1.Hook, rule *nodegatev1alpha1.MutexRule, stage nodegatev1alpha1.HookStage, p JobParams) *batchv1.Job {
	ruleKey := rule.Namespace + "/" + rule.Name
	spec := h.JobSpec.DeepCopy()
	// The mutex operator's examples carry "selector: {}". Without
	// manualSelector the Job API generates the selector from the Job's UID,
	// so a template selector would only ever be replaced: drop it.
	if spec.ManualSelector == nil || !*spec.ManualSelector {
		spec.Selector = nil
	}
	switch {
	case spec.TTLSecondsAfterFinished == nil:
		spec.TTLSecondsAfterFinished = ptr.To(DefaultJobTTL)
	case *spec.TTLSecondsAfterFinished < MinJobTTL:
		// A shorter TTL (0 is common) could remove the Job before node-gate
		// reads its result: see MinJobTTL.
		spec.TTLSecondsAfterFinished = ptr.To(MinJobTTL)
	}
	if h.Timeout != nil {
		spec.ActiveDeadlineSeconds = ptr.To(int64(h.Timeout.Seconds()))
	}
	env := []corev1.EnvVar{
		{Name: EnvNodeName, Value: p.Node},
		{Name: EnvMutexRule, Value: rule.Name},
		{Name: EnvPool, Value: p.Pool},
		{Name: EnvTargetConfig, Value: p.TargetConfig},
		{Name: EnvTargetVersion, Value: p.TargetVersion},
		{Name: EnvRunID, Value: p.RunID},
	}
	ps := &spec.Template.Spec
	for i := range ps.InitContainers {
		ps.InitContainers[i].Env = append(ps.InitContainers[i].Env, env...)
	}
	for i := range ps.Containers {
		ps.Containers[i].Env = append(ps.Containers[i].Env, env...)
	}
	switch h.Placement {
	case nodegatev1alpha1.PlacementOnNode:
		requireNode(ps, p.Node, corev1.NodeSelectorOpIn)
	case nodegatev1alpha1.PlacementOffNode:
		requireNode(ps, p.Node, corev1.NodeSelectorOpNotIn)
	}
	if h.Placement != nodegatev1alpha1.PlacementOnNode {
		preferUnheld(ps)
	}
	lbls := map[string]string{RunLabel: p.RunKey, NodeLabel: shortHash(p.Node), HookLabel: h.Name}
	job := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      JobName(rule.Spec.JobName, p.RunID, p.Node, ruleKey, h.Name, stage, p.Attempt),
			Namespace: rule.Spec.JobNamespace,
			Labels:    lbls,
		},
		Spec: *spec,
	}
	if p.Owner != nil && rule.Spec.JobNamespace == rule.Namespace {
		owner := *p.Owner
		// blockOwnerDeletion false: the reference is only there so the
		// garbage collector removes the Job once the run is gone. Nothing
		// deletes a run in the foreground waiting for its Jobs (the run's
		// own finalizer decides when it goes), so blocking buys nothing,
		// and setting it true needs "update" on mutexrunconfigs/finalizers
		// where OwnerReferencesPermissionEnforcement is enabled (OpenShift):
		// without that grant every Job create would be refused. Creating an
		// object with an owner reference needs no further permission.
		owner.BlockOwnerDeletion = ptr.To(false)
		job.OwnerReferences = []metav1.OwnerReference{owner}
	}
	return job
}

// requireNode adds "node name <op> [node]" to every required node-affinity
// term (terms are ORed, so each needs it), or makes the one term.
func requireNode(ps *corev1.PodSpec, node string, op corev1.NodeSelectorOperator) {
	req := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: op, Values: []string{node}}
	na := nodeAffinity(ps)
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		terms = []corev1.NodeSelectorTerm{{}}
	}
	for i := range terms {
		terms[i].MatchFields = append(terms[i].MatchFields, req)
	}
	na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = terms
}

// preferUnheld adds a preferred node-affinity term for the nodes node-gate
// does not hold. A held node is drained when its turn comes, and the MCO's
// drain then evicts every pod on it, a hook pod that finished long ago
// included, and waits for it to go: that node's update takes longer. Ungated,
// the MCO's own UpdateInProgress taint (PreferNoSchedule) keeps pods off the
// nodes it has still to update; it puts that taint only on nodes of a pool
// that runs, so held nodes, in a paused gate pool, do not carry it. Weight 1:
// as the only term it decides the scheduler's node-affinity score alone (the
// score is scaled to the best node), and beside a hook's own preferences it
// hardly reorders them. Preferred, not required: at a run's start every node
// still to update is held, and a hook must run anyway.
func preferUnheld(ps *corev1.PodSpec) {
	na := nodeAffinity(ps)
	na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, corev1.PreferredSchedulingTerm{
		Weight: 1,
		Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: HoldLabel, Operator: corev1.NodeSelectorOpDoesNotExist},
		}},
	})
}

// nodeAffinity is the pod's node affinity, made empty where it is missing.
func nodeAffinity(ps *corev1.PodSpec) *corev1.NodeAffinity {
	if ps.Affinity == nil {
		ps.Affinity = &corev1.Affinity{}
	}
	if ps.Affinity.NodeAffinity == nil {
		ps.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	return ps.Affinity.NodeAffinity
}

// jobState is what a Job's conditions say.
type jobState int

const (
	jobMissing jobState = iota
	jobRunning
	jobComplete
	jobFailed
)

func stateOf(j *batchv1.Job) (jobState, string) {
	if j == nil {
		return jobMissing, ""
	}
	// Only the terminal conditions count. The Job controller writes
	// SuccessCriteriaMet (or FailureTarget) first and Complete (Failed) once
	// every pod has terminated: a hook whose pod still runs is not done, and
	// a retry must not overlap the attempt it replaces.
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return jobComplete, ""
		case batchv1.JobFailed:
			msg := c.Reason
			if c.Message != "" {
				msg += ": " + c.Message
			}
			return jobFailed, msg
		}
	}
	return jobRunning, ""
}

func timeoutOf(h nodegatev1alpha1.Hook) time.Duration {
	if h.Timeout == nil {
		return 0
	}
	return h.Timeout.Duration
}
