package controller

import (
	"context"
	"fmt"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
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
	"github.com/upshift-io/upshift/services/updatestatus/assess"
)

// FieldManager is the server-side apply field manager of every write.
const FieldManager = "update-status-controller"

// Recompute periods: the assessment depends on the clock too (estimates,
// Slow and Stalled, health thresholds of minutes), so the status is
// recomputed this often even when no object changes.
const (
	recomputeWhileUpdating = 30 * time.Second
	recomputeWhileIdle     = 2 * time.Minute
)

// clusterRequest is the single work item every event maps to.
var clusterRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: updatev1alpha1.UpgradeStatusName}}

// Reconciler publishes the update status of the cluster.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	// Namespace holds the prototype ConfigMap; empty disables it.
	Namespace string

	// APIReader reads what is not cached (the MCO Deployment); default: the
	// manager's API reader.
	APIReader client.Reader
	// Alerts, when set, are read for alert-based health insights.
	Alerts *Alerts
	alerts *alertsPoller

	prototypeSeen *bool         // last observed presence of the prototype ConfigMap, to log changes once
	lastMCOImage  *mcoImageRead // see mcoImage

	// lastWrite is the UpgradeStatus as this process last wrote it, and the
	// cache's resourceVersion it was written over. Until the cache moves past
	// that version it has not seen the write, and lastWrite is the truth:
	// otherwise a recomputation right after a write would compare against
	// the stale status, write again and repeat its Events.
	lastWrite *ownWrite
}

type ownWrite struct {
	overRV string
	status *updatev1alpha1.UpgradeStatus
}

// withOwnWrite returns the published UpgradeStatus, or this process's last
// write of it while the cache has not caught up with that write.
func (r *Reconciler) withOwnWrite(cached *updatev1alpha1.UpgradeStatus) *updatev1alpha1.UpgradeStatus {
	if r.lastWrite == nil || (cached != nil && cached.ResourceVersion != r.lastWrite.overRV) {
		return cached
	}
	return r.lastWrite.status
}

// SetupWithManager registers the reconciler and its watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
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
	b := ctrl.NewControllerManagedBy(mgr).
		Named("updatestatus").
		Watches(&updatev1alpha1.UpgradeStatus{}, toCluster, builder.WithPredicates(onlyDeletes)).
		Watches(&updatev1alpha1.NodeProgressInsight{}, toCluster, builder.WithPredicates(onlyDeletes)).
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
	b, err := r.setupAlerts(mgr, b)
	if err != nil {
		return err
	}
	return b.Complete(r)
}

// Reconcile recomputes the whole insight set and publishes what changed.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	start := time.Now() // the metric is wall time, whatever clock the assessment uses
	defer func() { reconcileDuration.Observe(time.Since(start).Seconds()) }()
	logger := log.FromContext(ctx)

	published, err := r.published(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	published.status = r.withOwnWrite(published.status)
	snap, err := r.snapshot(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	result, assessErr := assess.Assess(snap, published.previous())

	us, err := r.ensureUpgradeStatus(ctx, published.status)
	if err != nil {
		return reconcile.Result{}, err
	}
	if assessErr != nil {
		// Nothing to publish but the reason: keep the last insights, say why
		// they are stale, and wait for the objects to change.
		logger.Info("cannot assess the update status", "reason", assessErr.Error())
		return reconcile.Result{}, r.publishStatus(ctx, us, us.Status, statusCondition(assessErr, snap.Now))
	}

	desired := result.Status
	if err := r.publishStatus(ctx, us, desired, statusCondition(nil, snap.Now)); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.publishNodes(ctx, published.nodes, result.Nodes, snap.Nodes); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.publishPrototype(ctx, desired.ControlPlane); err != nil {
		return reconcile.Result{}, err
	}
	recordEvents(r.Recorder, us, published.status, &desired)
	observe(&result)
	lastSuccess.Store(r.Clock.Now().Unix())

	if updating(&desired) {
		return reconcile.Result{RequeueAfter: recomputeWhileUpdating}, nil
	}
	return reconcile.Result{RequeueAfter: recomputeWhileIdle}, nil
}

// statusCondition is the controller's own condition for an assessment outcome.
func statusCondition(assessErr error, now time.Time) metav1.Condition {
	c := metav1.Condition{
		Type: updatev1alpha1.ConditionStatusAvailable, Status: metav1.ConditionTrue,
		Reason: updatev1alpha1.ReasonAsExpected, Message: "The update status is current.",
		LastTransitionTime: metav1.NewTime(now),
	}
	if assessErr != nil {
		c.Status, c.Reason = metav1.ConditionFalse, updatev1alpha1.ReasonCannotAssess
		c.Message = "Cannot assess the update status: " + assessErr.Error()
	}
	return c
}

// updating is true while the control plane or any worker pool is updating.
func updating(s *updatev1alpha1.UpgradeStatusStatus) bool {
	if s.ControlPlane != nil && meta.IsStatusConditionTrue(s.ControlPlane.Conditions, updatev1alpha1.ConditionUpdating) {
		return true
	}
	for _, p := range s.WorkerPools {
		if meta.IsStatusConditionTrue(p.Conditions, updatev1alpha1.ConditionUpdating) {
			return true
		}
	}
	return false
}

// ensureUpgradeStatus returns the UpgradeStatus singleton, creating it first
// if it does not exist.
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

// publishStatus writes the status if it differs from the published one.
func (r *Reconciler) publishStatus(ctx context.Context, us *updatev1alpha1.UpgradeStatus,
	insights updatev1alpha1.UpgradeStatusStatus, cond metav1.Condition) error {
	desired := insights.DeepCopy()
	desired.Conditions = append([]metav1.Condition(nil), us.Status.Conditions...)
	meta.SetStatusCondition(&desired.Conditions, cond)
	r.setAlertsCondition(&desired.Conditions, cond.LastTransitionTime.Time)
	if equality.Semantic.DeepEqual(&us.Status, desired) {
		return nil
	}
	obj := &updatev1alpha1.UpgradeStatus{
		TypeMeta:   metav1.TypeMeta{APIVersion: updatev1alpha1.GroupVersion.String(), Kind: "UpgradeStatus"},
		ObjectMeta: metav1.ObjectMeta{Name: us.Name},
		Status:     *desired,
	}
	if err := applyStatus(ctx, r.Client, obj); err != nil {
		r.lastWrite = nil // the outcome is unknown: trust the cache again
		return fmt.Errorf("publishing UpgradeStatus status: %w", err)
	}
	written := us.DeepCopy()
	written.Status = *desired
	r.lastWrite = &ownWrite{overRV: us.ResourceVersion, status: written}
	writes.WithLabelValues("upgradestatus").Inc()
	return nil
}
