package plan

// This file runs a node's hooks of one stage: one Job at a time, retries
// and failure policies.

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

// runHooks drives the node's hooks of one stage, one at a time in order. It
// reports whether every hook of the stage is done (succeeded or ignored).
func (p *planner) runHooks(r *nodegatev1alpha1.NodeRecord, stage nodegatev1alpha1.HookStage) bool {
	for i := range r.Hooks {
		hr := &r.Hooks[i]
		if hr.Stage != stage || hr.Phase == nodegatev1alpha1.HookSucceeded || hr.Phase == nodegatev1alpha1.HookIgnored {
			continue
		}
		if hr.Phase == nodegatev1alpha1.HookFailed {
			return false
		}
		h, ok := p.findHook(*hr)
		if !ok {
			// The rule changed under the run: a hook that no longer exists
			// has nothing left to run.
			hr.Phase = nodegatev1alpha1.HookIgnored
			hr.LastError = "the hook was removed from its rule"
			continue
		}
		// A pre-update hook is not started, nor tried again, for content
		// the node will no longer get: its pool rendered new content, and
		// the caller holds it again for that (see step).
		stale := stage == nodegatev1alpha1.StagePre && p.retargeted(r)
		if hr.Phase == nodegatev1alpha1.HookPending {
			if p.aborted || (p.st.PausedGeneration != 0) || stale {
				return false
			}
			if !p.createAttempt(r, hr, h) {
				return false
			}
		}
		job := p.jobOf(h, *hr)
		state, why := stateOf(job)
		if t := envOf(job, EnvTargetConfig); t != "" && t != p.hooksTarget(r) {
			// A Job under this attempt's name made for other content: a
			// pass whose status was lost made it before the pools
			// rendered again (the record then started over, and the Job
			// may not have been in the cache when the attempt was
			// created again). It ran for a target the node will not get:
			// it counts neither for this one nor against its retries.
			// Once it has ended (two attempts of a hook never overlap),
			// the next attempt runs.
			if state == jobRunning {
				return false
			}
			hr.AttemptsBefore++
			p.createAttempt(r, hr, h)
			return false
		}
		if state == jobRunning || state == jobMissing {
			if t := timeoutOf(h.spec); t > 0 && hr.StartTime != nil {
				left := hr.StartTime.Add(t).Sub(p.in.Now)
				if left > 0 {
					p.wake(left)
				} else {
					state, why = jobFailed, fmt.Sprintf("timed out after %s", t)
				}
			}
		}
		switch state {
		case jobMissing:
			if stale {
				// Gone, or not seen yet: not made again for old content.
				return false
			}
			// Not in the cache yet, or deleted: creating it again under the
			// same name is idempotent.
			p.act(Action{Kind: CreateJob, Job: p.buildJob(r, h, hr.Attempts)})
			return false
		case jobRunning:
			return false
		case jobComplete:
			hr.Phase = nodegatev1alpha1.HookSucceeded
			hr.CompletionTime = ptr.To(p.now)
			continue
		case jobFailed:
			hr.LastError = why
			r.LastError = fmt.Sprintf("hook %s/%s attempt %d: %s", hr.Rule, hr.Name, hr.Attempts, why)
			if stale {
				return false
			}
			if hr.Attempts-hr.AttemptsBefore <= h.spec.Retries {
				p.event(OnNode, r.Name, corev1.EventTypeWarning, "HookRetried", "hook %s/%s for node %s failed (%s); retrying", hr.Rule, hr.Name, r.Name, why)
				p.createAttempt(r, hr, h)
				return false
			}
			switch h.spec.FailurePolicy {
			case nodegatev1alpha1.FailureIgnore:
				hr.Phase = nodegatev1alpha1.HookIgnored
				hr.CompletionTime = ptr.To(p.now)
				p.event(OnNode, r.Name, corev1.EventTypeWarning, "HookFailedIgnored", "hook %s/%s for node %s failed (%s); its failurePolicy is Ignore", hr.Rule, hr.Name, r.Name, why)
				continue
			case nodegatev1alpha1.FailureAbort:
				hr.Phase = nodegatev1alpha1.HookFailed
				r.Phase = nodegatev1alpha1.NodeFailed
				p.aborted = true
				p.st.PausedGeneration = p.run.Generation
				p.event(OnRun, "", corev1.EventTypeWarning, ReasonAborted, "hook %s/%s for node %s failed (%s); its failurePolicy is Abort: restoring the pools", hr.Rule, hr.Name, r.Name, why)
				return false
			default:
				hr.Phase = nodegatev1alpha1.HookFailed
				r.Phase = nodegatev1alpha1.NodeFailed
				p.st.PausedGeneration = p.run.Generation
				p.event(OnRun, "", corev1.EventTypeWarning, ReasonHookFailed, "hook %s/%s for node %s failed (%s): the run is paused; change the spec to resume", hr.Rule, hr.Name, r.Name, why)
				p.event(OnNode, r.Name, corev1.EventTypeWarning, ReasonHookFailed, "hook %s/%s failed: %s", hr.Rule, hr.Name, why)
				return false
			}
		}
	}
	return true
}

// hookInFlight says whether one of r's hooks of stage has a Job that may
// still run. A Job node-gate created and the cache does not show yet is
// among the input's Jobs already (the controller's index holds it), so it
// counts as running; a missing one is gone.
func (p *planner) hookInFlight(r *nodegatev1alpha1.NodeRecord, stage nodegatev1alpha1.HookStage) bool {
	for _, hr := range r.Hooks {
		if hr.Stage != stage || hr.Phase != nodegatev1alpha1.HookRunning {
			continue
		}
		if h, ok := p.findHook(hr); ok {
			if state, _ := stateOf(p.jobOf(h, hr)); state == jobRunning {
				return true
			}
		}
	}
	return false
}

// jobOf is the Job of hr's current attempt (nil when the input has none).
func (p *planner) jobOf(h hook, hr nodegatev1alpha1.HookRecord) *batchv1.Job {
	return p.jobs[h.rule.Spec.JobNamespace+"/"+hr.JobName]
}

func (p *planner) createAttempt(r *nodegatev1alpha1.NodeRecord, hr *nodegatev1alpha1.HookRecord, h hook) (exists bool) {
	hr.Attempts++
	hr.Phase = nodegatev1alpha1.HookRunning
	job := p.buildJob(r, h, hr.Attempts)
	hr.JobName = job.Name
	if made, ok := p.jobs[job.Namespace+"/"+job.Name]; ok {
		// Made by a pass whose status was lost (a restart): the attempt
		// is that Job, as old as it is, and the caller reads it now.
		hr.StartTime = ptr.To(made.CreationTimestamp)
		return true
	}
	hr.StartTime = ptr.To(p.now)
	p.act(Action{Kind: CreateJob, Job: job})
	if t := timeoutOf(h.spec); t > 0 {
		p.wake(t)
	}
	return false
}

// hooksTarget is the configuration r's hooks run for (their
// TARGET_CONFIG): the pool's target when its pre-update hooks started.
func (p *planner) hooksTarget(r *nodegatev1alpha1.NodeRecord) string {
	if r.HooksTarget != "" {
		return r.HooksTarget
	}
	return p.updateTarget(r.Pool)
}

func (p *planner) buildJob(r *nodegatev1alpha1.NodeRecord, h hook, attempt int32) *batchv1.Job {
	target := p.hooksTarget(r)
	owner := metav1.NewControllerRef(p.run, nodegatev1alpha1.GroupVersion.WithKind("MutexRunConfig"))
	return BuildJob(h.spec, h.rule, h.stage, JobParams{
		Node: r.Name, Pool: r.Pool, TargetConfig: target, TargetVersion: targetVersion(p.in.ClusterVersion),
		RunID: p.st.RunID, RunKey: p.runKey, Owner: owner, Attempt: attempt,
	})
}

// envOf is the value of a hook Job's environment variable node-gate set
// (on every container; the first is read), "" without it or the Job.
func envOf(j *batchv1.Job, name string) string {
	if j == nil {
		return ""
	}
	if cs := j.Spec.Template.Spec.Containers; len(cs) > 0 {
		for _, e := range cs[0].Env {
			if e.Name == name {
				return e.Value
			}
		}
	}
	return ""
}
