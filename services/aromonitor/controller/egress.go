package controller

import (
	"context"
	"fmt"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/clusterstatus"
	"github.com/upshift-io/upshift/services/aromonitor/egress"
	"github.com/upshift-io/upshift/services/aromonitor/probe"
	"github.com/upshift-io/upshift/services/aromonitor/subnets"
)

// ProbeReconciler probes the egress URLs from where it runs, once per
// interval, and records the result as its vantage point. The master role's
// instance also sets InternetReachableFromMaster. A worker agent's instance
// runs only while it holds its subnet's lease (the manager's leader
// election), so each worker subnet is probed by one agent at a time.
type ProbeReconciler struct {
	Client client.Client
	Clock  clock.PassiveClock
	Prober *probe.Prober
	// Role and Name are the vantage point: master, or worker and the subnet
	// (in any case: it is keyed by its canonical, lower-case name).
	Role arov1alpha1.Role
	Name string
	// Node is the node this process runs on, for the record.
	Node string
	// Observe records a round's results for the metrics (may be nil).
	Observe func(vp arov1alpha1.VantagePoint, results []probe.Result)
}

// ProbeFieldManager is the field manager of a vantage point's writes.
func ProbeFieldManager(role arov1alpha1.Role, name string) string {
	if role == arov1alpha1.RoleMaster {
		return "aro-monitor-egress-master"
	}
	return "aro-monitor-egress-worker-" + subnets.Canonical(name)
}

// SetupWithManager: a spec change (new URLs) or a MonitorConfig change
// probes at once; otherwise the interval requeue drives the rounds.
func (r *ProbeReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{clusterKey}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("egress-"+string(r.Role)).
		Watches(&arov1alpha1.Cluster{}, one, specChanged()).
		Watches(&amv1alpha1.MonitorConfig{}, one).
		Complete(r)
}

// Reconcile runs a round when one is due.
func (r *ProbeReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	snap, err := load(ctx, r.Client)
	if err != nil || snap == nil {
		return reconcile.Result{}, err
	}
	s := snap.settings
	now := r.Clock.Now()
	name := r.Name
	if r.Role == arov1alpha1.RoleWorker {
		// Two agents spelling one subnet differently must write one entry,
		// or each apply would delete the other's.
		name = subnets.Canonical(name)
	}
	prev := findVantagePoint(snap.cluster.Status.VantagePoints, name)
	condType := arov1alpha1.InternetReachableFromWorker
	if r.Role == arov1alpha1.RoleMaster {
		condType = arov1alpha1.InternetReachableFromMaster
	}
	if !s.InternetChecks {
		if r.Role != arov1alpha1.RoleMaster {
			return reconcile.Result{}, nil
		}
		// ARO writes Unknown without a reason when its checker is off.
		c := clusterstatus.Unknown(condType, ReasonCheckDisabled, "the check is off: aro.checker.enabled is false")
		return reconcile.Result{}, applyStatus(ctx, r.Client, ProbeFieldManager(r.Role, name), arov1alpha1.ClusterStatus{
			Conditions: []operatorv1.OperatorCondition{clusterstatus.Condition(snap.cluster.Status.Conditions, c, now)}})
	}
	// A round is due an interval after the last one, whoever ran it: a
	// restart or a lease hand-over does not probe twice in a row.
	if prev.LastCheckTime != nil {
		if next := prev.LastCheckTime.Add(s.InternetInterval); now.Before(next) {
			return reconcile.Result{RequeueAfter: next.Sub(now)}, nil
		}
	}
	prober := *r.Prober
	prober.Timeout = s.InternetTimeout
	results := egress.Round(ctx, &prober, s.URLs)
	now = r.Clock.Now()
	vp := egress.Record(prev, name, r.Role, r.Node, results, now, s.Thresholds)
	if r.Observe != nil {
		r.Observe(vp, results)
	}
	st := arov1alpha1.ClusterStatus{VantagePoints: []arov1alpha1.VantagePoint{vp}}
	if r.Role == arov1alpha1.RoleMaster {
		c := egress.ForRole(arov1alpha1.RoleMaster, []arov1alpha1.VantagePoint{vp}, nil, now, 3*s.InternetInterval, s.Thresholds.Failures)
		cond := operatorv1.OperatorCondition{Type: condType, Status: operatorv1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message}
		st.Conditions = []operatorv1.OperatorCondition{clusterstatus.Condition(snap.cluster.Status.Conditions, cond, now)}
		check := clusterstatus.FindCheck(snap.cluster.Status.Checks, arov1alpha1.CheckInternetMaster)
		check.LastCheckTime = vp.LastCheckTime
		// This round's result: a failed round while the hysteresis still
		// holds True is no success.
		if egress.Passed(vp) {
			check.LastSuccessTime = vp.LastCheckTime
		}
		st.Checks = []arov1alpha1.CheckStatus{check}
	}
	if err := applyStatus(ctx, r.Client, ProbeFieldManager(r.Role, name), st); err != nil {
		return reconcile.Result{}, fmt.Errorf("recording the egress round: %w", err)
	}
	return reconcile.Result{RequeueAfter: wait.Jitter(s.InternetInterval, 0.1)}, nil
}

// WorkerConditionReconciler (master role) folds the worker vantage points
// into InternetReachableFromWorker, naming worker subnets nobody probes.
type WorkerConditionReconciler struct {
	Client           client.Client
	Clock            clock.PassiveClock
	MachineNamespace string
}

// WorkerConditionFieldManager owns InternetReachableFromWorker.
const WorkerConditionFieldManager = "aro-monitor-egress-workers"

// SetupWithManager watches the Cluster, status included (the agents' rounds
// land there), and the MachineSets (the subnets to expect).
func (r *WorkerConditionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{clusterKey}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("egress-workers").
		Watches(&arov1alpha1.Cluster{}, one, vantagePointsChanged()).
		Watches(&amv1alpha1.MonitorConfig{}, one).
		Watches(&machinev1beta1.MachineSet{}, one, specChanged()).
		Complete(r)
}

// Reconcile recomputes the condition; it requeues to notice results going stale.
func (r *WorkerConditionReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	snap, err := load(ctx, r.Client)
	if err != nil || snap == nil {
		return reconcile.Result{}, err
	}
	now := r.Clock.Now()
	if !snap.settings.InternetChecks {
		// As the master's condition: Unknown, not the last answer kept.
		c := clusterstatus.Unknown(arov1alpha1.InternetReachableFromWorker, ReasonCheckDisabled, "the check is off: aro.checker.enabled is false")
		if old := clusterstatus.ConditionByType(snap.cluster.Status.Conditions, c.Type); old != nil && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, applyStatus(ctx, r.Client, WorkerConditionFieldManager, arov1alpha1.ClusterStatus{
			Conditions: []operatorv1.OperatorCondition{clusterstatus.Condition(snap.cluster.Status.Conditions, c, now)},
			Checks:     []arov1alpha1.CheckStatus{clusterstatus.FindCheck(snap.cluster.Status.Checks, arov1alpha1.CheckInternetWorker)},
		})
	}
	var sets machinev1beta1.MachineSetList
	if err := r.Client.List(ctx, &sets, client.InNamespace(r.MachineNamespace)); err != nil {
		return reconcile.Result{}, err
	}
	found, _, _ := subnets.Discover(snap.cluster.Spec, nil, sets.Items)
	var expected []string
	for _, s := range found {
		expected = append(expected, s.Name)
	}
	staleAfter := 3 * snap.settings.InternetInterval
	c := egress.ForRole(arov1alpha1.RoleWorker, snap.cluster.Status.VantagePoints, expected, now, staleAfter, snap.settings.Thresholds.Failures)
	cond := operatorv1.OperatorCondition{Type: arov1alpha1.InternetReachableFromWorker, Status: operatorv1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message}
	var last *arov1alpha1.VantagePoint
	allPassed := true
	for i, vp := range snap.cluster.Status.VantagePoints {
		if vp.Role != arov1alpha1.RoleWorker || vp.LastCheckTime == nil || now.Sub(vp.LastCheckTime.Time) > staleAfter {
			continue
		}
		allPassed = allPassed && egress.Passed(vp)
		if last == nil || vp.LastCheckTime.After(last.LastCheckTime.Time) {
			last = &snap.cluster.Status.VantagePoints[i]
		}
	}
	check := clusterstatus.FindCheck(snap.cluster.Status.Checks, arov1alpha1.CheckInternetWorker)
	if last != nil {
		check.LastCheckTime = last.LastCheckTime
		// Every subnet's latest round passed, not the hysteresis-held
		// status: a failing round while the condition is still True is
		// no success.
		if allPassed {
			check.LastSuccessTime = last.LastCheckTime
		}
	}
	if old := clusterstatus.ConditionByType(snap.cluster.Status.Conditions, cond.Type); old != nil && old.Status == cond.Status && old.Reason == cond.Reason &&
		old.Message == cond.Message && sameCheck(clusterstatus.FindCheck(snap.cluster.Status.Checks, arov1alpha1.CheckInternetWorker), check) {
		return reconcile.Result{RequeueAfter: staleAfter}, nil // nothing changed: no write
	}
	st := arov1alpha1.ClusterStatus{
		Conditions: []operatorv1.OperatorCondition{clusterstatus.Condition(snap.cluster.Status.Conditions, cond, now)},
		Checks:     []arov1alpha1.CheckStatus{check},
	}
	return reconcile.Result{RequeueAfter: staleAfter}, applyStatus(ctx, r.Client, WorkerConditionFieldManager, st)
}

func findVantagePoint(vps []arov1alpha1.VantagePoint, name string) arov1alpha1.VantagePoint {
	for _, vp := range vps {
		if strings.EqualFold(vp.Name, name) {
			return vp
		}
	}
	return arov1alpha1.VantagePoint{}
}

func sameCheck(a, b arov1alpha1.CheckStatus) bool { return equality.Semantic.DeepEqual(a, b) }

// vantagePointsChanged passes Cluster updates that changed the vantage
// points or the spec: the other checks' status writes do not wake it.
func vantagePointsChanged() builder.WatchesOption {
	return builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*arov1alpha1.Cluster)
		n, ok2 := e.ObjectNew.(*arov1alpha1.Cluster)
		return !ok1 || !ok2 || o.Generation != n.Generation ||
			!equality.Semantic.DeepEqual(o.Status.VantagePoints, n.Status.VantagePoints)
	}})
}
