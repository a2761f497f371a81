// Package nsg decides, for one cluster subnet at a time, what to do about its
// network security group association: nothing, report drift, re-associate
// the cluster's group, or stop re-associating because something else keeps
// undoing it. It is pure: the reconciler reads the subnet from Azure Resource
// Manager, calls Decide, and carries out the one action it returns.
package nsg

import (
	"fmt"
	"strings"
	"time"
)

// Mode is what aro-monitor may do about drift.
type Mode string

const (
	// Off: ARO's subnet flags switch the check off; subnets are not read.
	Off Mode = "Off"
	// Observe: drift is reported, nothing is changed.
	Observe Mode = "Observe"
	// Remediate: drift is repaired within the guard rails.
	Remediate Mode = "Remediate"
)

// Policy holds the guard rails.
type Policy struct {
	Mode Mode
	// MaxPerHour is the remediation budget per subnet per rolling hour.
	MaxPerHour int
	// TugOfWar: drift seen again this soon after a re-association means
	// another actor is undoing it.
	TugOfWar time.Duration
	// SuppressFor is how long remediation stops after a tug-of-war.
	SuppressFor time.Duration
}

// Record is what the status keeps per subnet between passes.
type Record struct {
	// Remediations are the re-association times still relevant to the budget
	// or the tug-of-war window, oldest first.
	Remediations    []time.Time
	SuppressedUntil *time.Time
	// SuppressedKind is TugOfWar or BudgetExhausted; SuppressedWhy the detail.
	SuppressedKind string
	SuppressedWhy  string
	// LastFailed says the latest re-association failed: drift seen again
	// is the same drift, not another actor undoing the repair.
	LastFailed bool
}

// The kinds of suppression.
const (
	TugOfWar        = "TugOfWar"
	BudgetExhausted = "BudgetExhausted"
)

// Observation is the subnet as Azure Resource Manager returned it.
type Observation struct {
	// Expected is the cluster's group ID; Attached the subnet's, "" for none.
	Expected, Attached string
}

// Drifted says whether the subnet is not associated with the expected group.
// Azure resource IDs compare case-insensitively.
func (o Observation) Drifted() bool { return !strings.EqualFold(o.Expected, o.Attached) }

// Action is the one thing to do for the subnet.
type Action string

const (
	// None: associated, or drift that must be left alone (suppressed).
	None Action = "None"
	// Report: drift in Observe mode.
	Report Action = "Report"
	// Reassociate: PUT the subnet with the expected group.
	Reassociate Action = "Reassociate"
	// Suppress: drift returned too soon or the budget is spent; stop and warn.
	Suppress Action = "Suppress"
)

// Decision is Decide's answer: the action, the record to store after it was
// carried out, and a message for the Event and status.
type Decision struct {
	Action  Action
	Record  Record
	Message string
}

// Decide chooses the action for one subnet. The new record counts a
// re-association attempt against the budget and assumes it took
// (LastFailed is false). The caller stores it once the PUT reached Azure
// Resource Manager, whether it succeeded or not — a PUT that keeps failing
// (403, 409) must not be retried every pass forever — and sets LastFailed
// when it failed, so the next drift is not mistaken for a tug-of-war. (Storing it before the PUT would
// make a crash between the two look like a tug-of-war on the next pass;
// storing it after means a crash at worst under-counts the budget by one,
// and the PUT itself is idempotent.)
func Decide(obs Observation, rec Record, now time.Time, p Policy) Decision {
	rec = prune(rec, now, p)
	if !obs.Drifted() {
		return Decision{Action: None, Record: rec}
	}
	drift := fmt.Sprintf("the subnet is associated with %s instead of %s", orNone(obs.Attached), obs.Expected)
	if p.Mode != Remediate {
		return Decision{Action: Report, Record: rec, Message: drift + "; remediation is off (" + string(p.Mode) + ")"}
	}
	if rec.SuppressedUntil != nil && now.Before(*rec.SuppressedUntil) {
		return Decision{Action: None, Record: rec,
			Message: fmt.Sprintf("%s; remediation is suppressed until %s: %s", drift, rec.SuppressedUntil.UTC().Format(time.RFC3339), rec.SuppressedWhy)}
	}
	// A tug-of-war is drift back after a repair that took.
	if n := len(rec.Remediations); n > 0 && now.Sub(rec.Remediations[n-1]) < p.TugOfWar && !rec.LastFailed {
		last := rec.Remediations[n-1]
		return suppress(rec, now.Add(p.SuppressFor), TugOfWar, fmt.Sprintf(
			"drift came back %s after aro-monitor re-associated the group at %s: something else is changing this subnet",
			now.Sub(last).Round(time.Second), last.UTC().Format(time.RFC3339)), drift)
	}
	if inHour := countSince(rec.Remediations, now.Add(-time.Hour)); inHour >= max(p.MaxPerHour, 1) {
		oldest := rec.Remediations[len(rec.Remediations)-inHour]
		return suppress(rec, oldest.Add(time.Hour), BudgetExhausted, fmt.Sprintf(
			"the budget of %d re-association attempts per hour is spent", max(p.MaxPerHour, 1)), drift)
	}
	rec.Remediations = append(rec.Remediations, now)
	rec.SuppressedUntil, rec.SuppressedKind, rec.SuppressedWhy = nil, "", ""
	rec.LastFailed = false
	return Decision{Action: Reassociate, Record: rec, Message: drift + "; re-associating " + obs.Expected}
}

func suppress(rec Record, until time.Time, kind, why, drift string) Decision {
	rec.SuppressedUntil, rec.SuppressedKind, rec.SuppressedWhy = &until, kind, why
	return Decision{Action: Suppress, Record: rec,
		Message: fmt.Sprintf("%s; remediation suppressed until %s: %s", drift, until.UTC().Format(time.RFC3339), why)}
}

// prune drops remediations older than both the budget hour and the
// tug-of-war window, and a suppression that has ended.
func prune(rec Record, now time.Time, p Policy) Record {
	keep := now.Add(-max(time.Hour, p.TugOfWar))
	var out []time.Time
	for _, t := range rec.Remediations {
		if t.After(keep) {
			out = append(out, t)
		}
	}
	rec.Remediations = out
	if rec.SuppressedUntil != nil && !now.Before(*rec.SuppressedUntil) {
		rec.SuppressedUntil, rec.SuppressedKind, rec.SuppressedWhy = nil, "", ""
	}
	return rec
}

func countSince(ts []time.Time, since time.Time) int {
	n := 0
	for _, t := range ts {
		if t.After(since) {
			n++
		}
	}
	return n
}

func orNone(id string) string {
	if id == "" {
		return "no network security group"
	}
	return id
}
