package controller

import (
	"context"

	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/clusterstatus"
	"github.com/upshift-io/upshift/services/aromonitor/rounds"
	"github.com/upshift-io/upshift/services/aromonitor/workloads"
)

// WorkloadsFieldManager owns DaemonSetsAvailable, PodsHealthy, the two
// checks' records and the list of problems.
const WorkloadsFieldManager = "aro-monitor-workloads"

// listPage bounds one list request: a namespace such as openshift-monitoring
// may hold hundreds of pods.
const listPage = 500

// WorkloadsReconciler (master role) reports the health of the DaemonSets and
// pods of the monitored namespaces on the MonitorConfig, once per interval
// (package workloads). It reads them straight from the API server, a page at
// a time: pods change all the time, and caching every pod of nine busy
// namespaces between rounds minutes apart would cost more than the rounds.
type WorkloadsReconciler struct {
	Client client.Client
	// Reader lists the DaemonSets and pods, uncached (the manager's API
	// reader).
	Reader client.Reader
	Clock  clock.PassiveClock
}

// SetupWithManager: the MonitorConfig's spec decides at once; the interval
// paces the rounds.
func (r *WorkloadsReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("workloads").
		Watches(&amv1alpha1.MonitorConfig{}, toCluster, specChanged()).
		Complete(r)
}

// Reconcile runs a round when one is due.
func (r *WorkloadsReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	snap, err := load(ctx, r.Client)
	if err != nil || snap == nil {
		return reconcile.Result{}, err
	}
	s := snap.settings
	recorded := amv1alpha1.MonitorConfigStatus{
		Conditions: aroConditions(snap.record, amv1alpha1.DaemonSetsAvailable, amv1alpha1.PodsHealthy),
		Workloads:  snap.record.Workloads,
	}
	for _, name := range []amv1alpha1.CheckName{amv1alpha1.CheckDaemonSets, amv1alpha1.CheckPods} {
		if c := clusterstatus.FindCheck(snap.record.Checks, name); c.LastCheckTime != nil {
			recorded.Checks = append(recorded.Checks, c)
		}
	}
	now := r.Clock.Now()
	if !s.WorkloadsCheck {
		// Switched off: both conditions Unknown, and neither records nor
		// problems kept.
		off := amv1alpha1.MonitorConfigStatus{}
		for _, t := range []string{amv1alpha1.DaemonSetsAvailable, amv1alpha1.PodsHealthy} {
			off.Conditions = append(off.Conditions, clusterstatus.Condition(snap.record.Conditions, operatorv1.OperatorCondition{Type: t,
				Status: operatorv1.ConditionUnknown, Reason: ReasonCheckDisabled, Message: "spec.workloads.enabled is false"}, now))
		}
		if equality.Semantic.DeepEqual(recorded, off) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, applyStatus(ctx, r.Client, WorkloadsFieldManager, off)
	}
	if wait := rounds.Wait(clusterstatus.FindCheck(snap.record.Checks, amv1alpha1.CheckPods), now, s.WorkloadsInterval); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	read := workloads.Read{Namespaces: len(s.WorkloadNamespaces)}
	for _, ns := range s.WorkloadNamespaces {
		if read.DaemonSetsErr == nil {
			var found []appsv1.DaemonSet
			found, read.DaemonSetsErr = listAll(ctx, r.Reader, ns, &appsv1.DaemonSetList{}, func(l *appsv1.DaemonSetList) []appsv1.DaemonSet { return l.Items })
			read.DaemonSetCount += len(found)
			read.DaemonSets = append(read.DaemonSets, workloads.DaemonSets(found)...)
		}
		if read.PodsErr == nil {
			var found []corev1.Pod
			found, read.PodsErr = listAll(ctx, r.Reader, ns, &corev1.PodList{}, func(l *corev1.PodList) []corev1.Pod { return l.Items })
			read.PodCount += len(found)
			read.Pods = append(read.Pods, workloads.Pods(found, s.RestartThreshold)...)
		}
	}
	next := workloads.Round(snap.record, read, now, s.WorkloadThresholds)
	if !equality.Semantic.DeepEqual(recorded, next) {
		if err := applyStatus(ctx, r.Client, WorkloadsFieldManager, next); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: wait.Jitter(s.WorkloadsInterval, 0.1)}, nil
}

// listAll lists every object of a namespace, a page at a time.
func listAll[L client.ObjectList, T any](ctx context.Context, c client.Reader, ns string, list L, items func(L) []T) ([]T, error) {
	var out []T
	opts := []client.ListOption{client.InNamespace(ns), client.Limit(listPage)}
	for {
		if err := c.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		out = append(out, items(list)...)
		if list.GetContinue() == "" {
			return out, nil
		}
		opts = []client.ListOption{client.InNamespace(ns), client.Limit(listPage), client.Continue(list.GetContinue())}
	}
}
