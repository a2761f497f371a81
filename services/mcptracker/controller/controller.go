// Package controller is the mcp-tracker's thin reconciler: it reads the
// MachineConfigPools, the Nodes (trimmed to their MCO annotations) and the
// UpgradeConfigs from informer caches, asks package track what every pool's
// update looks like, exports that as metrics, records the Events, and writes
// the tracker's own part of each UpgradeConfig's status with server-side
// apply under the field manager FieldManager, at most once per
// MinWriteInterval per UpgradeConfig.
package controller

import (
	"context"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/services/mcptracker/track"
)

// Name is the controller's name, in logs and metrics.
const Name = "mcptracker"

// FieldManager owns the status fields the tracker writes: status.pools, the
// WorkersUpgraded condition and history[].workerStartTime/workerCompleteTime.
const FieldManager = "mcp-tracker"

// Defaults of the Reconciler's settings.
const (
	DefaultStuckAfter       = time.Hour
	DefaultRemovedRetention = 24 * time.Hour
	DefaultMinWriteInterval = 5 * time.Second
)

// key is the one work item: every pool is tracked in one pass, since a
// node's pool depends on every pool's selector.
var key = reconcile.Request{NamespacedName: types.NamespacedName{Name: "pools"}}

// Reconciler tracks every pool and writes into the UpgradeConfigs of
// Namespace (all namespaces when empty).
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	Metrics  *Metrics

	Namespace string
	// StuckAfter: a node in one updating or degraded state for longer counts
	// as stuck (DefaultStuckAfter when zero; negative turns it off).
	StuckAfter time.Duration
	// RemovedRetention: how long a deleted pool stays in status.pools.
	RemovedRetention time.Duration
	// MinWriteInterval bounds the writes to one UpgradeConfig: changes within
	// it are coalesced into one write at its end.
	MinWriteInterval time.Duration

	mu        sync.Mutex
	state     track.State
	seeded    bool
	lastWrite map[types.NamespacedName]time.Time
}

// SetupWithManager watches pools, nodes and UpgradeConfigs; every event
// maps to the one work item, so a burst of node transitions is one pass.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.StuckAfter == 0 {
		r.StuckAfter = DefaultStuckAfter
	}
	if r.RemovedRetention == 0 {
		r.RemovedRetention = DefaultRemovedRetention
	}
	if r.MinWriteInterval == 0 {
		r.MinWriteInterval = DefaultMinWriteInterval
	}
	r.lastWrite = map[types.NamespacedName]time.Time{}
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{key}
	})
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return r.Namespace == "" || o.GetNamespace() == r.Namespace
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		Watches(&mcfgv1.MachineConfigPool{}, all).
		Watches(&corev1.Node{}, all, builder.WithPredicates(nodeChanged)).
		Watches(&upgradev1alpha1.UpgradeConfig{}, all, builder.WithPredicates(inNamespace)).
		Complete(r)
}

// Reconcile runs one pass over every pool.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	var (
		pools mcfgv1.MachineConfigPoolList
		nodes corev1.NodeList
		ucs   upgradev1alpha1.UpgradeConfigList
	)
	// The pass only reads the cached objects: no deep copy of thousands of
	// Nodes per pass.
	if err := r.Client.List(ctx, &pools, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.Client.List(ctx, &ucs, client.InNamespace(r.Namespace)); err != nil {
		return reconcile.Result{}, err
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.Clock.Now()
	if !r.seeded {
		// After a restart the pools' times come back from the status.
		r.state = track.Seed(nil)
		for _, uc := range ucs.Items {
			if len(uc.Status.Pools) > 0 {
				r.state = track.Seed(uc.Status.Pools)
				break
			}
		}
		r.seeded = true
	}
	in := track.Input{Prev: r.state, Now: now, StuckAfter: max(r.StuckAfter, 0), RemovedRetention: r.RemovedRetention}
	for i := range pools.Items {
		in.Pools = append(in.Pools, poolOf(&pools.Items[i]))
	}
	for i := range nodes.Items {
		in.Nodes = append(in.Nodes, nodeOf(&nodes.Items[i]))
	}
	out := track.Track(in)
	r.state = out.State
	if r.Metrics != nil {
		r.Metrics.Observe(out)
	}
	r.record(ucs.Items, pools.Items, out.Events)

	requeue := out.Recheck
	later := func(d time.Duration) {
		if d > 0 && (requeue == 0 || d < requeue) {
			requeue = d
		}
	}
	var firstErr error
	live := map[types.NamespacedName]bool{}
	for i := range ucs.Items {
		live[client.ObjectKeyFromObject(&ucs.Items[i])] = true
	}
	for k := range r.lastWrite {
		if !live[k] {
			delete(r.lastWrite, k)
		}
	}
	for i := range ucs.Items {
		uc := &ucs.Items[i]
		if uc.DeletionTimestamp != nil {
			continue
		}
		want := desiredStatus(uc, out.Pools, now)
		if equality.Semantic.DeepEqual(want, liveStatus(uc)) {
			continue
		}
		k := client.ObjectKeyFromObject(uc)
		if wait := r.lastWrite[k].Add(r.MinWriteInterval).Sub(now); wait > 0 {
			// Coalesce: the state at the end of the interval is written then.
			later(wait)
			continue
		}
		if err := r.apply(ctx, uc, want); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			logger.Info("status apply failed", "upgradeconfig", k.String(), "error", err.Error())
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		r.lastWrite[k] = now
		if r.Metrics != nil {
			r.Metrics.writes.Inc()
		}
	}
	if firstErr != nil {
		return reconcile.Result{}, firstErr
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// record puts the Events on every UpgradeConfig, or, when there is none,
// on the pool they are about.
func (r *Reconciler) record(ucs []upgradev1alpha1.UpgradeConfig, pools []mcfgv1.MachineConfigPool, evs []track.Event) {
	if r.Recorder == nil {
		return
	}
	for _, e := range evs {
		typ := corev1.EventTypeNormal
		if e.Warning {
			typ = corev1.EventTypeWarning
		}
		if len(ucs) == 0 {
			for i := range pools {
				if pools[i].Name == e.Pool {
					r.Recorder.Eventf(&pools[i], nil, typ, e.Reason, "Track", "%s", e.Message)
				}
			}
			continue
		}
		for i := range ucs {
			r.Recorder.Eventf(&ucs[i], nil, typ, e.Reason, "Track", "%s", e.Message)
		}
	}
}

func poolOf(p *mcfgv1.MachineConfigPool) track.Pool {
	out := track.Pool{Name: p.Name, Target: p.Spec.Configuration.Name}
	if p.Spec.NodeSelector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector); err == nil {
			out.Selector = sel
		}
	}
	if out.Selector == nil {
		out.Selector = labels.Nothing()
	}
	for _, c := range p.Status.Conditions {
		switch c.Type {
		case mcfgv1.MachineConfigPoolUpdated:
			out.Updated = c.Status == corev1.ConditionTrue
		case mcfgv1.MachineConfigPoolDegraded:
			out.Degraded = c.Status == corev1.ConditionTrue
			out.DegradedMessage = c.Message
		}
	}
	return out
}

func nodeOf(n *corev1.Node) track.Node {
	return track.Node{Name: n.Name, Labels: n.Labels, Annotations: n.Annotations, Ready: nodeReady(n), Unschedulable: n.Spec.Unschedulable}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodeChanged drops node updates the tracker does not read (heartbeats,
// other annotations, images...).
var nodeChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Node)
	n, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return !equality.Semantic.DeepEqual(o.Labels, n.Labels) || nodeReady(o) != nodeReady(n) || o.Spec.Unschedulable != n.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(mcostate.Annotations(o.Annotations), mcostate.Annotations(n.Annotations))
}}

// CacheByObject is the cache configuration the tracker's manager needs:
// Nodes trimmed to mcostate.NodeFields.
func CacheByObject() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{&corev1.Node{}: {Transform: mcostate.NodeFields.Transform()}}
}
