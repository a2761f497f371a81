package cvo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/upshift-io/upshift/tools/ocpsim/faults"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
	"github.com/upshift-io/upshift/tools/ocpsim/timescale"
)

// Options configure the CVO simulator.
type Options struct {
	Scale timescale.Scale
	// Operators is the payload (default Operators()).
	Operators []Operator
	// Graph, when set, is the simulated update service (every release in
	// every channel). When empty the graph seeded in GraphConfigMap is used,
	// or, without one, the releases the ClusterVersion already lists.
	Graph []string
	// SelfReported names the ClusterOperators whose operator another
	// simulated operator plays (package cpmsoperator): when such an
	// operator's Deployment exists, the CVO does what the real one does for
	// it — it applies the release's manifest of the Deployment (image and
	// RELEASE_VERSION) once the operator's duration has passed, unless an
	// unmanaged override covers the Deployment, and waits until the operator
	// reports the version — and writes nothing on its ClusterOperator.
	SelfReported []string
	Log          logr.Logger
}

// Setup registers the CVO loop and the ClusterOperator health loop.
func Setup(mgr ctrl.Manager, o Options) error {
	if len(o.Operators) == 0 {
		o.Operators = Operators()
	}
	s := &sim{c: mgr.GetClient(), o: o, log: o.Log, levels: Levels(o.Operators), started: map[string]time.Time{}, stalled: map[string]bool{},
		events: mgr.GetEventRecorder("cluster-version-operator"), selfReported: map[string]bool{}}
	for _, name := range o.SelfReported {
		s.selfReported[name] = true
	}
	deployments := map[types.NamespacedName]bool{}
	for _, op := range o.Operators {
		if op.Deployment.Name != "" {
			deployments[op.Deployment] = true
		}
	}
	toCV := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: "version"}}}
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("cvo").For(&configv1.ClusterVersion{}).
		Watches(&configv1.ClusterOperator{}, toCV).
		Watches(&mcfgv1.MachineConfigPool{}, toCV).
		// An operator Deployment scaled back up resumes a stalled update.
		Watches(&appsv1.Deployment{}, toCV, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return deployments[client.ObjectKeyFromObject(o)]
		}))).
		Watches(&corev1.ConfigMap{}, toCV, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == GraphNamespace && o.GetName() == GraphConfigMap
		}))).
		Complete(quietConflicts(s.reconcile)); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("clusteroperator-health").For(&configv1.ClusterOperator{}).
		Complete(quietConflicts(s.operatorHealth))
}

// quietConflicts requeues on write conflicts instead of logging them as
// errors: several simulated operators write the same status objects.
func quietConflicts(f func(context.Context, reconcile.Request) (reconcile.Result, error)) reconcile.Func {
	return func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := f(ctx, req)
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: timescale.ConflictRetry}, nil
		}
		return res, err
	}
}

type sim struct {
	c      client.Client
	o      Options
	log    logr.Logger
	levels [][]Operator
	events events.EventRecorder

	selfReported map[string]bool

	mu      sync.Mutex
	started map[string]time.Time // "<operator>@<version>" → when it started updating
	stalled map[string]bool      // "<operator>@<version>" → its Deployment is scaled down (logged once)
}

const cvo = "cluster-version-operator: "

func (s *sim) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Name != "version" {
		return reconcile.Result{}, nil
	}
	var cv configv1.ClusterVersion
	if err := s.c.Get(ctx, req.NamespacedName, &cv); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	orig := cv.DeepCopy()
	now := metav1.Now()
	st := &cv.Status
	st.ObservedGeneration = cv.Generation
	var res reconcile.Result

	var cos configv1.ClusterOperatorList
	if err := s.c.List(ctx, &cos); err != nil {
		return res, err
	}
	byName := map[string]*configv1.ClusterOperator{}
	for i := range cos.Items {
		byName[cos.Items[i].Name] = &cos.Items[i]
	}
	g, err := s.graph(ctx, st)
	if err != nil {
		return res, err
	}
	// The overrides check comes first, as in the CVO (which then asks for
	// admin acks before operators; here operators come before acks).
	checks := []*UpgradeableCheck{OverridesUpgradeable(cv.Spec.Overrides, st.Desired.Version), OperatorsUpgradeable(cos.Items)}
	if faults.Has(cv.Annotations, faults.AdminAckRequired) {
		checks = append(checks, AdminAckRequired(CurrentVersion(st.History)))
	}
	SetUpgradeable(&st.Conditions, UpgradeableConditions(checks, now), now)
	s.publishUpdates(st, cv.Spec.Channel, g, now)

	du := cv.Spec.DesiredUpdate
	accepted := du == nil || (st.Desired.Version != "" && ((du.Image != "" && du.Image == st.Desired.Image) || (du.Image == "" && du.Version == st.Desired.Version)))
	if accepted {
		removeCondition(&st.Conditions, "Invalid")
		if c := FindCondition(st.Conditions, ReleaseAccepted); c != nil && c.Status != configv1.ConditionTrue {
			// the refused request was withdrawn: the CVO reports the release it reconciles
			SetCondition(&st.Conditions, ReleaseAccepted, configv1.ConditionTrue, "PayloadLoaded", PayloadLoaded(st.Desired.Version, st.Desired.Image), now)
		}
	} else if t, refused := s.admit(&cv, g, now); !refused {
		s.accept(&cv, t, g, now)
		s.log.Info(cvo + fmt.Sprintf("accepted update to %s (%s), starting to apply the release payload", t.Version, t.Image))
		s.events.Eventf(&cv, nil, corev1.EventTypeNormal, "PayloadLoaded", "Update", "Payload loaded version=%q image=%q", t.Version, t.Image)
		return res, s.writeCV(ctx, orig, &cv)
	}
	// A refused request leaves the CVO reconciling the release it already has.

	target := st.Desired.Version
	failing := ""
	failReason := ""
	if len(st.History) > 0 && st.History[0].State == configv1.PartialUpdate && st.History[0].Version == target {
		res, failReason, failing = s.progress(ctx, &cv, byName, now)
	}
	if failing == "" && faults.Has(cv.Annotations, faults.VersionFailing) {
		failReason, failing = "UpdatePayloadFailed", "Could not update deployment \"openshift-cluster-version/cluster-version-operator\" (fault injected by ocpsim)"
	}
	if failing != "" {
		if SetCondition(&st.Conditions, "Failing", configv1.ConditionTrue, failReason, failing, now) {
			s.log.Info(cvo + "Failing: " + failing)
		}
		if p := FindCondition(st.Conditions, configv1.OperatorProgressing); p != nil && p.Status == configv1.ConditionTrue {
			detail := lowerFirst(failing)
			if strings.HasPrefix(failing, "Cluster operator") {
				detail = "the " + detail
			}
			SetCondition(&st.Conditions, configv1.OperatorProgressing, configv1.ConditionTrue, failReason, fmt.Sprintf("Unable to apply %s: %s", target, detail), now)
		}
	} else {
		SetCondition(&st.Conditions, "Failing", configv1.ConditionFalse, "", "", now)
	}
	return res, s.writeCV(ctx, orig, &cv)
}

// admit validates spec.desiredUpdate and runs the preconditions. A refusal
// is reported in the conditions (Invalid, ReleaseAccepted=False with reason
// RetrievePayload or PreconditionChecks); the CVO then keeps reconciling its
// current release, so Failing and Progressing stay those of that release.
func (s *sim) admit(cv *configv1.ClusterVersion, g Graph, now metav1.Time) (Target, bool) {
	st, du := &cv.Status, cv.Spec.DesiredUpdate
	t, err := Validate(du, st, g)
	var inv *InvalidError
	refuse := func(reason, msg, event string) (Target, bool) {
		changed := SetCondition(&st.Conditions, ReleaseAccepted, configv1.ConditionFalse, reason, msg, now)
		if changed {
			s.log.Info(cvo + "refusing desiredUpdate: " + msg)
			s.events.Eventf(cv, nil, corev1.EventTypeWarning, event, "Update", "%s", msg)
		}
		return Target{}, true
	}
	switch {
	case errors.As(err, &inv):
		SetCondition(&st.Conditions, "Invalid", configv1.ConditionTrue, "InvalidClusterVersion", "The cluster version is invalid: "+err.Error(), now)
		return refuse("RetrievePayload", fmt.Sprintf("Retrieving payload failed version=%q image=%q failure=%s", du.Version, du.Image, err.Error()), "RetrievePayloadFailed")
	case err != nil:
		removeCondition(&st.Conditions, "Invalid")
		return refuse("RetrievePayload", fmt.Sprintf("Retrieving payload failed version=%q image=%q failure=%s", du.Version, du.Image, err.Error()), "RetrievePayloadFailed")
	}
	removeCondition(&st.Conditions, "Invalid")
	block, summary := SummarizePreconditions(Preconditions(cv, t.Version), du.Force)
	if block {
		return refuse("PreconditionChecks", PreconditionsFailed(t.Version, t.Image, summary), "PreconditionBlock")
	}
	if summary != "" {
		// not recommended, or forced through: the history records the accepted risks
		if t.AcceptedRisks != "" {
			t.AcceptedRisks += "\n"
		}
		t.AcceptedRisks += summary
		s.events.Eventf(cv, nil, corev1.EventTypeWarning, "PreconditionWarn", "Update", "%s", summary)
	}
	return t, false
}

// publishUpdates writes what the update service offers the release the
// CVO reconciles (status.desired) on spec.channel.
func (s *sim) publishUpdates(st *configv1.ClusterVersionStatus, channel string, g Graph, now metav1.Time) {
	u := ComputeUpdates(g, channel, st.Desired.Version, st.ConditionalUpdates, now)
	st.AvailableUpdates = u.Available
	st.ConditionalUpdates = u.Conditional
	st.Desired.Channels = u.Channels
	SetCondition(&st.Conditions, configv1.RetrievedUpdates, u.Retrieved.Status, u.Retrieved.Reason, u.Retrieved.Message, now)
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func (s *sim) accept(cv *configv1.ClusterVersion, t Target, g Graph, now metav1.Time) {
	st := &cv.Status
	if len(st.History) > 0 && st.History[0].State == configv1.PartialUpdate && st.History[0].CompletionTime == nil {
		st.History[0].CompletionTime = &now
	}
	st.History = append([]configv1.UpdateHistory{{State: configv1.PartialUpdate, StartedTime: now, Version: t.Version, Image: t.Image, Verified: t.Verified, AcceptedRisks: t.AcceptedRisks}}, st.History...)
	st.Desired = configv1.Release{Version: t.Version, Image: t.Image}
	// the update service's offer now starts from the new release
	s.publishUpdates(st, cv.Spec.Channel, g, now)
	st.VersionHash = "ocpsim-" + t.Version
	removeCondition(&st.Conditions, "Invalid")
	SetCondition(&st.Conditions, ReleaseAccepted, configv1.ConditionTrue, "PayloadLoaded", PayloadLoaded(t.Version, t.Image), now)
	SetCondition(&st.Conditions, configv1.OperatorProgressing, configv1.ConditionTrue, "", ProgressMessage(t.Version, 0, len(s.o.Operators), nil), now)
}

// progress moves the operators of the current run level; it returns the
// requeue, and a Failing reason and message when an operator blocks it.
func (s *sim) progress(ctx context.Context, cv *configv1.ClusterVersion, cos map[string]*configv1.ClusterOperator, now metav1.Time) (reconcile.Result, string, string) {
	st := &cv.Status
	target := st.Desired.Version
	done := func(name string) bool {
		co := cos[name]
		return co != nil && OperatorVersion(co) == target
	}
	total, doneCount := 0, 0
	for _, l := range s.levels {
		for _, op := range l {
			total++
			if done(op.Name) {
				doneCount++
			}
		}
	}
	cur := CurrentLevel(s.levels, done)
	if cur == len(s.levels) {
		s.forgetUpdate(target)
		st.History[0].State = configv1.CompletedUpdate
		st.History[0].CompletionTime = &now
		SetCondition(&st.Conditions, configv1.OperatorProgressing, configv1.ConditionFalse, "", "Cluster version is "+target, now)
		SetCondition(&st.Conditions, configv1.OperatorAvailable, configv1.ConditionTrue, "", "Done applying "+target, now)
		s.log.Info(cvo + "cluster version is " + target + ": update completed")
		s.events.Eventf(cv, nil, corev1.EventTypeNormal, "UpdateCompleted", "Update", "Cluster version is %s", target)
		return reconcile.Result{}, "", ""
	}
	var res reconcile.Result
	var waiting []string
	failReason, failing := "", ""
	for _, op := range s.levels[cur] {
		if done(op.Name) {
			continue
		}
		waiting = append(waiting, op.Name)
		co := cos[op.Name]
		if co == nil {
			failReason, failing = "ClusterOperatorNotAvailable", fmt.Sprintf("Cluster operator %s has not yet reported success", op.Name)
			continue
		}
		if faults.Has(co.Annotations, faults.OperatorUnavailable) {
			failReason, failing = "ClusterOperatorNotAvailable", fmt.Sprintf("Cluster operator %s is not available", op.Name)
			continue
		}
		if faults.Has(co.Annotations, faults.OperatorDegraded) {
			failReason, failing = "ClusterOperatorDegraded", fmt.Sprintf("Cluster operator %s is degraded", op.Name)
			continue
		}
		key := op.Name + "@" + target
		if op.Deployment.Name != "" {
			wait, err := s.operatorDeployment(ctx, cv, op, key)
			if err != nil {
				return reconcile.Result{RequeueAfter: timescale.ConflictRetry}, "", ""
			}
			if wait.handled {
				if wait.requeue > 0 && (res.RequeueAfter == 0 || wait.requeue < res.RequeueAfter) {
					res.RequeueAfter = wait.requeue
				}
				continue
			}
		}
		start, ok := s.startedAt(key)
		if !ok || !isProgressing(co) {
			if err := s.patchOperator(ctx, co, func(c *configv1.ClusterOperator) {
				SetCondition(&c.Status.Conditions, configv1.OperatorProgressing, configv1.ConditionTrue, "Upgrading", "Working towards "+target, now)
			}); err != nil {
				return reconcile.Result{RequeueAfter: timescale.ConflictRetry}, "", "" // conflict with the operator's own status write; retry
			}
			s.log.Info(cvo + fmt.Sprintf("updating cluster operator %s to %s (run level %02d)", op.Name, target, op.RunLevel))
		}
		finished := time.Since(start) >= s.o.Scale.Wall(op.Duration)
		if op.Name == MachineConfig {
			ready, err := s.machineConfig(ctx, target, st.Desired.Image)
			if err != nil {
				return reconcile.Result{RequeueAfter: timescale.ConflictRetry}, "", ""
			}
			finished = finished && ready
		}
		if !finished {
			if left := s.o.Scale.Wall(op.Duration) - time.Since(start); left > 0 && (res.RequeueAfter == 0 || left < res.RequeueAfter) {
				res.RequeueAfter = left
			}
			continue
		}
		if err := s.patchOperator(ctx, co, func(c *configv1.ClusterOperator) {
			setVersion(c, "operator", target)
			if op.Name == MachineConfig {
				// The new MCO reports the image it runs once it has synced.
				setVersion(c, "operator-image", MCOImage(st.Desired.Image))
			}
			SetCondition(&c.Status.Conditions, configv1.OperatorProgressing, configv1.ConditionFalse, "AsExpected", "Desired and current number of replicas are equal at version "+target, now)
		}); err != nil {
			return reconcile.Result{RequeueAfter: timescale.ConflictRetry}, "", ""
		}
		s.log.Info(cvo + fmt.Sprintf("cluster operator %s is now at %s", op.Name, target))
		s.mu.Lock()
		delete(s.started, key)
		s.mu.Unlock()
	}
	SetCondition(&st.Conditions, configv1.OperatorProgressing, configv1.ConditionTrue, "", ProgressMessage(target, doneCount, total, waiting), now)
	return res, failReason, failing
}

// deploymentWait is what operatorDeployment decided for an operator.
type deploymentWait struct {
	handled bool          // the operator is not played here: it reports itself, or nobody runs to report
	requeue time.Duration // look again after this long
}

// operatorDeployment handles an operator with its own Deployment. Without
// the Deployment (a cluster seeded without it) the CVO simulator plays the
// operator as usual. An operator that another simulated operator plays
// gets its Deployment rolled out once its duration has passed and reports
// the version itself. Otherwise, while the Deployment is scaled to zero or
// being deleted, no operator runs that could report the new version: the
// update waits on it, as the CVO does for an operator that has not reported
// ("waiting on ..."), and resumes once the Deployment is scaled up again.
func (s *sim) operatorDeployment(ctx context.Context, cv *configv1.ClusterVersion, op Operator, key string) (deploymentWait, error) {
	var d appsv1.Deployment
	if err := s.c.Get(ctx, op.Deployment, &d); err != nil {
		return deploymentWait{}, client.IgnoreNotFound(err)
	}
	target := cv.Status.Desired.Version
	if s.selfReported[op.Name] {
		start, _ := s.startedAt(key)
		if left := s.o.Scale.Wall(op.Duration) - time.Since(start); left > 0 {
			return deploymentWait{handled: true, requeue: left}, nil
		}
		if !OperatorRuns(&d) {
			s.logStalled(op, key, target)
		}
		return deploymentWait{handled: true}, s.applyOperatorDeployment(ctx, cv, &d)
	}
	if OperatorRuns(&d) {
		s.mu.Lock()
		delete(s.stalled, key)
		s.mu.Unlock()
		return deploymentWait{}, nil
	}
	s.mu.Lock()
	// The operator that was updating is gone; a new one starts over.
	delete(s.started, key)
	s.mu.Unlock()
	s.logStalled(op, key, target)
	return deploymentWait{handled: true}, nil
}

// logStalled says once per update that an operator's Deployment is scaled
// down, so nothing reports its new version.
func (s *sim) logStalled(op Operator, key, target string) {
	s.mu.Lock()
	logged := s.stalled[key]
	s.stalled[key] = true
	s.mu.Unlock()
	if !logged {
		s.log.Info(cvo + fmt.Sprintf("waiting on cluster operator %s: its Deployment %s is scaled down, no operator reports version %s", op.Name, op.Deployment, target))
	}
}

// OperatorRuns reports whether an operator Deployment runs the operator:
// not being deleted and at least one replica asked for (unset means one).
func OperatorRuns(d *appsv1.Deployment) bool {
	return d.DeletionTimestamp == nil && (d.Spec.Replicas == nil || *d.Spec.Replicas > 0)
}

// Unmanaged reports whether spec.overrides takes the object out of the
// CVO's hands.
func Unmanaged(overrides []configv1.ComponentOverride, group, kind, namespace, name string) bool {
	for _, o := range overrides {
		if o.Unmanaged && o.Group == group && o.Kind == kind && o.Namespace == namespace && o.Name == name {
			return true
		}
	}
	return false
}

// applyOperatorDeployment applies the release's manifest of an operator
// Deployment: the operator's image of the release and RELEASE_VERSION, the
// version the operator then reports. Replicas are left alone (not
// simulated: the real CVO also resets them to the manifest's). An
// unmanaged override leaves the Deployment untouched, so its operator keeps
// reporting the old version and the update waits on it.
func (s *sim) applyOperatorDeployment(ctx context.Context, cv *configv1.ClusterVersion, d *appsv1.Deployment) error {
	if Unmanaged(cv.Spec.Overrides, "apps", "Deployment", d.Namespace, d.Name) {
		return nil
	}
	orig := d.DeepCopy()
	c := OperatorContainer(d)
	if c == nil {
		return nil
	}
	c.Image = ComponentImage(d.Name, cv.Status.Desired.Image)
	setEnv(c, ReleaseVersionEnv, cv.Status.Desired.Version)
	if equality.Semantic.DeepEqual(orig.Spec, d.Spec) {
		return nil
	}
	s.log.Info(cvo + fmt.Sprintf("rolling out %s for %s", client.ObjectKeyFromObject(d), cv.Status.Desired.Version))
	return s.c.Patch(ctx, d, client.MergeFrom(orig))
}

// OperatorContainer is the operator's container of its Deployment: the one
// named like the Deployment, else the first (nil without containers).
func OperatorContainer(d *appsv1.Deployment) *corev1.Container {
	cs := d.Spec.Template.Spec.Containers
	for i := range cs {
		if cs[i].Name == d.Name {
			return &cs[i]
		}
	}
	if len(cs) == 0 {
		return nil
	}
	return &cs[0]
}

func setEnv(c *corev1.Container, name, value string) {
	for i := range c.Env {
		if c.Env[i].Name == name {
			c.Env[i].Value, c.Env[i].ValueFrom = value, nil
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}

// forgetUpdate drops what was remembered of the operators' update to
// version: operators that report themselves leave their start behind.
func (s *sim) forgetUpdate(version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.started {
		if strings.HasSuffix(k, "@"+version) {
			delete(s.started, k)
		}
	}
	for k := range s.stalled {
		if strings.HasSuffix(k, "@"+version) {
			delete(s.stalled, k)
		}
	}
}

// startedAt is when the operator of key began its part of the update, and
// whether it had begun before this call (the first call starts it now).
func (s *sim) startedAt(key string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	start, ok := s.started[key]
	if !ok {
		start = time.Now()
		s.started[key] = start
	}
	return start, ok
}

func isProgressing(co *configv1.ClusterOperator) bool {
	c := FindCondition(co.Status.Conditions, configv1.OperatorProgressing)
	return c != nil && c.Status == configv1.ConditionTrue
}

func setVersion(co *configv1.ClusterOperator, name, v string) {
	for i := range co.Status.Versions {
		if co.Status.Versions[i].Name == name {
			co.Status.Versions[i].Version = v
			return
		}
	}
	co.Status.Versions = append(co.Status.Versions, configv1.OperandVersion{Name: name, Version: v})
}

// machineConfig is the MCO's part of the payload: the CVO rolls the MCO
// Deployment out with the release's MCO image, the new MCO's template
// controller writes the base MachineConfigs of the new release (the render
// controller then renders new configs for every pool), and the operator
// reports the new version and image once the pools required for upgrade
// (master) are updated.
func (s *sim) machineConfig(ctx context.Context, version, releaseImage string) (bool, error) {
	if err := s.rollOutMCO(ctx, MCOImage(releaseImage)); err != nil {
		return false, err
	}
	for _, role := range []string{"master", "worker"} {
		for _, want := range mco.BaseConfigs(role, version) {
			var have mcfgv1.MachineConfig
			err := s.c.Get(ctx, types.NamespacedName{Name: want.Name}, &have)
			switch {
			case apierrors.IsNotFound(err):
				if err := s.c.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
					return false, err
				}
			case err != nil:
				return false, err
			case !equality.Semantic.DeepEqual(have.Spec, want.Spec) || have.Annotations[mco.ReleaseVersionAnnotation] != want.Annotations[mco.ReleaseVersionAnnotation]:
				have.Spec = want.Spec
				if have.Annotations == nil {
					have.Annotations = map[string]string{}
				}
				for k, v := range want.Annotations {
					have.Annotations[k] = v
				}
				if err := s.c.Update(ctx, &have); err != nil {
					return false, err
				}
				s.log.Info(fmt.Sprintf("machine-config-operator: wrote %s for release %s", want.Name, version))
			}
		}
	}
	var pools mcfgv1.MachineConfigPoolList
	if err := s.c.List(ctx, &pools, client.HasLabels{mco.RequiredForUpgradeLabel}); err != nil {
		return false, err
	}
	for i := range pools.Items {
		p := &pools.Items[i]
		var mc mcfgv1.MachineConfig
		if err := s.c.Get(ctx, types.NamespacedName{Name: p.Spec.Configuration.Name}, &mc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if mc.Annotations[mco.ReleaseImageVersionAnnot] != version || !mco.PoolIsUpdatedTo(p, mc.Name) {
			return false, nil
		}
	}
	return true, nil
}

// rollOutMCO sets the MCO Deployment's image, as the CVO applies the
// release's manifest of it. A cluster seeded without the Deployment has none
// to roll out.
func (s *sim) rollOutMCO(ctx context.Context, image string) error {
	var d appsv1.Deployment
	if err := s.c.Get(ctx, types.NamespacedName{Namespace: MCONamespace, Name: MCODeployment}, &d); err != nil {
		return client.IgnoreNotFound(err)
	}
	orig := d.DeepCopy()
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == MCOContainer {
			d.Spec.Template.Spec.Containers[i].Image = image
		}
	}
	if equality.Semantic.DeepEqual(orig.Spec, d.Spec) {
		return nil
	}
	s.log.Info(cvo + "rolling out " + MCONamespace + "/" + MCODeployment + " with " + image)
	return s.c.Patch(ctx, &d, client.MergeFrom(orig))
}

// graph is the simulated update service: Options.Graph when given, else
// the graph seeded in the GraphConfigMap, else (a cluster seeded without
// one) the releases the ClusterVersion already lists.
func (s *sim) graph(ctx context.Context, st *configv1.ClusterVersionStatus) (Graph, error) {
	if len(s.o.Graph) > 0 {
		// A plain list need not name the release the cluster runs; the
		// update service knows it all the same.
		g := PlainGraph(s.o.Graph)
		if _, ok := g.Lookup(st.Desired.Version); !ok && st.Desired.Version != "" {
			g = append(g, GraphRelease{Version: st.Desired.Version})
		}
		return g, nil
	}
	var cm corev1.ConfigMap
	err := s.c.Get(ctx, types.NamespacedName{Namespace: GraphNamespace, Name: GraphConfigMap}, &cm)
	switch {
	case err == nil:
		return DecodeGraph(cm.Data[GraphKey])
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	return GraphFromStatus(st), nil
}

func (s *sim) writeCV(ctx context.Context, orig, cv *configv1.ClusterVersion) error {
	if equality.Semantic.DeepEqual(orig.Status, cv.Status) {
		return nil
	}
	// An update, not a merge patch: history entries carry completionTime: null,
	// which a merge patch would drop.
	return s.c.Status().Update(ctx, cv)
}

func (s *sim) patchOperator(ctx context.Context, co *configv1.ClusterOperator, mutate func(*configv1.ClusterOperator)) error {
	orig := co.DeepCopy()
	mutate(co)
	if equality.Semantic.DeepEqual(orig.Status, co.Status) {
		return nil
	}
	return s.c.Status().Patch(ctx, co, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

func removeCondition(conds *[]configv1.ClusterOperatorStatusCondition, t configv1.ClusterStatusConditionType) {
	out := (*conds)[:0]
	for _, c := range *conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	*conds = out
}

// operatorHealth plays the operators themselves: it reports Degraded,
// Available=False or Upgradeable=False while a fault is requested on the
// ClusterOperator, and healthy again once it is removed.
func (s *sim) operatorHealth(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var co configv1.ClusterOperator
	if err := s.c.Get(ctx, req.NamespacedName, &co); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	now := metav1.Now()
	degraded := faults.Has(co.Annotations, faults.OperatorDegraded)
	unavailable := faults.Has(co.Annotations, faults.OperatorUnavailable)
	notUpgradeable := faults.Has(co.Annotations, faults.OperatorNotUpgradeable)
	return reconcile.Result{}, s.patchOperator(ctx, &co, func(c *configv1.ClusterOperator) {
		// Conditions are touched only for a fault and its healing (or when
		// missing), so that an operator played elsewhere (cpmsoperator) or
		// a test can write them itself without a tug of war.
		healing := func(t configv1.ClusterStatusConditionType) bool {
			cond := FindCondition(c.Status.Conditions, t)
			return cond == nil || cond.Reason == "InjectedFault"
		}
		switch {
		case degraded:
			SetCondition(&c.Status.Conditions, configv1.OperatorDegraded, configv1.ConditionTrue, "InjectedFault", c.Name+" is degraded (fault injected by ocpsim)", now)
		case healing(configv1.OperatorDegraded):
			SetCondition(&c.Status.Conditions, configv1.OperatorDegraded, configv1.ConditionFalse, "AsExpected", "", now)
		}
		switch {
		case unavailable:
			SetCondition(&c.Status.Conditions, configv1.OperatorAvailable, configv1.ConditionFalse, "InjectedFault", c.Name+" is not available (fault injected by ocpsim)", now)
		case healing(configv1.OperatorAvailable):
			SetCondition(&c.Status.Conditions, configv1.OperatorAvailable, configv1.ConditionTrue, "AsExpected", "All is well", now)
		}
		up := FindCondition(c.Status.Conditions, configv1.OperatorUpgradeable)
		switch {
		case notUpgradeable:
			SetCondition(&c.Status.Conditions, configv1.OperatorUpgradeable, configv1.ConditionFalse, "InjectedFault", c.Name+" should not be updated to the next minor version (fault injected by ocpsim)", now)
		case up != nil && up.Reason == "InjectedFault":
			SetCondition(&c.Status.Conditions, configv1.OperatorUpgradeable, configv1.ConditionTrue, "AsExpected", "", now)
		}
	})
}
