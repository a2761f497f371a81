package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/cachestore"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/optionalkind"
	"github.com/upshift-io/upshift/libs/pace"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
)

// FieldManager is the server-side apply field manager of every write.
const FieldManager = "update-status-controller"

// clusterRequest is the single work item every event maps to.
var clusterRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: updatev1alpha1.UpgradeStatusName}}

// DefaultMinRecomputeInterval is the least time between the starts of two
// recomputations, unless Reconciler.MinRecomputeInterval says otherwise.
// During a rollout some Node changes many times a second, and on a small
// cluster a recomputation takes milliseconds, so the duty
// cycle alone let almost every change have its own: in a 500-worker upgrade
// that made the controller one of the largest users of CPU. The report is
// for people, and half a second late is still current; the insight latency
// the design targets is 2 s.
const DefaultMinRecomputeInterval = 500 * time.Millisecond

// Reconciler publishes the update status of the cluster.
type Reconciler struct {
	Client client.Client
	// Recorder records the Events of the plans (libs/events).
	Recorder *events.Recorder
	// Metrics are the controller's metrics (NewMetrics).
	Metrics *Metrics
	Clock   clock.PassiveClock
	// Namespace holds the prototype ConfigMap; empty disables it.
	Namespace string
	// MinRecomputeInterval: the least time between the starts of two
	// recomputations (0: DefaultMinRecomputeInterval). A simulated cluster
	// running many times faster than a real one scales it down the same way.
	MinRecomputeInterval time.Duration

	// APIReader reads what is not cached (the MCO Deployment); default: the
	// manager's API reader.
	APIReader client.Reader
	// Alerts, when set, are read for alert-based health insights.
	Alerts *Alerts
	alerts *alertsPoller

	// runs are node-gate's runs, watched when node-gate is installed (nodegate.go).
	runs *optionalkind.Kind

	prototypeSeen *bool         // last observed presence of the prototype ConfigMap, to log changes once
	lastMCOImage  *mcoImageRead // see mcoImage

	// insights writes the NodeProgressInsights (publisher.go), status the
	// UpgradeStatus's status (statuspublisher.go).
	insights *insightPublisher
	status   *statusPublisher
	// pace spaces the recomputations (libs/pace): at most about half of
	// the wall time, and at least MinRecomputeInterval apart.
	pace *pace.Pacer
	// nodeStore and insightStore are the informer stores of Nodes and
	// NodeProgressInsights (read.go).
	nodeStore, insightStore toolscache.Store
}

// SetupWithManager registers the reconciler, its watches and its
// publishers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return r.setupWithManager(mgr, r)
}

// setupWithManager is SetupWithManager with the reconciler the controller
// calls: r itself, or in a test r wrapped to see its results.
func (r *Reconciler) setupWithManager(mgr ctrl.Manager, do reconcile.Reconciler) error {
	if r.Metrics == nil {
		return errors.New("the update-status reconciler needs its Metrics (NewMetrics)")
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	var err error
	if r.nodeStore, err = cachestore.Of(mgr.GetCache(), &corev1.Node{}); err != nil {
		return err
	}
	if r.insightStore, err = cachestore.Of(mgr.GetCache(), &updatev1alpha1.NodeProgressInsight{}); err != nil {
		return err
	}
	r.insights = newInsightPublisher(r.Client, r.Metrics)
	if err := mgr.Add(r.insights); err != nil {
		return err
	}
	r.status = newStatusPublisher(r.Client, r.Recorder, r.Metrics)
	if err := mgr.Add(r.status); err != nil {
		return err
	}
	// Wall time, whatever clock the assessment uses: it paces real work.
	if r.MinRecomputeInterval == 0 {
		r.MinRecomputeInterval = DefaultMinRecomputeInterval
	}
	r.pace = pace.New(clock.RealClock{}, r.MinRecomputeInterval)
	toCluster := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{clusterRequest}
	})
	// Our own objects matter only when someone deletes them: our writes would
	// otherwise each trigger a recomputation that finds nothing to do.
	onlyDeletes := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	// The publisher's record of a write is dropped as soon as the cache
	// shows it, rather than at the next recomputation: on a first start
	// there are thousands. A deleted insight must be written again even if
	// the cache never showed the last write to it.
	insightEvents := handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.insights.seen(e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.insights.seen(e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.insights.forget(e.Object.GetName())
			q.Add(clusterRequest)
		},
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("updatestatus").
		Watches(&updatev1alpha1.UpgradeStatus{}, toCluster, builder.WithPredicates(onlyDeletes)).
		Watches(&updatev1alpha1.NodeProgressInsight{}, insightEvents).
		Watches(&configv1.ClusterVersion{}, toCluster).
		Watches(&configv1.ClusterOperator{}, toCluster).
		Watches(&mcfgv1.MachineConfigPool{}, toCluster).
		// Only the release-version annotation of a MachineConfig is read; its
		// rendered content can be megabytes.
		Watches(&mcfgv1.MachineConfig{}, toCluster, builder.OnlyMetadata).
		Watches(&corev1.Node{}, toCluster, builder.WithPredicates(nodeChanged))
	if r.Namespace != "" {
		b = b.Watches(&corev1.ConfigMap{}, toCluster)
	}
	// One computation at start, whatever exists: on a cluster with nothing to
	// watch yet, it is what creates the UpgradeStatus and says why it is empty.
	b = b.WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		q.Add(clusterRequest)
		return nil
	}))
	b, err = r.setupAlerts(mgr, b)
	if err != nil {
		return err
	}
	ctl, err := b.Build(do)
	if err != nil {
		return err
	}
	return r.setupNodeGate(mgr, ctl, toCluster)
}

// Reconcile recomputes the whole insight set and publishes what changed:
// it reads, decide (plan.go) plans, and it executes the plan: the node
// insights' writes and the status with its Events go to their publishers,
// the prototype ConfigMap is patched here.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if !r.pace.Begin(ctx) {
		return reconcile.Result{}, nil // shutting down
	}
	defer r.pace.End()
	start := time.Now() // the metric is wall time, whatever clock the assessment uses
	defer func() { r.Metrics.reconcileDuration.Observe(time.Since(start).Seconds()) }()
	logger := log.FromContext(ctx)

	// Read.
	published, err := r.published(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	published.status = r.status.newest(published.status)
	cached := published.nodes
	published.nodes = r.insights.view(cached)
	snap, err := r.snapshot(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	var alertsCond *metav1.Condition
	snap.Alerts, alertsCond = r.lastAlerts(snap.Now)
	prototype, err := r.prototype(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	result, assessErr := assess.Assess(snap, published.previous())
	if assessErr != nil {
		logger.Info("cannot assess the update status", "reason", assessErr.Error())
	}
	us, err := r.ensureUpgradeStatus(ctx, published.status)
	if err != nil {
		return reconcile.Result{}, err
	}

	// Plan.
	p := decide(planInput{
		now: snap.Now, object: us, published: us.Status, desired: result.Status, assessErr: assessErr, nextCheck: result.NextCheck,
		alertsConfigured: r.alerts != nil, alerts: alertsCond, prototype: prototype,
		publishedNodes: published.nodes, desiredNodes: result.Nodes, owner: r.nodeOwner(),
	})

	// Execute. The node insights and the status are handed to their
	// publishers: the next recomputation does not wait for their round
	// trips. The Events follow the status write alone, so a failed node
	// write cannot lose them.
	r.insights.handOver(p.nodes, cached)
	if assessErr == nil {
		r.Metrics.observe(&result)
	}
	prototypeErr := p.prototypeErr
	if prototypeErr == nil && p.prototype != nil {
		prototypeErr = r.writePrototype(ctx, *p.prototype)
	}
	// complete: everything this recomputation found is published once its
	// status is written. The last-success metric moves only then: a node
	// insight or a status that cannot be written keeps it where it was.
	complete := assessErr == nil && r.insights.failures() == 0 && prototypeErr == nil
	if p.status != nil {
		r.status.handOver(newStatusWrite(us, p.status, p.events, complete, snap.Now))
	} else if complete && r.status.idle() {
		r.Metrics.markSuccess(snap.Now)
	}
	if prototypeErr != nil {
		return reconcile.Result{}, prototypeErr
	}
	return reconcile.Result{RequeueAfter: p.requeueAfter}, nil
}

// ensureUpgradeStatus returns the UpgradeStatus singleton, creating it first
// if it does not exist: the object the plan's status and Events are for.
func (r *Reconciler) ensureUpgradeStatus(ctx context.Context, existing *updatev1alpha1.UpgradeStatus) (*updatev1alpha1.UpgradeStatus, error) {
	if existing != nil {
		return existing, nil
	}
	us := &updatev1alpha1.UpgradeStatus{ObjectMeta: metav1.ObjectMeta{Name: updatev1alpha1.UpgradeStatusName}}
	err := r.Client.Create(ctx, us, client.FieldOwner(FieldManager))
	if apierrors.IsAlreadyExists(err) {
		err = r.Client.Get(ctx, client.ObjectKeyFromObject(us), us)
	}
	if err != nil {
		return nil, fmt.Errorf("creating UpgradeStatus %s: %w", us.Name, err)
	}
	return us, nil
}
