// Package controller is node-gate's thin reconciler. For one
// MutexRunConfig it reads everything the planner needs from informer caches
// (Nodes trimmed to their labels, the MCO's annotations, Ready and
// schedulability; only hook Jobs), asks package plan for the decision, adds
// the drain remediation's decision for released nodes the MCO is draining,
// writes the status first — so originals and drain clocks are recorded
// before anything changes — and then executes the actions and records the
// Events. A pass whose actions are only hook Jobs and hold labels hands them
// to a background runner (actionRunner) and, when its status only records
// progress within a round already stored (plan.Deferrable), leaves that
// status to a background writer (statusWriter): the update's critical path
// carries one write per hop, and no pass waits for another's writes.
// A finalizer keeps the run until the planner has restored every pool,
// selector and label it changed.
package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"golang.org/x/sync/errgroup"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/cachestore"
	libdrain "github.com/upshift-io/upshift/libs/drain"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/ownwrite"
	"github.com/upshift-io/upshift/libs/requeue"
	"github.com/upshift-io/upshift/libs/trim"
	"github.com/upshift-io/upshift/services/nodegate/drain"
	"github.com/upshift-io/upshift/services/nodegate/metrics"
	"github.com/upshift-io/upshift/services/nodegate/plan"
)

// Name is the controller's name, in logs.
const Name = "nodegate"

// conflictRetry: a write lost to a newer one is retried this soon (the
// newer write's event usually comes first).
const conflictRetry = 200 * time.Millisecond

// Finalizer keeps a run until what it changed is restored.
const Finalizer = "nodegate.upshift.io/restore"

// Reconciler runs the MutexRunConfigs.
type Reconciler struct {
	Client client.Client
	// APIReader reads the pods and PodDisruptionBudgets of draining nodes
	// straight from the API server: node-gate caches no pods.
	APIReader client.Reader
	// Recorder records the planner's and the drain remediation's Events;
	// nil records none.
	Recorder *events.Recorder
	Clock    clock.PassiveClock
	Metrics  *metrics.Metrics
	// Alerts serves runs with a health gate; nil makes such runs wait
	// (fail closed) with the reason in status.
	Alerts alerts.Client
	// health keeps the last read of the alerts (and the maintenance
	// silences) for the passes that follow: every Node event makes a pass.
	health alerts.Reads[healthRead]
	// JobPlaces and GatedPools bound what runs may use (see plan.Input);
	// empty GatedPools: any pool.
	JobPlaces  plan.JobPlaces
	GatedPools []string
	// StatusWriteInterval is how long a status left to the background
	// writer waits for newer ones of its run; 0:
	// DefaultStatusWriteInterval.
	StatusWriteInterval time.Duration

	// written lets a pass plan from a run as this controller last wrote it
	// while the cache lags behind that write.
	written ownwrite.Writes[*nodegatev1alpha1.MutexRunConfig]
	// pools holds every pass until the cache shows node-gate's own last
	// pool writes. The planner decides from what it reads: a pass that
	// paused a pool, followed by a pass whose cache still shows the pool
	// unpaused, would take the pool for restored (unpaused, as it was
	// before the run) and drop the recorded original; the pause then lands
	// and the pool stays paused for good.
	pools ownwrite.Expectations
	// nodeWrites lets a pass plan from a Node as node-gate last labelled
	// it while the cache lags behind the write: the planner is level-based,
	// and a release the cache does not show yet would be sent again (a
	// second patch on the node in about two hops of five at 150 workers,
	// docs/benchmarks/node-gate.md). Kept as the cache keeps Nodes
	// (nodeFields), and shared: nobody writes to a planner's input.
	nodeWrites ownwrite.Writes[*corev1.Node]
	// statuses writes the deferrable statuses (plan.Deferrable) in the
	// background, and holds them for planning until written.
	statuses *statusWriter
	// actions carries out the actions of the passes that act first, in
	// the background.
	actions *actionRunner
	// planned holds the runs this process has taken a pass of as far as
	// its status. A run's first pass reads the Nodes past the cache: a leader that
	// takes over may find the last status of the one before lost (a release
	// is its label first, the status after) while its own cache, warm from
	// standing by, does not show that label removal yet; from that view it
	// would release another node into the same slot. The apiserver's list
	// is current, so the first decision sees the release it must count.
	planned sync.Map
	// nodes is the Node informer's store: the passes read the cached Nodes
	// themselves (see plan.Input.Nodes), not a list of copies.
	nodes toolscache.Store
	// jobs are the hook Jobs by run, the cache's objects (see jobIndex).
	jobs *jobIndex
}

// SetupWithManager watches runs, rules, targets, pools, nodes, hook Jobs
// and the ClusterVersion; every change of a shared object wakes every run.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = events.NewRecorder(nil)
	}
	if r.StatusWriteInterval == 0 {
		r.StatusWriteInterval = DefaultStatusWriteInterval
	}
	r.statuses = newStatusWriter(r.Client, &r.written, r.StatusWriteInterval)
	if err := mgr.Add(r.statuses); err != nil {
		return err
	}
	r.actions = newActionRunner(r.execute)
	r.nodeWrites.Shared = true
	if err := mgr.Add(r.actions); err != nil {
		return err
	}
	r.jobs = newJobIndex()
	var err error
	if r.nodes, err = cachestore.Of(mgr.GetCache(), &corev1.Node{}); err != nil {
		return err
	}
	all := handler.EnqueueRequestsFromMapFunc(r.allRuns)
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		// Other runs' creation and deletion change which pools this run
		// may claim.
		Watches(&nodegatev1alpha1.MutexRunConfig{}, all, builder.WithPredicates(runChanged)).
		Watches(&nodegatev1alpha1.MutexRule{}, all).
		Watches(&nodegatev1alpha1.MutexTarget{}, all).
		Watches(&mcfgv1.MachineConfigPool{}, all, builder.WithPredicates(poolChanged)).
		Watches(&configv1.ClusterVersion{}, all, builder.WithPredicates(clusterVersionChanged)).
		Watches(&corev1.Node{}, all, builder.WithPredicates(nodeChanged)).
		WatchesRawSource(source.Kind(mgr.GetCache(), &batchv1.Job{}, r.jobs.handler(
			handler.TypedEnqueueRequestsFromMapFunc(r.runOfJob)))).
		// A run whose background action failed passes again.
		WatchesRawSource(source.Channel(r.actions.wakes, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

func (r *Reconciler) allRuns(ctx context.Context, _ client.Object) []reconcile.Request {
	// Read without a copy: only the names are used, and every Node change
	// the planner reads comes here (a run's status is 50 KB at 500 workers).
	var runs nodegatev1alpha1.MutexRunConfigList
	if err := r.Client.List(ctx, &runs, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(runs.Items))
	for _, run := range runs.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&run)})
	}
	return out
}

// runOfJob maps a hook Job to its run through the run label (owner
// references cannot cross namespaces, and rules put Jobs anywhere).
func (r *Reconciler) runOfJob(ctx context.Context, j *batchv1.Job) []reconcile.Request {
	key := j.Labels[plan.RunLabel]
	if key == "" {
		return nil
	}
	var out []reconcile.Request
	for _, req := range r.allRuns(ctx, j) {
		if plan.RunKey(req.Namespace, req.Name) == key {
			out = append(out, req)
		}
	}
	return out
}

// Reconcile runs one pass of one run.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	runKey := req.String()
	run := &nodegatev1alpha1.MutexRunConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, run); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Forget(req.NamespacedName)
			r.statuses.Forget(req.NamespacedName)
			r.planned.Delete(req.NamespacedName)
			if r.Metrics != nil {
				r.Metrics.Forget(runKey)
			}
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	run = r.written.Newest(req.NamespacedName, run)
	if run.DeletionTimestamp == nil && !controllerutil.ContainsFinalizer(run, Finalizer) {
		// Before the first change, so a deletion always finds it.
		controllerutil.AddFinalizer(run, Finalizer)
		prev := run.ResourceVersion
		if err := r.Client.Update(ctx, run); err != nil {
			return reconcile.Result{}, err
		}
		r.written.Wrote(prev, run)
		return reconcile.Result{}, nil
	}
	if run.DeletionTimestamp != nil && !controllerutil.ContainsFinalizer(run, Finalizer) {
		return reconcile.Result{}, nil
	}
	// The watch event that shows an own pool write wakes every run.
	if wait, err := r.pools.Wait(ctx, r.Client, r.Clock.Now()); err != nil || wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, err
	}
	planned := run
	if st, ok := r.statuses.Pending(req.NamespacedName); ok {
		// Plan from the newest status decided, written or not.
		planned = run.DeepCopy()
		planned.Status = st
	}
	// Wall time, not r.Clock: it is compared with when the action runner's
	// writes succeeded.
	read := time.Now()
	in, err := r.input(ctx, planned)
	if err != nil {
		return reconcile.Result{}, err
	}
	res := plan.Plan(in)

	dr, err := r.drains(ctx, planned, in, &res.Status)
	if err != nil {
		return reconcile.Result{}, err
	}
	wait := requeue.Min(res.RequeueAfter, dr.RequeueAfter)

	// The planner's actions go before the status when it says they may (a
	// hook Job, a hold label: the write the Job controller or the MCO acts
	// on is then the pass's only write on the update's path; the status
	// follows in the background), and the pass does not wait for them;
	// otherwise the status is written first, so that the originals of what
	// the actions change are recorded before they change, and nothing
	// handed to the runner is still in flight when they do.
	if res.ActionsFirst {
		r.actions.GoReadAt(req.NamespacedName, res.Actions, read)
	} else if len(res.Actions) > 0 || len(dr.Actions) > 0 || res.Finalized {
		if err := r.actions.Idle(ctx); err != nil {
			return reconcile.Result{}, err
		}
	}
	old := planned.Status.DeepCopy()
	if published, write := plan.Publish(planned.Status, res.Status, in); write {
		// Only a pass that acted first (or had nothing to do) may leave its
		// status for later, and only when the status stored already names
		// its round, phase, pool originals and drains (plan.StatusMayWait).
		// A forced drain step waits for its record like any other.
		if len(dr.Actions) == 0 && res.StatusMayWait(run.Status, published) {
			r.statuses.Put(req.NamespacedName, published)
		} else {
			upd, err := r.statuses.WriteNow(ctx, run, published)
			if err != nil {
				if apierrors.IsConflict(err) {
					return reconcile.Result{RequeueAfter: conflictRetry}, nil
				}
				return reconcile.Result{}, err
			}
			run = upd
		}
	}
	if r.Metrics != nil {
		r.Metrics.Observe(runKey, old, &res.Status, blockedReason(&res.Status), dr.Blocked, dr.Stuck)
	}

	var errs []error
	if !res.ActionsFirst {
		errs = r.executeAll(ctx, res.Actions)
	}
	// What failed in the background since the run's last pass is this
	// pass's failure: the planner has asked for it again, and the retry
	// backs off.
	errs = append(errs, r.actions.Failures(req.NamespacedName)...)
	for _, a := range dr.Actions {
		if err := libdrain.Force(ctx, r.Client, a.Action); err != nil {
			errs = append(errs, fmt.Errorf("%s pod %s/%s: %w", a.Step, a.Namespace, a.Name, err))
			continue
		}
		if r.Metrics != nil {
			r.Metrics.Forced(a.Step)
		}
		r.Recorder.Record(libdrain.ActionEvents(a.Node, a.Action)...)
	}
	r.Recorder.Record(res.Events...)
	r.Recorder.Record(dr.Events...)
	for _, ps := range res.Passages {
		logger.Info("node passed the gate", "node", ps.Node, "passage", ps.Note)
	}
	// The pass's status is written or handed over: later passes plan from
	// it, whatever the cache shows. (Failed actions do not change that,
	// and must not make every later pass list the Nodes again.)
	r.planned.Store(req.NamespacedName, true)
	if len(errs) > 0 {
		logger.Info("some actions failed; retrying", "errors", errors.Join(errs...).Error())
		return reconcile.Result{}, errors.Join(errs...)
	}
	if res.Finalized {
		controllerutil.RemoveFinalizer(run, Finalizer)
		if err := r.Client.Update(ctx, run); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{RequeueAfter: conflictRetry}, nil
			}
			if !apierrors.IsNotFound(err) {
				return reconcile.Result{}, err
			}
		}
		// The run is gone once its last finalizer is: no event of it reaches
		// Reconcile afterwards (runs are mapped from the cache, where it no
		// longer is), so its series are dropped now or never.
		if r.Metrics != nil {
			r.Metrics.Forget(runKey)
		}
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: wait}, nil
}

// input reads the planner's inputs from the caches.
func (r *Reconciler) input(ctx context.Context, run *nodegatev1alpha1.MutexRunConfig) (plan.Input, error) {
	in := plan.Input{Now: r.Clock.Now(), Run: run, JobPlaces: r.JobPlaces, GatedPools: r.GatedPools}
	var (
		rules   nodegatev1alpha1.MutexRuleList
		targets nodegatev1alpha1.MutexTargetList
		pools   mcfgv1.MachineConfigPoolList
		runs    nodegatev1alpha1.MutexRunConfigList
	)
	if err := r.Client.List(ctx, &rules); err != nil {
		return in, err
	}
	if err := r.Client.List(ctx, &targets); err != nil {
		return in, err
	}
	if err := r.Client.List(ctx, &pools); err != nil {
		return in, err
	}
	// Nodes and Jobs are the large lists, read on every pass: both are the
	// cache's objects themselves (the planner and the drain remediation
	// never write to their inputs, and the cache's objects are replaced, not
	// changed, by events).
	_, planned := r.planned.Load(client.ObjectKeyFromObject(run))
	nodes, err := r.listNodes(ctx, !planned)
	if err != nil {
		return in, err
	}
	// Other runs are read for their spec and creation only: no copy of
	// their statuses.
	if err := r.Client.List(ctx, &runs, client.UnsafeDisableDeepCopy); err != nil {
		return in, err
	}
	in.Rules, in.Targets, in.Pools, in.Nodes, in.Jobs = rules.Items, targets.Items, pools.Items, nodes, r.jobs.of(plan.RunKey(run.Namespace, run.Name), r.Clock.Now())
	cv := &configv1.ClusterVersion{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv); {
	case err == nil:
		in.ClusterVersion = cv
	case !apierrors.IsNotFound(err):
		return in, err
	}
	releases, err := r.renderedReleases(ctx, pools.Items)
	if err != nil {
		return in, err
	}
	in.RenderedReleases = releases
	targetPools := map[string][]string{}
	for _, t := range targets.Items {
		targetPools[t.Namespace+"/"+t.Name] = t.Spec.MachineConfigPools
	}
	for _, o := range runs.Items {
		if o.UID == run.UID || o.DeletionTimestamp != nil {
			continue
		}
		claim := plan.RunClaim{Name: o.Namespace + "/" + o.Name, Created: o.CreationTimestamp.Time}
		for _, ref := range o.Spec.MutexTargets {
			ns := ref.Namespace
			if ns == "" {
				ns = o.Namespace
			}
			claim.Pools = append(claim.Pools, targetPools[ns+"/"+ref.Name]...)
		}
		in.OtherRuns = append(in.OtherRuns, claim)
	}
	if run.Spec.HealthGate != nil {
		if r.Alerts == nil {
			in.AlertsErr = errors.New("node-gate runs without an alert source (--alerts-url)")
		} else {
			h, err := r.health.Get(ctx, r.Clock, nil, r.readHealth)
			in.Alerts, in.MaintenanceSilences, in.AlertsErr = h.alerts, h.maintenance, err
		}
	}
	return in, nil
}

// listNodes reads every Node: from the API server when fresh (a run's first
// pass, see planned), else the cached objects themselves from the
// informer's store.
func (r *Reconciler) listNodes(ctx context.Context, fresh bool) ([]*corev1.Node, error) {
	if fresh {
		var list corev1.NodeList
		if err := r.APIReader.List(ctx, &list); err != nil {
			return nil, err
		}
		out := make([]*corev1.Node, len(list.Items))
		for i := range list.Items {
			out[i] = &list.Items[i]
		}
		return out, nil
	}
	nodes := cachestore.Items[*corev1.Node](r.nodes)
	for i, n := range nodes {
		nodes[i] = r.nodeWrites.Newest(client.ObjectKeyFromObject(n), n)
	}
	return nodes, nil
}

// healthRead is what a health gate decides on, as read at one time.
type healthRead struct {
	alerts      []alerts.Alert
	maintenance map[string]bool
}

// readHealth reads the alerts and, when one is suppressed, the
// upgrade-scheduler's silences. The passes share it (Reconciler.health):
// the planner reads its inputs, never writes them.
func (r *Reconciler) readHealth(ctx context.Context) (healthRead, error) {
	as, err := r.Alerts.Alerts(ctx)
	ms, err := r.maintenanceSilences(ctx, as, err)
	return healthRead{alerts: as, maintenance: ms}, err
}

// maintenanceSilences reads the upgrade-scheduler's silences when an alert
// is suppressed and the alerts API knows silences (Alertmanager's). Without
// them a silenced alert could not be told from one the scheduler silenced,
// so failing to read them fails the read of the alerts: the gate stays
// closed, as when the alerts cannot be read.
func (r *Reconciler) maintenanceSilences(ctx context.Context, as []alerts.Alert, err error) (map[string]bool, error) {
	reader, ok := r.Alerts.(alerts.SilenceReader)
	if err != nil || !ok || !slices.ContainsFunc(as, func(a alerts.Alert) bool { return a.Suppressed }) {
		return nil, err
	}
	return reader.MaintenanceSilences(ctx)
}

// renderedReleases reads the release each pool's rendered target was
// rendered for: the machine-config operator writes it on the rendered
// MachineConfig. Only metadata is read (and cached): a rendered config's
// body is the node's whole Ignition config.
func (r *Reconciler) renderedReleases(ctx context.Context, pools []mcfgv1.MachineConfigPool) (map[string]string, error) {
	out := map[string]string{}
	for i := range pools {
		name := pools[i].Spec.Configuration.Name
		if name == "" {
			continue
		}
		mc := &metav1.PartialObjectMetadata{}
		mc.SetGroupVersionKind(mcfgv1.GroupVersion.WithKind("MachineConfig"))
		switch err := r.Client.Get(ctx, client.ObjectKey{Name: name}, mc); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		default:
			if v := mc.Annotations[mcostate.ReleaseImageVersion]; v != "" {
				out[name] = v
			}
		}
	}
	return out, nil
}

// parallelWrites bounds the node labels and Job creations in flight at
// once: those of one pass that waits for them (executeAll), and those the
// actionRunner carries for the passes that do not.
const parallelWrites = 8

// executeAll carries out the planner's actions in its order, except that
// each run of consecutive node labels and Job creations, which are
// independent of each other, goes out at once: a pass that starts or
// releases many nodes (the first pass of a round starts maxUnavailable of
// them) waits for one write, not for each in turn. Pool actions stay in
// order with everything around them (a restore unlabels the nodes before it
// unpauses their pool). Every action is tried; the failures are returned.
func (r *Reconciler) executeAll(ctx context.Context, actions []plan.Action) []error {
	var (
		mu   sync.Mutex
		errs []error
	)
	do := func(a plan.Action) {
		if err := r.execute(ctx, a); err != nil {
			mu.Lock()
			errs = append(errs, actionError(a, err))
			mu.Unlock()
		}
	}
	independent := func(k plan.ActionKind) bool {
		return k == plan.LabelNode || k == plan.UnlabelNode || k == plan.CreateJob
	}
	for i := 0; i < len(actions); {
		j := i
		for j < len(actions) && independent(actions[j].Kind) {
			j++
		}
		if j-i < 2 {
			do(actions[i])
			i++
			continue
		}
		var g errgroup.Group
		g.SetLimit(parallelWrites)
		for _, a := range actions[i:j] {
			g.Go(func() error { do(a); return nil })
		}
		_ = g.Wait()
		i = j
	}
	return errs
}

// actionError says which action failed, on what.
func actionError(a plan.Action, err error) error {
	switch {
	case a.Job != nil:
		return fmt.Errorf("%s %s/%s: %w", a.Kind, a.Job.Namespace, a.Job.Name, err)
	case a.Node != "":
		return fmt.Errorf("%s node %s: %w", a.Kind, a.Node, err)
	}
	return fmt.Errorf("%s pool %s: %w", a.Kind, a.Pool, err)
}

// execute carries out one planner action. Creating what exists and
// deleting what is gone count as done: every action is idempotent.
func (r *Reconciler) execute(ctx context.Context, a plan.Action) error {
	switch a.Kind {
	case plan.SetPoolPaused:
		return r.patchPool(ctx, a.Pool, types.MergePatchType, map[string]any{"spec": map[string]any{"paused": a.Paused}})
	case plan.SetPoolSelector:
		// A JSON patch replaces the selector exactly; a merge patch would
		// merge matchLabels with what is there.
		return r.patchPool(ctx, a.Pool, types.JSONPatchType, []map[string]any{{"op": "add", "path": "/spec/nodeSelector", "value": a.NodeSelector}})
	case plan.SetPoolMaxUnavailable:
		return r.patchPool(ctx, a.Pool, types.MergePatchType, map[string]any{"spec": map[string]any{"maxUnavailable": a.MaxUnavailable}})
	case plan.CreatePool:
		pool := a.NewPool.DeepCopy()
		err := r.Client.Create(ctx, pool)
		switch {
		case apierrors.IsAlreadyExists(err):
			// An earlier pass created it: any version the cache shows will do.
			pool.UID, pool.ResourceVersion = "", ""
		case err != nil:
			return err
		}
		r.pools.Created(pool, r.Clock.Now())
		return nil
	case plan.DeletePool:
		pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: a.Pool}}
		if err := r.Client.Delete(ctx, pool); client.IgnoreNotFound(err) != nil {
			return err
		}
		r.pools.Deleted(pool, r.Clock.Now())
		return nil
	case plan.LabelNode:
		meta := map[string]any{"labels": map[string]any{a.Label: a.Pool}}
		if a.Label == plan.HoldLabel {
			// A held node is not released: one patch, so that the mark of
			// an earlier release never outlives the hold.
			meta["annotations"] = map[string]any{plan.ReleasedAnnotation: nil}
		}
		return r.patchNode(ctx, a.Node, meta)
	case plan.UnlabelNode:
		meta := map[string]any{"labels": map[string]any{a.Label: nil}}
		if a.ReleaseMark != "" {
			// One patch: the release and its mark are never apart.
			meta["annotations"] = map[string]any{plan.ReleasedAnnotation: a.ReleaseMark}
		}
		return r.patchNode(ctx, a.Node, meta)
	case plan.CreateJob:
		if r.jobs.has(a.Job, r.Clock.Now()) {
			return nil // created since the pass read the index
		}
		job := a.Job.DeepCopy()
		err := r.Client.Create(ctx, job)
		switch {
		case apierrors.IsAlreadyExists(err):
			return nil
		case err != nil:
			return err
		}
		r.jobs.expect(job, r.Clock.Now())
		return nil
	}
	return fmt.Errorf("unknown action %q", a.Kind)
}

// patchPool patches a pool and holds the next passes until the cache shows
// the patch (see Reconciler.pools).
func (r *Reconciler) patchPool(ctx context.Context, name string, pt types.PatchType, body any) error {
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := r.patch(ctx, pool, pt, body); err != nil {
		return err
	}
	r.pools.Updated(pool, r.Clock.Now())
	return nil
}

func (r *Reconciler) patch(ctx context.Context, obj client.Object, pt types.PatchType, body any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return r.Client.Patch(ctx, obj, client.RawPatch(pt, data))
}

// patchNode merge-patches a Node's metadata and remembers the answer
// (nodeWrites) over the version the cache shows now: the API server
// applied the patch on that version or a later one, so the answer is newer
// than it.
func (r *Reconciler) patchNode(ctx context.Context, name string, meta map[string]any) error {
	over := ""
	if obj, ok, err := r.nodes.GetByKey(name); err == nil && ok {
		over = obj.(*corev1.Node).ResourceVersion
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := r.patch(ctx, node, types.MergePatchType, map[string]any{"metadata": meta}); err != nil {
		return err
	}
	if over == "" {
		return nil
	}
	trimmed, err := nodeFields.Transform()(node)
	if err != nil {
		return nil // only the cache's shape is lost: plan from the cache
	}
	r.nodeWrites.Wrote(over, trimmed.(*corev1.Node))
	return nil
}

// blockedReason is why the run holds nodes back, for the metric.
func blockedReason(st *nodegatev1alpha1.MutexRunConfigStatus) string {
	if c := meta.FindStatusCondition(st.Conditions, plan.CondBlocked); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason
	}
	if c := meta.FindStatusCondition(st.Conditions, plan.CondPaused); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason
	}
	if st.Phase == nodegatev1alpha1.RunWaiting || st.Phase == nodegatev1alpha1.RunPaused {
		if c := meta.FindStatusCondition(st.Conditions, plan.CondProgressing); c != nil && c.Reason != "" {
			return c.Reason
		}
	}
	return ""
}

// drains reads what the drain remediation needs (the pods on every node the
// MCO drains for the run, their namespaces' PDBs, the timeout) and lets
// drain.DecideRun decide; it writes the drain records into st.
func (r *Reconciler) drains(ctx context.Context, run *nodegatev1alpha1.MutexRunConfig, in plan.Input, st *nodegatev1alpha1.MutexRunConfigStatus) (drain.RunResult, error) {
	spec := run.Spec.DrainRemediation
	if spec == nil || run.DeletionTimestamp != nil {
		return drain.RunResult{}, nil
	}
	ignored, err := drain.CompilePatterns(spec.IgnoredNamespacePatterns)
	if err != nil {
		return drain.RunResult{Events: []events.Event{drain.InvalidPatterns(run, err)}}, nil
	}
	timeout, err := r.drainTimeout(ctx, run)
	if err != nil {
		return drain.RunResult{}, err
	}
	din := drain.RunInput{Now: in.Now, Run: run, Timeout: timeout, Ignored: ignored, Nodes: map[string]*corev1.Node{},
		Pods: map[string][]corev1.Pod{}, PDBs: map[string][]policyv1.PodDisruptionBudget{}}
	for _, n := range in.Nodes {
		din.Nodes[n.Name] = n
	}
	for i := range st.Nodes {
		n := din.Nodes[st.Nodes[i].Name]
		if n == nil || !drain.NeedsPods(&st.Nodes[i], n) {
			continue
		}
		pods, pdbs, err := r.podsOn(ctx, n.Name)
		if apierrors.IsForbidden(err) {
			// Installed without the remediation's grants: say so, do not
			// stall the run on it.
			return drain.RunResult{Events: []events.Event{drain.Forbidden(run, err)}}, nil
		}
		if err != nil {
			return drain.RunResult{}, err
		}
		din.Pods[n.Name], din.PDBs[n.Name] = pods, pdbs
	}
	return drain.DecideRun(din, st.Nodes), nil
}

// drainTimeout reads the UpgradeConfigs of the run's namespace (unless the
// run sets its own timeout) for drain.TimeoutFor.
func (r *Reconciler) drainTimeout(ctx context.Context, run *nodegatev1alpha1.MutexRunConfig) (time.Duration, error) {
	own := run.Spec.DrainRemediation.Timeout
	if own != nil && own.Duration > 0 {
		return own.Duration, nil
	}
	var ucs upgradev1alpha1.UpgradeConfigList
	if err := r.APIReader.List(ctx, &ucs, client.InNamespace(run.Namespace)); err != nil {
		if apierrors.IsForbidden(err) || meta.IsNoMatchError(err) {
			return drain.TimeoutFor(own, nil), nil
		}
		return 0, err
	}
	minutes := map[string]int32{}
	for _, uc := range ucs.Items {
		minutes[uc.Name] = uc.Spec.PDBForceDrainTimeout
	}
	return drain.TimeoutFor(own, minutes), nil
}

// podsOn lists the pods bound to a node and the PDBs of their namespaces.
func (r *Reconciler) podsOn(ctx context.Context, node string) ([]corev1.Pod, []policyv1.PodDisruptionBudget, error) {
	pods, err := libdrain.PodsOn(ctx, r.APIReader, node)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	var pdbs []policyv1.PodDisruptionBudget
	for _, p := range pods {
		if seen[p.Namespace] {
			continue
		}
		seen[p.Namespace] = true
		var l policyv1.PodDisruptionBudgetList
		if err := r.APIReader.List(ctx, &l, client.InNamespace(p.Namespace)); err != nil {
			return nil, nil, err
		}
		pdbs = append(pdbs, l.Items...)
	}
	return pods, pdbs, nil
}

// nodeFields is what node-gate keeps of a Node: the MCO's node state
// (mcostate.NodeFields) and node-gate's own release mark.
var nodeFields = func() trim.Node {
	f := mcostate.NodeFields
	f.Annotations = func(key string) bool { return mcostate.IsAnnotation(key) || key == plan.ReleasedAnnotation }
	return f
}()

// CacheByObject is the cache configuration node-gate's manager needs:
// Nodes trimmed to nodeFields, and only the Jobs node-gate made.
func CacheByObject() map[client.Object]cache.ByObject { return CacheByObjectIn(nil) }

// CacheByObjectIn is CacheByObject with the hook Jobs watched only in
// jobNamespaces (nil: every namespace), where the chart grants them. The
// map is keyed by pointers: add to it, never look a type up in it.
func CacheByObjectIn(jobNamespaces map[string]cache.Config) map[client.Object]cache.ByObject {
	hooks, _ := labels.NewRequirement(plan.RunLabel, "exists", nil)
	return map[client.Object]cache.ByObject{
		&corev1.Node{}: {Transform: nodeFields.Transform()},
		&batchv1.Job{}: {Label: labels.NewSelector().Add(*hooks), Namespaces: jobNamespaces},
	}
}
