package silence

import "time"

// ControlPlaneWindow is the control-plane leases' window: from the phase's
// start, maintenance.controlPlaneTime. A control plane that takes longer is
// no longer silenced, the moment its timeout fires (as in MUO).
func ControlPlaneWindow(phaseStart time.Time, controlPlaneTime time.Duration) time.Time {
	return phaseStart.Add(controlPlaneTime)
}

// Pool is a worker MachineConfigPool as the window needs it.
type Pool struct {
	// Remaining is how many of its machines are not yet updated.
	Remaining int
	// MaxUnavailable is the pool's spec.maxUnavailable resolved against its
	// machine count (at least 1).
	MaxUnavailable int
}

// WorkerWindow is the worker lease's window, from the last time a worker
// finished (or the phase's start): the time the remaining machines need.
// Pools update in parallel and each takes MaxUnavailable machines at a time,
// so that is the largest number of rounds any pool still has, each round a
// drain (at most perNodeDrain, MUO's max of the PDB force-drain timeout and
// nodeDrain.timeOut) plus the expected reboot and update (MUO's
// nodeDrain.expectedNodeDrainTime). MUO multiplies by the number of remaining
// nodes, as if they went one at a time: 10 nodes made an 11-hour window.
// Since it counts from the last progress, a pool that stops progressing sees
// its lease lapse after one full estimate.
func WorkerWindow(lastProgress time.Time, pools []Pool, perNodeDrain, expectedNodeTime time.Duration) time.Time {
	rounds := 0
	for _, p := range pools {
		if p.Remaining <= 0 {
			continue
		}
		step := max(p.MaxUnavailable, 1)
		rounds = max(rounds, (p.Remaining+step-1)/step)
	}
	return lastProgress.Add(time.Duration(rounds) * (perNodeDrain + expectedNodeTime))
}
