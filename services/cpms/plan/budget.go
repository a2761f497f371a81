package plan

import (
	"encoding/json"
	"strconv"
	"time"
)

// Budget is the remediation budget already spent, per index, kept in the
// set's RemediationAnnotation.
//
// Why an annotation on the set: the ControlPlaneMachineSet status is
// openshift/api's type and has no field for it, and everything in the status
// is recomputed from observation each pass; the failed machine itself is
// deleted by the remediation, and the index may have no other machine to
// carry it. The annotation is written in the same action, before the delete,
// so a restart between the two finds the retry already counted (and the
// machine named in it) and only finishes the delete.
type Budget map[string]BudgetEntry

// BudgetEntry is one index's spending.
type BudgetEntry struct {
	// Spec is the hash of the desired provider spec the retries were spent
	// on: a new spec (someone fixed the template) starts a fresh budget.
	Spec string `json:"spec"`
	// Retries is the number of failed replacements deleted so far.
	Retries int `json:"retries"`
	// Machine is the last failed replacement deleted.
	Machine string `json:"machine"`
	// At is when it was deleted; the next replacement waits RetryPeriod.
	At time.Time `json:"at"`
}

// ParseBudget reads the annotation; a value that does not parse is an empty
// budget (and reported by the caller).
func ParseBudget(s string) (Budget, error) {
	b := Budget{}
	if s == "" {
		return b, nil
	}
	if err := json.Unmarshal([]byte(s), &b); err != nil {
		return Budget{}, err
	}
	return b, nil
}

// String is the annotation value (keys sorted by encoding/json).
func (b Budget) String() string {
	out, _ := json.Marshal(b)
	return string(out)
}

// entry is index i's spending on spec, zero if it was spent on another spec.
func (b Budget) entry(i int, spec string) BudgetEntry {
	e, ok := b[strconv.Itoa(i)]
	if !ok || e.Spec != spec {
		return BudgetEntry{}
	}
	return e
}
