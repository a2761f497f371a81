package controller

import (
	"context"
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/metrics"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

// alertReads bounds the attempts of one alerts read; each is bounded by the
// client's timeout, so an unreachable Alertmanager costs at most
// alertReads × timeout plus the pauses before the check fails closed.
const alertReads = 3

// criticalAlerts reads the firing alerts, a few times if the source does not
// answer, and selects the critical ones. Unreachable: the result carries the
// error, and the health check fails closed with "metrics unavailable".
//
// Every reconcile plans, and reconciles come in bursts (node events): one
// read serves them for alerts.FreshRead, and callers during a read wait for
// it (alerts.Reads). A failed read is kept for the whole recheck interval:
// each one costs up to alertReads × timeout with the source down, and
// repeating it every alerts.FreshRead would slow every reconcile by that
// much. The check fails closed ("metrics unavailable") meanwhile, and the
// failing health step looks again after AlertsRecheck. A read serves the
// configuration it selected for only.
func (r *Reconciler) criticalAlerts(ctx context.Context, cfg *config.Config) *plan.AlertsResult {
	res, _ := r.alertsReads.Get(ctx, r.Clock, cfg, func(ctx context.Context) (*plan.AlertsResult, error) {
		res := r.readCriticalAlerts(ctx, cfg)
		if res.Err != "" {
			return res, errors.New(res.Err)
		}
		return res, nil
	})
	return res
}

func (r *Reconciler) readCriticalAlerts(ctx context.Context, cfg *config.Config) *plan.AlertsResult {
	var err error
	pause := 200 * time.Millisecond
	for attempt := 0; attempt < alertReads; attempt++ {
		var got []alerts.Alert
		if got, err = r.Alerts.Alerts(ctx); err == nil {
			return &plan.AlertsResult{Firing: plan.CriticalAlerts(got, cfg)}
		}
		if attempt+1 < alertReads {
			select {
			case <-ctx.Done():
				return &plan.AlertsResult{Err: ctx.Err().Error()}
			case <-time.After(pause):
			}
			pause *= 2
		}
	}
	return &plan.AlertsResult{Err: err.Error()}
}

// upgradeResult is what MUO reports once an upgrade completed: which of the
// SRE paging alerts fired during it, from Prometheus's history of alerts. It
// is asked once per completed attempt (again after a restart, as MUO asks on
// every pass) and kept for the metric; ok is false without a Prometheus
// alert source, before completion, or when the query failed (retry: asked
// again after a minute).
func (r *Reconciler) upgradeResult(ctx context.Context, key string, uc *upgradev1alpha1.UpgradeConfig) (fired []string, ok, retry bool) {
	hist, isHistory := r.Alerts.(alerts.History)
	if !isHistory || len(uc.Status.History) == 0 {
		return nil, false, false
	}
	h := uc.Status.History[0]
	if h.Phase != upgradev1alpha1.UpgradePhaseUpgraded || h.StartTime == nil || h.CompleteTime == nil {
		return nil, false, false
	}
	id := h.Version + "@" + h.CompleteTime.UTC().Format(time.RFC3339)
	r.resultsMu.Lock()
	defer r.resultsMu.Unlock()
	if got, seen := r.results[key]; seen && got.id == id {
		return got.fired, true, false
	}
	fired, err := hist.FiredCritical(ctx, metrics.PagingAlerts, h.StartTime.Time, h.CompleteTime.Time)
	if err != nil {
		log.FromContext(ctx).Info("cannot read the alerts of the upgrade from Prometheus; asking again in a minute", "error", err.Error())
		return nil, false, true
	}
	if r.results == nil {
		r.results = map[string]upgradeResult{}
	}
	r.results[key] = upgradeResult{id: id, fired: fired}
	return fired, true, false
}

// upgradeResult is one completed attempt's paging alerts.
type upgradeResult struct {
	id    string
	fired []string
}
