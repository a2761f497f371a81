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
	// condition: Draining, Updating, Rebooting, Paused, Gated, Pending or
	// Completed.
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
	l := make(map[string]string, len(NodeInsightLabelKeys))
	for _, k := range NodeInsightLabelKeys {
		if v, ok := NodeInsightLabel(in, k); ok {
			l[k] = v
		}
	}
	return l
}

// NodeInsightLabel is the value of the controller's label key on the
// NodeProgressInsight of in, and whether it carries that label at all. It
// lets a caller compare an insight's labels without building the map: the
// controller does so for every node on every recomputation.
func NodeInsightLabel(in *NodeStatusInsight, key string) (string, bool) {
	switch key {
	case LabelPool:
		pool := in.PoolResource.Name
		return pool, len(validation.IsValidLabelValue(pool)) == 0
	case LabelPhase:
		if c := meta.FindStatusCondition(in.Conditions, ConditionUpdating); c != nil {
			return c.Reason, true
		}
		return "", false
	case LabelDegraded:
		if meta.IsStatusConditionTrue(in.Conditions, ConditionDegraded) {
			return "true", true
		}
		return "false", true
	case LabelAvailable:
		if meta.IsStatusConditionFalse(in.Conditions, ConditionAvailable) {
			return "false", true
		}
		return "true", true
	}
	return "", false
}

// NodeInsightLabelKeys are the label keys the update-status-controller
// manages on a NodeProgressInsight; others are left alone.
var NodeInsightLabelKeys = []string{LabelPool, LabelPhase, LabelDegraded, LabelAvailable}
