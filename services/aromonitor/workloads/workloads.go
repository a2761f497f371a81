// Package workloads decides the DaemonSetsAvailable and PodsHealthy
// conditions: the DaemonSet and pod health that ARO's resource provider
// only logs and turns into metrics from outside the cluster, reported from
// inside it on aro-monitor's MonitorConfig (never on ARO's Cluster, whose
// condition types the resource provider counts). The rules are the
// resource provider's:
//
//   - a DaemonSet is unhealthy while fewer pods are available than it
//     wants scheduled;
//   - a pod that has not succeeded (and is not being preempted) is
//     unhealthy while one of PodScheduled, Initialized, ContainersReady and
//     Ready is not True, while a container waits (CrashLoopBackOff,
//     ImagePullBackOff, …), or once its containers together restarted
//     restartThreshold times, as `oc get pods` counts them.
//
// Rounds fold into the conditions with a hysteresis (package rounds): a
// rollout makes pods unready for a while. No I/O.
package workloads

import (
	"fmt"
	"sort"
	"strings"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/clusterstatus"
	"github.com/upshift-io/upshift/services/aromonitor/hysteresis"
	"github.com/upshift-io/upshift/services/aromonitor/rounds"
)

// Kinds of WorkloadProblem.
const (
	KindDaemonSet = "DaemonSet"
	KindPod       = "Pod"
)

// MaxRecorded bounds the problems kept in status and named in a message.
const (
	MaxRecorded = 50
	MaxNamed    = 10
)

// Reasons of the two conditions.
const (
	ReasonAllHealthy = "AllHealthy"
	ReasonUnhealthy  = "Unhealthy"
	ReasonReadFailed = "ReadFailed"
)

// preempting is the pod status reason the kubelet sets on a pod it is
// preempting: such a pod is going away, not failing.
const preempting = "Preempting"

// expectedTrue are the pod conditions that must be True.
var expectedTrue = []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady}

// DaemonSets lists the DaemonSets with fewer pods available than scheduled.
func DaemonSets(list []appsv1.DaemonSet) []amv1alpha1.WorkloadProblem {
	var out []amv1alpha1.WorkloadProblem
	for _, ds := range list {
		if ds.Status.NumberAvailable == ds.Status.DesiredNumberScheduled {
			continue
		}
		out = append(out, amv1alpha1.WorkloadProblem{Kind: KindDaemonSet, Namespace: ds.Namespace, Name: ds.Name,
			Problem: fmt.Sprintf("%d of %d available", ds.Status.NumberAvailable, ds.Status.DesiredNumberScheduled)})
	}
	return sorted(out)
}

// Pods lists the unhealthy pods, each with everything wrong with it.
func Pods(list []corev1.Pod, restartThreshold int32) []amv1alpha1.WorkloadProblem {
	var out []amv1alpha1.WorkloadProblem
	for _, p := range list {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Reason == preempting {
			continue
		}
		var problems []string
		for _, t := range expectedTrue {
			for _, c := range p.Status.Conditions {
				if c.Type == t && c.Status != corev1.ConditionTrue {
					problems = append(problems, fmt.Sprintf("%s is %s", t, c.Status))
				}
			}
		}
		var restarts int32
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
			if w := cs.State.Waiting; w != nil {
				problems = append(problems, fmt.Sprintf("container %s waiting: %s", cs.Name, w.Reason))
			}
		}
		if restarts >= restartThreshold {
			problems = append(problems, fmt.Sprintf("%d restarts", restarts))
		}
		if len(problems) > 0 {
			out = append(out, amv1alpha1.WorkloadProblem{Kind: KindPod, Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName,
				Problem: strings.Join(problems, "; ")})
		}
	}
	return sorted(out)
}

func sorted(ps []amv1alpha1.WorkloadProblem) []amv1alpha1.WorkloadProblem {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Namespace != ps[j].Namespace {
			return ps[i].Namespace < ps[j].Namespace
		}
		return ps[i].Name < ps[j].Name
	})
	return ps
}

// Read is one round's reading: what was found wrong, and any error reading
// the DaemonSets or the pods (that condition's round then fails with it).
type Read struct {
	DaemonSets, Pods       []amv1alpha1.WorkloadProblem
	DaemonSetsErr, PodsErr error
	// Namespaces and Pods counted, for the messages.
	Namespaces, DaemonSetCount, PodCount int
}

// Round folds one round into both conditions, the two checks' records and
// the list of problems (at most MaxRecorded, DaemonSets first).
func Round(prev amv1alpha1.MonitorConfigStatus, r Read, now time.Time, th hysteresis.Thresholds) amv1alpha1.MonitorConfigStatus {
	dsCond, dsCheck := rounds.Fold(prev.Conditions, clusterstatus.FindCheck(prev.Checks, amv1alpha1.CheckDaemonSets), amv1alpha1.DaemonSetsAvailable,
		result(KindDaemonSet, r.DaemonSets, r.DaemonSetsErr, r.DaemonSetCount, r.Namespaces),
		rounds.Words{Passing: "every DaemonSet available", Recovering: "every DaemonSet available again"}, now, th)
	podCond, podCheck := rounds.Fold(prev.Conditions, clusterstatus.FindCheck(prev.Checks, amv1alpha1.CheckPods), amv1alpha1.PodsHealthy,
		result(KindPod, r.Pods, r.PodsErr, r.PodCount, r.Namespaces),
		rounds.Words{Passing: "every pod healthy", Recovering: "every pod healthy again"}, now, th)
	problems := append(append([]amv1alpha1.WorkloadProblem{}, r.DaemonSets...), r.Pods...)
	if len(problems) > MaxRecorded {
		problems = problems[:MaxRecorded]
	}
	if len(problems) == 0 {
		problems = nil
	}
	return amv1alpha1.MonitorConfigStatus{
		Conditions: []operatorv1.OperatorCondition{dsCond, podCond},
		Checks:     []amv1alpha1.CheckStatus{dsCheck, podCheck},
		Workloads:  problems,
	}
}

func result(kind string, problems []amv1alpha1.WorkloadProblem, err error, count, namespaces int) rounds.Result {
	plural := strings.ToLower(kind) + "s"
	if kind == KindDaemonSet {
		plural = "DaemonSets"
	}
	if err != nil {
		msg := fmt.Sprintf("reading the %s: %v", plural, err)
		return rounds.Result{Reason: ReasonReadFailed, Message: msg, Summary: msg}
	}
	if len(problems) == 0 {
		return rounds.Result{Passed: true, Reason: ReasonAllHealthy,
			Message: fmt.Sprintf("all %d %s in %d namespaces healthy", count, plural, namespaces)}
	}
	var named []string
	for _, p := range problems[:min(len(problems), MaxNamed)] {
		named = append(named, fmt.Sprintf("%s/%s (%s)", p.Namespace, p.Name, p.Problem))
	}
	if len(problems) > MaxNamed {
		named = append(named, fmt.Sprintf("and %d more", len(problems)-MaxNamed))
	}
	summary := fmt.Sprintf("%d of %d %s unhealthy: %s", len(problems), count, plural, strings.Join(named, ", "))
	return rounds.Result{Reason: ReasonUnhealthy, Message: summary, Summary: summary}
}
