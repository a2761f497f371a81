package plan

import nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"

// facts are what a pass found that the run's phase depends on. decide
// returns them; derivePhase turns them into the phase, in one place.
type facts struct {
	// deleting: the run is being deleted (it restores, then lets go).
	deleting bool
	// blocked: the run's configuration refuses to start (condition Blocked).
	blocked bool
	// aborted: a hook whose failurePolicy is Abort failed, in this pass or
	// before it with the spec unchanged since.
	aborted bool
	// armed: an update is in play: a round is active, the control plane
	// updates, or nodes wait for content newer than the last round's.
	armed bool
	// restored: the pools, selectors and labels are as before the run
	// (restore finished in this pass; only meaningful where it ran).
	restored bool
	// controlPlane: the workers are held for the control plane (no round
	// yet, or every gated node passed while it still updates).
	controlPlane bool
	// newRound: the pools rendered newer content during the round; the
	// next pass gates it in a new round.
	newRound bool
	// roundOpen: the active round has nodes not yet done.
	roundOpen bool
	// paused: spec.paused, or a pause recorded after a failed hook.
	paused bool
	// waiting: a gate holds new starts and no node is in flight.
	waiting bool
}

// derivePhase is the run's phase after a pass whose phase before it was
// prev. hadRound: the run has gated at least one round (status.runID).
func derivePhase(prev nodegatev1alpha1.RunPhase, hadRound bool, f facts) nodegatev1alpha1.RunPhase {
	switch {
	case f.deleting:
		return nodegatev1alpha1.RunRestoring
	case f.blocked:
		return nodegatev1alpha1.RunBlocked
	case f.aborted:
		return nodegatev1alpha1.RunAborted
	case !f.armed && !f.restored:
		return nodegatev1alpha1.RunRestoring
	case !f.armed:
		// Completed is the end of a round and stays until the next one;
		// a run that never restored after a round is merely Idle.
		if prev == nodegatev1alpha1.RunCompleted || prev == nodegatev1alpha1.RunRestoring && hadRound {
			return nodegatev1alpha1.RunCompleted
		}
		return nodegatev1alpha1.RunIdle
	case f.controlPlane:
		return nodegatev1alpha1.RunWaiting
	case f.newRound:
		return nodegatev1alpha1.RunProgressing
	case !f.roundOpen && f.restored:
		return nodegatev1alpha1.RunCompleted
	case !f.roundOpen:
		return nodegatev1alpha1.RunRestoring
	case f.paused:
		return nodegatev1alpha1.RunPaused
	case f.waiting:
		return nodegatev1alpha1.RunWaiting
	}
	return nodegatev1alpha1.RunProgressing
}
