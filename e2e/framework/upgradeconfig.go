package framework

import (
	"time"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// StepTimings reports how long each step of the UpgradeConfig's newest
// history entry took, from its recorded start and completion times (to the
// second), oldest first: the history lists conditions newest first, as
// MUO's does. A step not done yet shows "-".
func StepTimings(uc *upgradev1alpha1.UpgradeConfig) []string {
	if len(uc.Status.History) == 0 {
		return nil
	}
	conds := uc.Status.History[0].Conditions
	var out []string
	for i := len(conds) - 1; i >= 0; i-- {
		c := conds[i]
		d := "-"
		if c.StartTime != nil && c.CompleteTime != nil {
			d = c.CompleteTime.Sub(c.StartTime.Time).Round(time.Second).String()
		}
		out = append(out, string(c.Type)+" "+d)
	}
	return out
}
