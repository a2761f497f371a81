// Package controller is the mcp-tracker's thin reconciler: it reads the
// MachineConfigPools, the Nodes (trimmed to their MCO annotations) and the
// UpgradeConfigs from informer caches, asks package plan what every pool's
// update looks like and what to write, exports the figures as metrics,
// writes the tracker's own part of each UpgradeConfig's status the plan
// names with server-side apply (libs/apply) under the field manager
// FieldManager, and records the plan's Events (libs/events).
package controller

import (
	"context"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
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

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/apply"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/nodes"
	"github.com/upshift-io/upshift/libs/optionalkind"
	"github.com/upshift-io/upshift/libs/pace"
	"github.com/upshift-io/upshift/libs/trim"
	"github.com/upshift-io/upshift/services/mcptracker/plan"
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
	// DefaultMinPassInterval: a rollout changes some Node many times a
	// second, and on a few hundred nodes a pass takes milliseconds, so
	// without a floor almost every change had a pass of its own. The
	// status is written at most every MinWriteInterval anyway; the
	// metrics and Events may be half a second late.
	DefaultMinPassInterval = 500 * time.Millisecond
)

// key is the one work item: every pool is tracked in one pass, since a
// node's pool depends on every pool's selector.
var key = reconcile.Request{NamespacedName: types.NamespacedName{Name: "pools"}}

// Reconciler tracks every pool and writes into the UpgradeConfigs of
// Namespace (all namespaces when empty).
type Reconciler struct {
	Client client.Client
	// Recorder records the plan's Events; nil records none.
	Recorder *events.Recorder
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
	// MinPassInterval: the least time between the starts of two passes
	// (libs/pace); changes meanwhile are coalesced into the next pass.
	MinPassInterval time.Duration

	// runs are node-gate's runs, watched once node-gate is installed.
	runs *optionalkind.Kind

	// pace spaces the passes, in wall time whatever Clock says: it paces
	// real work.
	pace *pace.Pacer

	mu sync.Mutex
	// state is what the previous pass remembered (nil before the first).
	state     *track.State
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
	if r.MinPassInterval == 0 {
		r.MinPassInterval = DefaultMinPassInterval
	}
	r.pace = pace.New(clock.RealClock{}, r.MinPassInterval)
	r.lastWrite = map[types.NamespacedName]time.Time{}
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{key}
	})
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return r.Namespace == "" || o.GetNamespace() == r.Namespace
	})
	ctl, err := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		Watches(&mcfgv1.MachineConfigPool{}, all).
		Watches(&corev1.Node{}, all, builder.WithPredicates(nodeChanged)).
		Watches(&upgradev1alpha1.UpgradeConfig{}, all, builder.WithPredicates(inNamespace)).
		Build(r)
	if err != nil {
		return err
	}
	// node-gate's gate pools are counted in their source pools; the tracker
	// does not need node-gate, and reads its runs from the moment its CRD
	// is established.
	r.runs, err = optionalkind.Setup(mgr, ctl, &nodegatev1alpha1.MutexRunConfig{}, gating.RunsCRD, all)
	return err
}

// listRuns reads node-gate's runs; none while node-gate is not installed.
func (r *Reconciler) listRuns(ctx context.Context) ([]gating.Run, error) {
	if !r.runs.Watched() {
		return nil, nil
	}
	var list nodegatev1alpha1.MutexRunConfigList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]gating.Run, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, gating.Read(&list.Items[i]))
	}
	return out, nil
}

// Reconcile runs one pass over every pool: read, plan, write, record.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if !r.pace.Begin(ctx) {
		return reconcile.Result{}, nil // shutting down
	}
	defer r.pace.End()
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
	runs, err := r.listRuns(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.Clock.Now()
	p := plan.Plan(plan.Input{
		Pools: pools.Items, Nodes: nodes.Items, UpgradeConfigs: ucs.Items, NodeGateRuns: runs,
		Prev: r.state, Now: now, StuckAfter: max(r.StuckAfter, 0), RemovedRetention: r.RemovedRetention,
		LastWrite: r.lastWrite, MinWriteInterval: r.MinWriteInterval,
	})
	r.state = &p.Track.State
	r.lastWrite = p.LastWrite
	if r.Metrics != nil {
		r.Metrics.Observe(p.Track)
	}

	var firstErr error
	for _, w := range p.Writes {
		if _, err := apply.Status(ctx, r.Client, w.Status, FieldManager); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			logger.Info("status apply failed", "upgradeconfig", w.Key.String(), "error", err.Error())
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		r.lastWrite[w.Key] = now
		if r.Metrics != nil {
			r.Metrics.writes.Inc()
		}
	}
	// The Events report what the pass saw in the pools, which a failed
	// write does not undo: they are recorded either way. One call each:
	// the tracker's Events of one kind on one object (a NodeStuck per
	// node, thousands in a large stuck pool) are meant to fold into one
	// series, as the events library does across calls, and not to stay
	// apart as the Events of one call that say different things do.
	for _, e := range p.Events {
		r.Recorder.Record(e)
	}
	if firstErr != nil {
		return reconcile.Result{}, firstErr
	}
	return reconcile.Result{RequeueAfter: p.Requeue}, nil
}

// nodeChanged drops node updates the tracker does not read (heartbeats,
// other annotations, images...).
var nodeChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Node)
	n, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return !equality.Semantic.DeepEqual(o.Labels, n.Labels) || nodes.Ready(o) != nodes.Ready(n) || o.Spec.Unschedulable != n.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(mcostate.Annotations(o.Annotations), mcostate.Annotations(n.Annotations))
}}

// CacheOptions is the cache configuration the tracker's manager needs:
// Nodes trimmed to mcostate.NodeFields, node-gate's runs to what
// libs/gating reads (by the default transform: a per-kind entry would need
// the kind served when the manager starts, and node-gate may come later),
// and node-gate's CRD, by name, watched only until it is established (RBAC
// grants that one name only).
func CacheOptions() cache.Options {
	crd, crdEntry := optionalkind.CacheEntry(gating.RunsCRD)
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Node{}: {Transform: mcostate.NodeFields.Transform()},
			crd:            crdEntry,
		},
		DefaultTransform: trim.Func(gating.TrimRun),
	}
}
