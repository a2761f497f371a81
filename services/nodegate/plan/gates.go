package plan

// This file decides whether a new node may start: pauses, the update hold,
// maintenance windows and the health gate.

import (
	"sort"
	"strings"
	"time"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/window"
)

// gates decides whether a new node may start, and says why not.
func (p *planner) gates(cvUpdating, hold bool, holdMsg string) {
	defer func() { p.gatesClosed = p.waitReason != "" }()
	if p.waitReason != "" {
		return
	}
	switch {
	case p.st.PausedGeneration != 0:
		p.waitReason, p.waitMessage = ReasonHookFailed, "a hook failed; change the spec (for example toggle spec.paused) to resume"
	case p.run.Spec.Paused:
		p.waitReason, p.waitMessage = ReasonSpecPaused, "spec.paused is true"
	case hold && cvUpdating:
		p.waitReason, p.waitMessage = ReasonControlPlane, holdMsg
	case hold:
		p.waitReason, p.waitMessage = ReasonNotRendered, holdMsg
	}
	if p.waitReason != "" {
		return
	}
	if sched, err := window.FromAPI(p.run.Spec.MaintenanceWindows); err == nil && len(sched) > 0 {
		if !sched.Open(p.in.Now) {
			p.waitReason = ReasonOutsideWindow
			p.waitMessage = "no maintenance window is open"
			if next, ok := sched.NextOpen(p.in.Now); ok {
				p.waitMessage += "; the next opens at " + next.UTC().Format(time.RFC3339)
				p.wake(next.Sub(p.in.Now))
			}
			return
		}
	}
	if g := p.run.Spec.HealthGate; g != nil {
		if p.in.AlertsErr != nil {
			p.waitReason, p.waitMessage = ReasonAlertsUnavailable, "cannot read alerts: "+p.in.AlertsErr.Error()
			p.wake(alertsRecheck)
			return
		}
		if names := blockingAlerts(g, p.in.Alerts, p.in.MaintenanceSilences); len(names) > 0 {
			p.waitReason, p.waitMessage = ReasonAlertsFiring, "alerts active: "+strings.Join(names, ", ")
			p.wake(alertsRecheck)
		}
	}
}

// alertsRecheck is how soon a run whose health gate is closed reads the
// alerts again (libs/alerts.Recheck). Alerts have no watch: without it the
// run would look again only when something it watches changes, and a gated
// cluster whose updating nodes have finished may not change for hours.
const alertsRecheck = alerts.Recheck

// blockingAlerts are the names of the alerts that close the health gate:
// firing (or pending, when the gate says so), named by the gate and not
// ignored by it, and not suppressed, unless only the upgrade-scheduler's
// maintenance silences suppress them.
func blockingAlerts(g *nodegatev1alpha1.HealthGate, as []alerts.Alert, maintenance map[string]bool) []string {
	set := map[string]bool{}
	in := func(list []string, s string) bool {
		for _, x := range list {
			if x == s {
				return true
			}
		}
		return false
	}
	for _, a := range as {
		if (a.Suppressed && !a.SuppressedOnlyBy(maintenance)) || (a.State == alerts.StatePending && !g.IncludePending) {
			continue
		}
		name := a.Name()
		if in(g.IgnoredAlertNames, name) || (len(g.AlertNames) > 0 && !in(g.AlertNames, name)) {
			continue
		}
		set[name] = true
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
