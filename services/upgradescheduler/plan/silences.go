package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/silence"
)

// Silences is the planner's decision about the Alertmanager leases; the
// reconciler carries it out with silence.Client and records the result in
// status.silences.
type Silences struct {
	// Manage is false while nothing may be done (spec.paused, a deadline's
	// pause, no configuration): the leases are then neither renewed nor
	// expired, and lapse by themselves within their TTL.
	Manage bool
	// Version keys the leases: the upgrade's target.
	Version string
	// Wanted are the leases the current phase needs; none on every terminal
	// path (Upgraded, Failed, Cancelled, deletion), which expires them all.
	Wanted []silence.Want
}

// AlertsRecheck is how soon a failing critical-alerts check looks again
// (libs/alerts.Recheck: alerts change without any Kubernetes event). The
// reconciler keeps a failed alerts read for as long, so that an unreachable
// source costs one read per recheck rather than one per reconcile.
const AlertsRecheck = alerts.Recheck

// purposesOf are the leases each silence step creates and removes.
func purposesOf(scope string) []silence.Purpose {
	if scope == "control plane" {
		return []silence.Purpose{silence.ControlPlane, silence.ControlPlaneCriticals}
	}
	return []silence.Purpose{silence.Workers}
}

// recordedLease returns the status record of a purpose, or nil.
func recordedLease(st *upgradev1alpha1.UpgradeConfigStatus, p silence.Purpose) *upgradev1alpha1.SilenceLease {
	for i := range st.Silences {
		if st.Silences[i].Purpose == string(p) {
			return &st.Silences[i]
		}
	}
	return nil
}

// silenceStep is a maintenance-window step with Alertmanager wired in. The
// lease itself is the reconciler's (it follows Silences.Wanted, which this
// step's place in the history decides); the step completes once the status
// shows the lease recorded (create) or gone (remove).
func (p *planner) silenceStep(scope string, create bool) result {
	main := purposesOf(scope)[0]
	rec := recordedLease(&p.st, main)
	if create {
		if rec != nil {
			return result{done: true, message: fmt.Sprintf("%s silence %s created", scope, rec.ID)}
		}
		if end := p.leaseWindowEnd(main); !end.IsZero() && !p.now.Before(end) {
			if main == silence.Workers && p.workersLeft() == 0 {
				return result{done: true, message: "every worker pool is already updated: no worker silence created"}
			}
			return result{done: true, message: scope + " maintenance window already over: no silence created"}
		}
		return result{message: "creating the " + scope + " silence in Alertmanager"}
	}
	var left []string
	for _, pu := range purposesOf(scope) {
		if r := recordedLease(&p.st, pu); r != nil {
			left = append(left, r.ID)
		}
	}
	if len(left) == 0 {
		return result{done: true, message: scope + " silence expired"}
	}
	return result{message: "expiring the " + scope + " silence " + strings.Join(left, ", ")}
}

// stepStart is when a step first ran, or zero.
func (p *planner) stepStart(s upgradev1alpha1.UpgradeConditionType) time.Time {
	if c := findStepCondition(p.history().Conditions, s); c != nil && c.StartTime != nil {
		return c.StartTime.Time
	}
	return time.Time{}
}

func (p *planner) stepDone(s upgradev1alpha1.UpgradeConditionType) bool {
	c := findStepCondition(p.history().Conditions, s)
	return c != nil && c.Status == corev1.ConditionTrue
}

// leaseWindowEnd is the window of a lease as the history stands; zero when
// its phase has not begun.
func (p *planner) leaseWindowEnd(pu silence.Purpose) time.Time {
	switch pu {
	case silence.ControlPlane, silence.ControlPlaneCriticals:
		start := p.stepStart(StepControlPlaneMaintenanceWindowCreated)
		if start.IsZero() {
			start = p.now // the step about to run
		}
		return silence.ControlPlaneWindow(start, p.cfg.ControlPlaneTime)
	default:
		start := p.stepStart(StepWorkersMaintenanceWindowCreated)
		if start.IsZero() {
			start = p.now
		}
		return silence.WorkerWindow(p.workerProgress(start), WorkerPoolsForWindow(p.workerPools()),
			max(p.cfg.NodeDrainTimeOut, time.Duration(p.spec.PDBForceDrainTimeout)*time.Minute), p.cfg.ExpectedNodeDrainTime)
	}
}

// workersLeft counts the worker machines not yet updated.
func (p *planner) workersLeft() int {
	n := 0
	for _, pool := range WorkerPoolsForWindow(p.workerPools()) {
		n += max(pool.Remaining, 0)
	}
	return n
}

// workerProgress is the last time a worker pool finished its update (from
// the mcp-tracker's status.pools), or since when nothing did.
func (p *planner) workerProgress(since time.Time) time.Time {
	last := since
	// A node-gate run holding the workers as designed is progress now
	// (gates.go): the window runs from this moment while it holds.
	if holding, _, _ := p.gateHolds(); len(holding) > 0 {
		return p.now
	}
	for _, pool := range p.st.Pools {
		if pool.Name == "master" || pool.CompleteTime == nil {
			continue
		}
		if pool.CompleteTime.After(last) {
			last = pool.CompleteTime.Time
		}
	}
	return last
}

// WorkerPoolsForWindow turns worker MachineConfigPools into the window's
// input: machines not yet updated, and maxUnavailable resolved against the
// machine count as the MCO does (a percentage rounds down, at least 1).
func WorkerPoolsForWindow(pools []mcfgv1.MachineConfigPool) []silence.Pool {
	var out []silence.Pool
	for _, pool := range pools {
		n := int(pool.Status.MachineCount)
		out = append(out, silence.Pool{Remaining: n - int(pool.Status.UpdatedMachineCount), MaxUnavailable: mcostate.MaxUnavailable(&pool, n)})
	}
	return out
}

// silences decides the leases after the plan: wanted from the step where the
// window is created until the step where it is removed, while the attempt
// is Upgrading.
func (p *planner) silences() Silences {
	if p.cfg == nil || !p.in.Integrations.Silences {
		return Silences{}
	}
	if p.uc.DeletionTimestamp != nil {
		return Silences{Manage: true, Version: p.target}
	}
	if len(p.st.History) == 0 || p.spec.Paused || (p.st.PausedByDeadline != nil && p.st.PausedByDeadline.Generation == p.uc.Generation) {
		return Silences{}
	}
	out := Silences{Manage: true, Version: p.target}
	if p.history().Phase != upgradev1alpha1.UpgradePhaseUpgrading {
		return out
	}
	type phase struct {
		created, removed upgradev1alpha1.UpgradeConditionType
		scope            string
	}
	for _, ph := range []phase{
		{StepControlPlaneMaintenanceWindowCreated, StepControlPlaneMaintenanceWindowRemoved, "control plane"},
		{StepWorkersMaintenanceWindowCreated, StepWorkersMaintenanceWindowRemoved, "worker"},
	} {
		if !slices.Contains(Steps(p.spec.Type), ph.created) || p.stepStart(ph.created).IsZero() || p.stepStart(ph.removed) != (time.Time{}) || p.stepDone(ph.removed) {
			continue
		}
		for _, pu := range purposesOf(ph.scope) {
			out.Wanted = append(out.Wanted, silence.Want{Purpose: pu, End: p.leaseWindowEnd(pu)})
		}
	}
	return out
}

// liveLeases are the recorded leases not yet past their end.
func (p *planner) liveLeases() int {
	n := 0
	for _, l := range p.st.Silences {
		if l.EndsAt == nil || l.EndsAt.After(p.now) {
			n++
		}
	}
	return n
}

// CriticalAlerts are the firing alerts the health check counts, by name, as
// MUO's query selects them: severity critical, namespace matching
// ^openshift.*|^kube-.*|^default$ (an alert with no namespace never matches),
// minus healthCheck.ignoredCriticals (alert names) and
// healthCheck.ignoredNamespaces. Silenced ones count too, as in MUO's query
// of Prometheus, which knows no silences: a silence hides a notification,
// not a problem.
func CriticalAlerts(in []alerts.Alert, cfg *config.Config) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range in {
		if a.State != alerts.StateFiring || a.Labels["severity"] != "critical" {
			continue
		}
		ns := a.Labels["namespace"]
		if !platformNamespace(ns) {
			continue
		}
		if cfg != nil && (slices.Contains(cfg.IgnoredCriticals, a.Name()) || slices.Contains(cfg.IgnoredNamespaces, ns)) {
			continue
		}
		if !seen[a.Name()] {
			seen[a.Name()] = true
			out = append(out, a.Name())
		}
	}
	slices.Sort(out)
	return out
}

// platformNamespace is MUO's namespace regex of the alert query.
func platformNamespace(ns string) bool {
	return strings.HasPrefix(ns, "openshift") || strings.HasPrefix(ns, "kube-") || ns == "default"
}

// SilenceStatus is status.silences after a lease plan was carried out:
// record (purpose → ID, as silence.Client.Apply returns it) with each
// silence's end, from what the plan posted or, for a silence left as it was,
// from the listing the plan was made from. Sorted by purpose.
func SilenceStatus(record map[silence.Purpose]string, p silence.Plan, existing []silence.Silence) []upgradev1alpha1.SilenceLease {
	ends := map[string]time.Time{}
	for _, s := range existing {
		ends[s.ID] = s.EndsAt
	}
	posted := map[silence.Purpose]time.Time{}
	for _, a := range p.Actions {
		switch a.Kind {
		case silence.Create, silence.Extend, silence.Replace:
			posted[a.Purpose] = a.Silence.EndsAt
		}
	}
	var out []upgradev1alpha1.SilenceLease
	for pu, id := range record {
		if id == "" {
			continue
		}
		l := upgradev1alpha1.SilenceLease{Purpose: string(pu), ID: id}
		end, ok := posted[pu]
		if !ok {
			end, ok = ends[id]
		}
		if ok && !end.IsZero() {
			t := metav1.NewTime(end.Truncate(time.Second))
			l.EndsAt = &t
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b upgradev1alpha1.SilenceLease) int { return strings.Compare(a.Purpose, b.Purpose) })
	return out
}

// RecordedSilences is status.silences as Decide's Recorded input.
func RecordedSilences(st upgradev1alpha1.UpgradeConfigStatus) map[silence.Purpose]string {
	out := map[silence.Purpose]string{}
	for _, l := range st.Silences {
		out[silence.Purpose(l.Purpose)] = l.ID
	}
	return out
}
