package cpmsoperator

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/upshift-io/upshift/tools/ocpsim/cvo"
	"github.com/upshift-io/upshift/tools/ocpsim/timescale"
)

// Options configure the simulated operator.
type Options struct {
	// Scale scales the unready-node grace period.
	Scale timescale.Scale
	Log   logr.Logger
	// Suffix returns the random part of a new Machine's name (default: five
	// random lower-case alphanumerics, as the operator uses).
	Suffix func() string
}

// Setup registers the operator's loop. It reconciles one thing, the set
// openshift-machine-api/cluster, whatever changed: its Deployment, the set,
// Machines, control-plane Nodes, its ClusterOperator.
func Setup(mgr ctrl.Manager, o Options) error {
	if o.Suffix == nil {
		o.Suffix = func() string { return rand.String(5) }
	}
	s := &sim{c: mgr.GetClient(), live: mgr.GetAPIReader(), o: o, events: mgr.GetEventRecorder("control-plane-machine-set-controller")}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: Namespace, Name: SetName}}}
	})
	named := func(ns, name string) predicate.Predicate {
		return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == ns && o.GetName() == name })
	}
	return ctrl.NewControllerManagedBy(mgr).Named("control-plane-machine-set-operator").
		Watches(&appsv1.Deployment{}, one, builder.WithPredicates(named(Deployment.Namespace, Deployment.Name))).
		Watches(&machinev1.ControlPlaneMachineSet{}, one, builder.WithPredicates(named(Namespace, SetName))).
		Watches(&machinev1beta1.Machine{}, one, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == Namespace }))).
		Watches(&corev1.Node{}, one, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			_, master := o.GetLabels()["node-role.kubernetes.io/master"]
			return master
		}))).
		Watches(&configv1.ClusterOperator{}, one, builder.WithPredicates(named("", ClusterOperator))).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			res, err := s.reconcile(ctx)
			if apierrors.IsConflict(err) {
				return reconcile.Result{RequeueAfter: timescale.ConflictRetry}, nil
			}
			return res, err
		}))
}

type sim struct {
	c client.Client
	// live reads Machines past the cache before creating one, so that a
	// cache that has not yet seen the last replacement never gets an index
	// a second one.
	live   client.Reader
	o      Options
	events events.EventRecorder
}

const logPrefix = "control-plane-machine-set-operator: "

func (s *sim) reconcile(ctx context.Context) (reconcile.Result, error) {
	var d appsv1.Deployment
	if err := s.c.Get(ctx, Deployment, &d); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil // not installed: nothing runs
		}
		return reconcile.Result{}, err
	}
	if !Runs(&d) {
		return reconcile.Result{}, nil // scaled down: the operator does nothing at all
	}
	var set *machinev1.ControlPlaneMachineSet
	var cpms machinev1.ControlPlaneMachineSet
	switch err := s.c.Get(ctx, types.NamespacedName{Namespace: Namespace, Name: SetName}, &cpms); {
	case err == nil:
		set = &cpms
	case !apierrors.IsNotFound(err):
		return reconcile.Result{}, err
	}
	var res reconcile.Result
	var counts Counts
	if Active(set) {
		var machines machinev1beta1.MachineList
		if err := s.c.List(ctx, &machines, client.InNamespace(Namespace)); err != nil {
			return res, err
		}
		selected, err := Selected(set, machines.Items)
		if err != nil {
			return res, nil // an invalid selector: the operator cannot act on the set
		}
		if err := s.replace(ctx, set, selected); err != nil {
			return res, err
		}
		now := time.Now()
		grace := s.o.Scale.Wall(UnreadyNodeGracePeriod)
		ready := map[string]bool{}
		for i := range selected {
			m := &selected[i]
			var node *corev1.Node
			if m.Status.NodeRef != nil {
				var n corev1.Node
				if err := s.c.Get(ctx, types.NamespacedName{Name: m.Status.NodeRef.Name}, &n); err == nil {
					node = &n
				} else if !apierrors.IsNotFound(err) {
					return res, err
				}
			}
			r, recheck := MachineReady(m, node, grace, now)
			ready[m.Name] = r
			if recheck > 0 && (res.RequeueAfter == 0 || recheck < res.RequeueAfter) {
				res.RequeueAfter = recheck
			}
		}
		counts = Observe(set, selected, func(m *machinev1beta1.Machine) bool { return ready[m.Name] })
	}
	return res, s.report(ctx, set, counts, ReleaseVersion(&d))
}

// replace creates the OnDelete replacements the set needs, after checking
// against the apiserver itself that they are still needed.
func (s *sim) replace(ctx context.Context, set *machinev1.ControlPlaneMachineSet, selected []machinev1beta1.Machine) error {
	if len(OnDeleteReplacements(set, selected)) == 0 {
		return nil
	}
	var machines machinev1beta1.MachineList
	if err := s.live.List(ctx, &machines, client.InNamespace(Namespace)); err != nil {
		return err
	}
	current, err := Selected(set, machines.Items)
	if err != nil {
		return err
	}
	for _, r := range OnDeleteReplacements(set, current) {
		m, err := NewMachine(set, r, current, s.o.Suffix())
		if err != nil {
			s.o.Log.Info(logPrefix + fmt.Sprintf("cannot create a machine for index %d: %v", r.Index, err))
			continue
		}
		if err := s.c.Create(ctx, m); err != nil {
			return fmt.Errorf("creating machine %s for index %d: %w", m.Name, r.Index, err)
		}
		from := "missing index"
		if r.From != nil {
			from = "replacing " + r.From.Name
		}
		s.o.Log.Info(logPrefix + fmt.Sprintf("created machine %s (index %d, %s)", m.Name, r.Index, from))
		s.events.Eventf(set, m, corev1.EventTypeNormal, EventCreated, "Create", "created machine: %s", m.Name)
	}
	return nil
}

// report writes the operator's ClusterOperator: conditions, the version its
// Deployment tells it (kept as it is when the Deployment names none), and
// related objects.
func (s *sim) report(ctx context.Context, set *machinev1.ControlPlaneMachineSet, counts Counts, version string) error {
	var co configv1.ClusterOperator
	if err := s.c.Get(ctx, types.NamespacedName{Name: ClusterOperator}, &co); err != nil {
		return client.IgnoreNotFound(err)
	}
	orig := co.DeepCopy()
	now := metav1.Now()
	for _, c := range Conditions(set, counts) {
		cvo.SetCondition(&co.Status.Conditions, c.Type, c.Status, c.Reason, c.Message, now)
	}
	if version != "" {
		co.Status.Versions = []configv1.OperandVersion{{Name: "operator", Version: version}}
	}
	co.Status.RelatedObjects = RelatedObjects()
	if equality.Semantic.DeepEqual(orig.Status, co.Status) {
		return nil
	}
	if v := cvo.OperatorVersion(orig); version != "" && v != version {
		s.o.Log.Info(logPrefix + fmt.Sprintf("cluster operator %s is now at %s", ClusterOperator, version))
	}
	return s.c.Status().Patch(ctx, &co, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}
