package controller

import (
	"context"
	"fmt"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
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
	if !s.InternetChecks {
		st := egress.Disabled(r.Role, snap.cluster.Status, now)
		if st == nil {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, applyStatus(ctx, r.Client, ProbeFieldManager(r.Role, name), *st)
	}
	if wait := egress.Wait(prev, now, s.InternetInterval); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	prober := *r.Prober
	prober.Timeout = s.InternetTimeout
	results := egress.Round(ctx, &prober, s.URLs)
	now = r.Clock.Now()
	vp := egress.Record(prev, name, r.Role, r.Node, results, now, s.Thresholds)
	if r.Observe != nil {
		r.Observe(vp, results)
	}
	st := egress.RoundStatus(snap.cluster.Status, vp, now, s.InternetInterval, s.Thresholds.Failures)
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
	var expected []string
	if snap.settings.InternetChecks {
		var sets machinev1beta1.MachineSetList
		if err := r.Client.List(ctx, &sets, client.InNamespace(r.MachineNamespace)); err != nil {
			return reconcile.Result{}, err
		}
		found, _, _ := subnets.Discover(snap.cluster.Spec, nil, sets.Items)
		for _, s := range found {
			expected = append(expected, s.Name)
		}
	}
	s := snap.settings
	st, requeue := egress.Workers(snap.cluster.Status, s.InternetChecks, expected, r.Clock.Now(), 3*s.InternetInterval, s.Thresholds.Failures)
	if st == nil {
		return reconcile.Result{RequeueAfter: requeue}, nil // nothing changed: no write
	}
	return reconcile.Result{RequeueAfter: requeue}, applyStatus(ctx, r.Client, WorkerConditionFieldManager, *st)
}

func findVantagePoint(vps []arov1alpha1.VantagePoint, name string) arov1alpha1.VantagePoint {
	for _, vp := range vps {
		if strings.EqualFold(vp.Name, name) {
			return vp
		}
	}
	return arov1alpha1.VantagePoint{}
}

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
