package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/silence"
)

// t0 is the fixed start of every scenario's clock.
var t0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

// world is a small simulated cluster the planner's actions act on, with an
// injected clock. It plays the CVO, the MCO and the machine API just enough
// to drive every step, and counts every side effect.
type world struct {
	t    *testing.T
	uc   *upgradev1alpha1.UpgradeConfig
	cfg  *config.Config
	snap Snapshot
	now  time.Time
	// integrations, and the ConfigMap error to report.
	integrations Integrations
	configErr    error

	// Side-effect counters.
	desiredPatches, channelPatches int
	creates, deletes               map[string]int
	finalizerRemoved               bool
	externalChecks                 int
	// externalOK is the result the simulated HTTP check records.
	externalOK bool
	events     []Event
	last       Output
	// autoMachineAPI provisions temporary MachineSets as soon as they exist.
	autoMachineAPI bool
	// am plays Alertmanager's silences when integrations.Silences is on.
	am fakeAM
	// failing side effects fail as the reconciler records a failure.
	failing map[ActionKind]bool
	// notified are the notifications delivered, in order (events), and
	// notices the notifications themselves.
	notified []string
	notices  []*Notification
	// loseNotificationRecord drops the status write after the next
	// delivery, as when the scheduler stops between the two.
	loseNotificationRecord bool
	// pods are the pods on nodes, by node, that the drains read; podReads
	// counts the nodes read, forced the steps taken on pods.
	pods     map[string][]corev1.Pod
	podReads int
	forced   []string
	// pdbNodes are the nodes of the pods each budget guards, by
	// "<namespace>/<name>" (none when missing); pdbReads counts the reads.
	pdbNodes map[string][]string
	pdbReads int
}

// fakeAM keeps silences as Alertmanager's API does for the lease plans:
// posting with an ID and the same matchers updates in place, an expired or
// ended silence is expired.
type fakeAM struct {
	n        int
	silences []silence.Silence
	posts    map[silence.Kind]int
}

func (a *fakeAM) list(now time.Time) []silence.Silence {
	var out []silence.Silence
	for i := range a.silences {
		s := &a.silences[i]
		if s.State != silence.StateExpired && !now.Before(s.EndsAt) {
			s.State = silence.StateExpired
		}
		out = append(out, *s)
	}
	return out
}

func (a *fakeAM) live(now time.Time) []silence.Silence {
	var out []silence.Silence
	for _, s := range a.list(now) {
		if s.State == silence.StateActive {
			out = append(out, s)
		}
	}
	return out
}

func (a *fakeAM) apply(now time.Time, p silence.Plan) map[silence.Purpose]string {
	if a.posts == nil {
		a.posts = map[silence.Kind]int{}
	}
	rec := map[silence.Purpose]string{}
	for k, v := range p.Record {
		rec[k] = v
	}
	expire := func(id string) {
		for i := range a.silences {
			if a.silences[i].ID == id {
				a.silences[i].State, a.silences[i].EndsAt = silence.StateExpired, now
			}
		}
	}
	create := func(s silence.Silence) string {
		a.n++
		s.ID, s.State = fmt.Sprintf("s%d", a.n), silence.StateActive
		a.silences = append(a.silences, s)
		return s.ID
	}
	for _, act := range p.Actions {
		a.posts[act.Kind]++
		switch act.Kind {
		case silence.Expire:
			expire(act.ID)
		case silence.Create:
			rec[act.Purpose] = create(act.Silence)
		case silence.Replace:
			expire(act.ID)
			rec[act.Purpose] = create(act.Silence)
		case silence.Extend:
			for i := range a.silences {
				if a.silences[i].ID == act.ID {
					a.silences[i].EndsAt = act.Silence.EndsAt
				}
			}
		}
	}
	return rec
}

func mustConfig(t testing.TB, yaml string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newWorld: a healthy 4.14.10 cluster on stable-4.14 offering 4.14.15
// (recommended) and 4.14.16 (conditional), 3 masters and 3 workers in two
// worker MachineSets, and an OSD UpgradeConfig to 4.14.15 at t0+1h with
// capacity reservation.
func newWorld(t *testing.T) *world {
	w := &world{t: t, now: t0, cfg: mustConfig(t, ""), creates: map[string]int{}, deletes: map[string]int{}, externalOK: true}
	w.uc = &upgradev1alpha1.UpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-config", Namespace: "upshift", Generation: 1},
		Spec: upgradev1alpha1.UpgradeConfigSpec{
			Desired:              upgradev1alpha1.Update{Version: "4.14.15", Channel: "stable-4.14"},
			UpgradeAt:            t0.Add(time.Hour).Format(time.RFC3339),
			PDBForceDrainTimeout: 60,
			Type:                 upgradev1alpha1.OSD,
			CapacityReservation:  true,
		},
	}
	w.snap.ClusterVersion = &configv1.ClusterVersion{
		ObjectMeta: metav1.ObjectMeta{Name: "version"},
		Spec:       configv1.ClusterVersionSpec{Channel: "stable-4.14", ClusterID: "c1"},
		Status: configv1.ClusterVersionStatus{
			Desired:            configv1.Release{Version: "4.14.10", Image: "quay.io/openshift-release-dev/ocp-release@sha256:" + hex64('a')},
			History:            []configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "4.14.10", StartedTime: metav1.NewTime(t0.Add(-48 * time.Hour)), CompletionTime: ptrTime(t0.Add(-47 * time.Hour))}},
			AvailableUpdates:   []configv1.Release{{Version: "4.14.15", Image: "quay.io/openshift-release-dev/ocp-release@sha256:" + hex64('b')}},
			ConditionalUpdates: []configv1.ConditionalUpdate{{Release: configv1.Release{Version: "4.14.16", Image: "quay.io/openshift-release-dev/ocp-release@sha256:" + hex64('c')}}},
			Conditions:         []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionTrue}},
		},
	}
	for _, name := range []string{"etcd", "kube-apiserver", "machine-config"} {
		w.snap.ClusterOperators = append(w.snap.ClusterOperators, configv1.ClusterOperator{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: configv1.ClusterOperatorStatus{Conditions: []configv1.ClusterOperatorStatusCondition{
				{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue}, {Type: configv1.OperatorDegraded, Status: configv1.ConditionFalse}}},
		})
	}
	w.snap.Pools = []mcfgv1.MachineConfigPool{pool("master", 3, 3, "rendered-master-1"), pool("worker", 3, 3, "rendered-worker-1")}
	for i := 0; i < 3; i++ {
		w.snap.Nodes = append(w.snap.Nodes, node(fmt.Sprintf("master-%d", i)), node(fmt.Sprintf("worker-%d", i)))
	}
	for _, zone := range []string{"a", "b"} {
		w.snap.MachineSets = append(w.snap.MachineSets, machinev1beta1.MachineSet{
			ObjectMeta: metav1.ObjectMeta{Name: "c1-worker-" + zone, Namespace: MachineAPINamespace, Labels: map[string]string{PoolLabel: "worker"}},
			Spec: machinev1beta1.MachineSetSpec{Replicas: ptr(int32(2)),
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{MachineSetLabel: "c1-worker-" + zone}},
				Template: machinev1beta1.MachineTemplateSpec{ObjectMeta: machinev1beta1.ObjectMeta{Labels: map[string]string{MachineSetLabel: "c1-worker-" + zone}}}},
		})
	}
	// An infra MachineSet is never copied.
	w.snap.MachineSets = append(w.snap.MachineSets, machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: "c1-infra-a", Namespace: MachineAPINamespace, Labels: map[string]string{PoolLabel: "infra"}}})
	return w
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }

func ptrTime(t time.Time) *metav1.Time { v := metav1.NewTime(t); return &v }

func pool(name string, machines, updated int32, config string) mcfgv1.MachineConfigPool {
	p := mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.Configuration.Name = config
	p.Status.Configuration.Name = config
	p.Status.MachineCount, p.Status.UpdatedMachineCount = machines, updated
	st := corev1.ConditionFalse
	if machines == updated {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []mcfgv1.MachineConfigPoolCondition{{Type: mcfgv1.MachineConfigPoolUpdated, Status: st}}
	return p
}

func node(name string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
		annotationCurrentConfig: "rendered-1", annotationDesiredConfig: "rendered-1", annotationState: "Done"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

// plan runs the planner once, applies its action to the world and writes its
// status back, as the reconciler does. It returns the output.
func (w *world) plan() Output {
	w.t.Helper()
	before, _ := json.Marshal(w.uc)
	// The reconciler hands the planner the informer cache's own objects,
	// uncopied: the planner must never write to its snapshot.
	snapBefore, _ := json.Marshal(w.snap)
	in := Input{UpgradeConfig: w.uc, Config: w.cfg, ConfigError: w.configErr, Snapshot: w.snap, Integrations: w.integrations, Now: w.now}
	in.Snapshot.LeasesUnread = w.integrations.Silences
	out := Plan(in)
	// As the reconciler does: read what the plan asks for, plan again.
	for range 3 {
		switch {
		case out.NeedsExternalChecks:
			w.externalChecks++
			in.Snapshot.ExternalChecks = &ExternalChecksResult{Passed: w.externalOK, Details: "checked"}
		case out.NeedsLeases:
			in.Snapshot.LeasesUnread = false
			in.Snapshot.Leases = &LeasesRead{Existing: w.am.list(w.now)}
		case len(out.NeedsPDBNodes) > 0:
			in.Snapshot.PDBNodes = map[string][]string{}
			for _, key := range out.NeedsPDBNodes {
				in.Snapshot.PDBNodes[key] = append([]string{}, w.pdbNodes[key]...)
				w.pdbReads++
			}
		case len(out.NeedsDrainPods) > 0:
			in.Snapshot.DrainPods = map[string][]corev1.Pod{}
			for _, n := range out.NeedsDrainPods {
				in.Snapshot.DrainPods[n] = w.pods[n]
				w.podReads++
			}
		default:
			continue
		}
		out = Plan(in)
	}
	if out.NeedsExternalChecks || out.NeedsLeases || len(out.NeedsDrainPods) > 0 || len(out.NeedsPDBNodes) > 0 {
		w.t.Fatalf("a plan given what it asked for asked again: %+v", out)
	}
	checkAlertsUnread(w.t, in, out)
	after, _ := json.Marshal(w.uc)
	if string(before) != string(after) {
		w.t.Fatal("Plan mutated its input")
	}
	if snapAfter, _ := json.Marshal(w.snap); string(snapBefore) != string(snapAfter) {
		w.t.Fatal("Plan mutated its snapshot")
	}
	w.uc.Status = out.Status
	if out.Leases != nil {
		w.uc.Status = Executed(out, Done{LeasesApplied: true, Leases: w.am.apply(w.now, out.Leases.Plan)}, w.now)
	}
	w.events = append(w.events, out.Events...)
	if out.Action != nil {
		w.apply(out.Action)
	}
	for _, a := range out.Drains.Actions {
		w.force(a)
	}
	if w.autoMachineAPI {
		w.machineAPI()
	}
	w.last = out
	return out
}

// force plays the apiserver for a forced step: a pod deleted without
// finalizers is gone, with them it stays terminating until they are removed.
func (w *world) force(a DrainAction) {
	w.forced = append(w.forced, string(a.Step)+" "+a.Namespace+"/"+a.Name)
	pods := w.pods[a.Node]
	for i := range pods {
		if pods[i].Namespace != a.Namespace || pods[i].Name != a.Name {
			continue
		}
		switch {
		case a.Step == commonv1alpha1.DrainStepRemoveFinalizers && pods[i].DeletionTimestamp != nil,
			a.Step != commonv1alpha1.DrainStepRemoveFinalizers && len(pods[i].Finalizers) == 0:
			w.pods[a.Node] = append(pods[:i:i], pods[i+1:]...)
		case a.Step == commonv1alpha1.DrainStepRemoveFinalizers:
			pods[i].Finalizers = nil
		default:
			pods[i].DeletionTimestamp = ptrTime(w.now)
		}
		return
	}
}

func (w *world) apply(a *Action) {
	if w.failing[a.Kind] {
		w.uc.Status = RecordActionError(w.uc.Status, a.Step, errors.New("injected failure"), w.now)
		return
	}
	switch a.Kind {
	case PatchClusterVersion:
		cv := w.snap.ClusterVersion
		if a.ClusterVersion.Channel != nil {
			w.channelPatches++
			cv.Spec.Channel = *a.ClusterVersion.Channel
		}
		if d := a.ClusterVersion.DesiredUpdate; d != nil {
			w.desiredPatches++
			cv.Spec.DesiredUpdate = &configv1.Update{Version: d.Version, Image: d.Image}
		}
	case CreateMachineSet:
		ms := *a.MachineSet
		w.creates[ms.Name]++
		for _, have := range w.snap.MachineSets {
			if have.Name == ms.Name {
				return // AlreadyExists
			}
		}
		w.snap.MachineSets = append(w.snap.MachineSets, ms)
	case DeleteMachineSet:
		w.deletes[a.MachineSet.Name]++
		w.removeMachineSet(a.MachineSet.Name)
	case RemoveFinalizer:
		w.finalizerRemoved = true
		w.uc.Finalizers = nil
	case ReinitFileIntegrity:
		w.snap.FileIntegrityReinitRequested = true
	case Notify:
		w.notified = append(w.notified, a.Notification.Event)
		w.notices = append(w.notices, a.Notification)
		if w.loseNotificationRecord {
			w.loseNotificationRecord = false
			return
		}
		w.uc.Status = RecordNotification(w.uc.Status, a.Notification, "Sent", w.now)
	default:
		w.t.Fatalf("unknown action %s", a.Kind)
	}
}

func (w *world) removeMachineSet(name string) {
	var keep []machinev1beta1.MachineSet
	for _, ms := range w.snap.MachineSets {
		if ms.Name != name {
			keep = append(keep, ms)
		}
	}
	w.snap.MachineSets = keep
	var machines []machinev1beta1.Machine
	for _, m := range w.snap.Machines {
		if m.Labels[MachineSetLabel] != name {
			machines = append(machines, m)
		}
	}
	w.snap.Machines = machines
}

// machineAPI provisions the temporary MachineSets: a Machine with a Ready Node each.
func (w *world) machineAPI() {
	for i, ms := range w.snap.MachineSets {
		if ms.Labels[SurgeLabel] != "true" || ms.Status.ReadyReplicas == 1 {
			continue
		}
		w.snap.MachineSets[i].Status.Replicas, w.snap.MachineSets[i].Status.ReadyReplicas = 1, 1
		nodeName := ms.Name + "-node"
		w.snap.Machines = append(w.snap.Machines, machinev1beta1.Machine{
			ObjectMeta: metav1.ObjectMeta{Name: ms.Name + "-m", Namespace: MachineAPINamespace, Labels: map[string]string{MachineSetLabel: ms.Name, SurgeLabel: "true"}},
			Status:     machinev1beta1.MachineStatus{NodeRef: &corev1.ObjectReference{Name: nodeName}},
		})
		w.snap.Nodes = append(w.snap.Nodes, node(nodeName))
	}
}

// cvo completes the control-plane update ClusterVersion points at.
func (w *world) cvo() {
	cv := w.snap.ClusterVersion
	if cv.Spec.DesiredUpdate == nil {
		return
	}
	v := cv.Spec.DesiredUpdate.Version
	if len(cv.Status.History) > 0 && cv.Status.History[0].Version == v && cv.Status.History[0].State == configv1.CompletedUpdate {
		return
	}
	cv.Status.Desired = configv1.Release{Version: v, Image: cv.Spec.DesiredUpdate.Image}
	cv.Status.History = append([]configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: v, StartedTime: metav1.NewTime(w.now), CompletionTime: ptrTime(w.now)}}, cv.Status.History...)
}

// mco rolls the worker pool to a new configuration and finishes it.
func (w *world) mco() {
	w.snap.Pools[1] = pool("worker", 3, 3, "rendered-worker-2")
}

func (w *world) conditionTypes() []upgradev1alpha1.UpgradeConditionType {
	var out []upgradev1alpha1.UpgradeConditionType
	for _, c := range w.uc.Status.History[0].Conditions {
		out = append(out, c.Type)
	}
	return out
}

func (w *world) phase() upgradev1alpha1.UpgradePhase { return w.uc.Status.History[0].Phase }

func (w *world) stepCondition(t upgradev1alpha1.UpgradeConditionType) *upgradev1alpha1.UpgradeCondition {
	return findStepCondition(w.uc.Status.History[0].Conditions, t)
}

func (w *world) summary(t string) *metav1.Condition {
	for i := range w.uc.Status.Conditions {
		if w.uc.Status.Conditions[i].Type == t {
			return &w.uc.Status.Conditions[i]
		}
	}
	return nil
}

func (w *world) surgeCount() int {
	n := 0
	for _, ms := range w.snap.MachineSets {
		if ms.Labels[SurgeLabel] == "true" {
			n++
		}
	}
	return n
}

// settle plans until nothing more happens without time or the cluster
// changing: no action and no status change.
func (w *world) settle() {
	w.t.Helper()
	for i := 0; i < 60; i++ {
		before, _ := json.Marshal(w.uc.Status)
		out := w.plan()
		after, _ := json.Marshal(w.uc.Status)
		if out.Action == nil && string(before) == string(after) {
			return
		}
	}
	w.t.Fatalf("planner did not settle: last output %+v", w.last)
}

func (w *world) hasEvent(reason string) bool {
	for _, e := range w.events {
		if e.Reason == reason {
			return true
		}
	}
	return false
}

func (w *world) eventCount(reason string) int {
	n := 0
	for _, e := range w.events {
		if e.Reason == reason {
			n++
		}
	}
	return n
}

func pdb(ns, name string, allowed, expected int32) policyv1.PodDisruptionBudget {
	return policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, ExpectedPods: expected}}
}

// checkAlertsUnread plans in again without the alerts read, as the reconciler
// does first: a plan that does not ask for them (Output.NeedsAlerts) must be
// the plan with them, whatever they are; a plan that asks must have checked
// them (status.preflight has the critical-alerts check).
func checkAlertsUnread(t *testing.T, in Input, full Output) {
	t.Helper()
	if in.Snapshot.AlertsUnread {
		return
	}
	lazy := in
	lazy.Snapshot.Alerts, lazy.Snapshot.AlertsUnread = nil, true
	got := Plan(lazy)
	if got.NeedsAlerts {
		if full.NeedsAlerts || !slices.ContainsFunc(full.Status.Preflight, func(c upgradev1alpha1.PreflightCheck) bool { return c.Check == CheckCriticalAlerts }) {
			t.Fatalf("plan asked for the alerts without checking them")
		}
		return
	}
	if !reflect.DeepEqual(got, full) {
		t.Fatalf("a plan that did not ask for the alerts differs from the plan with them (%+v):\nunread: %+v\nread:   %+v", in.Snapshot.Alerts, got, full)
	}
}

// holdHealth makes a check that blocks the upgrade fail (etcd Degraded), or
// pass again.
func (w *world) holdHealth(on bool) {
	status := configv1.ConditionFalse
	if on {
		status = configv1.ConditionTrue
	}
	w.snap.ClusterOperators[0].Status.Conditions[1].Status = status
}
