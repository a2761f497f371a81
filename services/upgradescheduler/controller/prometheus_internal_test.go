package controller

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
)

// prometheusAlertsBody is a /api/v1/alerts answer in the shape Prometheus's
// HTTP API documents (and the Thanos querier serves): firing and pending
// alerts, each with its labels, annotations, state, activeAt and value.
const prometheusAlertsBody = `{"status":"success","data":{"alerts":[
 {"labels":{"alertname":"KubeAPIErrorBudgetBurn","severity":"critical","namespace":"openshift-kube-apiserver"},
  "annotations":{"summary":"The API server is burning too much error budget."},"state":"firing","activeAt":"2026-11-23T08:00:00Z","value":"1e+00"},
 {"labels":{"alertname":"etcdMembersDown","severity":"critical","namespace":"openshift-etcd"},
  "annotations":{},"state":"pending","activeAt":"2026-11-23T08:10:00Z","value":"1e+00"},
 {"labels":{"alertname":"ClusterOperatorDown","severity":"critical","namespace":"openshift-cluster-version"},
  "annotations":{},"state":"firing","activeAt":"2026-11-23T08:00:00Z","value":"1e+00"},
 {"labels":{"alertname":"KubeNodeNotReady","severity":"warning","namespace":"openshift-monitoring"},
  "annotations":{},"state":"firing","activeAt":"2026-11-23T08:00:00Z","value":"1e+00"}
]}}`

// With --alerts-url the critical-alerts check reads Prometheus's (or the
// Thanos querier's) alerts API: only firing critical alerts count — a
// pending one is not firing yet — and the configured ignore list applies.
func TestCriticalAlertsFromPrometheus(t *testing.T) {
	var paths []string
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(prometheusAlertsBody))
	}))
	defer prom.Close()
	ac, err := alerts.New(alerts.Config{URL: prom.URL, API: alerts.Prometheus, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Alerts: ac, Clock: clocktesting.NewFakeClock(time.Date(2026, 11, 23, 8, 30, 0, 0, time.UTC))}
	cfg, err := config.FromConfigMapData(map[string]string{config.ConfigKey: "healthCheck:\n  ignoredCriticals: [ClusterOperatorDown]\n"})
	if err != nil {
		t.Fatal(err)
	}
	res := r.criticalAlerts(context.Background(), cfg)
	if res == nil || res.Err != "" {
		t.Fatalf("read failed: %+v", res)
	}
	if want := []string{"KubeAPIErrorBudgetBurn"}; !slices.Equal(res.Firing, want) {
		t.Fatalf("firing critical alerts %v, want %v", res.Firing, want)
	}
	if !slices.Equal(paths, []string{"/api/v1/alerts"}) {
		t.Fatalf("requests %v, want one read of /api/v1/alerts", paths)
	}
}
