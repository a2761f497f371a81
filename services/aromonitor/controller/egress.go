package controller

import (
	"context"
	"fmt"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"

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
	Role amv1alpha1.Role
	Name string
	// Node is the node this process runs on, for the record.
	Node string
	// Observe records a round's results for the metrics (may be nil).
	Observe func(vp amv1alpha1.VantagePoint, results []probe.Result)
	// Recorder records the master's Events (a worker agent records none).
	Recorder *events.Recorder
}

// ProbeFieldManager is the field manager of a vantage point's writes.
func ProbeFieldManager(role amv1alpha1.Role, name string) string {
	if role == amv1alpha1.RoleMaster {
		return "aro-monitor-egress-master"
	}
	return "aro-monitor-egress-worker-" + subnets.Canonical(name)
}

// SetupWithManager: a spec change (new URLs), a MonitorConfig created or
// changed, or (master) ARO operator's deployments changing hands probe or
// decide at once; otherwise the interval requeue drives the rounds.
func (r *ProbeReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("egress-"+string(r.Role)).
		Watches(&arov1alpha1.Cluster{}, toCluster, specChanged()).
		Watches(&amv1alpha1.MonitorConfig{}, toCluster, specChanged())
	if r.Role == amv1alpha1.RoleMaster {
		b = b.Watches(&appsv1.Deployment{}, toCluster, aroOperatorDeployments())
	}
	return b.Complete(r)
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
	if r.Role == amv1alpha1.RoleWorker {
		// Two agents spelling one subnet differently must write one entry,
		// or each apply would delete the other's.
		name = subnets.Canonical(name)
	}
	prev := findVantagePoint(snap.record.VantagePoints, name)
	if !s.InternetChecks {
		st := egress.Disabled(r.Role, snap.record, now)
		if st == nil {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, r.write(ctx, snap, name, *st)
	}
	if wait := egress.Wait(prev, now, s.InternetInterval); wait > 0 {
		// Not due; the master still puts its recorded condition on the
		// Cluster if it has just taken the check over from ARO's operator.
		return reconcile.Result{RequeueAfter: wait}, r.write(ctx, snap, name, amv1alpha1.MonitorConfigStatus{})
	}
	prober := *r.Prober
	prober.Timeout = s.InternetTimeout
	results := egress.Round(ctx, &prober, s.URLs)
	now = r.Clock.Now()
	vp := egress.Record(prev, name, r.Role, r.Node, results, now, s.Thresholds)
	if r.Observe != nil {
		r.Observe(vp, results)
	}
	st := egress.RoundStatus(snap.record, vp, now, s.InternetInterval, s.Thresholds.Failures)
	if err := r.write(ctx, snap, name, st); err != nil {
		return reconcile.Result{}, fmt.Errorf("recording the egress round: %w", err)
	}
	return reconcile.Result{RequeueAfter: wait.Jitter(s.InternetInterval, 0.1)}, nil
}

// write records st. A worker agent writes its vantage point only. The
// master's manager owns the master vantage point, InternetReachableFromMaster
// and the check's record, so it always applies all three — what st leaves
// out as recorded — with who owns the check, and writes nothing when that
// is what the record says. While aro-monitor replaces ARO's checker, it
// also puts the condition on the Cluster (a no-op when it is there already,
// e.g. between rounds).
func (r *ProbeReconciler) write(ctx context.Context, snap *snapshot, name string, st amv1alpha1.MonitorConfigStatus) error {
	manager := ProbeFieldManager(r.Role, name)
	if r.Role != amv1alpha1.RoleMaster {
		if len(st.VantagePoints) == 0 {
			return nil
		}
		return applyStatus(ctx, r.Client, manager, st)
	}
	d, err := decideOwnership(ctx, r.Client, snap.settings.Ownership, amv1alpha1.CheckInternetMaster)
	if err != nil {
		return err
	}
	w := checkWrite{check: amv1alpha1.CheckInternetMaster, manager: manager, owner: d,
		recorded: masterOwned(snap.record, amv1alpha1.MonitorConfigStatus{}, name), next: masterOwned(snap.record, st, name)}
	return w.do(ctx, r.Client, r.Recorder, snap.cluster, r.Clock.Now())
}

// masterOwned is what the master probe's manager owns: st's vantage point,
// condition and check record, or the recorded ones where st has none.
func masterOwned(record, st amv1alpha1.MonitorConfigStatus, name string) amv1alpha1.MonitorConfigStatus {
	out := amv1alpha1.MonitorConfigStatus{VantagePoints: st.VantagePoints, Conditions: st.Conditions, Checks: st.Checks}
	if len(out.VantagePoints) == 0 {
		if vp := findVantagePoint(record.VantagePoints, name); vp.Name != "" {
			out.VantagePoints = []amv1alpha1.VantagePoint{vp}
		}
	}
	if len(out.Conditions) == 0 {
		out.Conditions = aroConditions(record, arov1alpha1.InternetReachableFromMaster)
	}
	if len(out.Checks) == 0 {
		out.Checks = []amv1alpha1.CheckStatus{clusterstatus.FindCheck(record.Checks, amv1alpha1.CheckInternetMaster)}
	}
	return out
}

// WorkerConditionReconciler (master role) folds the worker vantage points
// into InternetReachableFromWorker, naming worker subnets nobody probes.
type WorkerConditionReconciler struct {
	Client           client.Client
	Recorder         *events.Recorder
	Clock            clock.PassiveClock
	MachineNamespace string
}

// WorkerConditionFieldManager owns InternetReachableFromWorker.
const WorkerConditionFieldManager = "aro-monitor-egress-workers"

// SetupWithManager watches the MonitorConfig, status included (the agents'
// rounds land there), the Cluster's spec, the MachineSets (the subnets to
// expect) and ARO operator's deployments.
func (r *WorkerConditionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("egress-workers").
		Watches(&amv1alpha1.MonitorConfig{}, toCluster, vantagePointsChanged()).
		Watches(&arov1alpha1.Cluster{}, toCluster, specChanged()).
		Watches(&machinev1beta1.MachineSet{}, toCluster, specChanged()).
		Watches(&appsv1.Deployment{}, toCluster, aroOperatorDeployments()).
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
	d, err := decideOwnership(ctx, r.Client, s.Ownership, amv1alpha1.CheckInternetWorker)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := r.Clock.Now()
	st, requeue := egress.Workers(snap.record, s.InternetChecks, expected, now, 3*s.InternetInterval, s.Thresholds.Failures)
	w := checkWrite{check: amv1alpha1.CheckInternetWorker, manager: WorkerConditionFieldManager, owner: d,
		recorded: amv1alpha1.MonitorConfigStatus{Conditions: aroConditions(snap.record, arov1alpha1.InternetReachableFromWorker),
			Checks: []amv1alpha1.CheckStatus{clusterstatus.FindCheck(snap.record.Checks, amv1alpha1.CheckInternetWorker)}}}
	w.next = w.recorded // unchanged but for, maybe, the owner
	if st != nil {
		w.next = *st
	}
	return reconcile.Result{RequeueAfter: requeue}, w.do(ctx, r.Client, r.Recorder, snap.cluster, now)
}

func findVantagePoint(vps []amv1alpha1.VantagePoint, name string) amv1alpha1.VantagePoint {
	for _, vp := range vps {
		if strings.EqualFold(vp.Name, name) {
			return vp
		}
	}
	return amv1alpha1.VantagePoint{}
}

// vantagePointsChanged passes MonitorConfig updates that changed the
// vantage points or the spec: the other checks' status writes do not wake it.
func vantagePointsChanged() builder.WatchesOption {
	return builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*amv1alpha1.MonitorConfig)
		n, ok2 := e.ObjectNew.(*amv1alpha1.MonitorConfig)
		return !ok1 || !ok2 || o.Generation != n.Generation ||
			!equality.Semantic.DeepEqual(o.Status.VantagePoints, n.Status.VantagePoints)
	}})
}
