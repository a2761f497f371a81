package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/nodes"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
)

// Health check names, as in status.preflight (defined with the setting that
// promotes the advisory ones, in package config).
const (
	CheckCriticalAlerts       = config.CheckCriticalAlerts
	CheckClusterOperators     = config.CheckClusterOperators
	CheckClusterVersion       = config.CheckClusterVersion
	CheckMachineConfigPools   = config.CheckMachineConfigPools
	CheckNodes                = config.CheckNodes
	CheckPodDisruptionBudgets = config.CheckPodDisruptionBudgets
	CheckExternalDeps         = config.CheckExternalDeps
)

// MCO's per-node annotations (names shared through libs/mcostate).
const (
	annotationCurrentConfig = mcostate.CurrentConfig
	annotationDesiredConfig = mcostate.DesiredConfig
	annotationState         = mcostate.State
)

// NodeAnnotations are the only Node annotations the planner reads (through
// mcostate.Moving, and the drain request and its acknowledgement for the
// drains); the reconciler's cache keeps these and drops the others.
var NodeAnnotations = slices.Concat(mcostate.MovingAnnotations, []string{mcostate.DesiredDrain, mcostate.LastAppliedDrain})

// preflightRefresh bounds how stale an unchanged result's lastRun may get, so
// that unchanged results do not cause a status write on every event.
const preflightRefresh = 5 * time.Minute

// healthChecks evaluates every cluster health check on the snapshot.
func (p *planner) healthChecks() []upgradev1alpha1.PreflightCheck {
	s := p.in.Snapshot
	var out []upgradev1alpha1.PreflightCheck
	add := func(name string, failures []string, okDetails string) {
		c := upgradev1alpha1.PreflightCheck{Check: name, Passed: len(failures) == 0, Details: okDetails,
			Advisory: slices.Contains(config.AdvisoryHealthChecks, name) && (p.cfg == nil || !p.cfg.BlockingChecks[name])}
		if len(failures) > 0 {
			c.Details = strings.Join(failures, "; ")
		}
		if len(c.Details) > 4096 {
			c.Details = c.Details[:4093] + "..."
		}
		out = append(out, c)
	}

	switch {
	case s.AlertsUnread:
		// The plan is void (Output.NeedsAlerts); the reconciler plans again
		// with the alerts read. Failing here keeps it closed meanwhile.
		p.needsAlerts = true
		add(CheckCriticalAlerts, []string{"metrics unavailable: not read for this plan"}, "")
	case s.Alerts == nil:
		add(CheckCriticalAlerts, nil, "not configured: no alert source, critical alerts are not checked")
	case s.Alerts.Err != "":
		add(CheckCriticalAlerts, []string{"metrics unavailable: " + s.Alerts.Err}, "")
	case len(s.Alerts.Firing) > 0:
		add(CheckCriticalAlerts, []string{"critical alerts firing: " + joinLimited(sorted(s.Alerts.Firing), 20)}, "")
	default:
		add(CheckCriticalAlerts, nil, "no critical alerts firing")
	}

	var degraded, unavailable []string
	for _, co := range s.ClusterOperators {
		for _, c := range co.Status.Conditions {
			if c.Type == configv1.OperatorDegraded && c.Status == configv1.ConditionTrue {
				degraded = append(degraded, co.Name)
			}
			if c.Type == configv1.OperatorAvailable && c.Status == configv1.ConditionFalse {
				unavailable = append(unavailable, co.Name)
			}
		}
	}
	var coFail []string
	if len(degraded) > 0 {
		coFail = append(coFail, "Degraded: "+joinLimited(sorted(degraded), 20))
	}
	if len(unavailable) > 0 {
		coFail = append(coFail, "not Available: "+joinLimited(sorted(unavailable), 20))
	}
	add(CheckClusterOperators, coFail, fmt.Sprintf("%d ClusterOperators healthy", len(s.ClusterOperators)))

	if cv := s.ClusterVersion; cv == nil {
		add(CheckClusterVersion, []string{"clusterversion/version cannot be read"}, "")
	} else if c := cvCondition(cv, "Failing"); c != nil && c.Status == configv1.ConditionTrue {
		add(CheckClusterVersion, []string{fmt.Sprintf("Failing: %s: %s", c.Reason, c.Message)}, "")
	} else {
		add(CheckClusterVersion, nil, "not Failing")
	}

	var poolFail []string
	for _, pool := range s.Pools {
		if poolCondition(pool, mcfgv1.MachineConfigPoolDegraded) {
			poolFail = append(poolFail, pool.Name)
		}
	}
	if len(poolFail) > 0 {
		poolFail = []string{"Degraded: " + joinLimited(sorted(poolFail), 20)}
	}
	add(CheckMachineConfigPools, poolFail, fmt.Sprintf("%d pools not degraded", len(s.Pools)))

	var notReady, cordoned []string
	for _, n := range s.Nodes {
		// A node the MCO is moving may be cordoned and rebooting, as
		// expected.
		if n.DeletionTimestamp != nil || mcostate.Moving(n.Annotations) {
			continue
		}
		if !nodes.Ready(&n) {
			notReady = append(notReady, n.Name)
		}
		if n.Spec.Unschedulable {
			cordoned = append(cordoned, n.Name)
		}
	}
	var nodeFail []string
	if len(notReady) > 0 {
		nodeFail = append(nodeFail, "NotReady: "+joinLimited(sorted(notReady), 20))
	}
	if len(cordoned) > 0 {
		nodeFail = append(nodeFail, "cordoned and not updating: "+joinLimited(sorted(cordoned), 20))
	}
	add(CheckNodes, nodeFail, fmt.Sprintf("%d nodes ready and schedulable (or updating)", len(s.Nodes)))

	var pdbs []string
	for _, pdb := range s.PDBs {
		if blocksEviction(pdb) {
			pdbs = append(pdbs, pdb.Namespace+"/"+pdb.Name)
		}
	}
	var pdbFail []string
	if len(pdbs) > 0 {
		pdbFail = []string{"allow no disruption and would block a drain: " + joinLimited(sorted(pdbs), 20)}
	}
	add(CheckPodDisruptionBudgets, pdbFail, "every PodDisruptionBudget allows a disruption")
	if p.cfg != nil && p.preHealthCheckGate() {
		p.muoFindings().preflight(p.spec.CapacityReservation, func(name string, failures []string, okDetails string) {
			add(name, failures, okDetails)
			out[len(out)-1].Advisory = true
		})
	}
	return out
}

// runHealthChecks records every check in status.preflight and returns them
// all, and the failing ones that block (not advisory).
func (p *planner) runHealthChecks() (all, failing []upgradev1alpha1.PreflightCheck) {
	all = p.healthChecks()
	for _, c := range all {
		p.recordPreflight(c)
		if !c.Passed && !c.Advisory {
			failing = append(failing, c)
		}
	}
	// A check no longer run (the PreHealthCheck gate turned off, capacity
	// reservation no longer asked for) leaves the report; the external
	// dependencies are recorded by their own step.
	p.st.Preflight = slices.DeleteFunc(p.st.Preflight, func(c upgradev1alpha1.PreflightCheck) bool {
		return c.Check != CheckExternalDeps && !slices.ContainsFunc(all, func(r upgradev1alpha1.PreflightCheck) bool { return r.Check == c.Check })
	})
	return all, failing
}

// recordPreflight stores a check result, moving lastRun only when the result
// changed or is older than preflightRefresh.
func (p *planner) recordPreflight(c upgradev1alpha1.PreflightCheck) {
	for i := range p.st.Preflight {
		old := &p.st.Preflight[i]
		if old.Check != c.Check {
			continue
		}
		if old.Passed == c.Passed && old.Advisory == c.Advisory && old.Details == c.Details && old.LastRun != nil && p.now.Sub(old.LastRun.Time) < preflightRefresh {
			return
		}
		if old.Passed && !c.Passed {
			p.healthEvent(c)
		}
		t := p.nowT
		c.LastRun = &t
		*old = c
		return
	}
	if !c.Passed {
		p.healthEvent(c)
	}
	t := p.nowT
	c.LastRun = &t
	p.st.Preflight = append(p.st.Preflight, c)
}

// healthEvent reports a check that started failing: HealthCheckFailed when
// it holds the upgrade, HealthCheckAdvisory when it only reports.
func (p *planner) healthEvent(c upgradev1alpha1.PreflightCheck) {
	if c.Advisory {
		p.event(true, "HealthCheckAdvisory", "%s: %s (advisory: the upgrade goes on; blockingHealthChecks would make it block)", c.Check, c.Details)
		return
	}
	p.event(true, "HealthCheckFailed", "%s: %s", c.Check, c.Details)
}

func (p *planner) healthStep(when string) result {
	all, failing := p.runHealthChecks()
	if when == "before" {
		// MUO tells the customer first, then blocks on what blocks.
		if a := p.healthNotice(EventHealthCheckSL, all); a != nil {
			return result{message: "sending the " + EventHealthCheckSL + " notification", action: a}
		}
	}
	if len(failing) == 0 {
		return result{done: true, message: "every health check passed"}
	}
	var parts []string
	var wake time.Time
	for _, c := range failing {
		parts = append(parts, c.Check+" ("+c.Details+")")
		if c.Check == CheckCriticalAlerts {
			// Alerts change with no Kubernetes event to wake the plan:
			// read them again a little later (an unreachable Alertmanager
			// too; each read is already retried a few times).
			wake = p.now.Add(AlertsRecheck)
		}
	}
	return result{failure: "health checks failing " + when + " the upgrade: " + strings.Join(parts, "; "), wakeAt: wake}
}

func (p *planner) preHealth() result  { return p.healthStep("before") }
func (p *planner) postHealth() result { return p.healthStep("after") }

// externalDependencies is MUO's HTTP availability check. A result is kept
// in status.preflight: one from this attempt of the step that passed ends
// the step; a failed one is retried a minute after it ran. A fresh check is
// a planner input (Snapshot.ExternalChecks): without one the plan asks for it
// (Output.NeedsExternalChecks) and is planned again with the result.
func (p *planner) externalDependencies() result {
	if len(p.cfg.HTTPCheckURLs) == 0 {
		return result{done: true, message: "no external dependency checks configured"}
	}
	since := p.now
	if c := findStepCondition(p.history().Conditions, StepExternalDependenciesAvailable); c != nil && c.StartTime != nil {
		since = c.StartTime.Time
	}
	for _, c := range p.st.Preflight {
		if c.Check != CheckExternalDeps || c.LastRun == nil || c.LastRun.Time.Before(since) {
			continue
		}
		if c.Passed {
			return result{done: true, message: c.Details}
		}
		retry := c.LastRun.Add(time.Minute)
		if p.now.Before(retry) {
			return result{failure: "external dependencies unavailable: " + c.Details, wakeAt: retry}
		}
	}
	res := p.in.Snapshot.ExternalChecks
	if res == nil {
		p.needsExternalChecks = true
		return result{message: "checking " + strings.Join(p.cfg.HTTPCheckURLs, ", ")}
	}
	// Every run is recorded with its time, unchanged or not: the retry
	// above counts from it.
	t := p.nowT
	run := upgradev1alpha1.PreflightCheck{Check: CheckExternalDeps, Passed: res.Passed, Details: res.Details, LastRun: &t}
	if i := slices.IndexFunc(p.st.Preflight, func(c upgradev1alpha1.PreflightCheck) bool { return c.Check == CheckExternalDeps }); i >= 0 {
		p.st.Preflight[i] = run
	} else {
		p.st.Preflight = append(p.st.Preflight, run)
	}
	if res.Passed {
		return result{done: true, message: res.Details}
	}
	return result{failure: "external dependencies unavailable: " + res.Details, wakeAt: p.now.Add(time.Minute)}
}

func poolCondition(pool mcfgv1.MachineConfigPool, t mcfgv1.MachineConfigPoolConditionType) bool {
	for _, c := range pool.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// workerPools are every pool except the control plane's.
func (p *planner) workerPools() []mcfgv1.MachineConfigPool {
	var out []mcfgv1.MachineConfigPool
	for _, pool := range p.in.Snapshot.Pools {
		if pool.Name != "master" {
			out = append(out, pool)
		}
	}
	return out
}

// workersUpgraded is MUO's worker step: done once the pool "worker" runs its
// current configuration on every machine. Other worker pools (infra, custom
// ones) are reported in the message, not waited for, as MUO waits for none
// of them. The worker start and completion times in the history are
// mcp-tracker's to write, not this planner's.
func (p *planner) workersUpgraded() result {
	var pending, others, degraded []string
	// A gate pool of node-gate's is not a pool of its own: its machines are
	// counted with their source pool's, which is not done while any is
	// there.
	gates := gating.GatePools(p.in.Snapshot.NodeGateRuns)
	inGate := map[string]int32{}
	for _, pool := range p.workerPools() {
		if source, ok := gating.GatePoolSource(gates, &pool); ok {
			inGate[source] += pool.Status.MachineCount
		}
	}
	for _, pool := range p.workerPools() {
		source := pool.Name
		if s, isGate := gating.GatePoolSource(gates, &pool); isGate {
			source = s
		}
		if poolCondition(pool, mcfgv1.MachineConfigPoolDegraded) && source == "worker" {
			degraded = append(degraded, pool.Name)
		}
		st := pool.Status
		done := st.MachineCount == st.UpdatedMachineCount && poolCondition(pool, mcfgv1.MachineConfigPoolUpdated) &&
			(pool.Spec.Configuration.Name == "" || pool.Spec.Configuration.Name == st.Configuration.Name)
		// The lines name pools, not counts: the message is written into
		// the status, and a count would rewrite it on every node's step
		// (two writes per worker, a thousand in a 500-worker update). The
		// counts are the pools' own status, and kubectl upshift status
		// tells them.
		_, isGate := gating.GatePoolSource(gates, &pool)
		var line string
		switch {
		case isGate:
			if !done && inGate[source] == 0 {
				line = pool.Name
			}
		case inGate[pool.Name] > 0:
			line = pool.Name + " (nodes held by node-gate)"
		case !done:
			line = pool.Name
		}
		switch {
		case line == "":
		case source == "worker":
			pending = append(pending, line)
		default:
			others = append(others, line)
		}
	}
	also := ""
	if len(others) > 0 {
		also = "other pools updating, not waited for (as MUO): " + strings.Join(others, ", ")
	}
	if len(pending) == 0 {
		return result{done: true, message: also}
	}
	r := result{message: "worker pools updating: " + strings.Join(pending, ", ")}
	if note := p.gateNote(); note != "" {
		r.message += "; " + note
	}
	if also != "" {
		r.message += "; " + also
	}
	if len(degraded) > 0 {
		r.failure = "worker pools Degraded: " + strings.Join(sorted(degraded), ", ")
	}
	return r
}

func (p *planner) postUpgradeTasks() result {
	if !p.cfg.FedRAMP {
		return result{done: true, message: "no post-upgrade tasks outside FedRAMP"}
	}
	if p.in.Snapshot.FileIntegrityReinitRequested {
		return result{done: true, message: "FileIntegrity re-initialisation requested"}
	}
	return result{message: "requesting FileIntegrity re-initialisation", action: &Action{Kind: ReinitFileIntegrity}}
}

func sorted(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}
