package plan

import (
	"sort"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/mcostate"
)

// This file is the preflight report (status.report): before an upgrade
// commences, the findings that would delay it, the PodDisruptionBudgets
// that will hold which nodes' drains, and the expected length of the worker
// phase. MUO tells a customer of blockers only with its PreHealthCheck gate,
// in prose, two hours ahead; here it is in the status from the moment the
// upgrade is scheduled, and in `kubectl get upgrade -o wide`.

// reportDue: the report is kept up to date until the upgrade commences;
// after, it stays as it last was (the attempt's own steps tell the rest).
func (p *planner) reportDue() bool {
	ph := p.history().Phase
	return !terminal(ph) && !p.commenced()
}

// maxBlockerNodes bounds the nodes listed per drain blocker.
const maxBlockerNodes = 20

// report builds status.report from status.preflight and the snapshot. The
// nodes of the blocking budgets' pods are a planner input read only for a
// plan that asks (Snapshot.PDBNodes, Output.NeedsPDBNodes).
func (p *planner) report() {
	if !p.reportDue() {
		return
	}
	r := &upgradev1alpha1.PreflightReport{Findings: p.findings()}
	var need []string
	for _, pdb := range blockingPDBs(p.in.Snapshot.PDBs) {
		key := pdb.Namespace + "/" + pdb.Name
		nodes, read := p.in.Snapshot.PDBNodes[key]
		if !read {
			need = append(need, key)
			continue
		}
		if len(nodes) > maxBlockerNodes {
			nodes = nodes[:maxBlockerNodes]
		}
		r.DrainBlockers = append(r.DrainBlockers, upgradev1alpha1.DrainBlocker{PodDisruptionBudget: key, Nodes: nodes})
	}
	if len(need) > 0 {
		p.needsPDBNodes = need
		return
	}
	if len(r.DrainBlockers) > 32 {
		r.DrainBlockers = r.DrainBlockers[:32]
	}
	p.estimateWorkers(r)
	p.st.Report = r
}

// blocksEviction: the budget allows no disruption now and guards pods, so
// an eviction of one of them is refused. Pods without a controller count: the
// disruption controller cannot scale them (expectedPods stays 0) but counts
// them healthy, and refuses their eviction all the same.
func blocksEviction(pdb policyv1.PodDisruptionBudget) bool {
	st := pdb.Status
	return st.DisruptionsAllowed == 0 && (st.ExpectedPods > 0 || st.CurrentHealthy > 0) && pdb.DeletionTimestamp == nil
}

// blockingPDBs are the budgets that block evictions now, in name order.
func blockingPDBs(all []policyv1.PodDisruptionBudget) []policyv1.PodDisruptionBudget {
	var out []policyv1.PodDisruptionBudget
	for _, pdb := range all {
		if blocksEviction(pdb) {
			out = append(out, pdb)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out
}

// failingChecks names the failing checks of status.preflight: those that
// hold the upgrade, and the advisory ones.
func (p *planner) failingChecks() (blocking, advisory []string) {
	for _, c := range p.st.Preflight {
		switch {
		case c.Passed:
		case c.Advisory:
			advisory = append(advisory, c.Check)
		default:
			blocking = append(blocking, c.Check)
		}
	}
	return blocking, advisory
}

// findings is the one-line summary of the failing checks.
func (p *planner) findings() string {
	blocking, advisory := p.failingChecks()
	var parts []string
	if len(blocking) > 0 {
		parts = append(parts, "blocking: "+strings.Join(blocking, ", "))
	}
	if len(advisory) > 0 {
		parts = append(parts, "advisory: "+strings.Join(advisory, ", "))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// estimateWorkers fills the worker pools' estimates and the expected worker
// phase: the pools update side by side, so the slowest pool's time. A pool's
// time is its rounds times its round time, plus, for each round a drain
// blocker holds, the time the scheduler lets a guarded pod block a drain
// before forcing it (MUO's PDB strategy: PDBForceDrainTimeout plus
// nodeDrain.expectedNodeDrainTime).
func (p *planner) estimateWorkers(r *upgradev1alpha1.PreflightReport) {
	gates := gating.GatePools(p.in.Snapshot.NodeGateRuns)
	// Only the held nodes' pools are needed: the rest of the pools' nodes
	// are counted by the pools themselves.
	heldIn := map[string]int{}
	held := map[string]bool{}
	for _, b := range r.DrainBlockers {
		for _, n := range b.Nodes {
			held[n] = true
		}
	}
	inPool := poolMatcher(p.workerPools())
	for _, n := range p.in.Snapshot.Nodes {
		if held[n.Name] {
			heldIn[inPool(n.Labels)]++
		}
	}
	timed := map[string]upgradev1alpha1.PoolUpdate{}
	for _, pu := range p.st.Pools {
		timed[pu.Name] = pu
	}
	pdbWait := time.Duration(p.spec.PDBForceDrainTimeout)*time.Minute + p.cfg.ExpectedNodeDrainTime
	var slowest time.Duration
	for _, pool := range p.workerPools() {
		if _, gate := gating.GatePoolSource(gates, &pool); gate {
			continue
		}
		n := int(pool.Status.MachineCount)
		if n == 0 {
			continue
		}
		mu := mcostate.MaxUnavailable(&pool, n)
		rounds := (n + mu - 1) / mu
		e := upgradev1alpha1.PoolEstimate{Name: pool.Name, Nodes: int32(n), MaxUnavailable: int32(mu), Rounds: int32(rounds), Basis: "Default"}
		round := p.cfg.ExpectedNodeDrainTime
		if t, ok := timed[pool.Name]; ok && t.LastUpdateDurationSeconds > 0 {
			round = (time.Duration(t.LastUpdateDurationSeconds) * time.Second / time.Duration(rounds)).Round(time.Second)
			e.Basis = "LastUpdate"
		}
		e.RoundDuration = &metav1.Duration{Duration: round}
		// Nodes of one round drain side by side: the held nodes fill
		// this many rounds at the least.
		e.BlockedRounds = int32((heldIn[pool.Name] + mu - 1) / mu)
		total := time.Duration(rounds)*round + time.Duration(e.BlockedRounds)*pdbWait
		slowest = max(slowest, total)
		r.WorkerPools = append(r.WorkerPools, e)
	}
	if len(r.WorkerPools) > 64 {
		r.WorkerPools = r.WorkerPools[:64]
	}
	if len(r.WorkerPools) > 0 {
		r.ExpectedWorkerDuration = &metav1.Duration{Duration: slowest}
	}
}

// poolMatcher tells the worker pool a node belongs to, as the MCO decides:
// a custom pool whose node selector matches it before worker; "" for none.
// The selectors are parsed once.
func poolMatcher(pools []mcfgv1.MachineConfigPool) func(nodeLabels map[string]string) string {
	type selected struct {
		name string
		sel  labels.Selector
	}
	var custom, worker []selected
	for _, pool := range pools {
		if pool.Spec.NodeSelector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pool.Spec.NodeSelector)
		if err != nil || sel.Empty() {
			continue
		}
		if pool.Name == "worker" {
			worker = append(worker, selected{pool.Name, sel})
		} else {
			custom = append(custom, selected{pool.Name, sel})
		}
	}
	ordered := append(custom, worker...)
	return func(nodeLabels map[string]string) string {
		for _, s := range ordered {
			if s.sel.Matches(labels.Set(nodeLabels)) {
				return s.name
			}
		}
		return ""
	}
}
