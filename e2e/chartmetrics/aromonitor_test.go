package chartmetrics

import (
	"errors"
	"testing"
	"time"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/services/aromonitor/metrics"
	"github.com/upshift-io/upshift/services/aromonitor/probe"
)

// aroMetrics are the names metrics.New registers.
var aroMetrics = []string{
	"upshift_aro_monitor_condition", "upshift_aro_monitor_last_success_timestamp_seconds",
	"upshift_aro_monitor_probe_phase_duration_seconds", "upshift_aro_monitor_probe_failures_total",
	"upshift_aro_monitor_remediations_total", "upshift_aro_monitor_arm_requests_total",
	"upshift_aro_monitor_client_secret_expiry_timestamp_seconds",
}

// TestEveryMetricTheAROMonitorChartQueriesIsRegistered: aro-monitor's
// alerts and panels query only metrics and labels its process registers.
func TestEveryMetricTheAROMonitorChartQueriesIsRegistered(t *testing.T) {
	m := metrics.New(ctrlmetrics.Registry)
	t0 := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	// One series of every metric, as a round with a failure, a remediation,
	// an ARM call and a recorded expiry give.
	m.Condition(arov1alpha1.InternetReachableFromMaster, "False")
	m.Success(amv1alpha1.CheckInternetWorker, "worker-eastus1", t0)
	m.Round(amv1alpha1.RoleWorker, []probe.Result{
		{URL: "https://arosvc.azurecr.io/", Latency: map[amv1alpha1.ProbePhase]time.Duration{amv1alpha1.PhaseDNS: time.Millisecond}},
		{URL: "https://management.azure.com/", FailedPhase: amv1alpha1.PhaseConnect, Err: errors.New("refused"),
			Latency: map[amv1alpha1.ProbePhase]time.Duration{amv1alpha1.PhaseConnect: time.Millisecond}},
	})
	m.Remediation("reassociate", "success")
	m.ARMRequest("GET subnets", "200")
	m.SecretExpiry(&t0)
	for _, name := range aroMetrics {
		if !registered(name) {
			t.Fatalf("%s is not registered: the check below would prove nothing", name)
		}
	}
	exp := exposed(t)
	for _, name := range aroMetrics {
		if _, ok := exp[name]; !ok && name != "upshift_aro_monitor_probe_phase_duration_seconds" {
			t.Errorf("the fixture gives %s no series: its labels go unchecked", name)
		}
	}
	alerts, panels := checkChartQueries(t, "aro-monitor", "aro", "aro-monitor", exp)
	if alerts != 15 || panels < 10 {
		t.Errorf("found %d alerts and %d panel queries, want 15 and at least 10", alerts, panels)
	}
}
