package controller

import (
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/nodes"
	"github.com/upshift-io/upshift/services/nodegate/plan"
)

// Every pass reads all of a run's inputs, so a pass that reads nothing new
// only delays the next useful one: while nodes update, node-gate is woken by
// hundreds of changes a minute, most of which (heartbeats, the MCO's pool
// counters, node-gate's own status writes) the planner never reads. Each
// predicate below passes exactly the updates that change what the planner
// reads of its kind; creations and deletions always pass.

// updated makes a predicate from a test of one update.
func updated[T client.Object](changed func(o, n T) bool) predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(T)
		n, ok2 := e.ObjectNew.(T)
		if !ok1 || !ok2 {
			return true
		}
		return changed(o, n)
	}}
}

// runChanged: the spec (generation), labels, deletion or finalizers of a
// run. A run's status is written only by node-gate, by the pass that
// decided it (which takes the run as far as its inputs allow), and other
// runs are read for their spec and creation alone.
var runChanged = updated(func(o, n *nodegatev1alpha1.MutexRunConfig) bool {
	return o.Generation != n.Generation || !equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		!o.DeletionTimestamp.Equal(n.DeletionTimestamp) || !equality.Semantic.DeepEqual(o.Finalizers, n.Finalizers)
})

// poolChanged passes the updates of what the planner reads of a pool (see
// poolViewChanged).
var poolChanged = updated(poolViewChanged)

// poolViewChanged: two copies of a pool differ in what the planner reads:
// the spec (rendered target, paused, selectors, maxUnavailable), labels or
// deletion; not the status counters the MCO rewrites on every node's step.
func poolViewChanged(o, n *mcfgv1.MachineConfigPool) bool {
	return !equality.Semantic.DeepEqual(&o.Spec, &n.Spec) || !equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		!o.DeletionTimestamp.Equal(n.DeletionTimestamp)
}

// clusterVersionChanged: the requested update, the desired version and the
// newest history entry; not the CVO's progress conditions.
var clusterVersionChanged = updated(func(o, n *configv1.ClusterVersion) bool {
	head := func(cv *configv1.ClusterVersion) configv1.UpdateHistory {
		if len(cv.Status.History) == 0 {
			return configv1.UpdateHistory{}
		}
		h := cv.Status.History[0]
		return configv1.UpdateHistory{State: h.State, Version: h.Version, Image: h.Image}
	}
	return !equality.Semantic.DeepEqual(o.Spec.DesiredUpdate, n.Spec.DesiredUpdate) || o.Status.Desired.Version != n.Status.Desired.Version ||
		head(o) != head(n)
})

// nodeChanged: labels, the MCO's annotations, node-gate's release mark,
// Ready and schedulability; not heartbeats, images or other annotations.
var nodeChanged = updated(func(o, n *corev1.Node) bool {
	return !equality.Semantic.DeepEqual(o.Labels, n.Labels) || nodes.Ready(o) != nodes.Ready(n) || o.Spec.Unschedulable != n.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(mcostate.Annotations(o.Annotations), mcostate.Annotations(n.Annotations)) ||
		o.Annotations[plan.ReleasedAnnotation] != n.Annotations[plan.ReleasedAnnotation]
})

// jobEndChanged passes the updates that change a Job's Complete or Failed
// condition: that is all the planner reads of it (not SuccessCriteriaMet or
// FailureTarget, which come while pods still terminate). It is applied
// by the Job index's handler (jobIndex.handler), which sees every update.
func jobEndChanged(o, n *batchv1.Job) bool { return jobEnd(o) != jobEnd(n) }

func jobEnd(j *batchv1.Job) string {
	for _, c := range j.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
			return string(c.Type)
		}
	}
	return ""
}
