// Package controller is the upgrade-scheduler's thin reconciler: it reads the
// cluster from informer caches, asks the planner (package plan) what to do,
// performs the one side effect the planner chose, writes the status, and
// records the planner's Events. Every decision is the planner's.
package controller

import (
	"context"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/nodes"
	"github.com/upshift-io/upshift/libs/optionalkind"
	"github.com/upshift-io/upshift/libs/ownwrite"
	"github.com/upshift-io/upshift/libs/requeue"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/metrics"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
	"github.com/upshift-io/upshift/services/upgradescheduler/silence"
)

// Name is the controller's name, in logs and metrics.
const Name = "upgradescheduler"

// Reconciler runs UpgradeConfigs in Namespace (all namespaces when empty),
// reading the configuration ConfigMap from each UpgradeConfig's namespace.
type Reconciler struct {
	Client client.Client
	// APIReader reads what is not cached: the pods on a worker node whose
	// drain may be forced (mgr.GetAPIReader() when nil).
	APIReader client.Reader
	// Recorder records the plan's Events (libs/events: nil records none).
	Recorder     *events.Recorder
	Namespace    string
	Clock        clock.PassiveClock
	Integrations plan.Integrations
	// CheckURLs runs the external dependency checks; nil means plain HTTP GETs.
	CheckURLs func(ctx context.Context, urls []string, timeout time.Duration) (bool, string)
	// Silences holds the maintenance silences in Alertmanager; nil: no
	// silences (Integrations.Silences must then be false).
	Silences *silence.Client
	// SilenceTTL is each lease's length (silence.DefaultTTL when zero).
	SilenceTTL time.Duration
	// Alerts reads the firing alerts for the critical-alerts health check;
	// nil: the check reports "not configured".
	Alerts alerts.Client
	// OCM delivers the notifications when the configuration's source is
	// OCM; nil: no notifications whatever the configuration says.
	OCM *OCM
	// Metrics are the scheduler's metrics (metrics.New on the manager's
	// registry in production); nil: kept on a registry nobody serves.
	Metrics *metrics.Metrics

	// runs are node-gate's runs, watched once node-gate is installed.
	runs *optionalkind.Kind

	mu       sync.Mutex
	lastGood map[string]*config.Config // per namespace

	// expect holds the next plan until the cache shows this scheduler's
	// last writes: the status it applied, the ClusterVersion it patched,
	// the MachineSets it created or deleted. A plan from an older view
	// would decide (and apply) again what the last one did.
	expect ownwrite.Expectations

	// alertsReads keeps the last critical-alerts read (criticalAlerts).
	alertsReads alerts.Reads[*plan.AlertsResult]

	// pdbNodes are the nodes of the pods of the blocking budgets.
	pdbNodes pdbNodes

	// results are the completed attempts' paging alerts, by UpgradeConfig.
	resultsMu sync.Mutex
	results   map[string]upgradeResult
}

// SetupWithManager watches the UpgradeConfigs and everything the planner
// reads; any change of the cluster re-plans every UpgradeConfig (there is one
// per cluster in practice).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.CheckURLs == nil {
		r.CheckURLs = checkURLs
	}
	if r.Metrics == nil {
		r.Metrics = metrics.New(prometheus.NewRegistry())
	}
	if r.OCM != nil {
		r.OCM.observe = r.Metrics.ObserveOCMRequest
	}
	upgradeConfigs := func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list upgradev1alpha1.UpgradeConfigList
		if err := mgr.GetClient().List(ctx, &list, client.InNamespace(r.Namespace)); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, uc := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&uc)})
		}
		return out
	}
	all := handler.EnqueueRequestsFromMapFunc(upgradeConfigs)
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return r.Namespace == "" || o.GetNamespace() == r.Namespace
	})
	ctl, err := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&upgradev1alpha1.UpgradeConfig{}, builder.WithPredicates(inNamespace)).
		Watches(&configv1.ClusterVersion{}, all).
		Watches(&configv1.ClusterOperator{}, all).
		Watches(&mcfgv1.MachineConfigPool{}, all).
		Watches(&corev1.Node{}, batched(upgradeConfigs, nodeBatch), builder.WithPredicates(nodeChanged)).
		Watches(&policyv1.PodDisruptionBudget{}, all).
		Watches(&machinev1beta1.MachineSet{}, all, builder.WithPredicates(inMachineAPI)).
		Watches(&machinev1beta1.Machine{}, all, builder.WithPredicates(inMachineAPI)).
		Watches(&corev1.ConfigMap{}, all, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == config.ConfigMapName
		}))).
		Build(r)
	if err != nil {
		return err
	}
	// node-gate's runs, once node-gate is installed: the worker deadline and
	// silence allow for their holds (plan/gates.go).
	r.runs, err = optionalkind.Setup(mgr, ctl, &nodegatev1alpha1.MutexRunConfig{}, gating.RunsCRD, all)
	return err
}

// clusterOf is what the metrics need from ClusterVersion.
func clusterOf(s plan.Snapshot) metrics.Cluster {
	cv := s.ClusterVersion
	if cv == nil {
		return metrics.Cluster{}
	}
	return metrics.Cluster{ID: string(cv.Spec.ClusterID), Version: plan.CurrentVersion(cv)}
}

var inMachineAPI = predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == plan.MachineAPINamespace })

// nodeBatch is how long a Node change waits for the others of its burst
// before the plan runs. In a rollout some Node changes every few
// milliseconds (each worker is cordoned, drained, rebooted, uncordoned), and
// a plan per change read and walked every Node back to back: a sixth of the
// CPU that Upshift added to a 500-worker update on a two-core machine, for
// decisions that do not need the change at once. What the scheduler does
// on a Node change (time a drain whose timeouts are minutes, see a
// temporary node Ready, count cordoned nodes before the upgrade) may wait a
// second, as MUO's did a minute. Everything else it watches (the
// UpgradeConfig, ClusterVersion, the pools that say the workers are done)
// plans at once.
const nodeBatch = time.Second

// batched enqueues what mapFn maps an event to after d, for the changes of
// a burst to share one plan: the work queue keeps one pending request per
// key, due at the earliest time asked.
func batched(mapFn handler.MapFunc, d time.Duration) handler.EventHandler {
	enqueue := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range mapFn(ctx, o) {
			q.AddAfter(req, d)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
	}
}

// nodeChanged drops kubelet heartbeats: only what the health checks read counts.
var nodeChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Node)
	n, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return !equality.Semantic.DeepEqual(o.Annotations, n.Annotations) || o.Spec.Unschedulable != n.Spec.Unschedulable ||
		nodes.Ready(o) != nodes.Ready(n) || !equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints)
}}

// decide plans from in, reading the inputs outside the cluster only for a
// plan that asks for them: the firing alerts (most plans run no health
// check, and a read of an unreachable Alertmanager costs seconds), a run of
// the HTTP dependency checks, and the UpgradeConfig's silences. Planning
// again is cheap; the plan that asked is discarded. The error is the
// silences' listing's, for the lease step to be retried.
func (r *Reconciler) decide(ctx context.Context, in plan.Input) (plan.Output, error) {
	in.Snapshot.AlertsUnread = r.Alerts != nil && in.Config != nil
	in.Snapshot.LeasesUnread = r.Silences != nil
	in.SilenceTTL = r.SilenceTTL
	var listErr error
	for {
		out := plan.Plan(in)
		switch {
		case out.NeedsAlerts:
			in.Snapshot.AlertsUnread = false
			in.Snapshot.Alerts = r.criticalAlerts(ctx, in.Config)
		case out.NeedsExternalChecks:
			ok, details := r.CheckURLs(ctx, in.Config.HTTPCheckURLs, in.Config.HTTPCheckTimeout)
			in.Snapshot.ExternalChecks = &plan.ExternalChecksResult{Passed: ok, Details: details}
		case len(out.NeedsPDBNodes) > 0:
			r.readPDBNodes(ctx, &in.Snapshot, out.NeedsPDBNodes)
		case len(out.NeedsDrainPods) > 0:
			r.readDrainPods(ctx, &in.Snapshot, out.NeedsDrainPods)
		case out.NeedsLeases:
			in.Snapshot.LeasesUnread = false
			in.Snapshot.Leases = &plan.LeasesRead{}
			in.Snapshot.Leases.Existing, listErr = r.Silences.List(ctx, silence.OwnerFilter(string(in.UpgradeConfig.UID)))
			if listErr != nil {
				in.Snapshot.Leases.Err = listErr.Error()
			}
		default:
			return out, listErr
		}
	}
}

// Reconcile plans one UpgradeConfig and carries the plan out.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	// Past an expectation's deadline planning goes ahead: every side effect
	// is decided from what the cluster shows, so a repeat is harmless.
	if wait, err := r.expect.Wait(ctx, r.Client, r.Clock.Now()); err != nil || wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, err
	}
	uc := &upgradev1alpha1.UpgradeConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, uc); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.Forget(req.String())
			r.Metrics.ClearNotificationFailed(req.Name, nil)
			r.resultsMu.Lock()
			delete(r.results, req.String())
			r.resultsMu.Unlock()
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if uc.DeletionTimestamp == nil && !controllerutil.ContainsFinalizer(uc, plan.Finalizer) {
		// The finalizer goes on before anything is created that must be removed.
		patch := client.MergeFrom(uc.DeepCopy())
		controllerutil.AddFinalizer(uc, plan.Finalizer)
		if err := r.Client.Patch(ctx, uc, patch); err != nil {
			return reconcile.Result{}, err
		}
		r.expect.Updated(uc, r.Clock.Now())
	}
	cfg, cfgErr := r.config(ctx, uc.Namespace)
	snap, err := r.snapshot(ctx, cfg)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := r.Clock.Now()
	integrations := r.Integrations
	// Notifications go to OCM only when the configuration says OCM: with
	// LOCAL (or none) the scheduler never talks to OCM.
	integrations.Notifications = r.OCM != nil && ocmSource(cfg)
	out, leaseErr := r.decide(ctx, plan.Input{UpgradeConfig: uc, Config: cfg, ConfigError: cfgErr, Snapshot: snap, Integrations: integrations, Now: now})

	// The leases first: on a deletion the finalizer goes only in a plan
	// after they are expired and status.silences is empty.
	var done plan.Done
	if out.Leases != nil {
		done.Leases, leaseErr = r.Silences.Apply(ctx, out.Leases.Plan)
		done.LeasesApplied = true
	}
	if leaseErr != nil {
		logger.Info("Alertmanager silences not in step", "error", leaseErr.Error())
	}
	action := out.Action
	if plan.HoldForLeases(action, leaseErr) {
		// The status (what the lease step recorded) is written and the
		// requeue for leaseErr retries; the finalizer goes in a later plan.
		action = nil
	}
	var actErr error
	if a := action; a != nil {
		done.Action = a
		done.Outcome, actErr = r.act(ctx, uc, a, cfg, snap.ClusterVersion)
		if actErr != nil {
			logger.Info("side effect failed", "action", a.Kind, "step", a.Step, "error", actErr.Error())
			done.Err = actErr
		}
	}
	status := plan.Executed(out, done, now)
	if a := action; a != nil && a.Kind == plan.RemoveFinalizer {
		// The object is gone or going; there is no status left to write.
		if actErr == nil {
			r.Metrics.Forget(req.String())
		}
		return reconcile.Result{}, actErr
	}
	if !equality.Semantic.DeepEqual(uc.Status, status) {
		done := metrics.StepsCompleted(&uc.Status, &status)
		written, err := writeStatus(ctx, r.Client, uc, &status)
		if err != nil {
			if apierrors.IsNotFound(err) {
				r.Metrics.Forget(req.String())
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, err
		}
		r.expect.Updated(written, r.Clock.Now())
		uc = written
		// Only once written: a write that failed is planned again, and the
		// step would be counted twice.
		r.Metrics.ObserveSteps(done)
	}
	// The drains' steps once their records are written: a step recorded
	// and not taken (a crash in between) is taken again by the next plan.
	drainErr := r.force(ctx, out.Drains)
	samples := metrics.Samples(uc, clusterOf(snap))
	fired, ok, retryResult := r.upgradeResult(ctx, req.String(), uc)
	if ok {
		samples = append(samples, metrics.UpgradeResultSample(uc, fired))
	}
	r.Metrics.Update(req.String(), samples)
	r.Metrics.ClearNotificationFailed(uc.Name, func(event string) bool { return plan.NotificationWanted(uc.Status, event) })
	// One call: libs/events numbers the actions of Events of one reason
	// that say different things (two failing health checks), so that each
	// message reaches `kubectl describe`.
	evs := make([]events.Event, 0, len(out.Events))
	for _, e := range out.Events {
		if e.Warning {
			evs = append(evs, events.Warning(uc, e.Reason, "Plan", e.Message))
		} else {
			evs = append(evs, events.Normal(uc, e.Reason, "Plan", e.Message))
		}
	}
	r.Recorder.Record(evs...)
	if actErr != nil {
		// Retried with the controller's rate-limited backoff.
		return reconcile.Result{}, actErr
	}
	if leaseErr != nil {
		return reconcile.Result{}, leaseErr
	}
	if drainErr != nil {
		return reconcile.Result{}, drainErr
	}
	if retryResult {
		// Prometheus's history does not change with any Kubernetes event.
		return reconcile.Result{RequeueAfter: requeue.Min(out.RequeueAfter, time.Minute)}, nil
	}
	// After a side effect no requeue is needed: the object it changed and the
	// status (its step's attempts) both come back as watch events, and the
	// next plan waits until the cache shows them (r.expect).
	return reconcile.Result{RequeueAfter: out.RequeueAfter}, nil
}
