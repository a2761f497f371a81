package plan

import (
	"time"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

// DefaultMaxHookAge is how long finished pre-update hooks stay valid for a
// node waiting for its turn when no rule sets maxHookAge.
const DefaultMaxHookAge = 30 * time.Minute

// lookahead is how many nodes per release slot (maxUnavailable) may run
// their pre-update hooks ahead of their turn: the smallest of the run's
// rules', so that a rule that needs strict mutual exclusion (0) keeps it for
// every node. Per slot, so that it keeps each slot's next node ready whatever
// the size of the pool: one node ahead for fifty slots would be used up by
// the first Done.
func (p *planner) lookahead() int {
	if len(p.rules) == 0 {
		return 0
	}
	n := int(p.rules[0].Spec.Lookahead)
	for _, r := range p.rules[1:] {
		n = min(n, int(r.Spec.Lookahead))
	}
	return n
}

// maxHookAge is the smallest maxHookAge of the run's rules, or the default.
func (p *planner) maxHookAge() time.Duration {
	age := time.Duration(0)
	for _, r := range p.rules {
		if d := r.Spec.MaxHookAge; d != nil && d.Duration > 0 && (age == 0 || d.Duration < age) {
			age = d.Duration
		}
	}
	if age == 0 {
		return DefaultMaxHookAge
	}
	return age
}

// hooksExpired: with lookahead, the node's pre-update hooks finished longer
// than maxHookAge ago (counted from the first of them), so what they did
// (a fence, a drain of its workload elsewhere) may no longer hold.
func (p *planner) hooksExpired(r *nodegatev1alpha1.NodeRecord) bool {
	if p.lookahead() == 0 {
		return false
	}
	var first time.Time
	for _, h := range r.Hooks {
		if h.Stage == nodegatev1alpha1.StagePre && h.CompletionTime != nil && (first.IsZero() || h.CompletionTime.Time.Before(first)) {
			first = h.CompletionTime.Time
		}
	}
	return !first.IsZero() && !p.in.Now.Before(first.Add(p.maxHookAge()))
}
