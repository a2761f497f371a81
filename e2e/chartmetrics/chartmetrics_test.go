// Package chartmetrics checks, without a cluster, that every metric the
// upgrade-scheduler chart's alerts and dashboard query is one the binary
// registers, with the labels they match on: a renamed metric or label fails
// here before it silences an alert in production.
package chartmetrics

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	// The scheduler's process registers these: the upgrade metrics, and
	// (through libs/runtime) upshift_build_info.
	_ "github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/services/upgradescheduler/metrics"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

// registered reports whether the process's registry has a collector of that
// name: registering another one under the name fails if so.
func registered(name string) bool {
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "probe"})
	if err := ctrlmetrics.Registry.Register(probe); err != nil {
		return true
	}
	ctrlmetrics.Registry.Unregister(probe)
	return false
}

// registeredSeries: a registered name, or a histogram's _bucket, _sum or _count.
func registeredSeries(name string) bool {
	if registered(name) {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && registered(base) {
			return true
		}
	}
	return false
}

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
			History: upgradev1alpha1.UpgradeHistories{{Version: "4.16.2", Phase: upgradev1alpha1.UpgradePhaseUpgrading,
				StartTime: &t, CompleteTime: &t, WorkerStartTime: &t, WorkerCompleteTime: &t,
				Conditions: upgradev1alpha1.Conditions{done(plan.StepControlPlaneUpgraded), done(plan.StepUpgradeCommenced)}}},
			CurrentStep:         string(plan.StepWorkerNodesUpgraded),
			Preflight:           []upgradev1alpha1.PreflightCheck{{Check: plan.CheckClusterOperators}},
			CapacityReservation: &upgradev1alpha1.CapacityReservationStatus{Outcome: plan.CapacityTimedOut},
			Conditions: []metav1.Condition{
				{Type: "ConfigValid", Status: metav1.ConditionTrue}, {Type: "Paused", Status: metav1.ConditionFalse},
				{Type: "Validated", Status: metav1.ConditionTrue},
				{Type: "DeadlineExceeded", Status: metav1.ConditionTrue, Reason: plan.DeadlineExceededReason(plan.DeadlineWorkers)},
			},
		},
	}
}

func TestEveryMetricTheChartQueriesIsRegistered(t *testing.T) {
	metrics.Default.Update("ns/uc", metrics.Samples(everySeries(), metrics.Cluster{ID: "id", Version: "4.16.1"}))
	defer metrics.Default.Forget("ns/uc")
	metrics.ObserveSteps([]metrics.StepDone{{Step: string(plan.StepUpgradeCommenced), Duration: time.Second}})
	for _, name := range metrics.Names() {
		if !registered(name) {
			t.Fatalf("%s is not registered: the check below would prove nothing", name)
		}
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	exposed, err := framework.ParseExposition(buf.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range metrics.Names() {
		if _, ok := exposed[name]; !ok && name != metrics.StepDuration {
			t.Errorf("the fixture gives %s no series: its labels go unchecked", name)
		}
	}

	chart, err := framework.RenderChart("upgrade-scheduler", "ups", "upshift", "prometheusRule.enabled=true", "dashboard.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	queries, err := chart.MonitoringQueries()
	if err != nil {
		t.Fatal(err)
	}
	var alerts, panels int
	for _, q := range queries {
		switch {
		case strings.HasPrefix(q.Source, "PrometheusRule"):
			alerts++
		case strings.Contains(q.Source, " panel "):
			panels++
		}
		sels, err := framework.PromQLSelectors(q.Expr)
		if err != nil {
			t.Errorf("%s: %v", q.Source, err)
			continue
		}
		if len(sels) == 0 {
			t.Errorf("%s selects no metric: %s", q.Source, q.Expr)
		}
		for _, s := range sels {
			if !registeredSeries(s.Metric) {
				t.Errorf("%s queries %s, which the upgrade-scheduler does not register", q.Source, s.Metric)
				continue
			}
			// The labels of a series the fixture produced.
			if _, ok := exposed[s.Metric]; ok {
				for _, m := range exposed.Missing([]framework.Selector{s}) {
					t.Errorf("%s: %s", q.Source, m)
				}
			}
		}
	}
	if alerts != 9 || panels < 12 {
		t.Errorf("found %d alerts and %d panel queries, want 9 and at least 12", alerts, panels)
	}
}
