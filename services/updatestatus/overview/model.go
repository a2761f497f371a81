package overview

// Model is the view: one headline, one verdict, one section per component.
// -o json prints it as is, so its field names are an interface too.
type Model struct {
	Verdict  Verdict `json:"verdict"`
	Headline string  `json:"headline"`
	// Sections are in the order an upgrade meets the components: the
	// scheduler starts it, ClusterVersion runs it, the trackers and gates
	// follow the workers, the rest watch.
	Sections []Section `json:"sections"`
}

// Section is what one component publishes.
type Section struct {
	// Component is the binary's name (upgrade-scheduler, node-gate, ...);
	// the cluster update itself is "cluster-update".
	Component string `json:"component"`
	State     State  `json:"state"`
	// Waiting says in one line what the component waits for, or why it is
	// blocked, or that it is done: the line people read first.
	Waiting string `json:"waiting"`
	// Updating: the component reports an update under way (paused or
	// held included), which makes the verdict Updating unless something
	// is blocked.
	Updating bool `json:"updating"`
	// Lines are the details, already short enough for a terminal.
	Lines []string `json:"lines,omitempty"`
}

// State is where one component stands.
type State string

const (
	// StateNotInstalled: the component's CRD is not served.
	StateNotInstalled State = "not installed"
	// StateUnknown: its objects could not be read (RBAC, an error).
	StateUnknown State = "unknown"
	// StateIdle: installed, nothing to do.
	StateIdle State = "idle"
	// StateScheduled: an upgrade is scheduled and has not started.
	StateScheduled State = "scheduled"
	// StateWaiting: work is pending and held on purpose (a window, a
	// hook, the control plane, spec.paused).
	StateWaiting State = "waiting"
	// StateProgressing: work is moving.
	StateProgressing State = "progressing"
	// StateBlocked: the component reports it cannot go on (failed, stalled,
	// degraded, a deadline passed) until someone acts.
	StateBlocked State = "blocked"
	// StateAttention: a finding to look at that holds no upgrade (aro-monitor's
	// checks, advisory health findings).
	StateAttention State = "attention"
	// StateDone: the last upgrade completed.
	StateDone State = "done"
)

// Verdict sums the view up for people and scripts.
type Verdict string

const (
	// VerdictNotUpdating: no update in progress (none scheduled, one
	// scheduled but not started, or the last one completed) and nothing
	// blocked.
	VerdictNotUpdating Verdict = "NotUpdating"
	// VerdictUpdating: an update is in progress and nothing reports it blocked.
	VerdictUpdating Verdict = "Updating"
	// VerdictBlocked: a component reports the upgrade blocked, stalled or
	// failed.
	VerdictBlocked Verdict = "Blocked"
	// VerdictUnknown: the ClusterVersion could not be read, and nothing
	// else says blocked: the view cannot tell whether the cluster updates.
	VerdictUnknown Verdict = "Unknown"
)

// Exit codes of --exit-status. 1 is every command error, as without the
// flag; 2 is left unused because shells and many tools use it for a misused
// command, which a script must not take for a verdict.
const (
	ExitNotUpdating = 0
	ExitUpdating    = 3
	ExitBlocked     = 4
	ExitUnknown     = 5
)

// ExitCode is the --exit-status code of v.
func (v Verdict) ExitCode() int {
	switch v {
	case VerdictUpdating:
		return ExitUpdating
	case VerdictBlocked:
		return ExitBlocked
	case VerdictUnknown:
		return ExitUnknown
	}
	return ExitNotUpdating
}

// ExitStatus is returned by the command, after the view was printed, when
// --exit-status asks for a verdict other than NotUpdating: main exits with
// Code and prints nothing more, since the view already said it all.
type ExitStatus struct {
	Verdict Verdict
}

func (e ExitStatus) Error() string { return "verdict " + string(e.Verdict) }

// ExitCode is the process's exit code.
func (e ExitStatus) ExitCode() int { return e.Verdict.ExitCode() }

// Silent says the error is not to be printed: it is not a failure.
func (e ExitStatus) Silent() bool { return true }
