// Package mco simulates the machine-config-operator: the render controller
// (source MachineConfigs → rendered-<pool>-<hash>), the node controller
// (targets nodes of each unpaused pool up to maxUnavailable, zone then age),
// the machine-config-daemon on every node (the annotation sequence Working →
// drain → reboot → uncordon → Done) and the drain controller (cordon, evictions
// through the Eviction API so PodDisruptionBudgets apply, uncordon), plus the
// pool status the MCO reports.
//
// Decisions are pure functions in this package (availability.go, render.go,
// daemon.go, status.go) and are table-tested; controllers.go wires them to
// the apiserver with controller-runtime.
package mco

// Annotation and label keys the MCO uses (all from the MCO's daemon/constants).
const (
	prefix = "machineconfiguration.openshift.io/"

	CurrentConfigAnnotation      = prefix + "currentConfig"
	DesiredConfigAnnotation      = prefix + "desiredConfig"
	StateAnnotation              = prefix + "state"
	ReasonAnnotation             = prefix + "reason"
	DesiredDrainAnnotation       = prefix + "desiredDrain"
	LastAppliedDrainAnnotation   = prefix + "lastAppliedDrain"
	PostConfigActionAnnotation   = prefix + "post-config-action"
	ControlPlaneTopologyAnnot    = prefix + "controlPlaneTopology"
	GeneratedByVersionAnnotation = prefix + "generated-by-controller-version"
	ReleaseImageVersionAnnot     = prefix + "release-image-version"
	RoleLabel                    = prefix + "role"
	RequiredForUpgradeLabel      = "operator.machineconfiguration.openshift.io/required-for-upgrade"

	StateDone           = "Done"
	StateWorking        = "Working"
	StateDegraded       = "Degraded"
	StateUnreconcilable = "Unreconcilable"

	PostConfigRebooting = "Rebooting"

	// UpdateInProgressTaint is put (PreferNoSchedule) on pool nodes that are
	// not yet targeted at the pool's config.
	UpdateInProgressTaint = "UpdateInProgress"

	// ControllerVersion is what the simulated MCO writes as its version in
	// generated-by-controller-version.
	ControllerVersion = "ocpsim-mco"
)

// DrainAction returns the desiredDrain / lastAppliedDrain value for a verb
// ("drain" or "uncordon") and a rendered config.
func DrainAction(verb, rendered string) string { return verb + "-" + rendered }
