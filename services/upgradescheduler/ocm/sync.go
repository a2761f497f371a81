package ocm

import (
	"time"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// UpgradeConfigName is the one UpgradeConfig the OCM provider manages (MUO's
// name).
const UpgradeConfigName = "managed-upgrade-config"

// Annotations the provider writes on the UpgradeConfig it manages.
const (
	// PolicyAnnotation is the ID of the upgrade policy the spec came from:
	// notifications go to that policy (MUO matches version and next run).
	PolicyAnnotation = "upgrade.managed.openshift.io/ocm-upgrade-policy"
	// PolicyRemovedAnnotation records, once, that the policy was removed in
	// OCM after the upgrade commenced (the upgrade runs to its end).
	PolicyRemovedAnnotation = "upgrade.managed.openshift.io/ocm-upgrade-policy-removed"
	// CancelledBySyncAnnotation marks a spec.cancel the syncer set itself
	// (the policy was removed before commencement). Only such a cancel is
	// withdrawn when a policy is there again: a cancel a person set is
	// theirs, and the syncer never clears it.
	CancelledBySyncAnnotation = "upgrade.managed.openshift.io/ocm-cancelled-by-sync"
)

// SyncAction is what the policy syncer does to the managed UpgradeConfig.
type SyncAction string

const (
	// SyncNone: nothing to change.
	SyncNone SyncAction = "None"
	// SyncCreate: create the UpgradeConfig with Spec.
	SyncCreate SyncAction = "Create"
	// SyncUpdate: update the UpgradeConfig's spec in place (its status and
	// history are kept; MUO deletes and recreates it).
	SyncUpdate SyncAction = "Update"
	// SyncCancel: the policy is gone before the upgrade commenced: set
	// spec.cancel, so the attempt ends Cancelled with its cleanup.
	SyncCancel SyncAction = "Cancel"
	// SyncRecordRemoved: the policy is gone after commencement: record it
	// (annotation and Event, once); the upgrade runs to its end.
	SyncRecordRemoved SyncAction = "RecordRemoved"
)

// SyncInput is what the syncer decides from.
type SyncInput struct {
	// Existing is the managed UpgradeConfig, nil when there is none.
	Existing *upgradev1alpha1.UpgradeConfig
	// Picked is the policy to act on (Pick), nil when none is actionable.
	Picked *Policy
	// Spec is Picked's spec (Spec).
	Spec *upgradev1alpha1.UpgradeConfigSpec
	// Policies are all the cluster's policies, to tell a policy removed from
	// one OCM merely moved on (completed, pending).
	Policies []Policy
	// Commenced: ClusterVersion already points at Existing's target.
	Commenced bool
}

// SyncDecision is the decision and, for Create and Update, the spec to write.
type SyncDecision struct {
	Action SyncAction
	Spec   upgradev1alpha1.UpgradeConfigSpec
	// PolicyID is the policy to annotate (Create, Update).
	PolicyID string
	// Reason says why, for the Event.
	Reason string
}

// DecideSync is the provider's pure decision. The fields OCM owns are
// desired, upgradeAt, PDBForceDrainTimeout, type and capacityReservation;
// Upshift's own fields (paused, maintenanceWindows, deadlines) are kept as
// the user set them.
func DecideSync(in SyncInput) SyncDecision {
	uc := in.Existing
	if in.Spec != nil {
		if uc == nil {
			return SyncDecision{Action: SyncCreate, Spec: *in.Spec, PolicyID: in.Picked.ID, Reason: "upgrade policy " + in.Picked.ID + " scheduled"}
		}
		_, syncCancelled := uc.Annotations[CancelledBySyncAnnotation]
		want := merge(uc.Spec, *in.Spec, syncCancelled)
		if equalOwned(uc.Spec, want) && uc.Annotations[PolicyAnnotation] == in.Picked.ID {
			return SyncDecision{Action: SyncNone}
		}
		if in.Commenced && !terminal(uc) {
			// An attempt under way is not superseded by a policy for another
			// release (the control plane is already moving; the new policy
			// is taken once this attempt has ended), and its spec is not
			// edited either: upgradeAt, type or the drain timeout changed
			// mid-upgrade mean nothing any more, and each edit would bump
			// the generation. Only the record of which policy it answers
			// to follows OCM.
			if uc.Spec.Desired == want.Desired && uc.Annotations[PolicyAnnotation] != in.Picked.ID {
				return SyncDecision{Action: SyncUpdate, Spec: uc.Spec, PolicyID: in.Picked.ID, Reason: "upgrade policy " + in.Picked.ID + " now carries the upgrade under way"}
			}
			return SyncDecision{Action: SyncNone, Reason: "an upgrade is under way"}
		}
		return SyncDecision{Action: SyncUpdate, Spec: want, PolicyID: in.Picked.ID, Reason: "upgrade policy " + in.Picked.ID + " changed"}
	}
	if uc == nil || terminal(uc) || uc.Spec.Cancel {
		return SyncDecision{Action: SyncNone}
	}
	id := uc.Annotations[PolicyAnnotation]
	for _, p := range in.Policies {
		if p.ID == id && p.State == StateCompleted {
			// Still there and completed (by our own notification): it
			// moved on, nothing was removed. A policy cancelled, or back in
			// pending (MUO ignores pending policies: not confirmed to run),
			// is no upgrade to run: as good as removed.
			return SyncDecision{Action: SyncNone}
		}
	}
	if in.Commenced {
		if _, done := uc.Annotations[PolicyRemovedAnnotation]; done {
			return SyncDecision{Action: SyncNone}
		}
		return SyncDecision{Action: SyncRecordRemoved, Reason: "upgrade policy " + id + " removed in OCM after the upgrade commenced; it runs to its end"}
	}
	return SyncDecision{Action: SyncCancel, Reason: "upgrade policy " + id + " removed or cancelled in OCM before the upgrade commenced"}
}

// merge returns have with the fields OCM owns taken from want, and a
// cancellation the syncer set itself cleared (a policy is there again); a
// cancellation someone else set stays.
func merge(have, want upgradev1alpha1.UpgradeConfigSpec, syncCancelled bool) upgradev1alpha1.UpgradeConfigSpec {
	out := *have.DeepCopy()
	out.Desired, out.UpgradeAt, out.PDBForceDrainTimeout, out.Type, out.CapacityReservation =
		want.Desired, want.UpgradeAt, want.PDBForceDrainTimeout, want.Type, want.CapacityReservation
	if syncCancelled {
		out.Cancel = false
	}
	return out
}

func equalOwned(a, b upgradev1alpha1.UpgradeConfigSpec) bool {
	return a.Desired == b.Desired && a.UpgradeAt == b.UpgradeAt && a.PDBForceDrainTimeout == b.PDBForceDrainTimeout &&
		a.Type == b.Type && a.CapacityReservation == b.CapacityReservation && a.Cancel == b.Cancel
}

func terminal(uc *upgradev1alpha1.UpgradeConfig) bool {
	if len(uc.Status.History) == 0 || uc.Status.History[0].Version != target(uc) {
		return false
	}
	switch uc.Status.History[0].Phase {
	case upgradev1alpha1.UpgradePhaseUpgraded, upgradev1alpha1.UpgradePhaseFailed, upgradev1alpha1.UpgradePhaseCancelled:
		return true
	}
	return false
}

func target(uc *upgradev1alpha1.UpgradeConfig) string {
	if uc.Spec.Desired.Version != "" {
		return uc.Spec.Desired.Version
	}
	return uc.Spec.Desired.Image
}

// syncRetryMax is MUO's longest wait between failed syncs.
const syncRetryMax = time.Hour

// SyncRetryAfter is how long to wait after the failures-th failed sync in a
// row: base, doubling with each further failure, at most an hour (MUO's
// backoff: one minute, factor 2, one hour).
func SyncRetryAfter(failures int, base time.Duration) time.Duration {
	d := base
	for i := 1; i < failures && d < syncRetryMax; i++ {
		d *= 2
	}
	return min(d, syncRetryMax)
}
