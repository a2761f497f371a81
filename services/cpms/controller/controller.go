// Package controller is the cpms-controller's thin reconciler. It reads the
// ControlPlaneMachineSet `cluster`, the Machines of openshift-machine-api,
// the control-plane Nodes and the etcd and kube-apiserver ClusterOperators
// from its caches, asks the planner (package plan) for the status and at most
// one mutation, performs the mutation, writes the status when it changed,
// records the Events and publishes the metrics. Every decision is the
// planner's, including what a failed mutation means (plan.Failed); what is
// left here is I/O, the finalizer that orphans the machines when the set is
// deleted, and the expectations (libs/ownwrite) that keep the next plan from
// running on a cache that has not seen this process's own writes.
package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/nodes"
	"github.com/upshift-io/upshift/libs/ownwrite"
	"github.com/upshift-io/upshift/services/cpms/metrics"
	"github.com/upshift-io/upshift/services/cpms/plan"
	"github.com/upshift-io/upshift/services/cpms/platform"
)

const (
	// ControllerName names the controller in logs and metrics.
	ControllerName = "cpms"
	// Namespace and Name identify the one ControlPlaneMachineSet reconciled.
	Namespace = "openshift-machine-api"
	Name      = "cluster"
	// Finalizer is the control-plane-machine-set operator's own: a set it
	// managed carries it already, and it means the same here — on deletion
	// the machines are released (owner references removed), never deleted.
	Finalizer = "controlplanemachineset.machine.openshift.io"
	// DefaultCacheTimeout bounds how long a plan waits for the cache to show
	// this process's own write before it goes ahead.
	DefaultCacheTimeout = ownwrite.DefaultTimeout
)

var setKey = types.NamespacedName{Namespace: Namespace, Name: Name}

// isTheSet: the one ControlPlaneMachineSet managed, openshift-machine-api/cluster.
func isTheSet(o client.Object) bool { return o.GetNamespace() == Namespace && o.GetName() == Name }

// Reconciler keeps the control-plane Machines at the ControlPlaneMachineSet.
type Reconciler struct {
	Client client.Client
	// Recorder records the planner's Events; nil records none.
	Recorder *events.Recorder
	// Metrics publishes every pass (metrics.New on the manager's registry).
	Metrics *metrics.Recorder
	Clock   clock.PassiveClock
	// Config is the planner's configuration; zero means plan.DefaultConfig().
	Config plan.Config
	// CacheTimeout bounds the wait for own writes; zero means DefaultCacheTimeout.
	CacheTimeout time.Duration
	// ARO: the cluster is Azure Red Hat OpenShift; its Cluster `cluster` is
	// watched (the manager's cache must come from WithARO).
	ARO bool
	// APIReader reads past the cache, to confirm a machine's creation or
	// deletion (confirm); default: the manager's API reader.
	APIReader client.Reader

	// expect holds the next plan until the cache shows this process's own
	// last writes: the planner trusts its snapshot to include its own
	// decisions (a machine it created, one it deleted, the remediation
	// budget it spent, the status it wrote).
	expect   ownwrite.Expectations
	mu       sync.Mutex
	warnings string // last logged provider-spec warnings, to log changes only
	// errs is the streak of identical failed passes (the Error condition).
	errs plan.ErrorStreak
}

// SetupWithManager registers the reconciler and its watches. Every event maps
// to the one set.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Config == (plan.Config{}) {
		r.Config = plan.DefaultConfig()
	}
	if r.CacheTimeout == 0 {
		r.CacheTimeout = DefaultCacheTimeout
	}
	if r.Metrics == nil {
		return fmt.Errorf("%s: no Metrics (metrics.New on the manager's registry)", ControllerName)
	}
	if r.Recorder == nil {
		r.Recorder = events.NewRecorder(nil)
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.expect.Timeout = r.CacheTimeout
	toSet := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: setKey}}
	})
	isSet := predicate.NewPredicateFuncs(isTheSet)
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == Namespace })
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&machinev1.ControlPlaneMachineSet{}, builder.WithPredicates(isSet)).
		Watches(&machinev1beta1.Machine{}, toSet, builder.WithPredicates(inNamespace)).
		Watches(&corev1.Node{}, toSet, builder.WithPredicates(controlPlaneNodeChanged)).
		Watches(&configv1.ClusterOperator{}, toSet, builder.WithPredicates(watchedOperatorChanged)).
		Watches(&configv1.ClusterVersion{}, toSet, builder.WithPredicates(trimmedContentChanged)).
		Watches(&appsv1.Deployment{}, toSet, builder.WithPredicates(isOperatorDeployment, trimmedContentChanged)).
		Watches(&configv1.Infrastructure{}, toSet, builder.WithPredicates(trimmedContentChanged))
	if r.ARO {
		b = b.Watches(&arov1alpha1.Cluster{}, toSet, builder.WithPredicates(trimmedContentChanged))
	}
	return b.Complete(r)
}

// controlPlaneNodeChanged passes control-plane Nodes whose trimmed content
// changed: kubelet heartbeats bump the resourceVersion of every Node every
// few seconds and change nothing the planner reads.
var controlPlaneNodeChanged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return isControlPlaneNode(e.Object) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return isControlPlaneNode(e.Object) },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		if !isControlPlaneNode(e.ObjectOld) && !isControlPlaneNode(e.ObjectNew) {
			return false
		}
		return contentChanged(e.ObjectOld, e.ObjectNew)
	},
}

// trimmedContentChanged passes an update that changed what the cache keeps
// of an object (ClusterVersion's Progressing condition, the operator
// Deployment's replicas, ARO's flag), and every create and delete.
var trimmedContentChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool { return contentChanged(e.ObjectOld, e.ObjectNew) },
}

// isOperatorDeployment passes the upstream operator's Deployment (the cache
// holds no other; the predicate keeps a widened cache from waking the set).
var isOperatorDeployment = predicate.NewPredicateFuncs(func(o client.Object) bool {
	return o.GetNamespace() == Namespace && o.GetName() == CPMSOperatorDeployment
})

var watchedOperatorChanged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return watchedOperators[e.Object.GetName()] },
	DeleteFunc:  func(e event.DeleteEvent) bool { return watchedOperators[e.Object.GetName()] },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return watchedOperators[e.ObjectNew.GetName()] && contentChanged(e.ObjectOld, e.ObjectNew)
	},
}

func isControlPlaneNode(o client.Object) bool { return nodes.HasControlPlaneRole(o.GetLabels()) }

// contentChanged compares two trimmed objects, resourceVersion aside.
func contentChanged(a, b client.Object) bool {
	a, b = a.DeepCopyObject().(client.Object), b.DeepCopyObject().(client.Object)
	a.SetResourceVersion("")
	b.SetResourceVersion("")
	return !equality.Semantic.DeepEqual(a, b)
}

// Reconcile plans one pass and carries it out, and counts the passes that
// fail in a row with the same error for the Error condition.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.NamespacedName != setKey {
		return reconcile.Result{}, nil
	}
	res, err := r.reconcile(ctx)
	r.mu.Lock()
	r.errs = r.errs.Next(err, r.Clock.Now())
	r.mu.Unlock()
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	now := r.Clock.Now()
	// Past an expectation's deadline planning goes ahead: machine names are
	// deterministic, so a repeated create fails.
	if wait, err := r.expect.Wait(ctx, r.Client, now); err != nil || wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, err
	}

	cpms := &machinev1.ControlPlaneMachineSet{}
	if err := r.Client.Get(ctx, setKey, cpms); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.Metrics.Forget()
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if cpms.DeletionTimestamp != nil {
		return reconcile.Result{}, r.release(ctx, cpms)
	}
	if !controllerutil.ContainsFinalizer(cpms, Finalizer) {
		// The finalizer goes on before any machine is adopted: without it,
		// deleting the set would let the garbage collector delete the
		// control plane.
		patch := client.MergeFromWithOptions(cpms.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(cpms, Finalizer)
		if err := r.Client.Patch(ctx, cpms, patch); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		r.expect.Updated(cpms, now)
		return reconcile.Result{}, nil
	}

	in, created, err := r.snapshot(ctx, cpms, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	out := plan.Plan(in)
	if out.Action != nil {
		ok, err := r.confirm(ctx, in, out.Action)
		if err != nil {
			return reconcile.Result{}, err
		}
		if !ok {
			logger.Info("the apiserver does not confirm the cached decision; planning again", "action", out.Action.Kind, "index", out.Action.Index)
			return reconcile.Result{RequeueAfter: unconfirmedRetry}, nil
		}
	}
	desired := int32(3)
	if cpms.Spec.Replicas != nil {
		desired = *cpms.Spec.Replicas
	}
	r.Metrics.Observe(now, out, desired, created)
	r.logWarnings(ctx, out.Warnings)

	// Kubernetes objects first, then the status that summarises them, then
	// the Events of both (docs/architecture.md, "The order of side effects").
	status, evs := out.Status, out.Events
	var actErr error
	if a := out.Action; a != nil {
		actErr = r.act(ctx, cpms, a, now)
		r.Metrics.ObserveAction(a.Kind, actErr)
		if actErr != nil {
			logger.Info("action failed", "action", a.Kind, "index", a.Index, "error", actErr.Error())
			var failed events.Event
			status, failed = plan.Failed(cpms, out.Status, a, actErr)
			evs = append(slices.Clone(evs), failed)
		} else {
			logger.Info(a.Event.Note, "action", a.Kind, "index", a.Index)
			evs = append(slices.Clone(evs), a.Event)
		}
	}
	if err := r.writeStatus(ctx, cpms, status, out.StatusOwned); err != nil {
		if out.Action != nil {
			// The action's outcome is the last Event; it happened
			// whatever became of the status.
			r.Recorder.Record(evs[len(evs)-1])
		}
		if actErr != nil {
			return reconcile.Result{}, actErr
		}
		if apierrors.IsConflict(err) {
			// Only the write of our own conditions beside the upstream
			// operator is locked: it wrote the status meanwhile, and its
			// write's watch event brings the next pass. Not an error.
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	r.Recorder.Record(evs...)
	if actErr != nil {
		// Retried with the controller's rate-limited backoff.
		return reconcile.Result{}, actErr
	}
	// After an action no requeue is needed: its object comes back through
	// the watch, and the expectations hold the next plan until it has.
	return reconcile.Result{RequeueAfter: out.RequeueAfter}, nil
}

// unconfirmedRetry is when a pass whose decision the apiserver did not
// confirm plans again, should the watch events that bring the cache up to
// date not come first.
const unconfirmedRetry = time.Second

// confirm re-plans a control-plane machine's creation or deletion with
// ClusterVersion and the Nodes read from the apiserver itself: the informer
// caches of different kinds lag independently (by seconds after a watch
// breaks), and a ClusterVersion seen Completed before a master's reboot is
// seen would start a replacement while the machine-config operator reboots a
// master. The action goes ahead only when the live plan makes the same one.
// Other actions (adoption, the set's own writes) go ahead as planned.
func (r *Reconciler) confirm(ctx context.Context, in plan.Input, a *plan.Action) (bool, error) {
	if a.Kind != plan.CreateMachine && a.Kind != plan.DeleteMachine {
		return true, nil
	}
	var cvs configv1.ClusterVersionList
	// By name: the chart grants ClusterVersion `version` only.
	if err := r.APIReader.List(ctx, &cvs, client.MatchingFields{"metadata.name": clusterVersionName}); err != nil {
		return false, err
	}
	var nodes corev1.NodeList
	if err := r.APIReader.List(ctx, &nodes); err != nil {
		return false, err
	}
	live := in
	live.ClusterVersion, live.Nodes = nil, nodes.Items
	if len(cvs.Items) > 0 {
		live.ClusterVersion = &cvs.Items[0]
	}
	again := plan.Plan(live).Action
	return again != nil && again.Kind == a.Kind && again.Index == a.Index, nil
}

// writeStatus writes the planned status when it changed. When the upstream
// operator runs, the counters, Available, Degraded and Progressing are its
// own, and only this controller's conditions (plan.OwnConditionTypes) are
// written, with the set's resourceVersion as precondition: the operator
// rewrites the whole status too, and a write on top of one it has not seen
// would undo it.
func (r *Reconciler) writeStatus(ctx context.Context, cpms *machinev1.ControlPlaneMachineSet, status machinev1.ControlPlaneMachineSetStatus, owned bool) error {
	var patch client.Patch
	if owned {
		if equality.Semantic.DeepEqual(cpms.Status, status) {
			return nil
		}
		// The status has one writer, this controller (leader-elected), and
		// the expectations make every plan start from its last write: no
		// lock.
		patch = client.MergeFrom(cpms.DeepCopy())
		cpms.Status = status
	} else {
		conds := slices.Clone(cpms.Status.Conditions)
		for _, t := range plan.OwnConditionTypes {
			if c := meta.FindStatusCondition(status.Conditions, t); c != nil {
				meta.SetStatusCondition(&conds, *c)
			}
		}
		if equality.Semantic.DeepEqual(cpms.Status.Conditions, conds) {
			return nil
		}
		patch = client.MergeFromWithOptions(cpms.DeepCopy(), client.MergeFromWithOptimisticLock{})
		cpms.Status.Conditions = conds
	}
	if err := r.Client.Status().Patch(ctx, cpms, patch); err != nil {
		return err
	}
	r.expect.Updated(cpms, r.Clock.Now())
	return nil
}

// snapshot reads the planner's input from the cache, and the creation time
// of every machine (for the metrics).
func (r *Reconciler) snapshot(ctx context.Context, cpms *machinev1.ControlPlaneMachineSet, now time.Time) (plan.Input, map[string]time.Time, error) {
	var machines machinev1beta1.MachineList
	var nodes corev1.NodeList
	var cos configv1.ClusterOperatorList
	if err := r.Client.List(ctx, &machines, client.InNamespace(Namespace)); err != nil {
		return plan.Input{}, nil, err
	}
	if err := r.Client.List(ctx, &nodes); err != nil {
		return plan.Input{}, nil, err
	}
	if err := r.Client.List(ctx, &cos); err != nil {
		return plan.Input{}, nil, err
	}
	// A cluster without a ClusterVersion (a bare test cluster) holds nothing.
	cv, err := getOptional(ctx, r.Client, client.ObjectKey{Name: clusterVersionName}, &configv1.ClusterVersion{})
	if err != nil {
		return plan.Input{}, nil, err
	}
	infra, err := getOptional(ctx, r.Client, client.ObjectKey{Name: platform.InfrastructureName}, &configv1.Infrastructure{})
	if err != nil {
		return plan.Input{}, nil, err
	}
	op, err := readCPMSOperator(ctx, r.Client)
	if err != nil {
		return plan.Input{}, nil, err
	}
	var aro *plan.AROCluster
	if r.ARO {
		c, err := getOptional(ctx, r.Client, client.ObjectKey{Name: aroClusterName}, &arov1alpha1.Cluster{})
		if err != nil {
			return plan.Input{}, nil, err
		}
		if c != nil {
			aro = aroCluster(c)
		}
	}
	r.mu.Lock()
	errs := r.errs
	r.mu.Unlock()
	created := make(map[string]time.Time, len(machines.Items))
	for _, m := range machines.Items {
		created[m.Name] = m.CreationTimestamp.Time
	}
	return plan.Input{CPMS: cpms, Machines: machines.Items, Nodes: nodes.Items, ClusterOperators: cos.Items, ClusterVersion: cv, Infrastructure: infra, CPMSOperator: op, ARO: aro, Errors: errs, Config: r.Config, Now: now}, created, nil
}

func (r *Reconciler) logWarnings(ctx context.Context, w []string) {
	joined := strings.Join(w, "\n")
	r.mu.Lock()
	changed := joined != r.warnings
	r.warnings = joined
	r.mu.Unlock()
	if changed && joined != "" {
		log.FromContext(ctx).Info("provider-spec fields not compared", "warnings", w)
	}
}
