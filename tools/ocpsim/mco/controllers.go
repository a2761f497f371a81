package mco

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/upshift-io/upshift/tools/ocpsim/faults"
	"github.com/upshift-io/upshift/tools/ocpsim/timescale"
)

// Durations are simulated (scaled by Options.Scale).
type Durations struct {
	// DaemonStep is how long the MCD takes to react to a change.
	DaemonStep time.Duration
	// Drain is the least time a drain takes.
	Drain time.Duration
	// DrainRetry is the pause between failed eviction rounds.
	DrainRetry time.Duration
	// DrainTimeout is when the MCD gives up on a drain and degrades the node.
	DrainTimeout time.Duration
	// ApplyFiles is writing files and the OS image before the reboot.
	ApplyFiles time.Duration
	// Reboot is how long the node stays NotReady.
	Reboot time.Duration
	// PoolSyncDelay is the MCO node controller's updateDelay: an event of a
	// node or a pool queues its pool's sync this long ahead, and a pool
	// already waiting keeps its earlier time, so a burst of events is one
	// sync. A controller that acts on a node event (node-gate releasing the
	// next node on a Done) is picked up by the sync the event itself queued
	// when it acts within it. Zero syncs at once.
	PoolSyncDelay time.Duration
}

// DefaultDurations are close to a real cloud worker: about 5 minutes per node.
func DefaultDurations() Durations {
	return Durations{DaemonStep: 5 * time.Second, Drain: 30 * time.Second, DrainRetry: time.Minute, DrainTimeout: time.Hour, ApplyFiles: 40 * time.Second, Reboot: 3 * time.Minute,
		PoolSyncDelay: 5 * time.Second}
}

// Options configure the MCO simulator.
type Options struct {
	Scale     timescale.Scale
	Durations Durations
	Log       logr.Logger
	// MaxConcurrentNodes bounds parallel drain reconciles (the MCO's drain
	// controller runs a few workers). Daemons are not bounded by it: every
	// node runs its own (see daemonWorkers).
	MaxConcurrentNodes int
}

// IndexPodsByNode registers the Pod field index PodNodeIndex the drain
// controllers list pods with; call it once per manager before Setup.
func IndexPodsByNode(ctx context.Context, mgr ctrl.Manager) error {
	return mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, PodNodeIndex, func(obj client.Object) []string {
		if n := obj.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	})
}

// Setup registers the render, node, daemon and drain controllers (the pod
// index of IndexPodsByNode must exist).
func Setup(mgr ctrl.Manager, o Options) error {
	if o.Durations == (Durations{}) {
		o.Durations = DefaultDurations()
	}
	if o.MaxConcurrentNodes <= 0 {
		o.MaxConcurrentNodes = 8
	}
	s := &sim{
		c: mgr.GetClient(), live: mgr.GetAPIReader(), o: o, log: o.Log,
		poolEvents: mgr.GetEventRecorder("machineconfigcontroller-nodecontroller"),
		mcdEvents:  mgr.GetEventRecorder("machineconfigdaemon"),
		drainEv:    mgr.GetEventRecorder("machineconfigcontroller-draincontroller"),
		targeted:   map[string]string{},
		timers:     map[string]timer{},
		rebooting:  map[string]*reboot{},
		drainStart: map[string]time.Time{},
		drainWarn:  map[string]time.Time{},
	}
	allPools := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return s.allPoolRequests(ctx)
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("mco-render").For(&mcfgv1.MachineConfigPool{}).
		Watches(&mcfgv1.MachineConfig{}, allPools).
		Complete(reconcile.Func(s.render)); err != nil {
		return err
	}
	// Like the MCO's node controller: a node event syncs the pool the node is
	// in (and the one it left), not every pool, and two workers run pool syncs.
	// Syncing every pool on every node event would queue a pool that gains a
	// node behind the syncs of pools the event does not touch.
	if err := ctrl.NewControllerManagedBy(mgr).Named("mco-node").
		Watches(&mcfgv1.MachineConfigPool{}, s.poolChanges()).
		Watches(&corev1.Node{}, s.nodePools()).
		Watches(&mcfgv1.MachineConfigPool{}, s.poolsOnMembershipChange()).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(reconcile.Func(s.syncPool)); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("mco-daemon").For(&corev1.Node{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: daemonWorkers}).
		Complete(reconcile.Func(s.daemon)); err != nil {
		return err
	}
	podToNode := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		if n := obj.(*corev1.Pod).Spec.NodeName; n != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: n}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).Named("mco-drain").For(&corev1.Node{}).
		Watches(&corev1.Pod{}, podToNode).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.MaxConcurrentNodes}).
		Complete(reconcile.Func(s.drain))
}

// nodePools enqueues the pools a node event concerns (PoolsOfNodes).
func (s *sim) nodePools() handler.Funcs {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		var pools mcfgv1.MachineConfigPoolList
		if err := s.c.List(ctx, &pools); err != nil {
			return
		}
		ptrs := make([]*mcfgv1.MachineConfigPool, len(pools.Items))
		for i := range pools.Items {
			ptrs[i] = &pools.Items[i]
		}
		var nodes []*corev1.Node
		for _, o := range objs {
			if n, ok := o.(*corev1.Node); ok {
				nodes = append(nodes, n)
			}
		}
		for _, name := range PoolsOfNodes(ptrs, nodes...) {
			s.queuePoolSync(q, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
	}
}

// queuePoolSync queues a pool's sync as the MCO's enqueueDefault does:
// PoolSyncDelay ahead (the workqueue keeps the earlier of two times).
func (s *sim) queuePoolSync(q workqueue.TypedRateLimitingInterface[reconcile.Request], r reconcile.Request) {
	if d := s.o.Durations.PoolSyncDelay; d > 0 {
		q.AddAfter(r, s.o.Scale.Wall(d))
		return
	}
	q.Add(r)
}

// poolChanges queues a pool's own sync on every event of it (its spec, its
// status, its creation), as the MCO's pool handlers do.
func (s *sim) poolChanges() handler.Funcs {
	one := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		s.queuePoolSync(q, reconcile.Request{NamespacedName: types.NamespacedName{Name: o.GetName()}})
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			one(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			one(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			one(e.Object, q)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			one(e.Object, q)
		},
	}
}

// poolsOnMembershipChange enqueues every pool when a pool appears, goes or
// changes its node selector: nodes then change pools without a node event.
func (s *sim) poolsOnMembershipChange() handler.Funcs {
	all := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, r := range s.allPoolRequests(ctx) {
			s.queuePoolSync(q, r)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, okOld := e.ObjectOld.(*mcfgv1.MachineConfigPool)
			cur, okNew := e.ObjectNew.(*mcfgv1.MachineConfigPool)
			if !okOld || !okNew || SelectorChanged(old, cur) {
				all(ctx, q)
			}
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, q)
		},
	}
}

// allPoolRequests is a request for every pool.
func (s *sim) allPoolRequests(ctx context.Context) []reconcile.Request {
	var pools mcfgv1.MachineConfigPoolList
	if err := s.c.List(ctx, &pools); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(pools.Items))
	for _, p := range pools.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
	}
	return out
}

// daemonWorkers is how many simulated machine-config-daemons act at once. On
// a cluster each node's daemon is its own process, so one node's step never
// waits for another's; a few workers shared by every node would make a node's
// update wait on the simulator's queue whenever the API server is slow (with
// 8, a step waited 53 ms on average while 50 workers updated). 64 is more
// than the nodes that update at once in any test or benchmark here.
const daemonWorkers = 64

// PodNodeIndex indexes Pods by spec.nodeName in the manager cache.
const PodNodeIndex = "spec.nodeName"

type timer struct {
	key   string
	start time.Time
}

type reboot struct {
	until    time.Time
	finished bool
}

type sim struct {
	c                              client.Client
	live                           client.Reader // the API server, for the reads the MCO makes live
	o                              Options
	log                            logr.Logger
	poolEvents, mcdEvents, drainEv events.EventRecorder

	mu         sync.Mutex
	targeted   map[string]string // node → config the node controller wrote (until the cache shows it)
	timers     map[string]timer  // node → current simulated wait
	rebooting  map[string]*reboot
	drainStart map[string]time.Time
	drainWarn  map[string]time.Time
}

// wait returns how much wall time remains before a simulated duration d,
// started when key was first seen for node, has passed.
func (s *sim) wait(node, key string, d time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.timers[node]
	if !ok || t.key != key {
		t = timer{key: key, start: time.Now()}
		s.timers[node] = t
	}
	return s.o.Scale.Wall(d) - time.Since(t.start)
}

// ---- render controller ----

func (s *sim) render(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pool mcfgv1.MachineConfigPool
	if err := s.c.Get(ctx, req.NamespacedName, &pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var list mcfgv1.MachineConfigList
	if err := s.c.List(ctx, &list); err != nil {
		return reconcile.Result{}, err
	}
	all := make([]*mcfgv1.MachineConfig, 0, len(list.Items))
	for i := range list.Items {
		all = append(all, &list.Items[i])
	}
	rendered, err := Render(&pool, all, "")
	if err != nil {
		s.log.Info("machine-config-controller: cannot render pool", "pool", pool.Name, "error", err.Error())
		return reconcile.Result{}, nil
	}
	sources, _ := SelectSources(&pool, all)
	for _, src := range sources {
		if faults.Has(src.Annotations, faults.Unreconcilable) {
			rendered.Annotations[faults.Annotation] = string(faults.Unreconcilable)
		}
	}
	// As the MCO's render controller, create the rendered config only when
	// the cache does not hold it: a pool's every status change syncs it here,
	// and a create refused as AlreadyExists still costs the API server a write.
	exists := slices.ContainsFunc(all, func(mc *mcfgv1.MachineConfig) bool { return mc.Name == rendered.Name })
	if !exists {
		if err := s.c.Create(ctx, rendered); err == nil {
			s.log.Info(fmt.Sprintf("machine-config-controller: generated %s for pool %s from %d MachineConfigs", rendered.Name, pool.Name, len(sources)))
		} else if !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, err
		}
	}
	if pool.Spec.Configuration.Name == rendered.Name {
		return reconcile.Result{}, nil
	}
	orig := pool.DeepCopy()
	pool.Spec.Configuration.Name = rendered.Name
	pool.Spec.Configuration.Source = Sources(sources)
	if err := s.c.Patch(ctx, &pool, client.MergeFrom(orig)); err != nil {
		return reconcile.Result{}, err
	}
	s.log.Info(fmt.Sprintf("machine-config-controller: pool %s now targeting %s", pool.Name, rendered.Name))
	s.poolEvents.Eventf(&pool, nil, corev1.EventTypeNormal, "Updating", "Update", "Pool %s now targeting %s", pool.Name, rendered.Name)
	return reconcile.Result{}, nil
}

// ---- node controller and pool status ----

func (s *sim) syncPool(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pools mcfgv1.MachineConfigPoolList
	if err := s.c.List(ctx, &pools); err != nil {
		return reconcile.Result{}, err
	}
	var pool *mcfgv1.MachineConfigPool
	ptrs := make([]*mcfgv1.MachineConfigPool, 0, len(pools.Items))
	for i := range pools.Items {
		ptrs = append(ptrs, &pools.Items[i])
		if pools.Items[i].Name == req.Name {
			pool = &pools.Items[i]
		}
	}
	if pool == nil {
		return reconcile.Result{}, nil
	}
	var nodeList corev1.NodeList
	if err := s.c.List(ctx, &nodeList); err != nil {
		return reconcile.Result{}, err
	}
	var nodes []*corev1.Node
	s.mu.Lock()
	for i := range nodeList.Items {
		n := &nodeList.Items[i]
		if p, err := PoolFor(n, ptrs); err != nil || p != pool.Name {
			continue
		}
		if want, ok := s.targeted[n.Name]; ok {
			if n.Annotations[DesiredConfigAnnotation] == want {
				delete(s.targeted, n.Name)
			} else {
				n = n.DeepCopy() // the cache has not caught up with our own write yet
				n.Annotations[DesiredConfigAnnotation] = want
			}
		}
		nodes = append(nodes, n)
	}
	s.mu.Unlock()

	target := pool.Spec.Configuration.Name
	if !pool.Spec.Paused && target != "" {
		// The MCO's order (its node controller's pool sync): first its
		// UpdateInProgress taint, put on every node of the pool not
		// targeted at the pool's config and taken off every node that is,
		// one node after the other, each a read of the Node from the API
		// server and a patch (a failure is logged, and the sync goes on);
		// then the candidates, each also read and patched. A node keeps
		// its taint through the write that targets it and loses it in a
		// later sync. The taints go first and one by one, so a pool sync
		// that finds many nodes to (un)taint targets its candidates late.
		for _, n := range nodes {
			waiting := n.Annotations[DesiredConfigAnnotation] != target
			wrong := func(x *corev1.Node) bool { return waiting != HasUpdateInProgressTaint(x) }
			if !wrong(n) {
				continue
			}
			if err := s.patchLive(ctx, n.Name, wrong, func(x *corev1.Node) {
				x.Spec.Taints = withoutTaint(x.Spec.Taints)
				if waiting {
					x.Spec.Taints = append(x.Spec.Taints, corev1.Taint{Key: UpdateInProgressTaint, Effect: corev1.TaintEffectPreferNoSchedule})
				}
			}); err != nil {
				s.log.Error(err, "machine-config-controller: failed changing the UpdateInProgress taint", "node", n.Name, "add", waiting)
			}
		}
		for _, n := range Candidates(pool, nodes) {
			// As the MCO, a live Node already targeted needs no write.
			untargeted := func(x *corev1.Node) bool { return x.Annotations[DesiredConfigAnnotation] != target }
			if err := s.patchLive(ctx, n.Name, untargeted, func(x *corev1.Node) {
				x.Annotations[DesiredConfigAnnotation] = target
			}); err != nil {
				return reconcile.Result{}, err
			}
			s.mu.Lock()
			s.targeted[n.Name] = target
			s.mu.Unlock()
			n.Annotations[DesiredConfigAnnotation] = target
			s.log.Info(fmt.Sprintf("machine-config-controller: pool %s: targeted node %s to MachineConfig %s", pool.Name, n.Name, target))
			s.poolEvents.Eventf(pool, nil, corev1.EventTypeNormal, "SetDesiredConfig", "Update", "Targeted node %s to MachineConfig: %s", n.Name, target)
		}
	}

	st := PoolStatus(pool, nodes, metav1.Now())
	if StatusEqual(st, pool.Status) {
		return reconcile.Result{}, nil
	}
	wasUpdated := PoolCondition(&pool.Status, mcfgv1.MachineConfigPoolUpdated)
	orig := pool.DeepCopy()
	pool.Status = st
	if err := s.c.Status().Patch(ctx, pool, client.MergeFrom(orig)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	now := PoolCondition(&st, mcfgv1.MachineConfigPoolUpdated)
	if now != nil && now.Status == corev1.ConditionTrue && (wasUpdated == nil || wasUpdated.Status != corev1.ConditionTrue) {
		s.log.Info(fmt.Sprintf("machine-config-controller: pool %s has completed update to MachineConfig %s", pool.Name, target))
		s.poolEvents.Eventf(pool, nil, corev1.EventTypeNormal, "Completed", "Update", "Pool %s has completed update to MachineConfig %s", pool.Name, target)
	}
	return reconcile.Result{}, nil
}

// HasUpdateInProgressTaint: the node carries the MCO's UpdateInProgress
// taint.
func HasUpdateInProgressTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == UpdateInProgressTaint {
			return true
		}
	}
	return false
}

func withoutTaint(ts []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range ts {
		if t.Key != UpdateInProgressTaint {
			out = append(out, t)
		}
	}
	return out
}

// patchLive reads the Node from the API server (not the cache) and, if
// needed holds for that live Node, patches it with mutate, as the MCO's node
// controller writes its taint and a node's desired config.
func (s *sim) patchLive(ctx context.Context, name string, needed func(*corev1.Node) bool, mutate func(*corev1.Node)) error {
	var n corev1.Node
	if err := s.live.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		return err
	}
	if !needed(&n) {
		return nil
	}
	return s.patchNode(ctx, &n, mutate)
}

func (s *sim) patchNode(ctx context.Context, n *corev1.Node, mutate func(*corev1.Node)) error {
	x := n.DeepCopy()
	if x.Annotations == nil {
		x.Annotations = map[string]string{}
	}
	mutate(x)
	return s.c.Patch(ctx, x, client.StrategicMergeFrom(n))
}

func (s *sim) setAnnotations(ctx context.Context, n *corev1.Node, kv ...string) error {
	return s.patchNode(ctx, n, func(x *corev1.Node) {
		for i := 0; i+1 < len(kv); i += 2 {
			x.Annotations[kv[i]] = kv[i+1]
		}
	})
}

// ---- machine-config-daemon ----

func (s *sim) unreconcilable(ctx context.Context, n *corev1.Node) bool {
	if faults.Has(n.Annotations, faults.Unreconcilable) {
		return true
	}
	var mc mcfgv1.MachineConfig
	if err := s.c.Get(ctx, types.NamespacedName{Name: n.Annotations[DesiredConfigAnnotation]}, &mc); err == nil {
		return faults.Has(mc.Annotations, faults.Unreconcilable)
	}
	return false
}

func (s *sim) daemon(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var n corev1.Node
	if err := s.c.Get(ctx, req.NamespacedName, &n); err != nil {
		if apierrors.IsNotFound(err) {
			s.forget(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if n.Annotations[DesiredConfigAnnotation] == "" {
		return reconcile.Result{}, nil
	}
	s.mu.Lock()
	rb := s.rebooting[n.Name]
	s.mu.Unlock()
	ready := IsReady(&n) && (rb == nil || rb.finished)
	v := ViewOf(n.Annotations, ready, s.unreconcilable(ctx, &n))
	step := NextStep(v)
	d := v.Desired
	name := n.Name
	mcd := "machine-config-daemon[" + name + "]: "
	after := func(key string, dur time.Duration) (bool, reconcile.Result) {
		if left := s.wait(name, key+"/"+d, dur); left > 0 {
			return false, reconcile.Result{RequeueAfter: left}
		}
		return true, reconcile.Result{}
	}
	switch step {
	case StepNone, StepWaitUncordon:
		return reconcile.Result{}, nil
	case StepWorking:
		if ok, res := after("working", s.o.Durations.DaemonStep); !ok {
			return res, nil
		}
		s.log.Info(mcd + fmt.Sprintf("starting update from %s to %s", v.Current, d))
		return reconcile.Result{}, s.setAnnotations(ctx, &n, StateAnnotation, StateWorking)
	case StepUnreconcilable:
		reason := UnreconcilableReason(v.Current, d)
		s.log.Info(mcd + "marking node Unreconcilable: " + reason)
		s.mcdEvents.Eventf(&n, nil, corev1.EventTypeWarning, "Unreconcilable", "Update", "%s", reason)
		return reconcile.Result{}, s.setAnnotations(ctx, &n, StateAnnotation, StateUnreconcilable, ReasonAnnotation, reason)
	case StepRequestDrain:
		s.mu.Lock()
		s.drainStart[name] = time.Now()
		s.mu.Unlock()
		s.log.Info(mcd + "requesting drain before rebooting into " + d)
		s.mcdEvents.Eventf(&n, nil, corev1.EventTypeNormal, "Drain", "Drain", "Draining node to update config.")
		return reconcile.Result{}, s.setAnnotations(ctx, &n, DesiredDrainAnnotation, DrainAction("drain", d))
	case StepWaitDrain:
		s.mu.Lock()
		start, ok := s.drainStart[name]
		if !ok {
			start = time.Now()
			s.drainStart[name] = start
		}
		s.mu.Unlock()
		left := s.o.Scale.Wall(s.o.Durations.DrainTimeout) - time.Since(start)
		if left > 0 || v.State == StateDegraded {
			if left > 0 {
				return reconcile.Result{RequeueAfter: left}, nil
			}
			return reconcile.Result{}, nil
		}
		reason := DrainFailedReason(name)
		s.log.Info(mcd + "giving up on the drain, marking node Degraded: " + reason)
		return reconcile.Result{}, s.setAnnotations(ctx, &n, StateAnnotation, StateDegraded, ReasonAnnotation, reason)
	case StepReboot:
		if ok, res := after("apply", s.o.Durations.ApplyFiles); !ok {
			return res, nil
		}
		s.mu.Lock()
		s.rebooting[name] = &reboot{until: time.Now().Add(s.o.Scale.Wall(s.o.Durations.Reboot))}
		delete(s.drainStart, name)
		s.mu.Unlock()
		s.log.Info(mcd + "node drained, wrote files and OS image, rebooting into " + d)
		s.mcdEvents.Eventf(&n, nil, corev1.EventTypeNormal, "Reboot", "Reboot", "Node will reboot into config %s", d)
		if err := s.setAnnotations(ctx, &n, PostConfigActionAnnotation, PostConfigRebooting, OnDiskConfigAnnotation, d); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: s.o.Scale.Wall(s.o.Durations.Reboot)}, s.goDown(ctx, name)
	case StepWaitReboot:
		s.mu.Lock()
		if rb == nil {
			rb = &reboot{until: time.Now().Add(s.o.Scale.Wall(s.o.Durations.Reboot))}
			s.rebooting[name] = rb
		}
		until, finished := rb.until, rb.finished
		s.mu.Unlock()
		if finished {
			return reconcile.Result{}, nil
		}
		if IsReady(&n) { // kwok or someone raced us: the node is still rebooting
			if err := s.goDown(ctx, name); err != nil {
				return reconcile.Result{}, err
			}
		}
		if left := time.Until(until); left > 0 {
			return reconcile.Result{RequeueAfter: left}, nil
		}
		if faults.Has(n.Annotations, faults.NeverReady) {
			s.log.Info(mcd + "node has not come back from its reboot (NeverReady fault)")
			return reconcile.Result{}, nil
		}
		if err := s.comeUp(ctx, name); err != nil {
			return reconcile.Result{}, err
		}
		s.mu.Lock()
		rb.finished = true
		s.mu.Unlock()
		s.log.Info(mcd + "kubelet is Ready again after the reboot")
		return reconcile.Result{}, nil
	case StepBooted:
		if ok, res := after("booted", s.o.Durations.DaemonStep); !ok {
			return res, nil
		}
		s.mu.Lock()
		delete(s.rebooting, name)
		s.mu.Unlock()
		s.log.Info(mcd + "booted into " + d + ", validated on-disk state")
		return reconcile.Result{}, s.setAnnotations(ctx, &n, PostConfigActionAnnotation, "")
	case StepRequestUncordon:
		return reconcile.Result{}, s.setAnnotations(ctx, &n, DesiredDrainAnnotation, DrainAction("uncordon", d))
	case StepDone:
		s.log.Info(mcd + fmt.Sprintf("update complete, node is Done on %s", d))
		s.mcdEvents.Eventf(&n, nil, corev1.EventTypeNormal, "NodeDone", "Update", "Setting node %s, currentConfig %s to Done", name, d)
		s.mu.Lock()
		delete(s.timers, name)
		s.mu.Unlock()
		return reconcile.Result{}, s.setAnnotations(ctx, &n, StateAnnotation, StateDone, CurrentConfigAnnotation, d, ReasonAnnotation, "")
	}
	return reconcile.Result{}, nil
}

func (s *sim) forget(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.timers, node)
	delete(s.rebooting, node)
	delete(s.drainStart, node)
	delete(s.drainWarn, node)
	delete(s.targeted, node)
}

// KwokAnnotation hands a node to kwok; it is removed while the node reboots,
// because kwok would otherwise report the node Ready at once.
const KwokAnnotation = "kwok.x-k8s.io/node"

// goDown takes the node out of kwok's hands and reports it NotReady.
func (s *sim) goDown(ctx context.Context, name string) error {
	return s.setReady(ctx, name, false)
}

// comeUp reports the node Ready and gives it back to kwok.
func (s *sim) comeUp(ctx context.Context, name string) error {
	return s.setReady(ctx, name, true)
}

func (s *sim) setReady(ctx context.Context, name string, ready bool) error {
	var n corev1.Node
	if err := s.c.Get(ctx, types.NamespacedName{Name: name}, &n); err != nil {
		return err
	}
	if !ready {
		if _, managed := n.Annotations[KwokAnnotation]; managed {
			orig := n.DeepCopy()
			delete(n.Annotations, KwokAnnotation)
			n.Annotations[rebootKwokAnnotation] = orig.Annotations[KwokAnnotation]
			if err := s.c.Patch(ctx, &n, client.MergeFrom(orig)); err != nil {
				return err
			}
		}
	}
	orig := n.DeepCopy()
	now := metav1.Now()
	cond := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}
	if !ready {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, "KubeletNotReady", "node is rebooting: container runtime is down"
	}
	found := false
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			found = true
			if n.Status.Conditions[i].Status == cond.Status {
				cond.LastTransitionTime = n.Status.Conditions[i].LastTransitionTime
			}
			n.Status.Conditions[i] = cond
		}
	}
	if !found {
		n.Status.Conditions = append(n.Status.Conditions, cond)
	}
	if err := s.c.Status().Patch(ctx, &n, client.StrategicMergeFrom(orig)); err != nil {
		return err
	}
	if ready {
		if v, ok := n.Annotations[rebootKwokAnnotation]; ok {
			orig := n.DeepCopy()
			delete(n.Annotations, rebootKwokAnnotation)
			n.Annotations[KwokAnnotation] = v
			return s.c.Patch(ctx, &n, client.MergeFrom(orig))
		}
	}
	return nil
}

// rebootKwokAnnotation remembers the kwok annotation while a node reboots.
const rebootKwokAnnotation = "ocpsim.upshift.io/kwok-node"

// ---- drain controller ----

func (s *sim) drain(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var n corev1.Node
	if err := s.c.Get(ctx, req.NamespacedName, &n); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	want, have := n.Annotations[DesiredDrainAnnotation], n.Annotations[LastAppliedDrainAnnotation]
	if want == "" || want == have {
		return reconcile.Result{}, nil
	}
	mcc := "machine-config-controller: "
	if len(want) > len("uncordon-") && want[:len("uncordon-")] == "uncordon-" {
		if n.Spec.Unschedulable {
			if err := s.patchNode(ctx, &n, func(x *corev1.Node) { x.Spec.Unschedulable = false }); err != nil {
				return reconcile.Result{}, err
			}
			s.log.Info(mcc + "uncordoned node " + n.Name)
			s.drainEv.Eventf(&n, nil, corev1.EventTypeNormal, "Uncordon", "Uncordon", "Update completed for config %s and node has been uncordoned", want[len("uncordon-"):])
			return reconcile.Result{}, nil // the node event brings us back
		}
		return reconcile.Result{}, s.setAnnotations(ctx, &n, LastAppliedDrainAnnotation, want)
	}
	// drain-<config>
	s.mu.Lock()
	start, ok := s.drainStart["drain/"+n.Name]
	if !ok {
		start = time.Now()
		s.drainStart["drain/"+n.Name] = start
	}
	s.mu.Unlock()
	if !n.Spec.Unschedulable {
		if err := s.patchNode(ctx, &n, func(x *corev1.Node) { x.Spec.Unschedulable = true }); err != nil {
			return reconcile.Result{}, err
		}
		s.log.Info(mcc + "cordoned node " + n.Name + ", draining")
		s.drainEv.Eventf(&n, nil, corev1.EventTypeNormal, "Cordon", "Cordon", "Cordoned node to apply update")
		return reconcile.Result{}, nil
	}
	var pods corev1.PodList
	if err := s.c.List(ctx, &pods, client.MatchingFields{PodNodeIndex: n.Name}); err != nil {
		return reconcile.Result{}, err
	}
	remaining, blocked := 0, ""
	stuck := faults.Has(n.Annotations, faults.DrainStuck)
	for i := range pods.Items {
		p := &pods.Items[i]
		if isDaemonSetPod(p) || p.Annotations[corev1.MirrorPodAnnotationKey] != "" {
			continue
		}
		remaining++
		if p.DeletionTimestamp != nil {
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		if err := s.c.SubResource("eviction").Create(ctx, p, ev); err != nil {
			if apierrors.IsNotFound(err) {
				remaining--
				continue
			}
			if apierrors.IsTooManyRequests(err) {
				blocked = fmt.Sprintf("error when evicting pods/%q -n %q: %v", p.Name, p.Namespace, err)
				continue
			}
			return reconcile.Result{}, err
		}
	}
	if stuck && blocked == "" {
		blocked = "drain is blocked (DrainStuck fault injected by ocpsim)"
	}
	if blocked != "" {
		retry := s.o.Scale.Wall(s.o.Durations.DrainRetry)
		s.mu.Lock()
		last, warned := s.drainWarn[n.Name]
		if !warned || time.Since(last) >= retry {
			s.drainWarn[n.Name] = time.Now()
			s.mu.Unlock()
			s.log.Info(mcc + "drain of node " + n.Name + " failed, will retry: " + blocked)
			s.drainEv.Eventf(&n, nil, corev1.EventTypeWarning, "FailedToDrain", "Drain", "Drain failed, but overall timeout has not been reached. Waiting 1 minute then retrying. Error message from drain: %s", blocked)
			if time.Since(start) >= s.o.Scale.Wall(s.o.Durations.DrainTimeout) {
				s.drainEv.Eventf(&n, nil, corev1.EventTypeWarning, "DrainThresholdExceeded", "Drain", "Drain failed. Drain has been failing for more than 1 hour. Please see pod logs for details: %s", blocked)
			}
		} else {
			s.mu.Unlock()
		}
		return reconcile.Result{RequeueAfter: retry}, nil
	}
	if remaining > 0 {
		return reconcile.Result{RequeueAfter: s.o.Scale.Wall(5 * time.Second)}, nil // pods terminating; their deletion also wakes us
	}
	if left := s.o.Scale.Wall(s.o.Durations.Drain) - time.Since(start); left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	s.mu.Lock()
	delete(s.drainStart, "drain/"+n.Name)
	delete(s.drainWarn, n.Name)
	s.mu.Unlock()
	s.log.Info(mcc + "drained node " + n.Name)
	s.drainEv.Eventf(&n, nil, corev1.EventTypeNormal, "Drain", "Drain", "Drain completed for config %s", want[len("drain-"):])
	return reconcile.Result{}, s.setAnnotations(ctx, &n, LastAppliedDrainAnnotation, want)
}

func isDaemonSetPod(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}
