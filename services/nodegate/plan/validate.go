package plan

// This file resolves a run's references and refuses to start when gating
// would be unsafe (condition Blocked).

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/window"
)

func (p *planner) isSource(pool string) bool {
	for _, s := range p.sources {
		if s == pool {
			return true
		}
	}
	return false
}

// validate resolves the run's references and checks that gating is safe.
func (p *planner) validate() bool {
	block := func(reason, format string, args ...any) bool {
		p.blockReason, p.blockMsg = reason, fmt.Sprintf(format, args...)
		return false
	}
	ns := p.run.Namespace
	ref := func(r nodegatev1alpha1.ObjectReference) string {
		if r.Namespace == "" {
			return ns + "/" + r.Name
		}
		return r.Namespace + "/" + r.Name
	}
	rules := map[string]*nodegatev1alpha1.MutexRule{}
	for i := range p.in.Rules {
		r := &p.in.Rules[i]
		rules[r.Namespace+"/"+r.Name] = r
	}
	p.rules = nil
	for _, r := range p.run.Spec.MutexRules {
		rule, ok := rules[ref(r)]
		if !ok {
			return block(ReasonMissingRule, "MutexRule %s does not exist", ref(r))
		}
		if reason, msg := ruleProblem(rule, p.in.JobPlaces); reason != "" {
			return block(reason, "MutexRule %s: %s", ref(r), msg)
		}
		p.rules = append(p.rules, rule)
	}
	targets := map[string]*nodegatev1alpha1.MutexTarget{}
	for i := range p.in.Targets {
		t := &p.in.Targets[i]
		targets[t.Namespace+"/"+t.Name] = t
	}
	seen := map[string]bool{}
	p.sources = nil
	for _, r := range p.run.Spec.MutexTargets {
		t, ok := targets[ref(r)]
		if !ok {
			return block(ReasonMissingTarget, "MutexTarget %s does not exist", ref(r))
		}
		for _, pool := range t.Spec.MachineConfigPools {
			if !seen[pool] {
				seen[pool] = true
				p.sources = append(p.sources, pool)
			}
		}
	}
	sort.Strings(p.sources)
	if _, err := window.FromAPI(p.run.Spec.MaintenanceWindows); err != nil {
		return block(ReasonInvalidWindows, "spec.%v", err)
	}
	for _, s := range p.sources {
		if len(p.in.GatedPools) > 0 && !slices.Contains(p.in.GatedPools, s) {
			// node-gate may delete only the gate pools of these: a run that
			// made another could never be finalized.
			return block(ReasonPoolNotGated, "MachineConfigPool %s is not one of the pools node-gate may gate %v (the chart's gatedPools)", s, p.in.GatedPools)
		}
		pool, ok := p.pools[s]
		if !ok {
			return block(ReasonMissingPool, "MachineConfigPool %s does not exist", s)
		}
		if len(s) > 63-len(GatePoolSuffix) {
			return block(ReasonPoolNameTooLong, "MachineConfigPool name %s is longer than %d characters: it must fit in a label value with its gate suffix", s, 63-len(GatePoolSuffix))
		}
		if p.canary == s {
			return block(ReasonCanaryMismatch, "spec.canary.name %s is one of the gated pools", s)
		}
		gate := p.pools[p.gatePoolName(s)]
		if p.canary == "" && gate != nil && gate.Labels[GatePoolLabel] != s {
			return block(ReasonGatePoolNameTaken, "MachineConfigPool %s exists and was not created by node-gate for %s", gate.Name, s)
		}
		if p.canary != "" {
			if gate == nil {
				return block(ReasonMissingPool, "canary MachineConfigPool %s does not exist", p.canary)
			}
			if !sameSelector(gate.Spec.MachineConfigSelector, pool.Spec.MachineConfigSelector) {
				return block(ReasonCanaryMismatch, "canary pool %s selects other MachineConfigs than %s: a node moved into it would get another configuration (and reboot again on its way back)", p.canary, s)
			}
		}
	}
	for _, o := range p.in.OtherRuns {
		for _, pool := range o.Pools {
			if !p.isSource(pool) {
				continue
			}
			mine := p.run.CreationTimestamp.Time
			if o.Created.Before(mine) || (o.Created.Equal(mine) && o.Name < p.run.Namespace+"/"+p.run.Name) {
				return block(ReasonPoolClaimed, "MachineConfigPool %s is gated by MutexRunConfig %s, created first", pool, o.Name)
			}
		}
	}
	var errs map[string]error
	p.poolOf, errs = p.membership()
	var two []string
	for n, err := range errs {
		if p.selectedBySource(p.nodes[n]) {
			two = append(two, fmt.Sprintf("%s %v", n, err))
		}
	}
	if len(two) > 0 {
		sort.Strings(two)
		return block(ReasonTwoCustomPools, "nodes the machine-config operator cannot place: %s", strings.Join(two, "; "))
	}
	if masters := p.mastersSelected(); len(masters) > 0 {
		return block(ReasonGateSelectsMasters, "control-plane nodes %s match a gated pool's node selector; node-gate does not gate control-plane nodes (compact cluster)", strings.Join(masters, ", "))
	}
	return true
}

// selectedBySource: a gated pool's (original) node selector selects the node.
func (p *planner) selectedBySource(n *corev1.Node) bool {
	for _, s := range p.sources {
		sel := p.pools[s].Spec.NodeSelector
		if rec := p.poolRecord(s); rec != nil && rec.OriginalNodeSelector != nil {
			sel = rec.OriginalNodeSelector
		}
		if selects(sel, membershipView(n.Labels)) {
			return true
		}
	}
	return false
}

// mastersSelected lists control-plane nodes a gated pool's selector (or the
// release label) would select.
func (p *planner) mastersSelected() []string {
	master := p.pools[MasterPool]
	if master == nil {
		return nil
	}
	sel := poolSelector(master.Spec.NodeSelector)
	var out []string
	for _, n := range p.in.Nodes {
		if !sel.Matches(membershipView(n.Labels)) {
			continue
		}
		if p.isSource(n.Labels[ReleaseLabel]) || p.isSource(n.Labels[HoldLabel]) || p.selectedBySource(n) {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}
