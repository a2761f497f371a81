package ocm

import "strings"

// Write is what to do about a policy state the scheduler wants to report.
type Write int

const (
	// Patch the state: the transition is allowed.
	Patch Write = iota
	// AlreadySet: the policy is already in the wanted state (a resend after
	// the first write took effect but was not recorded); nothing to write.
	AlreadySet
	// NotAllowed: MUO never writes this transition (the policy moved on, or
	// ended); nothing to write, and not to be retried.
	NotAllowed
)

func (w Write) String() string {
	switch w {
	case Patch:
		return "Patch"
	case AlreadySet:
		return "AlreadySet"
	}
	return "NotAllowed"
}

// A policy's state as MUO's notifier sees it. OCM has one "delayed" value
// for three of MUO's states: MUO writes a delay ("... The upgrade will
// continue to retry ...") and its two capacity skips ("scale skipped",
// "skipped") all as delayed, and reading a policy back it takes a delayed
// state whose description mentions a retry for a delay and any other for a
// skip. The notices are named by MUO's states (StateStarted, ...).
const (
	muoScheduled    = "StateScheduled"
	muoStarted      = "StateStarted"
	muoDelayed      = "StateDelayed"
	muoScaleSkipped = "StateScaleSkipped"
	muoSkipped      = "StateSkipped"
	muoCompleted    = "StateCompleted"
	muoFailed       = "StateFailed"
)

// muoState is the MUO state a policy in OCM state value, with description,
// is in; empty for the states MUO never moves from (pending, cancelled, an
// unknown value).
func muoState(value, description string) string {
	switch value {
	case StateScheduled:
		return muoScheduled
	case StateStarted:
		return muoStarted
	case StateDelayed:
		if strings.Contains(description, "retry") {
			return muoDelayed
		}
		return muoSkipped
	case StateCompleted:
		return muoCompleted
	case StateFailed:
		return muoFailed
	}
	return ""
}

// transitions are MUO's allowed transitions between its states (its
// notifier's validation): a scheduled policy only starts; a started one may
// have its capacity reservation skipped, be delayed, complete or fail; after
// a delay only a skip, completion or failure; after a skip only completion
// or failure. Completed and failed are final.
var transitions = map[string]map[string]bool{
	muoScheduled:    {muoStarted: true},
	muoStarted:      {muoScaleSkipped: true, muoDelayed: true, muoCompleted: true, muoFailed: true},
	muoScaleSkipped: {muoDelayed: true, muoFailed: true, muoSkipped: true, muoCompleted: true},
	muoDelayed:      {muoCompleted: true, muoFailed: true, muoSkipped: true},
	muoSkipped:      {muoCompleted: true, muoFailed: true},
}

// NextState decides how to report the notice wanted (MUO's state name, and
// the OCM value and description it writes) when OCM says the policy is in
// value with description. It is read back before every write, so that a
// resend after a crash (or a lost response) never writes a state twice.
func NextState(value, description, wanted, wantedValue, wantedDescription string) Write {
	if value == wantedValue && description == wantedDescription {
		return AlreadySet
	}
	if transitions[muoState(value, description)][wanted] {
		return Patch
	}
	return NotAllowed
}
