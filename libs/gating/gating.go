// Package gating reads, from a node-gate run's status, what the run holds:
// the pools it paused, the gate pools it created, whether it is stopped
// (a failed hook, spec.paused) or waiting, its progress, and when it last
// finished. It is the one definition the other components use to treat
// node-gate's holds as holds (update-status reports them as gating, the
// upgrade-scheduler's worker deadline and silence allow for them).
//
// Only the run's own record of what it changed is read (status.pools: the
// original `paused` value it recorded before pausing a pool, the gate pools
// it created), never names or labels: a pool that was paused before the run
// stays its administrator's, since the run gives it back paused.
package gating

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/trim"
)

// RunsCRD is the name of node-gate's MutexRunConfig CRD, which a reader
// watches until node-gate is installed (libs/optionalkind).
const RunsCRD = "mutexrunconfigs.nodegate.upshift.io"

// TrimRun is what a reader's cache keeps of a run: its identity and status
// (Read reads nothing else). A reader's cache cannot give runs an entry of
// their own, which needs their kind served when the cache is built: use
// trim.Func(TrimRun) as its default transform, which passes other objects
// through.
func TrimRun(in *nodegatev1alpha1.MutexRunConfig) *nodegatev1alpha1.MutexRunConfig {
	out := &nodegatev1alpha1.MutexRunConfig{TypeMeta: in.TypeMeta, ObjectMeta: trim.Meta(in.ObjectMeta), Status: in.Status}
	// Whether the run forces drains decides who owns its nodes' drains.
	out.Spec.DrainRemediation = in.Spec.DrainRemediation
	return out
}

// Condition types of a MutexRunConfig read here.
const (
	condReady       = "Ready"
	condPaused      = "Paused"
	condDegraded    = "Degraded"
	condProgressing = "Progressing"
	condBlocked     = "Blocked"
)

// Run is what one run holds, as its status says.
type Run struct {
	Namespace, Name string
	// Pools are the pools the run holds: source pools it paused, and the
	// source pools of the gate pools it created (by name, in status order).
	Pools []string
	// PausedPools are the pools (source or gate) the run paused itself.
	PausedPools []string
	// GatePools maps each gate pool the run created to its source pool.
	GatePools map[string]string
	// Stopped is set when the run stopped releasing nodes until a person
	// acts: its Paused condition (a failed hook, spec.paused). Its reason,
	// and the failure (the Degraded condition's message) or the pause's.
	Stopped *Stop
	// Waiting is why a run waits rather than releases (a window, the health
	// gate, the control plane, a refusal): "<reason>: <message>"; empty
	// when it does not wait.
	Waiting string
	// Done and Total count the round's nodes as the run's progress column:
	// completed, and gated (skipped nodes needed no gate).
	Done, Total int
	// Finished is when the run last completed (its Ready condition turned
	// True); zero while a round is open or when unknown.
	Finished time.Time
	// Drains are the nodes whose drain the run owns (libs/drain): those it
	// released while its spec sets drainRemediation. Nobody else forces
	// them.
	Drains []string
}

// Stop is why a run stopped.
type Stop struct{ Reason, Message string }

// Key is "<namespace>/<name>".
func (r Run) Key() string { return r.Namespace + "/" + r.Name }

// DrainOwner is the run that owns node's drain, if any.
func DrainOwner(runs []Run, node string) (Run, bool) {
	for _, r := range runs {
		if slices.Contains(r.Drains, node) {
			return r, true
		}
	}
	return Run{}, false
}

// Holds says whether the run holds any pool now.
func (r Run) Holds() bool { return len(r.Pools) > 0 }

// GatePools maps the gate pools the runs created to their source pools.
// A gate pool is transient: its nodes belong to the source pool, and every
// component that reports pools counts them there, not as a pool of its own.
func GatePools(runs []Run) map[string]string {
	out := map[string]string{}
	for _, r := range runs {
		for gate, source := range r.GatePools {
			out[gate] = source
		}
	}
	return out
}

// Read reads one run.
func Read(run *nodegatev1alpha1.MutexRunConfig) Run {
	st := &run.Status
	r := Run{Namespace: run.Namespace, Name: run.Name, GatePools: map[string]string{}}
	for _, p := range st.Pools {
		held := false
		if pausedByRun(p.OriginalPaused) {
			r.PausedPools = append(r.PausedPools, p.Name)
			held = true
		}
		if p.GatePool != "" && pausedByRun(p.OriginalGatePaused) {
			r.PausedPools = append(r.PausedPools, p.GatePool)
		}
		if p.GatePool != "" && p.GatePoolCreated {
			r.GatePools[p.GatePool] = p.Name
			held = true
		}
		if held && !slices.Contains(r.Pools, p.Name) {
			r.Pools = append(r.Pools, p.Name)
		}
	}
	if run.Spec.DrainRemediation != nil && run.DeletionTimestamp == nil {
		for _, n := range st.Nodes {
			if n.Phase == nodegatev1alpha1.NodeReleased {
				r.Drains = append(r.Drains, n.Name)
			}
		}
	}
	r.Total = int(st.Summary.Total - st.Summary.Skipped)
	r.Done = int(st.Summary.Succeeded)
	if c := meta.FindStatusCondition(st.Conditions, condPaused); c != nil && c.Status == metav1.ConditionTrue {
		r.Stopped = &Stop{Reason: c.Reason, Message: c.Message}
		// A failed hook is named by the Degraded condition.
		if d := meta.FindStatusCondition(st.Conditions, condDegraded); d != nil && d.Status == metav1.ConditionTrue {
			r.Stopped.Message = d.Message
		}
	}
	switch st.Phase {
	case nodegatev1alpha1.RunWaiting:
		r.Waiting = reasonMessage(meta.FindStatusCondition(st.Conditions, condProgressing))
	case nodegatev1alpha1.RunBlocked:
		r.Waiting = reasonMessage(meta.FindStatusCondition(st.Conditions, condBlocked))
	case nodegatev1alpha1.RunCompleted:
		if c := meta.FindStatusCondition(st.Conditions, condReady); c != nil && c.Status == metav1.ConditionTrue {
			r.Finished = c.LastTransitionTime.Time
		}
	}
	return r
}

// pausedByRun: the run recorded the pool's original `paused` as false before
// pausing it, so the pause is the run's until it gives the value back.
func pausedByRun(original *bool) bool { return original != nil && !*original }

func reasonMessage(c *metav1.Condition) string {
	switch {
	case c == nil:
		return ""
	case c.Message == "":
		return c.Reason
	case c.Reason == "":
		return c.Message
	}
	return c.Reason + ": " + c.Message
}
