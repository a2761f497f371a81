// Package v1alpha1 holds the upgrade.managed.openshift.io/v1alpha1 API: the
// UpgradeConfig that the upgrade-scheduler reconciles.
//
// The schema is a drop-in for the managed-upgrade-operator's (MUO) UpgradeConfig:
// every field MUO defines keeps its JSON name, type, requiredness and meaning
// (including the capitalised spec.PDBForceDrainTimeout), and the printer
// columns read status.history[0] exactly as MUO's do, so an UpgradeConfig
// written for MUO applies unchanged and `kubectl get upgrade` looks the same.
//
// Everything Upshift adds is optional and additive:
//
//   - spec.paused, spec.cancel, spec.maintenanceWindows and spec.deadlines;
//   - status.observedGeneration, status.generationObservedTime,
//     status.currentStep, status.preflight, status.conditions (Kubernetes
//     conditions summarising the upgrade) and status.capacityReservation;
//   - history[].conditions[].attempts and .lastError, the durable per-step
//     record next to MUO's own per-step start and completion times;
//   - the phase Cancelled, reached only through spec.cancel;
//   - unique condition types per step: MUO records its "upgrade delayed" check
//     under StartedNotificationSent, the notification step's type, so both steps
//     share one condition; here the check has its own type,
//     UpgradeDelayedCheckCompleted.
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +groupName=upgrade.managed.openshift.io
package v1alpha1
