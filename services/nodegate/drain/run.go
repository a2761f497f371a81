// Package drain is node-gate's side of the drain remediation (libs/drain):
// which of a run's nodes it forces, with what timeouts, and the Events of a
// run whose remediation cannot work. A run owns the drain of every node it
// released while its spec sets drainRemediation; the upgrade-scheduler
// leaves those nodes to it.
package drain

import (
	"fmt"
	"regexp"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/drain"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/requeue"
)

// DefaultTimeout is the drain timeout when neither the run nor an
// UpgradeConfig sets one.
const DefaultTimeout = 60 * time.Minute

// TimeoutFor is a run's drain timeout: its own when positive; else the
// PDBForceDrainTimeout (minutes, by UpgradeConfig name) of the first
// UpgradeConfig by name that has a positive one, so that several
// UpgradeConfigs in one namespace always give the same answer; else
// DefaultTimeout. Zero is never taken: it would force pods off the moment a
// drain starts, taking eviction (and the PodDisruptionBudgets) away from the
// machine-config operator.
func TimeoutFor(run *metav1.Duration, upgradeConfigMinutes map[string]int32) time.Duration {
	if run != nil && run.Duration > 0 {
		return run.Duration
	}
	names := make([]string, 0, len(upgradeConfigMinutes))
	for n := range upgradeConfigMinutes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if m := upgradeConfigMinutes[n]; m > 0 {
			return time.Duration(m) * time.Minute
		}
	}
	return DefaultTimeout
}

// StepTimeoutFor is a run's step timeout: its own when positive, else
// drain.DefaultStepTimeout.
func StepTimeoutFor(run *metav1.Duration) time.Duration {
	if run != nil && run.Duration > 0 {
		return run.Duration
	}
	return drain.DefaultStepTimeout
}

// CompilePatterns compiles a run's ignoredNamespacePatterns.
func CompilePatterns(patterns []string) ([]*regexp.Regexp, error) {
	return drain.CompilePatterns("drainRemediation.ignoredNamespacePatterns", patterns)
}

// Needed reports whether a node's drain needs a decision: the run released
// the node (before that the MCO does not drain it for the run) and the MCO
// drains it or its record is still open (the drain may just have ended); or,
// whatever the node's phase, its record is still open and the MCO no longer
// drains it, to be closed (a restart, or one pass that saw the drain end and
// the node finish, leaves a node past Released with its drain open). A node
// the run does not hold released is never decided while it drains: that
// drain is not the run's.
func Needed(rec *nodegatev1alpha1.NodeRecord, n *corev1.Node) bool {
	open := rec.Drain != nil && rec.Drain.CompletionTime == nil
	draining := mcostate.Draining(n.Annotations)
	if rec.Phase == nodegatev1alpha1.NodeReleased {
		return draining || open
	}
	return open && !draining
}

// NeedsPods: the node's drain needs a decision and the MCO drains it now,
// so the reconciler must read the pods on it (and their namespaces' PDBs).
func NeedsPods(rec *nodegatev1alpha1.NodeRecord, n *corev1.Node) bool {
	return Needed(rec, n) && mcostate.Draining(n.Annotations)
}

// InvalidPatterns is the Event of a run whose ignoredNamespacePatterns do
// not compile: its drains are not remediated.
func InvalidPatterns(run runtime.Object, err error) events.Event {
	return events.Warning(run, "InvalidDrainRemediation", "Gate", err.Error())
}

// Forbidden is the Event of a run whose drains node-gate may not look into
// (installed without the remediation's grants): said, not stalled on.
func Forbidden(run runtime.Object, err error) events.Event {
	return events.Warning(run, "DrainRemediationForbidden", "Gate",
		fmt.Sprintf("spec.drainRemediation is set but node-gate may not read pods or PodDisruptionBudgets: %v", err))
}

// RunInput is a run's drains as the reconciler read them.
type RunInput struct {
	Now time.Time
	Run *nodegatev1alpha1.MutexRunConfig
	// Nodes are the cluster's nodes by name.
	Nodes map[string]*corev1.Node
	// Pods and PDBs, by node name, of the nodes NeedsPods names.
	Pods map[string][]corev1.Pod
	PDBs map[string][]policyv1.PodDisruptionBudget
	// Timeout is the run's drain timeout (TimeoutFor); Ignored its compiled
	// ignoredNamespacePatterns.
	Timeout time.Duration
	Ignored []*regexp.Regexp
}

// NodeAction is one forced step on a pod of a node.
type NodeAction struct {
	drain.Action
	Node string
}

// RunResult is a run's drain decisions.
type RunResult struct {
	Actions []NodeAction
	Events  []events.Event
	// RequeueAfter is when time alone changes a decision.
	RequeueAfter time.Duration
	// Blocked counts drains past their timeout; Stuck, pods every step was
	// taken on that are still there.
	Blocked, Stuck int
}

// DecideRun decides the drain of every released node the MCO drains (or
// whose record is still open) and writes each node's drain record into
// records, the run's status records the planner produced. A run forces every
// pod after its one timeout, gracefully first.
func DecideRun(in RunInput, records []nodegatev1alpha1.NodeRecord) RunResult {
	var out RunResult
	policy := drain.Policy{Timeout: in.Timeout, StepTimeout: StepTimeoutFor(in.Run.Spec.DrainRemediation.StepTimeout),
		Ignored: in.Ignored, Owner: "node-gate", EventAction: "Gate"}
	for i := range records {
		rec := &records[i]
		n := in.Nodes[rec.Name]
		if n == nil || !Needed(rec, n) {
			continue
		}
		d := drain.Decide(drain.Input{Now: in.Now, Node: n, Pods: in.Pods[n.Name], PDBs: in.PDBs[n.Name], Prev: rec.Drain,
			Policy: policy, Related: in.Run})
		rec.Drain = d.Record
		for _, a := range d.Actions {
			out.Actions = append(out.Actions, NodeAction{Action: a, Node: n.Name})
		}
		if d.Blocked {
			out.Blocked++
		}
		out.Stuck += len(d.Stuck)
		out.Events = append(out.Events, d.Events...)
		out.RequeueAfter = requeue.Min(out.RequeueAfter, d.RequeueAfter, d.Recheck)
	}
	return out
}
