package metrics

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/libs/metricstest"

	"github.com/upshift-io/upshift/services/aromonitor/probe"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.Condition("InternetReachableFromWorker", "False")
	m.Condition("InternetReachableFromWorker", "True")
	m.Round(amv1alpha1.RoleWorker, []probe.Result{
		{URL: "https://arosvc.azurecr.io/v2/", Latency: map[amv1alpha1.ProbePhase]time.Duration{"DNS": 3 * time.Millisecond, "Connect": 9 * time.Millisecond}},
		{URL: "https://management.azure.com/", FailedPhase: "TLS", Err: errors.New("x"), Latency: map[amv1alpha1.ProbePhase]time.Duration{"TLS": time.Second}},
	})
	m.Remediation("reassociate", "success")
	m.ARMRequest("GET subnets", "429")
	exp := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	m.SecretExpiry(&exp)

	for name, want := range map[string]map[string]float64{
		"upshift_aro_monitor_condition": {
			"status=True,type=InternetReachableFromWorker": 1, "status=False,type=InternetReachableFromWorker": 0, "status=Unknown,type=InternetReachableFromWorker": 0},
		"upshift_aro_monitor_probe_phase_duration_seconds": {
			"phase=DNS,role=worker,target=arosvc.azurecr.io#count": 1, "phase=Connect,role=worker,target=arosvc.azurecr.io#count": 1,
			"phase=TLS,role=worker,target=management.azure.com#count": 1},
		"upshift_aro_monitor_probe_failures_total":                   {"phase=TLS,role=worker,target=management.azure.com": 1},
		"upshift_aro_monitor_remediations_total":                     {"action=reassociate,result=success": 1},
		"upshift_aro_monitor_arm_requests_total":                     {"code=429,operation=GET subnets": 1},
		"upshift_aro_monitor_client_secret_expiry_timestamp_seconds": {"": float64(exp.Unix())},
	} {
		got, err := metricstest.Series(reg, name)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s{%s} = %v, want %v (all: %v)", name, k, got[k], v, got)
			}
		}
	}
}
