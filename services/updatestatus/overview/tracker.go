package overview

import (
	"fmt"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// trackerSection is the mcp-tracker's record: the pools and the
// WorkersUpgraded condition it writes into an UpgradeConfig's status. It has
// no object of its own, so "not installed" can only be told by the absence
// of the UpgradeConfig CRD; an installed tracker that recorded nothing yet
// looks the same as none.
func trackerSection(in Input) Section {
	s := Section{Component: MCPTracker}
	if unreadable(&s, in.UpgradeConfigs.Outcome, in.UpgradeConfigs.Err, "UpgradeConfig") {
		return s
	}
	var uc *upgradev1alpha1.UpgradeConfig
	for _, c := range sortedConfigs(in.UpgradeConfigs.Object) {
		if len(c.Status.Pools) > 0 || cond(c.Status.Conditions, upgradev1alpha1.WorkersUpgradedCondition) != nil {
			if uc == nil || !ended(phaseOf(c)) {
				uc = c
			}
		}
	}
	if uc == nil {
		s.State, s.Waiting = StateIdle, "no pool records in any UpgradeConfig (not installed, or nothing tracked yet)"
		return s
	}
	var stuck, moving []string
	for _, p := range uc.Status.Pools {
		if p.RemovedTime != nil {
			continue
		}
		s.Lines = append(s.Lines, poolLine(p, in))
		if sn := p.SlowestNode; sn != nil && (p.Nodes.Degraded > 0 || p.StuckNodes > 0 || p.CompleteTime == nil) {
			s.Lines = append(s.Lines, fmt.Sprintf("    slowest: %s %s since %s%s", sn.Name, sn.State, clock(sn.Since.Time, in.Now), prefixed(": ", oneLine(sn.Reason, 120))))
		}
		n := p.Nodes
		switch {
		case n.Degraded > 0 || p.StuckNodes > 0:
			stuck = append(stuck, fmt.Sprintf("pool %s has %d degraded and %d stuck nodes", p.Name, n.Degraded, p.StuckNodes))
		case n.Pending+n.Draining+n.Updating+n.Rebooting > 0:
			moving = append(moving, fmt.Sprintf("%s: %d of %d nodes done", p.Name, n.Done, n.Pending+n.Draining+n.Updating+n.Rebooting+n.Done))
		}
	}
	if c := cond(uc.Status.Conditions, upgradev1alpha1.WorkersUpgradedCondition); c != nil {
		s.Lines = append(s.Lines, "  "+condLine(c))
	}
	switch {
	case len(stuck) > 0:
		s.State, s.Waiting, s.Updating = StateBlocked, joinNonEmpty("; ", stuck...), len(moving) > 0
	case len(moving) > 0:
		s.State, s.Waiting, s.Updating = StateProgressing, "waiting for pool "+joinNonEmpty("; ", moving...), true
	case isTrue(uc.Status.Conditions, upgradev1alpha1.WorkersUpgradedCondition):
		s.State, s.Waiting = StateDone, "every worker pool is updated"
	default:
		s.State, s.Waiting = StateIdle, "no pool is updating"
	}
	return s
}

func poolLine(p upgradev1alpha1.PoolUpdate, in Input) string {
	n := p.Nodes
	c := map[string]int{"done": int(n.Done), "pending": int(n.Pending), "draining": int(n.Draining), "updating": int(n.Updating),
		"rebooting": int(n.Rebooting), "degraded": int(n.Degraded), "stuck": int(p.StuckNodes)}
	line := fmt.Sprintf("pool %s: %d machines%s", p.Name, p.MachineCount,
		prefixed(": ", counts([]string{"done", "pending", "draining", "updating", "rebooting", "degraded", "stuck"}, c)))
	switch {
	case p.CompleteTime != nil:
		line += ", updated " + clock(p.CompleteTime.Time, in.Now)
	case p.StartTime != nil:
		line += ", updating since " + clock(p.StartTime.Time, in.Now)
	}
	return line
}
