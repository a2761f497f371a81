// Package chartmetrics checks, without a cluster, that every metric the
// upgrade-scheduler chart's alerts and dashboard query is one the binary
// registers, with the labels they match on: a renamed metric or label fails
// here before it silences an alert in production.
package chartmetrics

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	// The scheduler's process registers upshift_build_info through
	// libs/runtime, and its upgrade metrics on the same registry.
	_ "github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/services/upgradescheduler/metrics"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

// everySeries is an UpgradeConfig whose status gives a series of every
// upgrade metric, so that their label names can be checked too.
func everySeries() *upgradev1alpha1.UpgradeConfig {
	t := metav1.NewTime(time.Date(2026, 11, 21, 22, 0, 0, 0, time.UTC))
	done := func(s upgradev1alpha1.UpgradeConditionType) upgradev1alpha1.UpgradeCondition {
		return upgradev1alpha1.UpgradeCondition{Type: s, Status: "True", StartTime: &t, CompleteTime: &t}
	}
	return &upgradev1alpha1.UpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "uc"},
		Spec:       upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.16.2"}, UpgradeAt: "2026-11-21T22:00:00Z"},
		Status: upgradev1alpha1.UpgradeConfigStatus{
			History: []upgradev1alpha1.UpgradeHistory{{Version: "4.16.2", Phase: upgradev1alpha1.UpgradePhaseUpgrading,
				StartTime: &t, CompleteTime: &t, WorkerStartTime: &t, WorkerCompleteTime: &t,
				Conditions: upgradev1alpha1.Conditions{done(plan.StepControlPlaneUpgraded), done(plan.StepUpgradeCommenced)}}},
			CurrentStep:         string(plan.StepWorkerNodesUpgraded),
			Preflight:           []upgradev1alpha1.PreflightCheck{{Check: plan.CheckClusterOperators}},
			CapacityReservation: &upgradev1alpha1.CapacityReservationStatus{Outcome: plan.CapacityTimedOut},
			Drains: []upgradev1alpha1.NodeDrain{{Node: "w1", Owner: upgradev1alpha1.DrainOwnerScheduler, TimedOutTime: &t,
				Record: &commonv1alpha1.DrainRecord{Request: "drain-rendered-worker-2", StartTime: t}}},
			Notifications: []upgradev1alpha1.NotificationRecord{{Event: plan.EventStarted, Version: "4.16.2", Generation: 1, Outcome: "Sent"}},
			Conditions: []metav1.Condition{
				{Type: "ConfigValid", Status: metav1.ConditionTrue}, {Type: "Paused", Status: metav1.ConditionFalse},
				{Type: "Validated", Status: metav1.ConditionTrue},
				{Type: "DeadlineExceeded", Status: metav1.ConditionTrue, Reason: plan.DeadlineExceededReason(plan.DeadlineWorkers)},
			},
		},
	}
}

func TestEveryMetricTheChartQueriesIsRegistered(t *testing.T) {
	m := metrics.New(ctrlmetrics.Registry)
	uc := everySeries()
	m.Update("ns/uc", append(metrics.Samples(uc, metrics.Cluster{ID: "id", Version: "4.16.1"}),
		metrics.UpgradeResultSample(uc, []string{"UpgradeNodeDrainFailedSRE"})))
	defer m.Forget("ns/uc")
	m.ObserveSteps([]metrics.StepDone{{Step: string(plan.StepUpgradeCommenced), Duration: time.Second}})
	m.ObserveOCMRequest("patch_policy_state", "500")
	m.ObserveNotification("uc", plan.EventStarted, "failed")
	m.ObserveSync("uc", time.Unix(1, 0))
	m.ObserveForced("ForceDelete")
	for _, name := range metrics.Names() {
		if !registered(name) {
			t.Fatalf("%s is not registered: the check below would prove nothing", name)
		}
	}
	exp := exposed(t)
	for _, name := range metrics.Names() {
		if _, ok := exp[name]; !ok && name != metrics.StepDuration {
			t.Errorf("the fixture gives %s no series: its labels go unchecked", name)
		}
	}

	alerts, panels := checkChartQueries(t, "upgrade-scheduler", "ups", "upgrade-scheduler", exp)
	if alerts != 12 || panels < 14 {
		t.Errorf("found %d alerts and %d panel queries, want 12 and at least 14", alerts, panels)
	}
}
