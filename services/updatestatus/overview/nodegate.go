package overview

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

// maxActiveNodes caps the nodes listed per run: with maxUnavailable at a
// percentage, hundreds may be between their hooks at once.
const maxActiveNodes = 5

// maxRuns caps the runs shown in full; the waiting line still sums up all.
const maxRuns = 4

var nodePhases = []nodegatev1alpha1.NodePhase{nodegatev1alpha1.NodeCompleted, nodegatev1alpha1.NodeSkipped, nodegatev1alpha1.NodePreHooks,
	nodegatev1alpha1.NodeReleased, nodegatev1alpha1.NodeUpdated, nodegatev1alpha1.NodePostHooks, nodegatev1alpha1.NodeFailed, nodegatev1alpha1.NodePending}

// nodeGateSection is node-gate's runs: per run its phase, the nodes counted
// by phase, and the few nodes that are between their first pre-hook and
// their last post-hook, with the hook each waits for.
func nodeGateSection(in Input) Section {
	s := Section{Component: NodeGate}
	if unreadable(&s, in.MutexRuns.Outcome, in.MutexRuns.Err, "MutexRunConfig") {
		return s
	}
	runs := make([]*nodegatev1alpha1.MutexRunConfig, len(in.MutexRuns.Object))
	for i := range in.MutexRuns.Object {
		runs[i] = &in.MutexRuns.Object[i]
	}
	slices.SortFunc(runs, byNamespaceName)
	if len(runs) == 0 {
		s.State, s.Waiting = StateIdle, "no MutexRunConfig: no node is gated"
		return s
	}
	s.State = StateNotInstalled // the least pressing; any run's state is worse
	for i, r := range runs {
		state, waiting, updating := runWait(r, in.Now)
		if len(runs) > 1 {
			waiting = r.Namespace + "/" + r.Name + ": " + waiting
		}
		if worse(state, s.State) {
			s.State, s.Waiting = state, waiting
		}
		s.Updating = s.Updating || updating
		if i < maxRuns {
			s.Lines = append(s.Lines, runLines(r, in.Now)...)
		}
	}
	if len(runs) > maxRuns {
		s.Lines = append(s.Lines, fmt.Sprintf("and %d more runs", len(runs)-maxRuns))
	}
	return s
}

// runWait reads a run's phase and conditions (Blocked, Paused, Degraded,
// Progressing: node-gate says there why it waits).
func runWait(r *nodegatev1alpha1.MutexRunConfig, now time.Time) (State, string, bool) {
	st := r.Status
	conds := st.Conditions
	pending := st.Summary.Pending+st.Summary.InProgress > 0
	for _, t := range []string{"Blocked", "Degraded"} {
		if c := cond(conds, t); c != nil && c.Status == metav1.ConditionTrue {
			return StateBlocked, joinNonEmpty(": ", t, c.Reason, oneLine(c.Message, 200)), pending
		}
	}
	if c := cond(conds, "Paused"); c != nil && c.Status == metav1.ConditionTrue && c.Reason != "SpecPaused" {
		return StateBlocked, joinNonEmpty(": ", "paused", c.Reason, oneLine(c.Message, 200)), pending
	}
	for _, n := range st.Nodes {
		if n.Phase == nodegatev1alpha1.NodeFailed {
			return StateBlocked, "node " + n.Name + " failed" + prefixed(": ", oneLine(n.LastError, 200)), pending
		}
	}
	progress := cond(conds, "Progressing")
	switch st.Phase {
	case nodegatev1alpha1.RunBlocked, nodegatev1alpha1.RunAborted:
		return StateBlocked, "run " + string(st.Phase) + prefixed(": ", condMessage(progress)), false
	case nodegatev1alpha1.RunPaused:
		return StateWaiting, "paused by spec.paused" + prefixed(" with ", progressOf(st)), pending
	case nodegatev1alpha1.RunWaiting:
		return StateWaiting, "held: " + orElse(condMessage(progress), "a gate (window, alerts, control plane) holds the pending update"), true
	case nodegatev1alpha1.RunRestoring:
		return StateProgressing, "restoring the pools, selectors and labels it changed", true
	case nodegatev1alpha1.RunProgressing:
		for _, n := range st.Nodes {
			if w := nodeWait(n, now); w != "" {
				return StateProgressing, w, true
			}
		}
		return StateProgressing, orElse(condMessage(progress), "gating nodes"), true
	case nodegatev1alpha1.RunCompleted:
		return StateDone, "every gated node is updated" + prefixed(" ", parens(st.Progress)), false
	}
	return StateIdle, "no node needs an update", false
}

func condMessage(c *metav1.Condition) string {
	if c == nil {
		return ""
	}
	return oneLine(c.Message, 200)
}

func parens(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

func progressOf(st nodegatev1alpha1.MutexRunConfigStatus) string {
	if st.Progress == "" {
		return ""
	}
	return st.Progress + " nodes through"
}

// nodeWait says what an active node waits for; "" for one that is done or
// not yet started.
func nodeWait(n nodegatev1alpha1.NodeRecord, now time.Time) string {
	switch n.Phase {
	case nodegatev1alpha1.NodePreHooks, nodegatev1alpha1.NodePostHooks:
		for _, h := range n.Hooks {
			if h.Phase == nodegatev1alpha1.HookPending || h.Phase == nodegatev1alpha1.HookRunning {
				state := string(h.Phase)
				if h.Attempts > 1 {
					state += fmt.Sprintf(", attempt %d", h.Attempts)
				}
				w := fmt.Sprintf("waiting for %s-hook %s of %s (%s) on node %s", lower(string(h.Stage)), h.Name, h.Rule, state, n.Name)
				if h.StartTime != nil {
					w += ", since " + clock(h.StartTime.Time, now)
				}
				return w
			}
		}
		return "waiting for the hooks of node " + n.Name
	case nodegatev1alpha1.NodeReleased:
		w := "waiting for the machine-config operator to update node " + n.Name
		if n.ReleasedTime != nil {
			w += ", released " + clock(n.ReleasedTime.Time, now)
		}
		if n.Drain != nil {
			w += " (draining)"
		}
		return w
	case nodegatev1alpha1.NodeUpdated:
		return "node " + n.Name + " is updated; its post-hooks start next"
	case nodegatev1alpha1.NodeFailed:
		return "node " + n.Name + " failed" + prefixed(": ", oneLine(n.LastError, 160))
	}
	return ""
}

func lower(s string) string {
	if s == "" {
		return s
	}
	b := []byte(s)
	if b[0] >= 'A' && b[0] <= 'Z' {
		b[0] += 'a' - 'A'
	}
	return string(b)
}

func runLines(r *nodegatev1alpha1.MutexRunConfig, now time.Time) []string {
	st := r.Status
	head := fmt.Sprintf("%s/%s: %s", r.Namespace, r.Name, orElse(string(st.Phase), "(no status yet)"))
	if st.Progress != "" {
		head += ", " + st.Progress + " nodes through"
	}
	if r.Spec.Paused {
		head += ", spec.paused"
	}
	out := []string{head}
	n := map[nodegatev1alpha1.NodePhase]int{}
	var active []string
	for _, rec := range st.Nodes {
		n[rec.Phase]++
		if w := nodeWait(rec, now); w != "" {
			active = append(active, "    "+w)
		}
	}
	if len(st.Nodes) > 0 {
		out = append(out, "  nodes: "+counts(nodePhases, n))
	}
	for _, t := range []string{"Blocked", "Paused", "Degraded"} {
		if c := cond(st.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			out = append(out, "  "+condLine(c))
		}
	}
	return append(out, capped(active, maxActiveNodes, "    ")...)
}
