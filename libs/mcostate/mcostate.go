// Package mcostate reads what the Machine Config Operator (MCO) records on a
// Node: the annotations its daemon (MCD) and controllers keep there, and the
// questions every component asks of them: has the daemon finished what it
// was told, has a node finished updating to a given rendered config, and
// where does a node stand in its pool's update. One reading of the MCO's
// node annotations for the update-status-controller, node-gate and the
// mcp-tracker.
package mcostate

import (
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/upshift-io/upshift/libs/nodes"
	"github.com/upshift-io/upshift/libs/trim"
)

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
	// ReleaseImageVersion is the release a rendered MachineConfig belongs to
	// (on MachineConfigs, not Nodes).
	ReleaseImageVersion = Prefix + "release-image-version"
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

// Annotations returns the MCO's annotations among a.
func Annotations(a map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		if IsAnnotation(k) {
			out[k] = v
		}
	}
	return out
}

// NodeFields is what a reader of the MCO's node state keeps of a Node in
// its cache (trim.Node): labels, the MCO's annotations, spec.unschedulable
// and the Ready condition, so that thousands of Nodes cost little memory and
// kubelet heartbeats change nothing cached.
var NodeFields = trim.Node{
	Labels:        trim.All,
	Annotations:   IsAnnotation,
	Conditions:    []corev1.NodeConditionType{corev1.NodeReady},
	Unschedulable: true,
}

// Phase is where a node stands in its pool's update to a target config.
type Phase string

const (
	// PhasePending: the node has not been told to move to the target yet.
	PhasePending Phase = "pending"
	// PhaseDraining: told to move, and its drain was requested and not yet done.
	PhaseDraining Phase = "draining"
	// PhaseUpdating: told to move and working on it (files, OS, uncordon).
	PhaseUpdating Phase = "updating"
	// PhaseRebooting: the MCD is rebooting the node, or it is not Ready while
	// moving.
	PhaseRebooting Phase = "rebooting"
	// PhaseDone: runs the target, state Done.
	PhaseDone Phase = "done"
	// PhaseDegraded: the MCD reports Degraded or Unreconcilable.
	PhaseDegraded Phase = "degraded"
)

// Phases lists every phase in the order an update goes through them, with
// Degraded last.
var Phases = []Phase{PhasePending, PhaseDraining, PhaseUpdating, PhaseRebooting, PhaseDone, PhaseDegraded}

// InProgress reports whether a node in phase p has started its update and
// not finished it (a degraded node counts: it holds the pool).
func (p Phase) InProgress() bool {
	return p == PhaseDraining || p == PhaseUpdating || p == PhaseRebooting || p == PhaseDegraded
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
		return PhaseDegraded
	case target != "" && current == target && desired == target && state == StateDone:
		return PhaseDone
	case target == "" || desired != target:
		return PhasePending
	case a[PostConfigAction] == PostConfigActionRebooting || state == StateRebooting || !n.Ready:
		return PhaseRebooting
	case isDraining(a):
		return PhaseDraining
	default:
		return PhaseUpdating
	}
}

// Draining reports whether a drain was asked for (desiredDrain drain-X) and
// the drain controller has not acknowledged it yet (lastAppliedDrain).
func Draining(a map[string]string) bool { return isDraining(a) }

// isDraining: a drain was asked for and the drain controller has not
// acknowledged it yet.
func isDraining(a map[string]string) bool {
	want := a[DesiredDrain]
	verb, _, _ := strings.Cut(want, "-")
	return verb == "drain" && want != a[LastAppliedDrain]
}

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

// Moving reports whether the MCD is working on a config it was told to
// move to: one is desired, it is not done with it, and it has not given up
// (Failing). The node may be cordoned, draining or rebooting, as an update
// makes it; a node the MCO never configured (no desired config) is not
// moving.
func Moving(a map[string]string) bool {
	return a[DesiredConfig] != "" && !Done(a) && !Failing(a)
}

// MovingAnnotations are the annotations Moving reads: a cache that serves
// only Moving keeps these.
var MovingAnnotations = []string{CurrentConfig, DesiredConfig, State, CurrentImage, DesiredImage}

// Failing reports whether the MCD gave up on the config it was asked for.
func Failing(a map[string]string) bool {
	s := a[State]
	return a[DesiredConfig] != "" && (s == StateDegraded || s == StateUnreconcilable)
}

// UpdatedTo reports whether the node finished updating to the rendered
// config target: the MCD is Done with current == desired == target, and the
// node is Ready and schedulable. The MCO uncordons a node before it writes
// Done, and a node may be Done but not yet Ready after its reboot, so no one
// of these signals is enough alone.
func UpdatedTo(node *corev1.Node, target string) bool {
	return target != "" && Done(node.Annotations) && node.Annotations[CurrentConfig] == target &&
		nodes.Ready(node) && !node.Spec.Unschedulable
}

// MaxUnavailable is how many of a pool's nodes the MCO updates at once: the
// pool's spec.maxUnavailable resolved against its size as the MCO resolves
// it (default 1, a percentage rounds down, never below 1).
func MaxUnavailable(pool *mcfgv1.MachineConfigPool, nodes int) int {
	v := intstr.FromInt32(1)
	if pool.Spec.MaxUnavailable != nil {
		v = *pool.Spec.MaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, nodes, false)
	if err != nil || n < 1 {
		return 1
	}
	return n
}
