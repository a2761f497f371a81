package controller

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

// An Alertmanager that answers 503 is read once per recheck interval, not
// once per reconcile, and the check fails closed in between.
func TestCriticalAlertsKeepsAFailedReadForTheRecheckInterval(t *testing.T) {
	var requests atomic.Int32
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "alertmanager is starting", http.StatusServiceUnavailable)
	}))
	defer am.Close()
	ac, err := alerts.New(alerts.Config{URL: am.URL, API: alerts.Alertmanager, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC))
	r := &Reconciler{Alerts: ac, Clock: clk}
	cfg, err := config.FromConfigMapData(map[string]string{config.ConfigKey: ""})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	read := func(at time.Duration) (*plan.AlertsResult, int32) {
		t.Helper()
		before := requests.Load()
		res := r.criticalAlerts(ctx, cfg)
		if res == nil || res.Err == "" {
			t.Fatalf("at +%v: %+v, want a failed read (the check fails closed)", at, res)
		}
		return res, requests.Load() - before
	}
	start := clk.Now()
	if _, n := read(0); n != alertReads {
		t.Fatalf("first read sent %d requests, want %d (the bounded retries)", n, alertReads)
	}
	// Reconciles within the recheck interval: past alerts.FreshRead (the
	// lifetime of a good read) and up to just before the interval ends.
	for _, at := range []time.Duration{time.Second, alerts.FreshRead, 2 * alerts.FreshRead, plan.AlertsRecheck - time.Millisecond} {
		clk.SetTime(start.Add(at))
		if res, n := read(at); n != 0 {
			t.Fatalf("at +%v: %d requests to an Alertmanager known down (%s)", at, n, res.Err)
		}
	}
	clk.SetTime(start.Add(plan.AlertsRecheck))
	if _, n := read(plan.AlertsRecheck); n != alertReads {
		t.Fatalf("after the recheck interval: %d requests, want %d", n, alertReads)
	}
}

// A good read still serves for alerts.FreshRead only: firing alerts must show up
// within seconds.
func TestCriticalAlertsKeepsAGoodReadBriefly(t *testing.T) {
	var requests atomic.Int32
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if !strings.HasSuffix(r.URL.Path, "/api/v2/alerts") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("[]"))
	}))
	defer am.Close()
	ac, err := alerts.New(alerts.Config{URL: am.URL, API: alerts.Alertmanager, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC))
	r := &Reconciler{Alerts: ac, Clock: clk}
	cfg, err := config.FromConfigMapData(map[string]string{config.ConfigKey: ""})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, step := range []struct {
		advance time.Duration
		want    int32
	}{{0, 1}, {alerts.FreshRead - time.Millisecond, 1}, {time.Millisecond, 2}} {
		clk.Step(step.advance)
		if res := r.criticalAlerts(ctx, cfg); res == nil || res.Err != "" {
			t.Fatalf("read %d: %+v", i, res)
		}
		if got := requests.Load(); got != step.want {
			t.Fatalf("read %d: %d requests in all, want %d", i, got, step.want)
		}
	}
}
