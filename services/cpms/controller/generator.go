package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/services/cpms/generate"
	"github.com/upshift-io/upshift/services/cpms/platform"
)

// GeneratorName names the generator's controller in logs and metrics.
const GeneratorName = "cpms-generator"

// Reasons of the generator's Events.
const (
	// ReasonGenerated: an Inactive set was created from the machines.
	ReasonGenerated = "Generated"
	// ReasonOutdated: an Inactive set no longer matched the machines and was
	// deleted; a generated one replaces it.
	ReasonOutdated = "Outdated"
	// ReasonGenerateFailed: the machines allow no set (the note says why);
	// the Inactive set stays as it is.
	ReasonGenerateFailed = "GenerateFailed"
)

// Generator keeps an Inactive ControlPlaneMachineSet `cluster` that describes
// the control-plane Machines, for a cluster that has no set, as the upstream
// operator's generator does (package generate builds it): it creates the set
// when there is none, and when the machines have changed since (a master
// replaced by hand, another instance type) it deletes the Inactive set, with
// its resourceVersion as precondition, and creates it again. An Active set is
// the administrator's and is never touched, nor is one being deleted.
//
// It acts only in Replace mode (no upstream operator runs, cpmsOperator):
// where the operator runs, its own generator keeps the set and two writers
// would recreate it in turn.
//
// No expectations are kept (libs/ownwrite): a pass on a cache that has not
// seen this process's last write repeats a create, which fails with
// AlreadyExists, or a delete, whose precondition fails since the set's
// resourceVersion moved on; neither changes anything, and the watch brings
// the pass that sees the write.
type Generator struct {
	Client client.Client
	// Recorder records the Events; nil records none.
	Recorder *events.Recorder
}

// SetupWithManager registers the generator. Its watches are the
// reconciler's, narrowed to what changes the generated set: the set's spec
// and lifecycle, control-plane machines' spec, labels and lifecycle, the
// operator's Deployment and the Infrastructure.
func (g *Generator) SetupWithManager(mgr manager.Manager) error {
	if g.Recorder == nil {
		g.Recorder = events.NewRecorder(nil)
	}
	toSet := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: setKey}}
	})
	return builder.ControllerManagedBy(mgr).
		Named(GeneratorName).
		For(&machinev1.ControlPlaneMachineSet{}, builder.WithPredicates(generatorSetChanged)).
		Watches(&machinev1beta1.Machine{}, toSet, builder.WithPredicates(generatorMachineChanged)).
		Watches(&appsv1.Deployment{}, toSet, builder.WithPredicates(isOperatorDeployment, trimmedContentChanged)).
		Watches(&configv1.Infrastructure{}, toSet, builder.WithPredicates(trimmedContentChanged)).
		Complete(g)
}

// generatorSetChanged passes the set's creation and deletion, and updates of
// its spec (generation) or lifecycle; the reconciler's status and finalizer
// writes change nothing the generator compares.
var generatorSetChanged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return isTheSet(e.Object) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return isTheSet(e.Object) },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return isTheSet(e.ObjectNew) && (e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			!e.ObjectOld.GetDeletionTimestamp().Equal(e.ObjectNew.GetDeletionTimestamp()))
	},
}

// generatorMachineChanged passes control-plane machines of the namespace
// when they come, go, start deleting, or change their spec (generation) or
// labels; their status moves all the time and means nothing to the set.
var generatorMachineChanged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return isControlPlaneMachine(e.Object) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return isControlPlaneMachine(e.Object) },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if !isControlPlaneMachine(o) && !isControlPlaneMachine(n) {
			return false
		}
		return o.GetGeneration() != n.GetGeneration() || !equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
	},
}

func isControlPlaneMachine(o client.Object) bool {
	return o.GetNamespace() == Namespace && generate.IsControlPlane(o.GetLabels())
}

// Reconcile makes the Inactive set match the machines, or leaves alone what
// is not the generator's.
func (g *Generator) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.NamespacedName != setKey {
		return reconcile.Result{}, nil
	}
	logger := log.FromContext(ctx)
	o, err := readCPMSOperator(ctx, g.Client)
	if err != nil {
		return reconcile.Result{}, err
	}
	if o.Running {
		logger.V(1).Info("the upstream operator runs and generates the set itself", "operator", o.Description)
		return reconcile.Result{}, nil
	}
	existing := &machinev1.ControlPlaneMachineSet{}
	switch err := g.Client.Get(ctx, setKey, existing); {
	case apierrors.IsNotFound(err):
		existing = nil
	case err != nil:
		return reconcile.Result{}, err
	case existing.Spec.State == machinev1.ControlPlaneMachineSetStateActive, existing.DeletionTimestamp != nil:
		// Active: the administrator's, for good. Being deleted: the
		// reconciler releases it; its deletion brings the next pass.
		return reconcile.Result{}, nil
	}

	var machines machinev1beta1.MachineList
	if err := g.Client.List(ctx, &machines, client.InNamespace(Namespace)); err != nil {
		return reconcile.Result{}, err
	}
	infra, err := getOptional(ctx, g.Client, client.ObjectKey{Name: platform.InfrastructureName}, &configv1.Infrastructure{})
	if err != nil {
		return reconcile.Result{}, err
	}
	set, err := generate.Set(machines.Items, infra)
	switch {
	case errors.Is(err, generate.ErrUnsupportedPlatform), errors.Is(err, generate.ErrTooFewMachines):
		// Nothing to generate on this cluster, as upstream: not a fault.
		logger.V(1).Info("no set to generate", "reason", err.Error())
		return reconcile.Result{}, nil
	case err != nil:
		// Not retried: only a change to the machines or the Infrastructure
		// can change the answer, and their watches bring it.
		logger.Info("cannot generate the ControlPlaneMachineSet", "error", err.Error())
		if existing != nil {
			g.Recorder.Record(events.Warning(existing, ReasonGenerateFailed, "Generate",
				fmt.Sprintf("The control-plane machines no longer allow a set to be generated, so this Inactive set is left as it is: %v", err)))
		}
		return reconcile.Result{}, nil
	}
	newest := generate.ControlPlane(machines.Items)[0]

	if existing != nil {
		differs, reason := generate.Differs(existing, set)
		if !differs {
			return reconcile.Result{}, nil
		}
		// The precondition makes sure the set deleted is the Inactive one
		// compared: one activated (or edited) since the cache saw it has
		// another resourceVersion and is left alone.
		rv := existing.ResourceVersion
		err := g.Client.Delete(ctx, existing, client.Preconditions(metav1.Preconditions{ResourceVersion: &rv}))
		switch {
		case apierrors.IsNotFound(err):
			// Gone already: create it below.
		case apierrors.IsConflict(err):
			logger.Info("the Inactive set changed since it was compared; comparing again when the cache shows it")
			return reconcile.Result{}, nil
		case err != nil:
			return reconcile.Result{}, err
		default:
			logger.Info("deleted the outdated Inactive set", "changes", reason)
			g.Recorder.Record(events.Normal(existing, ReasonOutdated, "Delete",
				fmt.Sprintf("The Inactive set no longer matches the control-plane machines (%s): deleted it, a generated one replaces it", reason)))
		}
	}
	return reconcile.Result{}, g.create(ctx, set, &newest, machines.Items)
}

// create creates the generated set. AlreadyExists is no failure: the set
// just deleted still holds the reconciler's finalizer (its deletion brings
// the next pass), or the cache had not yet shown an earlier create.
func (g *Generator) create(ctx context.Context, set *machinev1.ControlPlaneMachineSet, newest *machinev1beta1.Machine, machines []machinev1beta1.Machine) error {
	err := g.Client.Create(ctx, set)
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		return err
	}
	var names []string
	for _, m := range generate.ControlPlane(machines) {
		names = append(names, m.Name)
	}
	sort.Strings(names)
	log.FromContext(ctx).Info("generated the Inactive ControlPlaneMachineSet", "from", names, "set", generate.Summary(set))
	g.Recorder.Record(events.Event{Regarding: set, Related: newest, Reason: ReasonGenerated, Action: "Create",
		Note: fmt.Sprintf("Generated from the control-plane machines %s (template: the newest, %s): %s. Review it (kubectl upshift cpms generate prints the same) and set spec.state to Active for the controller to manage the control plane",
			strings.Join(names, ", "), newest.Name, generate.Summary(set))})
	return nil
}
