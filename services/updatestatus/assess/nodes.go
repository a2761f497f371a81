package assess

import (
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
)

// Annotations the machine-config daemon (MCD) keeps on nodes, and the ones
// the MCO puts on rendered MachineConfigs and pools (names shared through
// libs/mcostate).
const (
	annoCurrentConfig       = mcostate.CurrentConfig
	annoDesiredConfig       = mcostate.DesiredConfig
	annoState               = mcostate.State
	annoReason              = mcostate.Reason
	annoDesiredDrain        = mcostate.DesiredDrain
	annoLastAppliedDrain    = mcostate.LastAppliedDrain
	annoCurrentImage        = mcostate.CurrentImage
	annoDesiredImage        = mcostate.DesiredImage
	annoReleaseImageVersion = mcostate.ReleaseImageVersion
	// annoPoolOSImage is where the MCO keeps a layered pool's OS image (an
	// on-cluster build); pools without it are not layered.
	annoPoolOSImage = mcostate.Prefix + "newestImageEquivalentConfig"

	mcdStateWorking        = mcostate.StateWorking
	mcdStateDone           = mcostate.StateDone
	mcdStateDegraded       = mcostate.StateDegraded
	mcdStateRebooting      = mcostate.StateRebooting
	mcdStateUnreconcilable = mcostate.StateUnreconcilable
)

// Why a node does not accept workloads. The texts are what the CLI shows.
const (
	unavailNotReady      = "Not ready"
	unavailDiskPressure  = "Disk pressure"
	unavailNetwork       = "Network unavailable"
	unavailUnschedulable = "Node is marked unschedulable"
	unavailMCDWorking    = "Machine Config Daemon is processing the node"
)

// Phase is a node's place in its update.
type Phase string

const (
	PhaseDraining  Phase = updatev1alpha1.ReasonNodeDraining
	PhaseUpdating  Phase = updatev1alpha1.ReasonNodeUpdating
	PhaseRebooting Phase = updatev1alpha1.ReasonNodeRebooting
	PhasePaused    Phase = updatev1alpha1.ReasonNodePaused
	// PhaseGated: the node's pool is paused by a node-gate run, which
	// releases the node after its pre-update hooks (gates.go).
	PhaseGated   Phase = updatev1alpha1.ReasonNodeGated
	PhasePending Phase = updatev1alpha1.ReasonNodePending
	PhaseUpdated Phase = updatev1alpha1.ReasonNodeCompleted
)

// Updating says whether a node in phase p is being updated: its Updating
// condition is True.
func (p Phase) Updating() bool {
	return p == PhaseDraining || p == PhaseUpdating || p == PhaseRebooting
}

// unavailableReason is one reason a node is unavailable, with the condition
// behind it (nil for reasons without one).
type unavailableReason struct {
	text      string
	reason    string // CamelCase condition reason
	condition *corev1.NodeCondition
}

// nodeState is everything computed about one node.
type nodeState struct {
	node           *corev1.Node
	version        string // current version, "" when unknown
	updated        bool
	updating       bool
	degraded       bool
	draining       bool
	unavailable    []unavailableReason
	phase          Phase
	estimate       *time.Duration // nil: unknown
	degradedReason string
	// gate says what a node-gate run holds the node for; empty when no run
	// holds it.
	gate string
}

func (n nodeState) isUnavailable() bool { return len(n.unavailable) > 0 }

// assessNode computes a node's flags and phase, as oc does, except that a
// node a node-gate run holds in a pool the run paused is Gated, not Paused.
func assessNode(node *corev1.Node, pool *mcfgv1.MachineConfigPool, versions map[string]string, target string, multiArchMigration bool, gates gateSet) nodeState {
	a := node.Annotations
	current, desired := a[annoCurrentConfig], a[annoDesiredConfig]
	mcdState := a[annoState]
	poolTarget := pool.Spec.Configuration.Name

	currentVersion, currentFound := lookupVersion(versions, current)
	desiredVersion, desiredFound := lookupVersion(versions, desired)
	annotationMatched := current == desired
	desiredIsPoolTarget := desired == poolTarget

	st := nodeState{node: node, version: currentVersion}
	// Outside multi-arch migrations, a MachineConfig rollout that does not
	// change the version does not make a node outdated.
	st.updated = currentFound && currentVersion == target &&
		(!multiArchMigration || desired == "" || (annotationMatched && desiredIsPoolTarget))
	// Requiring both versions avoids flashing "Updating" for unknown nodes.
	st.updating = !st.updated && currentFound && desiredFound && desiredVersion == target &&
		desired != current && desiredIsPoolTarget
	st.degraded = desired != "" && (mcdState == mcdStateDegraded || mcdState == mcdStateUnreconcilable)
	if st.degraded {
		st.degradedReason = a[annoReason]
	}
	// As the MCO, a node counts as unavailable only while the image it is
	// told to run is its pool's: a node of a pool that is not layered that
	// still carries a desiredImage is not counted at all.
	if desiredImageMatchesPool(node, pool) {
		st.unavailable = unavailableReasons(node)
	}
	st.draining = isDraining(a, st.updating)

	switch {
	case st.updating && st.draining:
		st.phase = PhaseDraining
	case st.updating:
		switch mcdState {
		case mcdStateRebooting:
			st.phase = PhaseRebooting
		case mcdStateDone:
			st.phase = PhaseUpdated
		default:
			st.phase = PhaseUpdating
		}
	case st.updated:
		st.phase = PhaseUpdated
	case pool.Spec.Paused && gates.heldBy(pool.Name) != nil:
		st.phase = PhaseGated
	case pool.Spec.Paused:
		st.phase = PhasePaused
	default:
		st.phase = PhasePending
	}

	if !st.updated && !st.updating {
		st.gate = gates.nodeMessage(node, pool.Name)
	}

	st.estimate = phaseEstimate(st.phase)
	if (st.isUnavailable() && !st.updating) || st.degraded {
		// Something is wrong: the node's end is unknown unless it is updated.
		st.estimate = nil
		if st.updated {
			st.estimate = durationPtr(0)
		}
	}
	return st
}

func lookupVersion(versions map[string]string, config string) (string, bool) {
	if config == "" {
		return "", false
	}
	v, ok := versions[config]
	return v, ok
}

func durationPtr(d time.Duration) *time.Duration { return &d }

// phaseEstimate is oc's fixed per-node estimate: 10 minutes to drain and
// update, 5 to update or reboot, nothing left when updated or excluded, and
// unknown while pending.
func phaseEstimate(p Phase) *time.Duration {
	switch p {
	case PhaseDraining:
		return durationPtr(10 * time.Minute)
	case PhaseUpdating, PhaseRebooting:
		return durationPtr(5 * time.Minute)
	case PhaseUpdated, PhasePaused:
		return durationPtr(0)
	}
	return nil
}

// unavailableReasons applies the MCO's "unavailable machine" logic: a node that
// is not ready (or under disk/network pressure, or cordoned) is unavailable; a
// ready node is unavailable while the MCD is still working on it, unless the
// MCD gave up (degraded), which is reported separately.
func unavailableReasons(node *corev1.Node) []unavailableReason {
	var out []unavailableReason
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		switch {
		case c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue:
			out = append(out, unavailableReason{unavailNotReady, updatev1alpha1.ReasonNodeNotReady, c})
		case c.Type == corev1.NodeDiskPressure && c.Status != corev1.ConditionFalse:
			out = append(out, unavailableReason{unavailDiskPressure, updatev1alpha1.ReasonNodeDiskPressure, c})
		case c.Type == corev1.NodeNetworkUnavailable && c.Status != corev1.ConditionFalse:
			out = append(out, unavailableReason{unavailNetwork, updatev1alpha1.ReasonNodeNetworkUnavailable, c})
		}
	}
	if node.Spec.Unschedulable {
		out = append(out, unavailableReason{text: unavailUnschedulable, reason: updatev1alpha1.ReasonNodeUnschedulable})
	}
	if len(out) == 0 {
		a := node.Annotations
		state := a[annoState]
		if !mcdDone(a) && state != mcdStateDegraded && state != mcdStateUnreconcilable {
			out = append(out, unavailableReason{text: unavailMCDWorking, reason: updatev1alpha1.ReasonNodeMCDWorking})
		}
	}
	return out
}

// mcdDone: the MCD applied the config (and image) it was asked for.
func mcdDone(a map[string]string) bool { return mcostate.Done(a) }

// desiredImageMatchesPool: a layered pool's node must be told to run the
// pool's image; any other node must not be told to run an image.
func desiredImageMatchesPool(node *corev1.Node, pool *mcfgv1.MachineConfigPool) bool {
	desired, ok := node.Annotations[annoDesiredImage]
	if poolImage := pool.Annotations[annoPoolOSImage]; poolImage != "" {
		return desired == poolImage
	}
	return !ok || desired == ""
}

// isDraining: the MCD asked for a drain that has not been applied yet, or the
// node is updating while the MCD still says Done (it has not picked up the
// work and will drain first).
func isDraining(a map[string]string, updating bool) bool {
	desired, applied := a[annoDesiredDrain], a[annoLastAppliedDrain]
	if desired == "" || applied == "" {
		return false
	}
	verb, _, _ := strings.Cut(desired, "-")
	return (desired != applied && verb == "drain") || (updating && a[annoState] == mcdStateDone)
}

// Assessment is the node's ASSESSMENT column value.
type Assessment string

const (
	AssessDegraded    Assessment = "Degraded"
	AssessUnavailable Assessment = "Unavailable"
	AssessProgressing Assessment = "Progressing"
	AssessExcluded    Assessment = "Excluded"
	AssessOutdated    Assessment = "Outdated"
	AssessCompleted   Assessment = "Completed"
)

// insight is the API form of the node state.
// Conditions without a source time get now; Previous keeps them stable.
func (n nodeState) insight(pool string, now time.Time) updatev1alpha1.NodeStatusInsight {
	in := updatev1alpha1.NodeStatusInsight{
		Name:         n.node.Name,
		Resource:     nodeRef(n.node.Name),
		PoolResource: poolRef(pool),
		ScopeType:    scopeOfPool(pool),
		Version:      n.version,
		Message:      n.gate,
	}
	if n.estimate != nil {
		in.EstimatedToComplete = &metav1.Duration{Duration: *n.estimate}
	}

	updatingStatus := metav1.ConditionFalse
	if n.phase.Updating() {
		updatingStatus = metav1.ConditionTrue
	}
	conds := []metav1.Condition{
		condition(updatev1alpha1.ConditionUpdating, updatingStatus, string(n.phase), phaseMessage(n.phase), now),
	}

	available := condition(updatev1alpha1.ConditionAvailable, metav1.ConditionTrue, updatev1alpha1.ReasonAsExpected, "", now)
	if n.isUnavailable() && !n.updating {
		var texts []string
		for _, r := range n.unavailable {
			texts = append(texts, r.text)
		}
		reason := n.unavailable[0].reason
		if len(n.unavailable) > 1 {
			reason = updatev1alpha1.ReasonNodeMultipleUnavailable
		}
		in.Message = strings.Join(texts, " | ")
		since := earliestSince(n.unavailable)
		if since.IsZero() {
			since = now
		}
		available = condition(updatev1alpha1.ConditionAvailable, metav1.ConditionFalse, reason, in.Message, since)
	}
	degraded := condition(updatev1alpha1.ConditionDegraded, metav1.ConditionFalse, updatev1alpha1.ReasonAsExpected, "", now)
	if n.degraded {
		in.Message = n.degradedReason
		degraded = condition(updatev1alpha1.ConditionDegraded, metav1.ConditionTrue, updatev1alpha1.ReasonNodeMCDDegraded, n.degradedReason, now)
	}
	in.Conditions = append(conds, available, degraded)
	return in
}

func phaseMessage(p Phase) string {
	switch p {
	case PhaseDraining:
		return "The node is being drained"
	case PhaseUpdating:
		return "The node is being updated"
	case PhaseRebooting:
		return "The node is rebooting"
	case PhasePaused:
		return "The node's pool is paused"
	case PhaseGated:
		return "A node-gate run holds the node until its pre-update hooks have run"
	case PhasePending:
		return "The node waits to be updated"
	}
	return "The node is updated"
}

// earliestSince is the earliest known transition time of the conditions
// behind the reasons; zero when none is known.
func earliestSince(rs []unavailableReason) time.Time {
	var t time.Time
	for _, r := range rs {
		if r.condition == nil || r.condition.LastTransitionTime.IsZero() {
			continue
		}
		if lt := r.condition.LastTransitionTime.Time; t.IsZero() || lt.Before(t) {
			t = lt
		}
	}
	return t
}

// assessPool summarizes a pool's nodes, as oc does.
func assessPool(pool *mcfgv1.MachineConfigPool, nodes []nodeState, now time.Time) updatev1alpha1.MachineConfigPoolStatusInsight {
	var total, available, progressing, outdated, draining, excluded, degraded, updated, pending int
	for _, n := range nodes {
		total++
		if !n.isUnavailable() {
			available++
		}
		if n.degraded {
			degraded++
		}
		switch n.phase {
		case PhasePaused:
			excluded++
			outdated++
		case PhaseGated:
			// Waiting for its turn, as a pending node, in a pool that is
			// progressing at the gate's pace.
			outdated++
		case PhasePending:
			pending++
			outdated++
		case PhaseDraining:
			draining++
			outdated++
			if !n.degraded {
				progressing++
			}
		case PhaseUpdating, PhaseRebooting:
			outdated++
			if !n.degraded {
				progressing++
			}
		case PhaseUpdated:
			updated++
		}
	}

	assessment, status, reason := updatev1alpha1.PoolProgressing, metav1.ConditionTrue, updatev1alpha1.ReasonProgressing
	switch {
	case updated == total:
		assessment, status, reason = updatev1alpha1.PoolCompleted, metav1.ConditionFalse, updatev1alpha1.ReasonUpdated
	case pending == total:
		assessment, status, reason = updatev1alpha1.PoolPending, metav1.ConditionFalse, updatev1alpha1.ReasonPending
	case degraded > 0:
		assessment, status, reason = updatev1alpha1.PoolDegraded, metav1.ConditionTrue, updatev1alpha1.ReasonDegraded
	case excluded > 0:
		assessment, status, reason = updatev1alpha1.PoolExcluded, metav1.ConditionFalse, updatev1alpha1.ReasonExcluded
	}

	summary := func(t updatev1alpha1.NodeSummaryType, c int) updatev1alpha1.NodeSummary {
		return updatev1alpha1.NodeSummary{Type: t, Count: int32(c)}
	}
	return updatev1alpha1.MachineConfigPoolStatusInsight{
		Conditions: []metav1.Condition{condition(updatev1alpha1.ConditionUpdating, status, reason,
			"Pool is "+strings.ToLower(string(assessment)), now)},
		Name:       pool.Name,
		Resource:   poolRef(pool.Name),
		ScopeType:  scopeOfPool(pool.Name),
		Assessment: assessment,
		Completion: percent(updated, total),
		Summaries: []updatev1alpha1.NodeSummary{
			summary(updatev1alpha1.NodesTotal, total),
			summary(updatev1alpha1.NodesAvailable, available),
			summary(updatev1alpha1.NodesProgressing, progressing),
			summary(updatev1alpha1.NodesOutdated, outdated),
			summary(updatev1alpha1.NodesDraining, draining),
			summary(updatev1alpha1.NodesExcluded, excluded),
			summary(updatev1alpha1.NodesDegraded, degraded),
		},
	}
}
