// Package mcostate reads the state the machine-config operator (MCO) keeps on
// nodes: the annotation names its daemon (MCD) writes, and the questions every
// component asks of them: has the daemon finished what it was told, and has a
// node finished updating to a given rendered config.
//
// The update-status-controller and node-gate both answer those questions here,
// so there is one reading of the MCO's node annotations.
package mcostate

import (
	corev1 "k8s.io/api/core/v1"
)

// Annotations the MCD keeps on nodes, and the one the MCO puts on rendered
// MachineConfigs (ReleaseImageVersion).
const (
	Prefix              = "machineconfiguration.openshift.io/"
	CurrentConfig       = Prefix + "currentConfig"
	DesiredConfig       = Prefix + "desiredConfig"
	State               = Prefix + "state"
	Reason              = Prefix + "reason"
	DesiredDrain        = Prefix + "desiredDrain"
	LastAppliedDrain    = Prefix + "lastAppliedDrain"
	CurrentImage        = Prefix + "currentImage"
	DesiredImage        = Prefix + "desiredImage"
	ReleaseImageVersion = Prefix + "release-image-version"
)

// Values of the State annotation.
const (
	StateWorking        = "Working"
	StateDone           = "Done"
	StateDegraded       = "Degraded"
	StateRebooting      = "Rebooting"
	StateUnreconcilable = "Unreconcilable"
)

// Done reports whether the MCD applied the config (and image) it was asked
// for: both configs known and equal, state Done, and images either both
// absent or equal and known.
func Done(a map[string]string) bool {
	current, desired := a[CurrentConfig], a[DesiredConfig]
	currentImage, hasCurrentImage := a[CurrentImage]
	desiredImage, hasDesiredImage := a[DesiredImage]
	imagesDone := (!hasCurrentImage && !hasDesiredImage) || (currentImage != "" && currentImage == desiredImage)
	return current != "" && current == desired && imagesDone && a[State] == StateDone
}

// Failing reports whether the MCD gave up on the config it was asked for.
func Failing(a map[string]string) bool {
	s := a[State]
	return a[DesiredConfig] != "" && (s == StateDegraded || s == StateUnreconcilable)
}

// Ready reports whether the node's Ready condition is True.
func Ready(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// UpdatedTo reports whether the node finished updating to the rendered
// config target: the MCD is Done with current == desired == target, and the
// node is Ready and schedulable. The MCO uncordons a node before it writes
// Done, and a node may be Done but not yet Ready after its reboot, so no one
// of these signals is enough alone.
func UpdatedTo(node *corev1.Node, target string) bool {
	return target != "" && Done(node.Annotations) && node.Annotations[CurrentConfig] == target &&
		Ready(node) && !node.Spec.Unschedulable
}
