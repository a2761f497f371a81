// Package mcostate reads what the Machine Config Operator (MCO) records on a
// Node: the annotations its daemon and controllers keep there, and from them
// where the node stands in an update to a given rendered configuration. One
// set of annotation names for every component that reads them.
package mcostate

import "strings"

// Annotations the machine-config daemon (MCD) and the MCO's node and drain
// controllers keep on a Node.
const (
	Prefix = "machineconfiguration.openshift.io/"

	// CurrentConfig is the rendered MachineConfig the node runs.
	CurrentConfig = Prefix + "currentConfig"
	// DesiredConfig is the rendered MachineConfig the node controller told
	// the node to run; it moves first when the pool's target changes.
	DesiredConfig = Prefix + "desiredConfig"
	// State is the MCD's state: Done, Working, Degraded or Unreconcilable.
	State = Prefix + "state"
	// Reason is the MCD's error when State is Degraded or Unreconcilable.
	Reason = Prefix + "reason"
	// DesiredDrain is what the MCD asks of the drain controller:
	// drain-<rendered> or uncordon-<rendered>.
	DesiredDrain = Prefix + "desiredDrain"
	// LastAppliedDrain is the drain controller's acknowledgement of the last
	// DesiredDrain it carried out.
	LastAppliedDrain = Prefix + "lastAppliedDrain"
	// PostConfigAction is Rebooting while the MCD reboots the node.
	PostConfigAction = Prefix + "post-config-action"
	// CurrentImage and DesiredImage are the image-mode counterparts of the
	// configs.
	CurrentImage = Prefix + "currentImage"
	DesiredImage = Prefix + "desiredImage"
)

// Values of the State and PostConfigAction annotations.
const (
	StateDone           = "Done"
	StateWorking        = "Working"
	StateDegraded       = "Degraded"
	StateUnreconcilable = "Unreconcilable"
	StateRebooting      = "Rebooting"

	PostConfigActionRebooting = "Rebooting"
)

// IsAnnotation reports whether key is one of the MCO's node annotations; a
// cache may keep only these.
func IsAnnotation(key string) bool { return strings.HasPrefix(key, Prefix) }

// Phase is where a node stands in its pool's update to a target config.
type Phase string

const (
	// Pending: the node has not been told to move to the target yet.
	Pending Phase = "pending"
	// Draining: told to move, and its drain was requested and not yet done.
	Draining Phase = "draining"
	// Updating: told to move and working on it (files, OS, uncordon).
	Updating Phase = "updating"
	// Rebooting: the MCD is rebooting the node, or it is not Ready while
	// moving.
	Rebooting Phase = "rebooting"
	// Done: runs the target, state Done.
	Done Phase = "done"
	// Degraded: the MCD reports Degraded or Unreconcilable.
	Degraded Phase = "degraded"
)

// Phases lists every phase in the order an update goes through them, with
// Degraded last.
var Phases = []Phase{Pending, Draining, Updating, Rebooting, Done, Degraded}

// InProgress reports whether a node in phase p has started its update and
// not finished it (a degraded node counts: it holds the pool).
func (p Phase) InProgress() bool {
	return p == Draining || p == Updating || p == Rebooting || p == Degraded
}

// NodeInfo is what PhaseOf reads of a Node.
type NodeInfo struct {
	// Annotations are the node's annotations (only the MCO's are read).
	Annotations map[string]string
	// Ready is the node's Ready condition being True.
	Ready bool
}

// PhaseOf says where a node stands in an update to target. The order of the
// checks follows the MCD: degraded wins over everything (it blocks the pool);
// a node is done only when current and desired are the target and the MCD
// wrote Done (the uncordon comes before Done, so "schedulable again" is not
// done); a node whose desired config is not the target is pending.
func PhaseOf(n NodeInfo, target string) Phase {
	a := n.Annotations
	current, desired, state := a[CurrentConfig], a[DesiredConfig], a[State]
	switch {
	case state == StateDegraded || state == StateUnreconcilable:
		return Degraded
	case target != "" && current == target && desired == target && state == StateDone:
		return Done
	case target == "" || desired != target:
		return Pending
	case a[PostConfigAction] == PostConfigActionRebooting || state == StateRebooting || !n.Ready:
		return Rebooting
	case isDraining(a):
		return Draining
	default:
		return Updating
	}
}

// isDraining: a drain was asked for and the drain controller has not
// acknowledged it yet.
func isDraining(a map[string]string) bool {
	want := a[DesiredDrain]
	verb, _, _ := strings.Cut(want, "-")
	return verb == "drain" && want != a[LastAppliedDrain]
}
