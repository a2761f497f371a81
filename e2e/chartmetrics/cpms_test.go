package chartmetrics

import (
	"testing"
	"time"

	machinev1 "github.com/openshift/api/machine/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/upshift-io/upshift/services/cpms/metrics"
	"github.com/upshift-io/upshift/services/cpms/plan"
)

// cpmsMetrics are the names package metrics registers.
var cpmsMetrics = []string{
	"upshift_cpms_index_state", "upshift_cpms_replicas", "upshift_cpms_condition", "upshift_cpms_blocked",
	"upshift_cpms_etcd_hook_wait_start_timestamp_seconds", "upshift_cpms_etcd_hook_wait_duration_seconds",
	"upshift_cpms_replacement_duration_seconds", "upshift_cpms_actions_total",
}

// TestEveryMetricTheCPMSChartQueriesIsRegistered is the cpms-controller
// chart's counterpart of the scheduler's check: its alerts and panels query
// only metrics and labels the controller's process registers.
func TestEveryMetricTheCPMSChartQueriesIsRegistered(t *testing.T) {
	r := metrics.New(ctrlmetrics.Registry)
	t0 := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	deleting := t0.Add(-time.Minute)
	// An index whose old machine waits on the etcd hook gives a series of
	// every per-index metric.
	r.Observe(t0, plan.Output{
		Indexes: []plan.IndexReport{{Index: 0, State: plan.OldDeleting, Machines: []string{"c1-master-0", "c1-master-abcde-0"},
			DeletingSince: &deleting, HeldByEtcdHook: true}},
		Status: machinev1.ControlPlaneMachineSetStatus{Replicas: 4, ReadyReplicas: 4, UpdatedReplicas: 1,
			Conditions: []metav1.Condition{{Type: plan.ConditionDegraded, Status: metav1.ConditionTrue, Reason: plan.ReasonReplacementTimedOut}}},
	}, 3, nil)
	defer r.Forget()
	for _, name := range cpmsMetrics {
		if !registered(name) {
			t.Fatalf("%s is not registered: the check below would prove nothing", name)
		}
	}
	alerts, panels := checkChartQueries(t, "cpms-controller", "cpms", "cpms-controller", exposed(t))
	if alerts != 7 || panels < 11 {
		t.Errorf("found %d alerts and %d panel queries, want 7 and at least 11", alerts, panels)
	}
}
