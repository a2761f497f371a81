package drain

import (
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/requeue"
)

// This file decides a whole run's drains: every node the run released that
// the machine-config operator drains, from what the reconciler read.

// NeedsPods: the node's drain needs a decision and the MCO drains it now,
// so the reconciler must read the pods on it (and their namespaces' PDBs).
func NeedsPods(rec *nodegatev1alpha1.NodeRecord, n *corev1.Node) bool {
	return Needed(rec, n) && mcostate.Draining(n.Annotations)
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
	Action
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
// records, the run's status records the planner produced.
func DecideRun(in RunInput, records []nodegatev1alpha1.NodeRecord) RunResult {
	var out RunResult
	step := StepTimeoutFor(in.Run.Spec.DrainRemediation.StepTimeout)
	for i := range records {
		rec := &records[i]
		n := in.Nodes[rec.Name]
		if n == nil || !Needed(rec, n) {
			continue
		}
		d := Decide(Input{Now: in.Now, Node: n, Pods: in.Pods[n.Name], PDBs: in.PDBs[n.Name], Prev: rec.Drain,
			Timeout: in.Timeout, StepTimeout: step, Ignored: in.Ignored, Run: in.Run})
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
