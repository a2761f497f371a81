package controller

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/metrics"
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

// After an upgrade, MUO's result: the paging alerts that fired during it,
// asked of Prometheus once per completed attempt; a failed query is asked
// again later, and an attempt not completed asks nothing.
func TestUpgradeResultFromPrometheus(t *testing.T) {
	var queries []string
	fail := false
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		queries = append(queries, r.Form.Get("query"))
		if fail {
			http.Error(w, `{"status":"error","errorType":"unavailable","error":"down"}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"alertname":"UpgradeNodeDrainFailedSRE"},"value":[1764600000,"1"]}]}}`))
	}))
	defer prom.Close()
	ac, err := alerts.New(alerts.Config{URL: prom.URL, API: alerts.Prometheus, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Alerts: ac}
	start, end := metav1.NewTime(time.Now().Add(-2*time.Hour)), metav1.NewTime(time.Now().Add(-time.Hour))
	uc := &upgradev1alpha1.UpgradeConfig{ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-config"}}
	uc.Status.History = []upgradev1alpha1.UpgradeHistory{{Version: "4.16.2", PrecedingVersion: "4.16.1", Phase: upgradev1alpha1.UpgradePhaseUpgrading, StartTime: &start}}
	if _, ok, retry := r.upgradeResult(context.Background(), "ns/uc", uc); ok || retry || len(queries) != 0 {
		t.Fatalf("an attempt under way: ok %v retry %v queries %v", ok, retry, queries)
	}
	uc.Status.History[0].Phase, uc.Status.History[0].CompleteTime = upgradev1alpha1.UpgradePhaseUpgraded, &end
	fail = true
	if _, ok, retry := r.upgradeResult(context.Background(), "ns/uc", uc); ok || !retry {
		t.Fatalf("a failed query: ok %v retry %v", ok, retry)
	}
	fail = false
	for range 2 {
		fired, ok, retry := r.upgradeResult(context.Background(), "ns/uc", uc)
		if !ok || retry || !slices.Equal(fired, []string{"UpgradeNodeDrainFailedSRE"}) {
			t.Fatalf("fired %v ok %v retry %v", fired, ok, retry)
		}
	}
	if len(queries) != 2 || !strings.Contains(queries[1], `alertname=~"UpgradeConfigValidationFailedSRE|UpgradeClusterCheckFailedSRE|UpgradeControlPlaneUpgradeTimeoutSRE|UpgradeNodeUpgradeTimeoutSRE|UpgradeNodeDrainFailedSRE"}[1h] offset 1h`) {
		t.Fatalf("queries %q: one failed, then one for the attempt", queries)
	}
	s := metrics.UpgradeResultSample(uc, []string{"UpgradeNodeDrainFailedSRE"})
	if s.Value != 0 || s.Labels["stream"] != "z" || s.Labels["alerts"] != "UpgradeNodeDrainFailedSRE" || s.Labels["preceding_version"] != "4.16.1" {
		t.Fatalf("sample %+v", s)
	}
}
