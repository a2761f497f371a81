// Package drain is node-gate's drain remediation, the pure part: given a
// node the machine-config operator (MCO) is draining, the pods still on it,
// the PodDisruptionBudgets of their namespaces and the drain's record from
// the run's status, it decides which pod to force off and how, and the next
// record. Eviction stays the MCO's: node-gate only acts once the drain has
// been blocked past a timeout, and then per pod one step at a time — delete
// with the pod's grace period, delete with grace 0, remove its finalizers —
// each step given StepTimeout to work before the next. A delete the pod
// shows no sign of after StepTimeout (no deletionTimestamp) is repeated, not
// escalated.
//
// The clock is keyed on the MCO's desiredDrain request, not on the cordon:
// a node uncordoned and cordoned again within the same request keeps its
// clock (MUO's NodeKeeper restarted it from the cordon taint), and a restart
// of node-gate reads it back from the status.
package drain

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/requeue"
)

// Defaults when the run sets none.
const (
	DefaultTimeout     = 60 * time.Minute
	DefaultStepTimeout = 2 * time.Minute
)

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

// MirrorPodAnnotation marks static pods' API mirrors: deleting one does
// nothing (the kubelet recreates it), and the MCO's drain skips them.
const MirrorPodAnnotation = "kubernetes.io/config.mirror"

// Input is one node's drain as seen now.
type Input struct {
	Now  time.Time
	Node *corev1.Node
	// Pods are the pods bound to the node (any phase).
	Pods []corev1.Pod
	// PDBs are the PodDisruptionBudgets of the pods' namespaces (others are
	// ignored: a PDB only guards pods of its own namespace).
	PDBs []policyv1.PodDisruptionBudget
	// Prev is the record from the status (nil: none).
	Prev *nodegatev1alpha1.DrainRecord
	// Timeout and StepTimeout: see the package documentation.
	Timeout, StepTimeout time.Duration
	// Ignored are namespace patterns whose pods are never forced.
	Ignored []*regexp.Regexp
	// Run is the run the node's drain is recorded in: the related object of
	// the Events on the node.
	Run runtime.Object
}

// Action is one forced step on one pod.
type Action struct {
	Step      nodegatev1alpha1.DrainStep
	Namespace string
	Name      string
	// UID is a precondition: a new pod of the same name is not touched.
	UID string
	// GracePeriod for DrainStepDelete: nil is the pod's own.
	GracePeriod *int64
	// Message explains the action, for the Events on the pod and the node.
	Message string
}

// Result is the decision for one node.
type Result struct {
	// Record is the drain's next record (nil: the node never drained).
	Record  *nodegatev1alpha1.DrainRecord
	Actions []Action
	// Stuck lists pods for which every step was taken and that are still
	// there after their step timeout; nothing more is done for them.
	Stuck []string
	// Blocked: the drain is past its timeout.
	Blocked bool
	// RequeueAfter is when time alone changes the decision.
	RequeueAfter time.Duration
	// Completed: the drain finished in this pass (Record.CompletionTime set).
	Completed bool
	// Recheck is set while the MCO drains: pods come and go without a
	// watch in node-gate, so the node is looked at again this soon.
	Recheck time.Duration
	// Events are the drain's transitions on the node: blocked (once per
	// request, when forcing starts) and completed after pods were forced.
	Events []events.Event
}

// Recheck bounds the wait while the MCO drains: pods come and go without a
// watch in node-gate, so it looks again this soon.
const Recheck = 10 * time.Second

// Needed reports whether a node's drain needs a decision: the run released
// the node (before that the MCO does not drain it for the run), and the MCO
// drains it or its record is still open (the drain may just have ended).
func Needed(rec *nodegatev1alpha1.NodeRecord, n *corev1.Node) bool {
	if rec.Phase != nodegatev1alpha1.NodeReleased {
		return false
	}
	return mcostate.Draining(n.Annotations) || (rec.Drain != nil && rec.Drain.CompletionTime == nil)
}

// StepTimeoutFor is a run's step timeout: its own when positive, else
// DefaultStepTimeout.
func StepTimeoutFor(run *metav1.Duration) time.Duration {
	if run != nil && run.Duration > 0 {
		return run.Duration
	}
	return DefaultStepTimeout
}

// CompilePatterns anchors and compiles namespace patterns.
func CompilePatterns(patterns []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(patterns))
	for i, p := range patterns {
		re, err := regexp.Compile("^(?:" + p + ")$")
		if err != nil {
			return nil, fmt.Errorf("drainRemediation.ignoredNamespacePatterns[%d]: %w", i, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// Decide computes the node's drain record, the steps to take now and the
// Events of the drain's transitions.
func Decide(in Input) Result {
	res := decide(in)
	if res.Blocked && !escalated(in) {
		var names []string
		for _, b := range res.Record.BlockingPods {
			s := b.Namespace + "/" + b.Name
			if len(b.PDBs) > 0 {
				s += fmt.Sprintf(" (PodDisruptionBudgets %v)", b.PDBs)
			}
			names = append(names, s)
		}
		sort.Strings(names)
		res.Events = append(res.Events, events.Event{Regarding: in.Node, Related: in.Run, Warning: true, Reason: "DrainBlocked", Action: "Gate",
			Note: fmt.Sprintf("the drain of node %s has been blocked for %s by %v: forcing its pods off", in.Node.Name, in.Timeout, names)})
	}
	if res.Completed && res.Record.ForcedPods > 0 {
		res.Events = append(res.Events, events.Event{Regarding: in.Node, Related: in.Run, Reason: "DrainCompleted", Action: "Gate",
			Note: fmt.Sprintf("the drain of node %s finished after node-gate forced %d pods", in.Node.Name, res.Record.ForcedPods)})
	}
	if mcostate.Draining(in.Node.Annotations) {
		res.Recheck = Recheck
	}
	return res
}

// escalated: forcing started for this very request in an earlier pass, which
// recorded the DrainBlocked Event then.
func escalated(in Input) bool {
	p := in.Prev
	if p == nil || p.CompletionTime != nil || p.Request != in.Node.Annotations[mcostate.DesiredDrain] {
		return false
	}
	for _, b := range p.BlockingPods {
		if b.Step != "" {
			return true
		}
	}
	return false
}

// ActionEvents are the Events of a step taken on a pod, once it succeeded:
// one on the pod and one on its node, each naming the other.
func ActionEvents(node string, a Action) []events.Event {
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Name, UID: types.UID(a.UID)}}
	n := &corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: node}}
	reason := "Drain" + string(a.Step)
	return []events.Event{
		{Regarding: pod, Related: n, Warning: true, Reason: reason, Action: "ForceDrain", Note: a.Message},
		{Regarding: n, Related: pod, Warning: true, Reason: reason, Action: "ForceDrain", Note: a.Message},
	}
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

func decide(in Input) Result {
	var res Result
	a := in.Node.Annotations
	now := metav1.NewTime(in.Now)
	if !mcostate.Draining(a) {
		if in.Prev == nil {
			return res
		}
		rec := in.Prev.DeepCopy()
		if rec.CompletionTime == nil && a[mcostate.LastAppliedDrain] == rec.Request {
			rec.CompletionTime = &now
			rec.BlockingPods = nil
			res.Completed = true
		}
		res.Record = rec
		return res
	}
	req := a[mcostate.DesiredDrain]
	rec := &nodegatev1alpha1.DrainRecord{Request: req, StartTime: now}
	if in.Prev != nil && in.Prev.Request == req && in.Prev.CompletionTime == nil {
		rec = in.Prev.DeepCopy()
	}
	prevStep := map[string]nodegatev1alpha1.BlockingPod{}
	for _, b := range rec.BlockingPods {
		prevStep[b.Namespace+"/"+b.Name+"/"+b.UID] = b
	}
	rec.BlockingPods = nil
	pods := map[string]*corev1.Pod{}
	for i := range in.Pods {
		pod := &in.Pods[i]
		if !blocks(pod, in.Node.Name, in.Ignored) {
			continue
		}
		b := nodegatev1alpha1.BlockingPod{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), PDBs: MatchingPDBs(pod, in.PDBs)}
		if p, ok := prevStep[b.Namespace+"/"+b.Name+"/"+b.UID]; ok {
			b.Step, b.StepTime = p.Step, p.StepTime
		}
		rec.BlockingPods = append(rec.BlockingPods, b)
		pods[b.Namespace+"/"+b.Name] = pod
	}
	sort.Slice(rec.BlockingPods, func(i, j int) bool {
		x, y := rec.BlockingPods[i], rec.BlockingPods[j]
		return x.Namespace+"/"+x.Name < y.Namespace+"/"+y.Name
	})
	res.Record = rec
	wake := func(d time.Duration) {
		// A time already passed looks again in a second, not at once.
		res.RequeueAfter = requeue.Min(res.RequeueAfter, max(d, time.Second))
	}
	blockedFor := in.Now.Sub(rec.StartTime.Time)
	if blockedFor < in.Timeout {
		wake(in.Timeout - blockedFor)
		return res
	}
	res.Blocked = true
	for i := range rec.BlockingPods {
		b := &rec.BlockingPods[i]
		pod := pods[b.Namespace+"/"+b.Name]
		if b.Step != "" && b.StepTime != nil {
			if left := b.StepTime.Add(in.StepTimeout).Sub(in.Now); left > 0 {
				wake(left)
				continue
			}
		}
		next := nextStep(b.Step, pod)
		again := b.Step != "" && !tookEffect(b.Step, pod)
		if again {
			// The status is written before the step is taken: a step that
			// failed, or was never sent (a crash, a lost leadership), is
			// recorded as taken. Escalating past it would force a pod that
			// never had its gentler step; take it again instead.
			next = b.Step
		}
		if next == "" {
			res.Stuck = append(res.Stuck, b.Namespace+"/"+b.Name)
			continue
		}
		act := Action{Step: next, Namespace: b.Namespace, Name: b.Name, UID: b.UID}
		why := fmt.Sprintf("the drain of node %s has been blocked for %s (timeout %s)", in.Node.Name, blockedFor.Round(time.Second), in.Timeout)
		if len(b.PDBs) > 0 {
			why += "; PodDisruptionBudgets selecting the pod: " + strings.Join(b.PDBs, ", ")
		}
		if again {
			why += "; again, as the pod shows no sign of the last attempt"
		}
		switch next {
		case nodegatev1alpha1.DrainStepDelete:
			act.Message = fmt.Sprintf("deleting pod %s/%s with its grace period: %s", b.Namespace, b.Name, why)
		case nodegatev1alpha1.DrainStepForceDelete:
			act.GracePeriod = ptr.To[int64](0)
			act.Message = fmt.Sprintf("deleting pod %s/%s with grace period 0: %s", b.Namespace, b.Name, why)
		case nodegatev1alpha1.DrainStepRemoveFinalizers:
			act.Message = fmt.Sprintf("removing the finalizers %s of pod %s/%s: %s", strings.Join(pod.Finalizers, ", "), b.Namespace, b.Name, why)
		}
		if b.Step == "" {
			rec.ForcedPods++
		}
		b.Step, b.StepTime = next, &now
		res.Actions = append(res.Actions, act)
		wake(in.StepTimeout)
	}
	return res
}

// nextStep after the last one taken; "" when none is left. A pod already
// terminating skips the graceful delete (it had its grace period).
func nextStep(last nodegatev1alpha1.DrainStep, pod *corev1.Pod) nodegatev1alpha1.DrainStep {
	switch last {
	case "":
		if pod.DeletionTimestamp != nil {
			return nodegatev1alpha1.DrainStepForceDelete
		}
		return nodegatev1alpha1.DrainStepDelete
	case nodegatev1alpha1.DrainStepDelete:
		return nodegatev1alpha1.DrainStepForceDelete
	case nodegatev1alpha1.DrainStepForceDelete:
		if len(pod.Finalizers) > 0 {
			return nodegatev1alpha1.DrainStepRemoveFinalizers
		}
	}
	return ""
}

// tookEffect: the pod (still there) shows that step was carried out. Both
// deletes leave a pod that stays terminating (deletionTimestamp set) or is
// gone; a pod already terminating before a forced delete cannot tell, and
// counts as done. Removing finalizers is not repeated: a controller that
// adds them back would be fought forever.
func tookEffect(step nodegatev1alpha1.DrainStep, pod *corev1.Pod) bool {
	switch step {
	case nodegatev1alpha1.DrainStepDelete, nodegatev1alpha1.DrainStepForceDelete:
		return pod.DeletionTimestamp != nil
	}
	return true
}

// blocks: the MCO's drain waits for this pod. Finished pods, DaemonSet pods
// and mirror pods are not drained; pods of ignored namespaces are the
// user's to deal with.
func blocks(pod *corev1.Pod, node string, ignored []*regexp.Regexp) bool {
	if pod.Spec.NodeName != node || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if _, ok := pod.Annotations[MirrorPodAnnotation]; ok {
		return false
	}
	if c := metav1.GetControllerOf(pod); c != nil && c.Kind == "DaemonSet" {
		return false
	}
	for _, re := range ignored {
		if re.MatchString(pod.Namespace) {
			return false
		}
	}
	return true
}

// MatchingPDBs names the PodDisruptionBudgets that guard the pod: same
// namespace, and a selector that matches its labels (policy/v1: an empty
// selector matches every pod of the namespace, a nil one none). MUO matched
// any single matchLabels pair of any PDB in any namespace.
func MatchingPDBs(pod *corev1.Pod, pdbs []policyv1.PodDisruptionBudget) []string {
	var out []string
	for i := range pdbs {
		pdb := &pdbs[i]
		if pdb.Namespace != pod.Namespace || pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, pdb.Name)
		}
	}
	sort.Strings(out)
	return out
}
