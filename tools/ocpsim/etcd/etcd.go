// Package etcd simulates the part of the cluster-etcd-operator that guards
// quorum during control-plane Machine replacement: it keeps the
// EtcdQuorumOperator preDrain hook on every control-plane Machine that is not
// being deleted, and removes it from a deleting Machine only once enough
// replacement members exist (a Running control-plane Machine with a Ready
// Node, promoted to voting member after a short delay) and the deleting
// machine's member has been removed from the cluster, which takes a while
// after the deletion: the hook is never gone the moment a machine is deleted.
//
// HookDecision is the pure rule; the controller wires it to the apiserver.
package etcd

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
	"github.com/upshift-io/upshift/tools/ocpsim/timescale"
)

// The hook the etcd operator owns.
const (
	HookName  = "EtcdQuorumOperator"
	HookOwner = "clusteroperator/etcd"
)

// Member is a control-plane Machine as the etcd operator sees it.
type Member struct {
	Name     string
	Deleting bool
	HasHook  bool
	// Voting means Running with a Ready Node for at least the promotion delay.
	Voting  bool
	Running bool
	// RemovalDue means deleting for at least the member-removal time.
	RemovalDue bool
}

// Decision lists the hooks to add and to remove.
type Decision struct {
	AddHook, RemoveHook []string
}

// HookDecision applies the etcd operator's rules: do nothing until one
// control-plane Machine is Running (machine API functional); add the hook to
// every non-deleting Machine; release it from a deleting Machine when the
// voting members that are not deleting reach the desired count and its own
// member's removal is due.
func HookDecision(ms []Member, desired int) Decision {
	var d Decision
	anyRunning := false
	voting := 0
	for _, m := range ms {
		anyRunning = anyRunning || m.Running
		if m.Voting && !m.Deleting {
			voting++
		}
	}
	if !anyRunning {
		return d
	}
	for _, m := range ms {
		switch {
		case !m.Deleting && !m.HasHook:
			d.AddHook = append(d.AddHook, m.Name)
		case m.Deleting && m.HasHook && m.RemovalDue && voting >= desired:
			d.RemoveHook = append(d.RemoveHook, m.Name)
		}
	}
	sort.Strings(d.AddHook)
	sort.Strings(d.RemoveHook)
	return d
}

// Options configure the etcd simulator.
type Options struct {
	Scale timescale.Scale
	// Promotion is the simulated time from Ready to voting member.
	Promotion time.Duration
	// MemberRemoval is the simulated time from a machine's deletion to its
	// member's removal from the cluster.
	MemberRemoval time.Duration
	Log           logr.Logger
}

// Setup registers the controller.
func Setup(mgr ctrl.Manager, o Options) error {
	if o.Promotion == 0 {
		o.Promotion = time.Minute
	}
	if o.MemberRemoval == 0 {
		o.MemberRemoval = 30 * time.Second
	}
	s := &sim{c: mgr.GetClient(), o: o, readySince: map[string]time.Time{}}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: machineapi.Namespace, Name: "etcd"}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("etcd-quorum-guard").
		Watches(&machinev1beta1.Machine{}, one).
		Watches(&corev1.Node{}, one).
		Complete(reconcile.Func(s.reconcile))
}

type sim struct {
	c          client.Client
	o          Options
	mu         sync.Mutex
	readySince map[string]time.Time
}

func (s *sim) reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var list machinev1beta1.MachineList
	if err := s.c.List(ctx, &list, client.InNamespace(machineapi.Namespace), client.MatchingLabels{machineapi.RoleLabel: "master"}); err != nil {
		return reconcile.Result{}, err
	}
	desired := 3
	var cpms machinev1.ControlPlaneMachineSet
	if err := s.c.Get(ctx, types.NamespacedName{Namespace: machineapi.Namespace, Name: "cluster"}, &cpms); err == nil && cpms.Spec.Replicas != nil {
		desired = int(*cpms.Spec.Replicas)
	}
	var members []Member
	var res reconcile.Result
	byName := map[string]*machinev1beta1.Machine{}
	for i := range list.Items {
		m := &list.Items[i]
		byName[m.Name] = m
		running := ptr.Deref(m.Status.Phase, "") == machinev1beta1.PhaseRunning
		ready := false
		if running && m.Status.NodeRef != nil {
			var n corev1.Node
			if err := s.c.Get(ctx, types.NamespacedName{Name: m.Status.NodeRef.Name}, &n); err == nil {
				ready = mco.IsReady(&n)
			}
		}
		voting := false
		s.mu.Lock()
		if ready {
			since, ok := s.readySince[m.Name]
			if !ok {
				since = time.Now()
				// members that were already there when we started are voting
				if m.CreationTimestamp.Time.Before(time.Now().Add(-s.o.Scale.Wall(s.o.Promotion))) {
					since = m.CreationTimestamp.Time
				}
				s.readySince[m.Name] = since
			}
			left := s.o.Scale.Wall(s.o.Promotion) - time.Since(since)
			voting = left <= 0
			if !voting && (res.RequeueAfter == 0 || left < res.RequeueAfter) {
				res.RequeueAfter = left
			}
		} else {
			delete(s.readySince, m.Name)
		}
		s.mu.Unlock()
		has := false
		for _, h := range m.Spec.LifecycleHooks.PreDrain {
			has = has || (h.Name == HookName && h.Owner == HookOwner)
		}
		due := false
		if m.DeletionTimestamp != nil {
			left := s.o.Scale.Wall(s.o.MemberRemoval) - time.Since(m.DeletionTimestamp.Time)
			due = left <= 0
			if !due && (res.RequeueAfter == 0 || left < res.RequeueAfter) {
				res.RequeueAfter = left
			}
		}
		members = append(members, Member{Name: m.Name, Deleting: m.DeletionTimestamp != nil, HasHook: has, Voting: voting, Running: running, RemovalDue: due})
	}
	d := HookDecision(members, desired)
	for _, name := range d.AddHook {
		m := byName[name]
		orig := m.DeepCopy()
		var hooks []machinev1beta1.LifecycleHook
		for _, h := range m.Spec.LifecycleHooks.PreDrain {
			if h.Name != HookName {
				hooks = append(hooks, h)
			}
		}
		m.Spec.LifecycleHooks.PreDrain = append(hooks, machinev1beta1.LifecycleHook{Name: HookName, Owner: HookOwner})
		if err := s.c.Patch(ctx, m, client.MergeFrom(orig)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		s.o.Log.Info(fmt.Sprintf("etcd-operator: added %s preDrain hook to control-plane machine %s", HookName, name))
	}
	for _, name := range d.RemoveHook {
		m := byName[name]
		orig := m.DeepCopy()
		var hooks []machinev1beta1.LifecycleHook
		for _, h := range m.Spec.LifecycleHooks.PreDrain {
			if h.Name != HookName {
				hooks = append(hooks, h)
			}
		}
		m.Spec.LifecycleHooks.PreDrain = hooks
		if err := s.c.Patch(ctx, m, client.MergeFrom(orig)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		s.o.Log.Info(fmt.Sprintf("etcd-operator: etcd member on machine %s has been replaced, removed %s hook so the machine can be deleted", name, HookName))
	}
	return res, nil
}
