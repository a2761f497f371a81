package controller

import (
	"context"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"

	"github.com/upshift-io/upshift/services/aromonitor/clusterstatus"
	"github.com/upshift-io/upshift/services/aromonitor/machinecheck"
	"github.com/upshift-io/upshift/services/aromonitor/rounds"
)

// MachinesFieldManager owns MachineValid and the Machines check's record.
const MachinesFieldManager = "aro-monitor-machines"

// MachinesReconciler (master role) decides ARO's MachineValid from the
// Machines and MachineSets, once per interval, with ARO's rules and a
// hysteresis (package machinecheck).
type MachinesReconciler struct {
	Client           client.Client
	Recorder         *events.Recorder
	Clock            clock.PassiveClock
	MachineNamespace string
}

// SetupWithManager: the Cluster's spec (ARO's aro.machine.enabled), the
// MonitorConfig's and ARO operator's deployments decide at once; the rounds
// are paced by the interval, so a Machine's every status change does not
// count as a round (the Machines are read from the cache when one is due).
func (r *MachinesReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("machines").
		Watches(&arov1alpha1.Cluster{}, toCluster, specChanged()).
		Watches(&amv1alpha1.MonitorConfig{}, toCluster, specChanged()).
		Watches(&appsv1.Deployment{}, toCluster, aroOperatorDeployments()).
		Complete(r)
}

// Reconcile runs a round when one is due.
func (r *MachinesReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	snap, err := load(ctx, r.Client)
	if err != nil || snap == nil {
		return reconcile.Result{}, err
	}
	s := snap.settings
	if !s.MachineCheck {
		// As ARO's Machine controller switched off: nothing is written,
		// and the last answer stands.
		return reconcile.Result{}, nil
	}
	d, err := decideOwnership(ctx, r.Client, s.Ownership, amv1alpha1.CheckMachines)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := r.Clock.Now()
	w := checkWrite{check: amv1alpha1.CheckMachines, manager: MachinesFieldManager, owner: d,
		recorded: amv1alpha1.MonitorConfigStatus{Conditions: aroConditions(snap.record, arov1alpha1.MachineValid),
			Checks: []amv1alpha1.CheckStatus{clusterstatus.FindCheck(snap.record.Checks, amv1alpha1.CheckMachines)}}}
	w.next = w.recorded
	requeue := rounds.Wait(w.recorded.Checks[0], now, s.MachinesInterval)
	if requeue == 0 {
		var machines machinev1beta1.MachineList
		if err := r.Client.List(ctx, &machines, client.InNamespace(r.MachineNamespace)); err != nil {
			return reconcile.Result{}, err
		}
		var sets machinev1beta1.MachineSetList
		if err := r.Client.List(ctx, &sets, client.InNamespace(r.MachineNamespace)); err != nil {
			return reconcile.Result{}, err
		}
		w.next = machinecheck.Round(snap.record, machinecheck.Problems(machines.Items, sets.Items), now, s.MachineThresholds)
		requeue = wait.Jitter(s.MachinesInterval, 0.1)
	}
	return reconcile.Result{RequeueAfter: requeue}, w.do(ctx, r.Client, r.Recorder, snap.cluster, now)
}
