package chartmetrics

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/services/nodegate/metrics"
)

// gateMetrics are the names metrics.New registers.
var gateMetrics = []string{
	metrics.NodesName, metrics.HookDurationName, metrics.NodeDurationName, metrics.BlockedName, metrics.PausedName,
	metrics.HookFailuresName, metrics.ForcedDrainName, metrics.DrainBlockedName, metrics.DrainStuckPodsName,
}

// TestEveryMetricTheNodeGateChartQueriesIsRegistered: node-gate's alerts
// and panels query only metrics and labels its process registers.
func TestEveryMetricTheNodeGateChartQueriesIsRegistered(t *testing.T) {
	m := metrics.New(ctrlmetrics.Registry)
	t0 := metav1.NewTime(time.Date(2026, 11, 21, 22, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	hook := nodegatev1alpha1.HookRecord{Rule: "ns/r", Name: "job", Stage: nodegatev1alpha1.StagePre, Phase: nodegatev1alpha1.HookRunning, Attempts: 1, StartTime: &t0}
	done := hook
	done.Phase, done.CompletionTime = nodegatev1alpha1.HookSucceeded, &t1
	before := &nodegatev1alpha1.MutexRunConfigStatus{RunID: "r", Nodes: []nodegatev1alpha1.NodeRecord{{Name: "w1", Pool: "worker", Phase: nodegatev1alpha1.NodePreHooks, StartTime: &t0, Hooks: []nodegatev1alpha1.HookRecord{hook}}}}
	after := &nodegatev1alpha1.MutexRunConfigStatus{RunID: "r", Nodes: []nodegatev1alpha1.NodeRecord{{Name: "w1", Pool: "worker", Phase: nodegatev1alpha1.NodeCompleted, StartTime: &t0, CompletionTime: &t1, Hooks: []nodegatev1alpha1.HookRecord{done}}}}
	m.Observe("ns/run", before, after, "OutsideMaintenanceWindow", 1, 1)
	m.Forced(commonv1alpha1.DrainStepDelete)
	for _, name := range gateMetrics {
		if !registered(name) {
			t.Fatalf("%s is not registered: the check below would prove nothing", name)
		}
	}
	alerts, panels := checkChartQueries(t, "node-gate", "ngate", "node-gate", exposed(t))
	if alerts != 5 || panels < 8 {
		t.Errorf("found %d alerts and %d panel queries, want 5 and at least 8", alerts, panels)
	}
}
