package controller

import (
	"context"
	"fmt"
	"time"

	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/upshift-io/upshift/services/cpms/plan"
)

// act performs the planner's one mutation and records what the cache must
// show before the next plan.
func (r *Reconciler) act(ctx context.Context, cpms *machinev1.ControlPlaneMachineSet, a *plan.Action, now time.Time) error {
	switch a.Kind {
	case plan.CreateMachine:
		m := a.Machine.DeepCopy()
		err := r.Client.Create(ctx, m)
		switch {
		case apierrors.IsAlreadyExists(err):
			// An earlier pass made this very replacement (the name derives
			// from the set, the index and the desired spec): success. Wait
			// for the cache to show it, whatever its version.
			m.ResourceVersion, m.UID = "", ""
		case err != nil:
			return err
		}
		r.expect.Created(m, now)
		return nil
	case plan.DeleteMachine:
		return r.deleteMachine(ctx, a.Target, now)
	case plan.Remediate:
		// The budget is written first: after a crash between the two writes
		// the next pass finds the retry counted for this very machine and
		// only finishes the delete.
		patch := client.MergeFromWithOptions(cpms.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if cpms.Annotations == nil {
			cpms.Annotations = map[string]string{}
		}
		cpms.Annotations[plan.RemediationAnnotation] = a.Annotation
		if err := r.Client.Patch(ctx, cpms, patch); err != nil {
			return err
		}
		r.expect.Updated(cpms, now)
		return r.deleteMachine(ctx, a.Target, now)
	case plan.Adopt:
		for _, ref := range a.Adopt {
			if err := r.adopt(ctx, cpms, ref, now); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown action %q", a.Kind)
}

// deleteMachine deletes the machine the planner chose, and no namesake: the
// UID precondition makes a delete decided on a stale view fail instead.
// NotFound and a failed precondition both mean that machine is already gone.
func (r *Reconciler) deleteMachine(ctx context.Context, t *plan.MachineRef, now time.Time) error {
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: t.Name, UID: t.UID}}
	uid := t.UID
	err := r.Client.Delete(ctx, m, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	r.expect.Deleted(m, now)
	return nil
}

// adopt makes the set the controller owner of one machine. The patch is
// guarded by the machine's resourceVersion, so a machine that found another
// owner meanwhile is not taken over.
func (r *Reconciler) adopt(ctx context.Context, cpms *machinev1.ControlPlaneMachineSet, ref plan.MachineRef, now time.Time) error {
	m := &machinev1beta1.Machine{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: ref.Name}, m); err != nil {
		return client.IgnoreNotFound(err)
	}
	if m.UID != ref.UID || m.DeletionTimestamp != nil {
		return nil // not the machine the plan saw; the next plan decides
	}
	if c := metav1.GetControllerOf(m); c != nil && c.UID == cpms.UID {
		return nil
	}
	patch := client.MergeFromWithOptions(m.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if err := controllerutil.SetControllerReference(cpms, m, r.Client.Scheme()); err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, m, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.expect.Updated(m, now)
	return nil
}

// release runs when the set is being deleted, as the upstream operator does:
// every machine it controls loses that owner reference (so the garbage
// collector leaves the control plane alone), then the finalizer goes. The
// machines keep running; deleting the set is how an Active set is turned
// off, since Active cannot go back to Inactive.
func (r *Reconciler) release(ctx context.Context, cpms *machinev1.ControlPlaneMachineSet) error {
	if !controllerutil.ContainsFinalizer(cpms, Finalizer) {
		return nil
	}
	var list machinev1beta1.MachineList
	if err := r.Client.List(ctx, &list, client.InNamespace(Namespace)); err != nil {
		return err
	}
	rel := plan.Release(cpms, list.Items)
	for _, m := range rel.Machines {
		patch := client.MergeFromWithOptions(m.DeepCopy(), client.MergeFromWithOptimisticLock{})
		m.OwnerReferences = rel.Keep[m.Name]
		if err := r.Client.Patch(ctx, m, patch); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if rel.Event != nil {
		r.Recorder.Record(*rel.Event)
	}
	patch := client.MergeFromWithOptions(cpms.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(cpms, Finalizer)
	if err := r.Client.Patch(ctx, cpms, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.Metrics.Forget()
	return nil
}
