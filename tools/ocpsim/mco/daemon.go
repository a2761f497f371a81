package mco

import "fmt"

// OnDiskConfigAnnotation records the config the simulated MCD has written to
// disk (the real MCD keeps it in /etc/machine-config-daemon/currentconfig);
// it makes the simulation restart-safe across the reboot.
const OnDiskConfigAnnotation = "ocpsim.upshift.io/on-disk-config"

// Step is what the machine-config-daemon does next on a node.
type Step int

const (
	StepNone            Step = iota // nothing to do
	StepWorking                     // state=Working
	StepUnreconcilable              // state=Unreconcilable with a reason
	StepRequestDrain                // desiredDrain=drain-<desired>
	StepWaitDrain                   // wait for lastAppliedDrain=drain-<desired>
	StepReboot                      // write files and OS, post-config-action=Rebooting, reboot
	StepWaitReboot                  // node is rebooting (NotReady)
	StepBooted                      // post-config-action=""
	StepRequestUncordon             // desiredDrain=uncordon-<desired>
	StepWaitUncordon                // wait for lastAppliedDrain=uncordon-<desired>
	StepDone                        // state=Done, currentConfig=<desired>, reason=""
)

var stepNames = [...]string{"None", "Working", "Unreconcilable", "RequestDrain", "WaitDrain", "Reboot", "WaitReboot", "Booted", "RequestUncordon", "WaitUncordon", "Done"}

func (s Step) String() string {
	if int(s) < len(stepNames) {
		return stepNames[s]
	}
	return fmt.Sprintf("Step(%d)", int(s))
}

// DaemonView is what the MCD looks at on its node.
type DaemonView struct {
	Current, Desired, State                    string
	DesiredDrain, LastAppliedDrain, PostConfig string
	OnDisk                                     string
	Ready                                      bool
	Unreconcilable                             bool // the desired config cannot be applied
}

// ViewOf reads a DaemonView from node annotations.
func ViewOf(a map[string]string, ready, unreconcilable bool) DaemonView {
	return DaemonView{
		Current: a[CurrentConfigAnnotation], Desired: a[DesiredConfigAnnotation], State: a[StateAnnotation],
		DesiredDrain: a[DesiredDrainAnnotation], LastAppliedDrain: a[LastAppliedDrainAnnotation],
		PostConfig: a[PostConfigActionAnnotation], OnDisk: a[OnDiskConfigAnnotation],
		Ready: ready, Unreconcilable: unreconcilable,
	}
}

// NextStep is the MCD's next action, as the MCO sequences a node update. An update
// between configs of identical content is rebootless: no drain, no reboot,
// only the no-op uncordon handshake.
func NextStep(v DaemonView) Step {
	d := v.Desired
	if d == "" {
		return StepNone
	}
	if v.Current == d {
		if v.State == StateWorking {
			return StepDone
		}
		return StepNone
	}
	if v.Unreconcilable {
		if v.State == StateUnreconcilable {
			return StepNone
		}
		return StepUnreconcilable
	}
	if v.State == StateDone || v.State == "" {
		return StepWorking
	}
	rebootless := SameContent(v.Current, d)
	if !rebootless && v.OnDisk != d {
		switch {
		case v.DesiredDrain != DrainAction("drain", d):
			return StepRequestDrain
		case v.LastAppliedDrain != DrainAction("drain", d):
			return StepWaitDrain
		default:
			return StepReboot
		}
	}
	if v.PostConfig == PostConfigRebooting {
		if !v.Ready {
			return StepWaitReboot
		}
		return StepBooted
	}
	switch {
	case v.DesiredDrain != DrainAction("uncordon", d):
		return StepRequestUncordon
	case v.LastAppliedDrain != DrainAction("uncordon", d):
		return StepWaitUncordon
	}
	return StepDone
}

// DrainFailedReason is the reason the MCD writes when it gives up on a drain.
func DrainFailedReason(node string) string {
	return fmt.Sprintf("failed to drain node: %s after 1 hour. Please see machine-config-controller logs for more information", node)
}

// UnreconcilableReason is the reason the MCD writes for a config it refuses.
func UnreconcilableReason(current, desired string) string {
	return fmt.Sprintf("can't reconcile config %s with %s: detected change to unreconcilable field: ignition storage.disks: unreconcilable", current, desired)
}
