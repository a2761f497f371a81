package plan

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
)

// This file is MUO's PreHealthCheck feature gate. With it, MUO's pre-upgrade
// health check also looks at the capacity reservation, manually cordoned
// workers, nodes with the kubelet's pressure taints and PodDisruptionBudgets
// that allow no disruption by their spec. None of those blocks: they are
// reported (status.preflight here, advisory) and told to the customer in a
// service log, once per version: PreHealthCheckSL while the upgrade is
// scheduled more than two hours ahead, HealthCheckSL at the pre-upgrade check
// of the attempt. The findings are named in MUO's own words, which SREs'
// tooling reads.

// The checks the gate adds to status.preflight, always advisory.
const (
	CheckCapacityReservation   = "CapacityReservation"
	CheckManuallyCordonedNodes = "ManuallyCordonedNodes"
	CheckUnschedulableTaints   = "UnschedulableTaints"
	CheckPDBConfiguration      = "PodDisruptionBudgetConfiguration"
)

// PreHealthCheckGateChecks are the checks the gate adds.
var PreHealthCheckGateChecks = map[string]bool{CheckCapacityReservation: true, CheckManuallyCordonedNodes: true,
	CheckUnschedulableTaints: true, CheckPDBConfiguration: true}

// PreHealthCheckAhead is how far ahead of its start an upgrade is told its
// pre-upgrade findings (MUO's health check duration).
const PreHealthCheckAhead = 2 * time.Hour

// NodeTaints are the taints the planner reads: the cordon's (MUO's
// "cordoned" is both spec.unschedulable and this taint) and the kubelet's
// pressure taints.
var NodeTaints = []string{corev1.TaintNodeUnschedulable, corev1.TaintNodeMemoryPressure, corev1.TaintNodeDiskPressure, corev1.TaintNodePIDPressure}

// Node role labels MUO's cordon check selects by.
const (
	workerRoleLabel = "node-role.kubernetes.io/worker"
	infraRoleLabel  = "node-role.kubernetes.io/infra"
)

// muoFindings are the gate's findings.
type muoFindings struct {
	// noCapacity: capacity reservation is asked for and there is no worker
	// MachineSet to copy (MUO's CanScale).
	noCapacity bool
	// cordoned are worker nodes (not infra) cordoned while the machine-config
	// daemon is not working on them; tainted the nodes with a pressure
	// taint, by taint (memory, disk, PID), a node once per taint.
	cordoned, tainted []string
	// pdb is the first PodDisruptionBudget, in the apiserver's order
	// (namespace, name), whose spec allows no disruption: maxUnavailable 0
	// or "0%", or minAvailable "100%". MUO stops at the first.
	pdb *policyv1.PodDisruptionBudget
}

// pdbDetails is how MUO names a PodDisruptionBudget in its result (JSON of
// its Go struct, field names as they are).
type pdbDetails struct {
	Name      string
	Namespace string
}

// muoFindings are the gate's findings on the snapshot, found once per plan
// (the checks and the notices both read them).
func (p *planner) muoFindings() muoFindings {
	if p.gateFindings == nil {
		f := p.findMUO()
		p.gateFindings = &f
	}
	return *p.gateFindings
}

func (p *planner) findMUO() muoFindings {
	s := p.in.Snapshot
	var f muoFindings
	f.noCapacity = p.spec.CapacityReservation && len(p.workerMachineSets()) == 0
	nodes := p.nodesByName()
	for _, n := range nodes {
		_, worker := n.Labels[workerRoleLabel]
		_, infra := n.Labels[infraRoleLabel]
		if worker && !infra && cordoned(n) && n.Annotations[mcostate.State] != mcostate.StateWorking {
			f.cordoned = append(f.cordoned, n.Name)
		}
	}
	for _, key := range []string{corev1.TaintNodeMemoryPressure, corev1.TaintNodeDiskPressure, corev1.TaintNodePIDPressure} {
		for _, n := range nodes {
			if hasNoScheduleTaint(n, key) {
				f.tainted = append(f.tainted, n.Name)
			}
		}
	}
	pdbs := append([]policyv1.PodDisruptionBudget(nil), s.PDBs...)
	sort.Slice(pdbs, func(i, j int) bool {
		if pdbs[i].Namespace != pdbs[j].Namespace {
			return pdbs[i].Namespace < pdbs[j].Namespace
		}
		return pdbs[i].Name < pdbs[j].Name
	})
	for i := range pdbs {
		if allowsNoDisruption(pdbs[i].Spec) {
			f.pdb = &pdbs[i]
			break
		}
	}
	return f
}

// workerMachineSets are MUO's copy sources for the capacity check: the
// MachineSets of pool worker (extra pools do not count, as in MUO).
func (p *planner) workerMachineSets() []string {
	var out []string
	for _, ms := range p.sourceMachineSets() {
		if ms.Labels[PoolLabel] == "worker" {
			out = append(out, ms.Name)
		}
	}
	return out
}

// cordoned is MUO's: unschedulable and carrying the cordon's NoSchedule taint.
func cordoned(n *corev1.Node) bool {
	return n.Spec.Unschedulable && hasNoScheduleTaint(n, corev1.TaintNodeUnschedulable)
}

func hasNoScheduleTaint(n *corev1.Node, key string) bool { return noScheduleTaint(n, key) != nil }

// noScheduleTaint is n's NoSchedule taint of key; nil when it has none.
func noScheduleTaint(n *corev1.Node, key string) *corev1.Taint {
	for i := range n.Spec.Taints {
		if t := &n.Spec.Taints[i]; t.Key == key && t.Effect == corev1.TaintEffectNoSchedule {
			return t
		}
	}
	return nil
}

// allowsNoDisruption is MUO's reading of a budget's spec.
func allowsNoDisruption(spec policyv1.PodDisruptionBudgetSpec) bool {
	if m := spec.MaxUnavailable; m != nil {
		if (m.Type == intstr.Int && m.IntVal == 0) || (m.Type == intstr.String && m.StrVal == "0%") {
			return true
		}
	}
	m := spec.MinAvailable
	return m != nil && m.Type == intstr.String && m.StrVal == "100%"
}

// preflight adds the findings to the health checks, advisory.
func (f muoFindings) preflight(capacityAsked bool, add func(name string, failures []string, okDetails string)) {
	if capacityAsked {
		var fail []string
		if f.noCapacity {
			fail = []string{"no MachineSet of pool worker to copy: the temporary capacity cannot be reserved"}
		}
		add(CheckCapacityReservation, fail, "a worker MachineSet can be copied")
	}
	var fail []string
	if len(f.cordoned) > 0 {
		fail = []string{"worker nodes cordoned and not updating: " + joinLimited(f.cordoned, 20)}
	}
	add(CheckManuallyCordonedNodes, fail, "no worker node cordoned by hand")
	fail = nil
	if len(f.tainted) > 0 {
		fail = []string{"memory, disk or PID pressure: " + joinLimited(f.tainted, 20)}
	}
	add(CheckUnschedulableTaints, fail, "no node under pressure")
	fail = nil
	if f.pdb != nil {
		fail = []string{fmt.Sprintf("%s/%s allows no disruption by its spec (maxUnavailable 0 or minAvailable 100%%)", f.pdb.Namespace, f.pdb.Name)}
	}
	add(CheckPDBConfiguration, fail, "no PodDisruptionBudget that allows no disruption by its spec")
}

// muoResult is MUO's result string: the failed checks joined by commas, in
// MUO's order and words, e.g.
// "CriticalAlertsHealthcheckFailed,NodeUnschedulableHealthcheckFailed:(w1,w2),PDBHealthcheckFailed: [{"Name":"db","Namespace":"app"}]".
// Empty when nothing failed.
func (f muoFindings) result(checks []upgradev1alpha1.PreflightCheck) string {
	var out []string
	for _, c := range checks {
		if c.Check == CheckCriticalAlerts && !c.Passed {
			out = append(out, "CriticalAlertsHealthcheckFailed")
		}
	}
	for _, c := range checks {
		if c.Check == CheckClusterOperators && !c.Passed {
			out = append(out, "ClusterOperatorsHealthcheckFailed")
		}
	}
	if f.noCapacity {
		out = append(out, "CapacityReservationHealthcheckFailed")
	}
	if len(f.cordoned) > 0 {
		out = append(out, fmt.Sprintf("NodeUnschedulableHealthcheckFailed:(%s)", strings.Join(f.cordoned, ",")))
	}
	if len(f.tainted) > 0 {
		out = append(out, fmt.Sprintf("NodeUnschedulableTaintHealthcheckFailed:(%s)", strings.Join(f.tainted, ",")))
	}
	if f.pdb != nil {
		b, _ := json.Marshal([]pdbDetails{{Name: f.pdb.Name, Namespace: f.pdb.Namespace}})
		out = append(out, "PDBHealthcheckFailed: "+string(b))
	}
	return strings.Join(out, ",")
}

// preHealthCheckGate: MUO's PreHealthCheck feature gate is on.
func (p *planner) preHealthCheckGate() bool {
	return p.cfg.FeatureGates[config.FeatureGatePreHealthCheck]
}

// healthNotice is the service log of event (EventPreHealthCheckSL or
// EventHealthCheckSL) when the checks found something and it was not sent
// for this version yet; nil otherwise.
func (p *planner) healthNotice(event string, checks []upgradev1alpha1.PreflightCheck) *Action {
	if !p.preHealthCheckGate() || p.recorded(event) || !p.due(event) {
		return nil
	}
	result := p.muoFindings().result(checks)
	if result == "" {
		return nil
	}
	a := p.notifyAction(event)
	desc := descHealthCheck
	if event == EventPreHealthCheckSL {
		desc = descPreHealthCheck
	}
	a.Notification.ServiceLogDescription = fmt.Sprintf(desc, p.target, result)
	return a
}

// ConditionPreHealthCheckNotificationSent records a PreHealthCheckSL whose
// delivery failed, for its retry backoff (Upshift: MUO tries once).
const ConditionPreHealthCheckNotificationSent upgradev1alpha1.UpgradeConditionType = "PreHealthCheckNotificationSent"

// preHealthNotice sends PreHealthCheckSL while the upgrade waits for a start
// more than PreHealthCheckAhead away and the checks found something: MUO
// checks once when the upgrade is scheduled; here any finding until then
// counts, and the notice still goes out once per version.
func (p *planner) preHealthNotice(start time.Time, checks []upgradev1alpha1.PreflightCheck) {
	c := findStepCondition(p.history().Conditions, ConditionPreHealthCheckNotificationSent)
	if c != nil && c.Status != corev1.ConditionTrue && p.recorded(EventPreHealthCheckSL) {
		setStepCondition(&p.history().Conditions, ConditionPreHealthCheckNotificationSent, corev1.ConditionTrue,
			string(ConditionPreHealthCheckNotificationSent)+" done", string(ConditionPreHealthCheckNotificationSent)+" is completed", p.now)
	}
	if p.action != nil || start.Sub(p.now) <= PreHealthCheckAhead || p.holdNotifyRetry(ConditionPreHealthCheckNotificationSent) {
		return
	}
	if a := p.healthNotice(EventPreHealthCheckSL, checks); a != nil {
		a.Step = ConditionPreHealthCheckNotificationSent
		p.action = a
	}
}
