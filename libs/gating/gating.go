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
// stays its administrator's, since the run gives it back paused. The one
// exception is a release: node-gate's status follows its node changes, and
// the mark it leaves on a node it releases (ReleasedAnnotation) is its own
// record of the release until the status catches up (Run.ReleasedAhead).
package gating

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/trim"
	"github.com/upshift-io/upshift/libs/window"
)

// RunsCRD is the name of node-gate's MutexRunConfig CRD, which a reader
// watches until node-gate is installed (libs/optionalkind).
const RunsCRD = "mutexrunconfigs.nodegate.upshift.io"

// TrimRun is what a reader's cache keeps of a run: its identity, its status
// and the two spec fields Read reads. A reader's cache cannot give runs an
// entry of their own, which needs their kind served when the cache is built: use
// trim.Func(TrimRun) as its default transform, which passes other objects
// through.
func TrimRun(in *nodegatev1alpha1.MutexRunConfig) *nodegatev1alpha1.MutexRunConfig {
	out := &nodegatev1alpha1.MutexRunConfig{TypeMeta: in.TypeMeta, ObjectMeta: trim.Meta(in.ObjectMeta), Status: in.Status}
	// Whether the run forces drains decides who owns its nodes' drains.
	out.Spec.DrainRemediation = in.Spec.DrainRemediation
	// Its windows time a run that waits for them (Run.StallsAt).
	out.Spec.MaintenanceWindows = in.Spec.MaintenanceWindows
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
	// acts: its Paused condition (a failed hook, spec.paused), or its
	// Blocked condition (a refusal of its configuration). Its reason, and
	// the failure (the Degraded condition's message), the pause's or the
	// refusal's.
	Stopped *Stop
	// Waiting is why a run waits rather than releases (a window, the health
	// gate, the control plane, a refusal): "<reason>: <message>"; empty
	// when it does not wait. WaitingReason is its reason alone, which
	// changes less often than the message (the control plane's progress,
	// a window's next opening).
	Waiting, WaitingReason string
	// RunID identifies the run's current round (status.runID), as its
	// release marks name it (ReleaseMark).
	RunID string
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
	// LastProgress is the latest move its status records: a node's or a
	// hook's start, release, update or finish, or a condition's
	// transition. A live run moves; one whose node-gate is down, or whose
	// hook hangs without a timeout, does not (Stalled). Zero: unknown.
	LastProgress time.Time
	// Windows are the run's own maintenance windows while it waits for
	// them (WaitingReason ReasonOutsideWindow), when they parse (node-gate
	// refuses a spec whose windows do not); nil otherwise.
	Windows window.Schedule
	// ExpectedFinish is when the round should end at its pace so far: the
	// time from its first node's start to its last completion, per node
	// done, for each node left, after the last completion. Zero until a
	// node is done, or when nothing is left. It moves only when the status
	// does, so a report that shows it is not rewritten as time passes.
	ExpectedFinish time.Time
}

// Stop is why a run stopped.
type Stop struct {
	Reason, Message string
	// Blocked: the run refuses its configuration (condition Blocked) and
	// goes on by itself once it is fixed; otherwise it is paused and goes
	// on once its spec changes.
	Blocked bool
}

// ReasonOutsideWindow is node-gate's reason for a run that waits for its
// own maintenance window to open: a wait as designed, however long.
const ReasonOutsideWindow = "OutsideMaintenanceWindow"

// Stalled says whether the run, at now, has not moved for longer than
// bound: it holds as nobody designed (node-gate down, a hook hung without a
// timeout) and a reader that defers to its holds should stop deferring. A
// run whose status records no time is never stalled (nothing to judge by),
// nor is any run when bound is not positive.
//
// A run waiting for its own maintenance window is waiting as designed, for
// however long the windows stay shut, so only the time a window is open
// counts: it is stalled once its windows have been open for bound in all
// since its last move. node-gate starts nodes when a window opens, and that
// is a move; a run that does not move then has a node-gate that is down. If
// the windows cannot be read (its status says it waits for windows its spec
// does not have) it is never stalled: there is nothing to time it by.
func (r Run) Stalled(now time.Time, bound time.Duration) bool {
	at, ok := r.StallsAt(bound)
	return ok && now.After(at)
}

// StallsAt is the instant after which the run, if it does not move, is
// Stalled for bound; false when Stalled never holds for it (see Stalled).
// A reader that judges by time looks again just after it.
func (r Run) StallsAt(bound time.Duration) (time.Time, bool) {
	if bound <= 0 || r.LastProgress.IsZero() {
		return time.Time{}, false
	}
	if r.WaitingReason != ReasonOutsideWindow {
		return r.LastProgress.Add(bound), true
	}
	if len(r.Windows) == 0 {
		return time.Time{}, false
	}
	return r.Windows.OpenFor(r.LastProgress, bound)
}

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

// GatePoolSource says whether pool is a gate pool of node-gate's and of
// which source pool: as the runs record it (gates, from GatePools), or, when
// they do not, as the pool's own GatePoolLabel says. node-gate records a
// gate pool in its run's status before it creates the pool with that label,
// but a reader's caches of runs and of pools are filled by separate watches:
// after an API server restart each lists again on its own, and for a while
// the reader may see the pool without the run that records it. Counting
// such a pool as a pool of its own would report its source pool done while
// its nodes wait in the gate pool.
func GatePoolSource(gates map[string]string, pool metav1.Object) (source string, ok bool) {
	if s, ok := gates[pool.GetName()]; ok {
		return s, true
	}
	if s := pool.GetLabels()[GatePoolLabel]; s != "" {
		return s, true
	}
	return "", false
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
	r.RunID = st.RunID
	r.LastProgress = lastProgress(st)
	r.ExpectedFinish = expectedFinish(st, r.Done, r.Total)
	switch st.Phase {
	case nodegatev1alpha1.RunWaiting:
		r.Waiting, r.WaitingReason = reasonMessage(meta.FindStatusCondition(st.Conditions, condProgressing))
	case nodegatev1alpha1.RunBlocked:
		c := meta.FindStatusCondition(st.Conditions, condBlocked)
		r.Waiting, r.WaitingReason = reasonMessage(c)
		if r.Stopped == nil && c != nil && c.Status == metav1.ConditionTrue {
			// A refusal of the run's configuration (its rule deleted, its
			// pool claimed by another run...) releases no node until a
			// person fixes it: stuck, not holding as designed.
			r.Stopped = &Stop{Reason: c.Reason, Message: c.Message, Blocked: true}
		}
	case nodegatev1alpha1.RunCompleted:
		if c := meta.FindStatusCondition(st.Conditions, condReady); c != nil && c.Status == metav1.ConditionTrue {
			r.Finished = c.LastTransitionTime.Time
		}
	}
	if r.WaitingReason == ReasonOutsideWindow {
		if ws, err := window.FromAPI(run.Spec.MaintenanceWindows); err == nil && len(ws) > 0 {
			r.Windows = ws
		}
	}
	return r
}

// lastProgress is the latest time st records.
func lastProgress(st *nodegatev1alpha1.MutexRunConfigStatus) time.Time {
	var last time.Time
	see := func(t *metav1.Time) {
		if t != nil && t.After(last) {
			last = t.Time
		}
	}
	for i := range st.Nodes {
		n := &st.Nodes[i]
		see(n.StartTime)
		see(n.ReleasedTime)
		see(n.UpdatedTime)
		see(n.CompletionTime)
		for j := range n.Hooks {
			see(n.Hooks[j].StartTime)
			see(n.Hooks[j].CompletionTime)
		}
	}
	for i := range st.Conditions {
		see(&st.Conditions[i].LastTransitionTime)
	}
	return last
}

// expectedFinish is Run.ExpectedFinish, to the second (as it is written).
func expectedFinish(st *nodegatev1alpha1.MutexRunConfigStatus, done, total int) time.Time {
	if done <= 0 || total <= done {
		return time.Time{}
	}
	var first, last time.Time
	for i := range st.Nodes {
		n := &st.Nodes[i]
		for _, t := range []*metav1.Time{n.StartTime, n.ReleasedTime} {
			if t != nil && (first.IsZero() || t.Time.Before(first)) {
				first = t.Time
			}
		}
		if n.CompletionTime != nil && n.CompletionTime.After(last) {
			last = n.CompletionTime.Time
		}
	}
	if first.IsZero() || !last.After(first) {
		return time.Time{}
	}
	per := last.Sub(first) / time.Duration(done)
	return last.Add(per * time.Duration(total-done)).Truncate(time.Second)
}

// pausedByRun: the run recorded the pool's original `paused` as false before
// pausing it, so the pause is the run's until it gives the value back.
func pausedByRun(original *bool) bool { return original != nil && !*original }

// reasonMessage is "<reason>: <message>" of c, and its reason alone.
func reasonMessage(c *metav1.Condition) (string, string) {
	switch {
	case c == nil:
		return "", ""
	case c.Message == "":
		return c.Reason, c.Reason
	case c.Reason == "":
		return c.Message, ""
	}
	return c.Reason + ": " + c.Message, c.Reason
}

// What node-gate puts on the nodes it gates. A run's status is written
// after the node changes it records, and coalesced (at most once a second
// while nothing but progress changes), so a reader that must not be behind
// a release reads the node as well.
const (
	// HoldLabel on a node holds it in its source pool's paused gate pool,
	// which selects it by this label (the value is the source pool's
	// name), until node-gate releases it by removing the label.
	HoldLabel = "nodegate.upshift.io/held-from"
	// GatePoolLabel marks a gate pool node-gate created, with its source
	// pool's name as the value (GatePoolSource).
	GatePoolLabel = "nodegate.upshift.io/gate-for"
	// ReleasedAnnotation marks a node node-gate released, in the same
	// patch that removes its hold label, with ReleaseMark of the round and
	// the target the node's pre-update hooks ran for. Someone else's
	// removal of the label leaves no such mark. It stays on the node (the
	// next release overwrites it).
	ReleasedAnnotation = "nodegate.upshift.io/released-for"
)

// ReleaseMark is ReleasedAnnotation's value for a release in round runID
// of a node whose pre-update hooks ran for target.
func ReleaseMark(runID, target string) string { return runID + "/" + target }

// MarkedReleased says whether node-gate released node in round runID for
// target: the node is out of the gate pool (no hold label) and carries that
// release's mark. Someone else's removal of the label leaves no mark.
func MarkedReleased(node *corev1.Node, runID, target string) bool {
	if node == nil || node.Labels[HoldLabel] != "" || runID == "" || target == "" {
		return false
	}
	return node.Annotations[ReleasedAnnotation] == ReleaseMark(runID, target)
}

// ReleasedAhead says whether the run released the node of rec although
// rec, still waiting for its turn or in its pre-update hooks, does not say
// so yet: the node is marked released this round for the target rec's
// hooks ran for.
func (r Run) ReleasedAhead(rec *nodegatev1alpha1.NodeRecord, node *corev1.Node) bool {
	if rec.Phase != nodegatev1alpha1.NodePending && rec.Phase != nodegatev1alpha1.NodePreHooks {
		return false
	}
	return MarkedReleased(node, r.RunID, rec.HooksTarget)
}
