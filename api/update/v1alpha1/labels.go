package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels the update-status-controller keeps on every NodeProgressInsight, so
// that `kubectl get nodeprogressinsights -l ...` (and any client) can select
// nodes by pool, phase, degradation and availability without reading them all.
const (
	// LabelPool is the name of the node's MachineConfigPool; absent when the
	// name is not a valid label value (longer than 63 characters).
	LabelPool = "update.upshift.io/pool"
	// LabelPhase is the node's update phase, the reason of its Updating
	// condition: Draining, Updating, Rebooting, Paused, Pending or Completed.
	LabelPhase = "update.upshift.io/phase"
	// LabelDegraded is "true" when the node's Degraded condition is True, else "false".
	LabelDegraded = "update.upshift.io/degraded"
	// LabelAvailable is "false" when the node's Available condition is
	// False, else "true".
	LabelAvailable = "update.upshift.io/available"
)

// NodeInsightLabels are the labels the update-status-controller puts on the
// NodeProgressInsight of in.
func NodeInsightLabels(in *NodeStatusInsight) map[string]string {
	l := map[string]string{LabelDegraded: "false", LabelAvailable: "true"}
	if pool := in.PoolResource.Name; len(validation.IsValidLabelValue(pool)) == 0 {
		l[LabelPool] = pool
	}
	if c := meta.FindStatusCondition(in.Conditions, ConditionUpdating); c != nil {
		l[LabelPhase] = c.Reason
	}
	if meta.IsStatusConditionTrue(in.Conditions, ConditionDegraded) {
		l[LabelDegraded] = "true"
	}
	if meta.IsStatusConditionFalse(in.Conditions, ConditionAvailable) {
		l[LabelAvailable] = "false"
	}
	return l
}

// NodeInsightLabelKeys are the label keys the update-status-controller
// manages on a NodeProgressInsight; others are left alone.
var NodeInsightLabelKeys = []string{LabelPool, LabelPhase, LabelDegraded, LabelAvailable}
