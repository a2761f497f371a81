// Package drain forces a blocked drain to finish, the pure part: given a
// node the machine-config operator (MCO) is draining, the pods still on it,
// the PodDisruptionBudgets of their namespaces and the drain's record, it
// decides which pod to force off and how, and the next record. It is shared
// by node-gate (a run's released nodes) and the upgrade-scheduler (the worker
// nodes of an upgrade, as MUO's NodeKeeper does); one node's drain has one of
// them as its owner at a time, and each keeps its records in its own status.
//
// Eviction stays the MCO's: a pod is forced only once the drain has been
// blocked past the timeout of its class (pods a PodDisruptionBudget selects
// have their own, as in MUO), and then one step at a time — delete with the
// pod's grace period (skipped under Policy.SkipGraceful, as MUO deletes with
// grace 0), delete with grace 0, remove its finalizers — each step given
// StepTimeout to work before the next. A delete the pod shows no sign of
// after StepTimeout (no deletionTimestamp) is repeated, not escalated.
//
// The clock is keyed on the MCO's desiredDrain request, not on the cordon:
// a node uncordoned and cordoned again within the same request keeps its
// clock (MUO's NodeKeeper restarted it from the cordon taint), and a restart
// of the owner reads it back from its status.
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

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/requeue"
)

// DefaultStepTimeout is the time a step is given before the next.
const DefaultStepTimeout = 2 * time.Minute

// MirrorPodAnnotation marks static pods' API mirrors: deleting one does
// nothing (the kubelet recreates it), and the MCO's drain skips them.
const MirrorPodAnnotation = "kubernetes.io/config.mirror"

// Policy is how an owner forces drains.
type Policy struct {
	// Timeout is how long a drain may be blocked before the pods no
	// PodDisruptionBudget selects are forced (MUO's nodeDrain.timeOut).
	Timeout time.Duration
	// PDBTimeout is the same for the pods a PodDisruptionBudget selects
	// (MUO's PDB force-drain timeout plus the expected drain time); zero:
	// Timeout.
	PDBTimeout time.Duration
	// StepTimeout is the time a step on a pod is given before the next.
	StepTimeout time.Duration
	// SkipGraceful starts at the delete with grace period 0, as MUO's
	// strategies do; otherwise a pod is first deleted with its own.
	SkipGraceful bool
	// ObserveOnly forces nothing (MUO's disableDrainStrategies): the record
	// and TimedOut only.
	ObserveOnly bool
	// Expected is how long a drain is expected to take once its pods are
	// forced: TimedOut is reported that long after the last timeout passed
	// (MUO's nodeDrain.expectedNodeDrainTime).
	Expected time.Duration
	// Ignored are namespace patterns whose pods are never forced.
	Ignored []*regexp.Regexp
	// Owner names the component that forces, in Events ("node-gate");
	// EventAction is their action ("Gate").
	Owner, EventAction string
}

// pdbTimeout is the timeout of pods a PodDisruptionBudget selects.
func (p Policy) pdbTimeout() time.Duration {
	if p.PDBTimeout > 0 {
		return p.PDBTimeout
	}
	return p.Timeout
}

// FirstTimeout is the shorter of the two timeouts: before it nothing is
// forced, and a drain's pods need not be read.
func (p Policy) FirstTimeout() time.Duration { return min(p.Timeout, p.pdbTimeout()) }

// timeoutOf is the timeout of a blocking pod's class.
func (p Policy) timeoutOf(b commonv1alpha1.BlockingPod) time.Duration {
	if len(b.PDBs) > 0 {
		return p.pdbTimeout()
	}
	return p.Timeout
}

// Input is one node's drain as seen now.
type Input struct {
	Now  time.Time
	Node *corev1.Node
	// Pods are the pods bound to the node (any phase).
	Pods []corev1.Pod
	// PDBs are the PodDisruptionBudgets of the pods' namespaces (others are
	// ignored: a PDB only guards pods of its own namespace).
	PDBs []policyv1.PodDisruptionBudget
	// Prev is the record from the owner's status (nil: none).
	Prev *commonv1alpha1.DrainRecord
	Policy
	// Related is the object the node's drain is recorded in (a run, an
	// UpgradeConfig): the related object of the Events on the node.
	Related runtime.Object
}

// Action is one forced step on one pod.
type Action struct {
	Step      commonv1alpha1.DrainStep
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
	Record  *commonv1alpha1.DrainRecord
	Actions []Action
	// Stuck lists pods for which every step was taken and that are still
	// there after their step timeout; nothing more is done for them.
	Stuck []string
	// Blocked: a pod (or, with none left to force, the drain) is past its
	// timeout.
	Blocked bool
	// TimedOut: the drain is still blocked although nothing is left to
	// wait for — every timeout that has pods to force has passed, and the
	// expected drain time after the last of them too (MUO's "drain
	// failed", its upgradeoperator_node_drain_timeout).
	TimedOut bool
	// RequeueAfter is when time alone changes the decision.
	RequeueAfter time.Duration
	// Completed: the drain finished in this pass (Record.CompletionTime set).
	Completed bool
	// Recheck is set while the MCO drains: pods come and go without a
	// watch in the owner, so the node is looked at again this soon.
	Recheck time.Duration
	// Events are the drain's transitions on the node: blocked (once per
	// request, when forcing starts) and completed after pods were forced.
	Events []events.Event
}

// Recheck bounds the wait while the MCO drains: pods come and go without a
// watch in the owner, so it looks again this soon.
const Recheck = 10 * time.Second

// CompilePatterns anchors and compiles namespace patterns; field names them
// in the error.
func CompilePatterns(field string, patterns []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(patterns))
	for i, p := range patterns {
		re, err := regexp.Compile("^(?:" + p + ")$")
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// Decide computes the node's drain record, the steps to take now and the
// Events of the drain's transitions.
func Decide(in Input) Result {
	res := decide(in)
	if res.Blocked && !in.ObserveOnly && !escalated(in) && len(res.Actions) > 0 {
		var names []string
		for _, b := range res.Record.BlockingPods {
			s := b.Namespace + "/" + b.Name
			if len(b.PDBs) > 0 {
				s += fmt.Sprintf(" (PodDisruptionBudgets %v)", b.PDBs)
			}
			names = append(names, s)
		}
		sort.Strings(names)
		blockedFor := in.Now.Sub(res.Record.StartTime.Time).Round(time.Second)
		res.Events = append(res.Events, events.Event{Regarding: in.Node, Related: in.Related, Warning: true, Reason: "DrainBlocked", Action: in.EventAction,
			Note: fmt.Sprintf("the drain of node %s has been blocked for %s by %v: forcing its pods off as their timeouts pass", in.Node.Name, blockedFor, names)})
	}
	if res.Completed && res.Record.ForcedPods > 0 {
		res.Events = append(res.Events, events.Event{Regarding: in.Node, Related: in.Related, Reason: "DrainCompleted", Action: in.EventAction,
			Note: fmt.Sprintf("the drain of node %s finished after %s forced %d pods", in.Node.Name, in.Owner, res.Record.ForcedPods)})
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
	if p.ForcedPods > 0 {
		// The pods forced first may be gone from the record.
		return true
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

func decide(in Input) Result {
	var res Result
	a := in.Node.Annotations
	now := metav1.NewTime(in.Now)
	if !mcostate.Draining(a) {
		if in.Prev == nil {
			return res
		}
		rec := in.Prev.DeepCopy()
		// A record is made only for a drain request, so a node that no
		// longer drains has ended it: the drain controller acknowledged
		// it, or the MCD has since asked for something else (the uncordon
		// after the node's update). A plan that first looks after the node
		// moved on (a restart, or a drain, reboot and uncordon within one
		// pass at a fast time scale) must still close the record.
		if rec.CompletionTime == nil {
			rec.CompletionTime = &now
			rec.BlockingPods = nil
			res.Completed = true
		}
		res.Record = rec
		return res
	}
	req := a[mcostate.DesiredDrain]
	rec := &commonv1alpha1.DrainRecord{Request: req, StartTime: now}
	if in.Prev != nil && in.Prev.Request == req && in.Prev.CompletionTime == nil {
		rec = in.Prev.DeepCopy()
	}
	prevStep := map[string]commonv1alpha1.BlockingPod{}
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
		b := commonv1alpha1.BlockingPod{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), PDBs: MatchingPDBs(pod, in.PDBs)}
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
	res.TimedOut = timedOut(in.Policy, rec, blockedFor, wake)
	if blockedFor < in.FirstTimeout() {
		wake(in.FirstTimeout() - blockedFor)
		return res
	}
	res.Blocked = len(rec.BlockingPods) == 0 && blockedFor >= in.Timeout
	for i := range rec.BlockingPods {
		b := &rec.BlockingPods[i]
		pod := pods[b.Namespace+"/"+b.Name]
		if t := in.timeoutOf(*b); blockedFor < t {
			wake(t - blockedFor)
			continue
		}
		res.Blocked = true
		if in.ObserveOnly {
			continue
		}
		if b.Step != "" && b.StepTime != nil {
			if left := b.StepTime.Add(in.StepTimeout).Sub(in.Now); left > 0 {
				wake(left)
				continue
			}
		}
		next := nextStep(b.Step, pod, in.SkipGraceful)
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
		why := fmt.Sprintf("the drain of node %s has been blocked for %s (timeout %s)", in.Node.Name, blockedFor.Round(time.Second), in.timeoutOf(*b))
		if len(b.PDBs) > 0 {
			why += "; PodDisruptionBudgets selecting the pod: " + strings.Join(b.PDBs, ", ")
		}
		if again {
			why += "; again, as the pod shows no sign of the last attempt"
		}
		switch next {
		case commonv1alpha1.DrainStepDelete:
			act.Message = fmt.Sprintf("deleting pod %s/%s with its grace period: %s", b.Namespace, b.Name, why)
		case commonv1alpha1.DrainStepForceDelete:
			act.GracePeriod = ptr.To[int64](0)
			act.Message = fmt.Sprintf("deleting pod %s/%s with grace period 0: %s", b.Namespace, b.Name, why)
		case commonv1alpha1.DrainStepRemoveFinalizers:
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
// terminating skips the graceful delete (it had its grace period), and so
// does every pod under skipGraceful.
func nextStep(last commonv1alpha1.DrainStep, pod *corev1.Pod, skipGraceful bool) commonv1alpha1.DrainStep {
	switch last {
	case "":
		if pod.DeletionTimestamp != nil || skipGraceful {
			return commonv1alpha1.DrainStepForceDelete
		}
		return commonv1alpha1.DrainStepDelete
	case commonv1alpha1.DrainStepDelete:
		return commonv1alpha1.DrainStepForceDelete
	case commonv1alpha1.DrainStepForceDelete:
		if len(pod.Finalizers) > 0 {
			return commonv1alpha1.DrainStepRemoveFinalizers
		}
	}
	return ""
}

// timedOut is MUO's "the drain failed": the drain is still blocked when no
// timeout with pods waiting for it is left, and the expected drain time has
// passed since the last timeout that did pass (Timeout at the least). With
// ObserveOnly nothing is forced and nothing expected: Timeout alone. wake is
// told when that time comes.
func timedOut(p Policy, rec *commonv1alpha1.DrainRecord, blockedFor time.Duration, wake func(time.Duration)) bool {
	at := p.Timeout
	if !p.ObserveOnly {
		last := time.Duration(-1)
		for _, t := range []time.Duration{p.Timeout, p.pdbTimeout()} {
			if t <= blockedFor && t > last {
				last = t
			}
		}
		for _, b := range rec.BlockingPods {
			if t := p.timeoutOf(b); t > blockedFor {
				// A class still waits for its timeout: its pods will be
				// forced then, and the drain judged after.
				wake(t - blockedFor)
				return false
			}
		}
		at = max(p.Timeout, last+p.Expected)
	}
	if blockedFor < at {
		wake(at - blockedFor)
		return false
	}
	return true
}

// tookEffect: the pod (still there) shows that step was carried out. Both
// deletes leave a pod that stays terminating (deletionTimestamp set) or is
// gone; a pod already terminating before a forced delete cannot tell, and
// counts as done. Removing finalizers is not repeated: a controller that
// adds them back would be fought forever.
func tookEffect(step commonv1alpha1.DrainStep, pod *corev1.Pod) bool {
	switch step {
	case commonv1alpha1.DrainStepDelete, commonv1alpha1.DrainStepForceDelete:
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
