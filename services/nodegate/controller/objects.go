package controller

import (
	"context"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/services/nodegate/plan"
)

// ObjectStatus writes the status of MutexRules and MutexTargets as the mutex
// operator did: a rule's ValidConfig, a target's nodes, ValidConfig and
// NodeListGathered (plan.RuleStatus, plan.TargetStatus). They say what a
// run using the object would meet before any run does: a rule whose Jobs
// node-gate may not create, a pool that does not exist, which nodes a
// target covers. Each is written only when it changes, by a merge patch
// without a resourceVersion: node-gate is the status's only writer, and a
// write from a cache that lags is followed by the pass its own watch event
// starts, which writes the status again if it differs.
type ObjectStatus struct {
	Client client.Client
	// JobPlaces are where rules may run hook Jobs.
	JobPlaces plan.JobPlaces
	Clock     clock.PassiveClock
}

// SetupWithManager runs one controller for rules and one for targets; a
// target is planned again when a pool or a node's labels change.
func (r *ObjectStatus) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("mutexrule-status").
		For(&nodegatev1alpha1.MutexRule{}).
		Complete(reconcile.Func(r.reconcileRule)); err != nil {
		return err
	}
	allTargets := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list nodegatev1alpha1.MutexTargetList
		if err := r.Client.List(ctx, &list); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("mutextarget-status").
		For(&nodegatev1alpha1.MutexTarget{}).
		// Membership follows a pool's node selector and a node's labels.
		Watches(&mcfgv1.MachineConfigPool{}, allTargets, builder.WithPredicates(updated(func(o, n *mcfgv1.MachineConfigPool) bool {
			return !equality.Semantic.DeepEqual(o.Spec.NodeSelector, n.Spec.NodeSelector) || !equality.Semantic.DeepEqual(o.Labels, n.Labels)
		}))).
		// node-gate's own hold (or release) label, set and removed on every
		// gated node, moves no node between pools as a target counts them.
		Watches(&corev1.Node{}, allTargets, builder.WithPredicates(updated(func(o, n *corev1.Node) bool {
			return !equality.Semantic.DeepEqual(plan.MembershipLabels(o.Labels), plan.MembershipLabels(n.Labels))
		}))).
		Complete(reconcile.Func(r.reconcileTarget))
}

func (r *ObjectStatus) reconcileRule(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rule := &nodegatev1alpha1.MutexRule{}
	if err := r.Client.Get(ctx, req.NamespacedName, rule); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	st := plan.RuleStatus(rule, r.JobPlaces, r.Clock.Now())
	if equality.Semantic.DeepEqual(rule.Status, st) {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFrom(rule.DeepCopy())
	rule.Status = st
	return reconcile.Result{}, client.IgnoreNotFound(r.Client.Status().Patch(ctx, rule, patch))
}

func (r *ObjectStatus) reconcileTarget(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	target := &nodegatev1alpha1.MutexTarget{}
	if err := r.Client.Get(ctx, req.NamespacedName, target); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var pools mcfgv1.MachineConfigPoolList
	if err := r.Client.List(ctx, &pools); err != nil {
		return reconcile.Result{}, err
	}
	// Membership is read from the nodes' labels only: no copy.
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	members := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		members[i] = &nodes.Items[i]
	}
	st := plan.TargetStatus(target, pools.Items, members, r.Clock.Now())
	if equality.Semantic.DeepEqual(target.Status, st) {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFrom(target.DeepCopy())
	target.Status = st
	return reconcile.Result{}, client.IgnoreNotFound(r.Client.Status().Patch(ctx, target, patch))
}
