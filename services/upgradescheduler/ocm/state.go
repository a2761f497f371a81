package ocm

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

// transitions are MUO's allowed policy state transitions, in OCM's values:
// scheduled → started; started → delayed, completed, failed; delayed →
// delayed (MUO's scale-skipped and skipped notices are both written as
// delayed), completed, failed. Pending, completed, failed and cancelled are
// final for the scheduler.
var transitions = map[string]map[string]bool{
	StateScheduled: {StateStarted: true},
	StateStarted:   {StateDelayed: true, StateCompleted: true, StateFailed: true},
	StateDelayed:   {StateDelayed: true, StateCompleted: true, StateFailed: true},
}

// NextState decides how to report wanted when OCM says the policy is in
// current. It is read back before every write, so that a resend after a
// crash (or a lost response) never writes a state twice.
func NextState(current, wanted string) Write {
	if current == wanted {
		return AlreadySet
	}
	if transitions[current][wanted] {
		return Patch
	}
	return NotAllowed
}
