package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/mcostate"
)

// world is a small cluster the planner's actions are applied to, with a
// machine-config operator that moves nodes the way the real one does: only
// in unpaused pools, by setting desiredConfig, then (a step later) the new
// currentConfig and Done. It plays the reconciler (apply) and the MCO (mco).
type world struct {
	t         testing.TB
	now       time.Time
	run       nodegatev1alpha1.MutexRunConfig
	rules     []nodegatev1alpha1.MutexRule
	targets   []nodegatev1alpha1.MutexTarget
	pools     map[string]*mcfgv1.MachineConfigPool
	nodes     map[string]*corev1.Node
	jobs      map[string]*batchv1.Job
	cv        *configv1.ClusterVersion
	alerts    []alerts.Alert
	alertsErr error
	// maintenance are the IDs of the upgrade-scheduler's silences.
	maintenance map[string]bool
	others      []RunClaim
	jobNS       []string             // Input.JobPlaces.Namespaces
	own         types.NamespacedName // Input.JobPlaces.Own
	gated       []string             // Input.GatedPools
	version     string               // the release the pools render
	last        Result
	// history of what happened, for assertions: the nodes a pass released.
	labelled map[string]bool
	// completed is each node's record as the pass that completed it left
	// it, before Compact drops its times.
	completed map[string]nodegatev1alpha1.NodeRecord
}

const (
	ns         = "gate-ns"
	workerRole = "node-role.kubernetes.io/worker"
	masterRole = "node-role.kubernetes.io/master"
	mcRole     = "machineconfiguration.openshift.io/role"
)

func rendered(pool, version string) string { return "rendered-" + pool + "-" + version }

func newPool(name string, nodeSel map[string]string, role string, version string) *mcfgv1.MachineConfigPool {
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: nodeSel}
	p.Spec.MachineConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{mcRole: role}}
	p.Spec.Configuration.Name = rendered(name, version)
	return p
}

func readyNode(name string, lbls map[string]string, config string, created time.Time) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls, CreationTimestamp: metav1.NewTime(created),
		Annotations: map[string]string{mcostate.CurrentConfig: config, mcostate.DesiredConfig: config, mcostate.State: mcostate.StateDone}}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	return n
}

func jobSpec(name string, env ...corev1.EnvVar) *batchv1.JobSpec {
	return &batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: name, Image: "ubi9/toolbox", Command: []string{"true"}, Env: env}},
	}}}
}

// newWorld: 3 masters, n workers on 4.15.0, one rule with a jobSpec and a
// pre-hook plus a cleanUpJobSpec, a target "worker" and a run.
func newWorld(t testing.TB, workers int) *world {
	w := &world{t: t, now: time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC), pools: map[string]*mcfgv1.MachineConfigPool{},
		nodes: map[string]*corev1.Node{}, jobs: map[string]*batchv1.Job{}, version: "4.15.0", labelled: map[string]bool{},
		completed: map[string]nodegatev1alpha1.NodeRecord{}}
	w.pools["master"] = newPool("master", map[string]string{masterRole: ""}, "master", w.version)
	w.pools["worker"] = newPool("worker", map[string]string{workerRole: ""}, "worker", w.version)
	base := w.now.Add(-time.Hour)
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("m%d", i)
		w.nodes[name] = readyNode(name, map[string]string{masterRole: ""}, rendered("master", w.version), base)
	}
	for i := 0; i < workers; i++ {
		name := fmt.Sprintf("w%02d", i)
		w.nodes[name] = readyNode(name, map[string]string{workerRole: "", corev1.LabelTopologyZone: fmt.Sprintf("zone-%c", 'a'+i%3)},
			rendered("worker", w.version), base.Add(time.Duration(i)*time.Second))
	}
	w.cv = &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}}
	w.cv.Status.History = []configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: w.version}}
	w.cv.Status.Desired.Version = w.version
	rule := nodegatev1alpha1.MutexRule{ObjectMeta: metav1.ObjectMeta{Name: "drain-db", Namespace: ns}}
	rule.Spec = nodegatev1alpha1.MutexRuleSpec{JobName: "drain-db", JobNamespace: ns, Type: nodegatev1alpha1.RuleTypeKubernetes,
		JobSpec:        jobSpec("pre", corev1.EnvVar{Name: "USER_VAR", Value: "kept"}),
		CleanUpJobSpec: jobSpec("post"),
		PreHooks:       []nodegatev1alpha1.Hook{{Name: "fence", JobSpec: *jobSpec("fence"), FailurePolicy: nodegatev1alpha1.FailurePause, Placement: nodegatev1alpha1.PlacementOnNode}},
	}
	w.rules = []nodegatev1alpha1.MutexRule{rule}
	w.targets = []nodegatev1alpha1.MutexTarget{{ObjectMeta: metav1.ObjectMeta{Name: "workers", Namespace: ns},
		Spec: nodegatev1alpha1.MutexTargetSpec{MachineConfigPools: []string{"worker"}}}}
	w.run = nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Name: "run", Namespace: ns, UID: types.UID("uid-run"), Generation: 1,
		CreationTimestamp: metav1.NewTime(base)}}
	w.run.Spec = nodegatev1alpha1.MutexRunConfigSpec{
		MutexRules:   []nodegatev1alpha1.ObjectReference{{Name: "drain-db"}},
		MutexTargets: []nodegatev1alpha1.ObjectReference{{Name: "workers", Namespace: ns}},
	}
	return w
}

func (w *world) input() Input {
	in := Input{Now: w.now, Run: w.run.DeepCopy(), Rules: w.rules, Targets: w.targets, ClusterVersion: w.cv.DeepCopy(),
		Alerts: w.alerts, AlertsErr: w.alertsErr, MaintenanceSilences: w.maintenance, OtherRuns: w.others, JobPlaces: JobPlaces{Namespaces: w.jobNS, Own: w.own}, GatedPools: w.gated}
	for _, k := range slices.Sorted(maps.Keys(w.pools)) {
		in.Pools = append(in.Pools, *w.pools[k].DeepCopy())
	}
	in.RenderedReleases = releasesOf(in.Pools)
	for _, k := range slices.Sorted(maps.Keys(w.nodes)) {
		in.Nodes = append(in.Nodes, w.nodes[k].DeepCopy())
	}
	for _, k := range slices.Sorted(maps.Keys(w.jobs)) {
		in.Jobs = append(in.Jobs, w.jobs[k].DeepCopy())
	}
	return in
}

// releasesOf is what the reconciler reads from the rendered MachineConfigs
// the pools target: the harness names them rendered-<pool>-<release>, and
// rendered-worker-4.16.0-mc2 is a MachineConfig change within 4.16.0.
func releasesOf(pools []mcfgv1.MachineConfigPool) map[string]string {
	out := map[string]string{}
	for _, p := range pools {
		if t := p.Spec.Configuration.Name; t != "" {
			release, _, _ := strings.Cut(strings.TrimPrefix(t, "rendered-"+p.Name+"-"), "-mc")
			out[t] = release
		}
	}
	return out
}

// reconcile runs the planner once, writes the status, then applies the
// actions, as the reconciler does.
func (w *world) reconcile() Result {
	in := w.input()
	w.last = Plan(in)
	for _, r := range w.last.Status.Nodes {
		if r.Phase == nodegatev1alpha1.NodeReleased {
			w.labelled[r.Name] = true
		}
		if r.Phase == nodegatev1alpha1.NodeCompleted && r.CompletionTime != nil {
			w.completed[r.Name] = *r.DeepCopy()
		}
	}
	if st, write := Publish(w.run.Status, w.last.Status, in); write {
		w.run.Status = st
	}
	// node-gate does not wake for its own status writes: a pass must take
	// the run as far as its inputs allow, so a second pass on the same
	// inputs and the status just written has nothing to write, unless the
	// first asked to be woken at once for it (a round that ends on a newer
	// render).
	in = w.input()
	if again, write := Publish(w.run.Status, Plan(in).Status, in); write && (w.last.RequeueAfter == 0 || w.last.RequeueAfter > time.Second) {
		w.t.Fatalf("a second pass on the same inputs changed the status:\n%s", cmp.Diff(w.run.Status, again))
	}
	checkNoLabelOnFinished(w.t, w.last)
	for _, a := range w.last.Actions {
		w.apply(a)
	}
	return w.last
}

func (w *world) apply(a Action) {
	switch a.Kind {
	case SetPoolPaused:
		w.pools[a.Pool].Spec.Paused = a.Paused
	case SetPoolSelector:
		w.pools[a.Pool].Spec.NodeSelector = a.NodeSelector.DeepCopy()
	case SetPoolMaxUnavailable:
		w.pools[a.Pool].Spec.MaxUnavailable = nil
		if a.MaxUnavailable != nil {
			mu := *a.MaxUnavailable
			w.pools[a.Pool].Spec.MaxUnavailable = &mu
		}
	case CreatePool:
		if _, ok := w.pools[a.Pool]; !ok {
			w.pools[a.Pool] = a.NewPool.DeepCopy()
		}
	case DeletePool:
		delete(w.pools, a.Pool)
	case LabelNode:
		if a.Label != ReleaseLabel && a.Label != HoldLabel {
			w.t.Fatalf("LabelNode with label %q", a.Label)
		}
		w.nodes[a.Node].Labels[a.Label] = a.Pool
		if a.Label == HoldLabel {
			delete(w.nodes[a.Node].Annotations, ReleasedAnnotation)
		}
	case UnlabelNode:
		if a.Label != ReleaseLabel && a.Label != HoldLabel {
			w.t.Fatalf("UnlabelNode with label %q", a.Label)
		}
		delete(w.nodes[a.Node].Labels, a.Label)
		if a.ReleaseMark != "" {
			w.nodes[a.Node].Annotations[ReleasedAnnotation] = a.ReleaseMark
		}
	case CreateJob:
		key := a.Job.Namespace + "/" + a.Job.Name
		if _, ok := w.jobs[key]; !ok {
			j := a.Job.DeepCopy()
			j.CreationTimestamp = metav1.NewTime(w.now)
			w.jobs[key] = j
		}
	default:
		w.t.Fatalf("unknown action %q", a.Kind)
	}
}

// render gives pools without a rendered config one (the MCO's render
// controller): named for the pool and the release, as the real names are
// per pool even when the content is the same.
func (w *world) render() {
	for _, p := range w.pools {
		if p.Spec.Configuration.Name == "" {
			p.Spec.Configuration.Name = rendered(p.Name, w.version)
		}
	}
}

// startUpdate asks for a new release: ClusterVersion first, then (as the
// MCO does once updated) new rendered targets for every pool.
func (w *world) startUpdate(version string) {
	w.cv.Spec.DesiredUpdate = &configv1.Update{Version: version}
	w.cv.Status.History = append([]configv1.UpdateHistory{{State: configv1.PartialUpdate, Version: version}}, w.cv.Status.History...)
}

func (w *world) renderRelease(version string) {
	w.version = version
	for _, p := range w.pools {
		p.Spec.Configuration.Name = rendered(p.Name, version)
	}
}

func (w *world) finishControlPlane() {
	w.cv.Status.History[0].State = configv1.CompletedUpdate
	w.cv.Status.Desired.Version = w.cv.Status.History[0].Version
}

// primary is the MCO's pool for a node, with the pools as they are now.
func (w *world) primary(n *corev1.Node) string {
	var sel []string
	for _, k := range slices.Sorted(maps.Keys(w.pools)) {
		if selects(w.pools[k].Spec.NodeSelector, labels.Set(n.Labels)) {
			sel = append(sel, k)
		}
	}
	p, err := primaryPool(sel)
	if err != nil {
		return ""
	}
	return p
}

// mco advances every node by one MCO step: the MCD finishes a node it was
// targeted at (whether or not its pool is paused now: pausing a pool stops
// new targets, not an update under way), then the controller targets nodes
// of unpaused pools, in each no more than the pool's maxUnavailable (nil: 1;
// a percentage of the pool's members, rounded down, at least 1) updating at
// once, as the MCO does. It returns the nodes it touched.
func (w *world) mco() []string {
	var touched []string
	members := map[string][]*corev1.Node{}
	for _, name := range slices.Sorted(maps.Keys(w.nodes)) {
		n := w.nodes[name]
		a := n.Annotations
		if a[mcostate.DesiredConfig] != a[mcostate.CurrentConfig] {
			a[mcostate.CurrentConfig] = a[mcostate.DesiredConfig]
			a[mcostate.State] = mcostate.StateDone
			touched = append(touched, name)
		}
		if p := w.primary(n); p != "" {
			members[p] = append(members[p], n)
		}
	}
	for _, pname := range slices.Sorted(maps.Keys(members)) {
		pool := w.pools[pname]
		if pool == nil || pool.Spec.Paused {
			continue
		}
		limit := 1
		if mu := pool.Spec.MaxUnavailable; mu != nil {
			if v, err := intstr.GetScaledValueFromIntOrPercent(mu, len(members[pname]), false); err == nil && v > 1 {
				limit = v
			}
		}
		busy := 0
		for _, n := range members[pname] {
			if n.Annotations[mcostate.DesiredConfig] != n.Annotations[mcostate.CurrentConfig] {
				busy++
			}
		}
		target := pool.Spec.Configuration.Name
		for _, n := range members[pname] {
			if busy >= limit {
				break
			}
			if a := n.Annotations; a[mcostate.DesiredConfig] != target && a[mcostate.DesiredConfig] == a[mcostate.CurrentConfig] {
				a[mcostate.DesiredConfig] = target
				a[mcostate.State] = mcostate.StateWorking
				touched = append(touched, n.Name)
				busy++
			}
		}
	}
	return touched
}

func (w *world) setJob(key string, cond batchv1.JobConditionType) {
	j, ok := w.jobs[key]
	if !ok {
		w.t.Fatalf("no Job %s; have %v", key, slices.Sorted(maps.Keys(w.jobs)))
	}
	j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: cond, Status: corev1.ConditionTrue, Reason: "Test"})
}

// runningJobs lists Jobs without a final condition.
func (w *world) runningJobs() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(w.jobs)) {
		if s, _ := stateOf(w.jobs[k]); s == jobRunning {
			out = append(out, k)
		}
	}
	return out
}

func (w *world) completeAll() {
	for _, k := range w.runningJobs() {
		w.setJob(k, batchv1.JobComplete)
	}
}

func (w *world) rec(node string) *nodegatev1alpha1.NodeRecord {
	for i := range w.run.Status.Nodes {
		if w.run.Status.Nodes[i].Name == node {
			return &w.run.Status.Nodes[i]
		}
	}
	return nil
}

func (w *world) cond(t string) *metav1.Condition {
	for i := range w.run.Status.Conditions {
		if w.run.Status.Conditions[i].Type == t {
			return &w.run.Status.Conditions[i]
		}
	}
	return nil
}

func actionsOf(r Result, kind ActionKind) []Action {
	var out []Action
	for _, a := range r.Actions {
		if a.Kind == kind {
			out = append(out, a)
		}
	}
	return out
}

func hasEvent(r Result, reason string) bool {
	for _, e := range r.Events {
		if e.Reason == reason {
			return true
		}
	}
	return false
}

// driveToEnd alternates reconcile, Jobs completing and the MCO until the run
// is Completed, or fails after a bound.
func (w *world) driveToEnd() { w.driveToEndWith(nil) }

// driveToEndWith is driveToEnd handing each pass's result to each.
func (w *world) driveToEndWith(each func(Result)) {
	for i := 0; i < 500; i++ {
		r := w.reconcile()
		if each != nil {
			each(r)
		}
		if w.run.Status.Phase == nodegatev1alpha1.RunCompleted {
			return
		}
		w.render()
		w.completeAll()
		w.mco()
		w.now = w.now.Add(time.Minute)
	}
	w.t.Fatalf("run did not complete: phase %s, status %+v", w.run.Status.Phase, w.run.Status.Summary)
}

// checkNoLabelOnFinished: a pass never labels a node into the canary whose
// record it leaves finished; the label would outlive the record (a stray in
// the canary). (A finished node is held again when its pool renders newer
// content.)
func checkNoLabelOnFinished(t testing.TB, r Result) {
	t.Helper()
	for _, a := range r.Actions {
		if a.Kind != LabelNode || a.Label != ReleaseLabel {
			continue
		}
		for _, rec := range r.Status.Nodes {
			if rec.Name == a.Node && terminal(rec.Phase) {
				t.Fatalf("node %s labelled in the pass that left its record %s", a.Node, rec.Phase)
			}
		}
	}
}

// releaseActions are the actions of r that release a node: its hold label
// removed (or, with a canary, its release label set).
func releaseActions(r Result) []Action {
	var out []Action
	for _, a := range r.Actions {
		if (a.Kind == UnlabelNode && a.Label == HoldLabel) || (a.Kind == LabelNode && a.Label == ReleaseLabel) {
			out = append(out, a)
		}
	}
	return out
}

// released: the MCO may update the node as node-gate left it: without a
// canary, it is a gated node out of the gate pool (no hold label); with one,
// it carries the release label.
func (w *world) released(node string) bool {
	n := w.nodes[node]
	if w.run.Spec.Canary != nil {
		return n.Labels[ReleaseLabel] != ""
	}
	return n.Labels[HoldLabel] == ""
}

// isGated: the node belongs to a pool the run gates, by the pools' own
// selectors (node-gate's labels and gate pools aside).
func (w *world) isGated(n *corev1.Node) bool {
	var sel []string
	for _, k := range slices.Sorted(maps.Keys(w.pools)) {
		if w.pools[k].Labels[GatePoolLabel] != "" || (w.run.Spec.Canary != nil && k == w.run.Spec.Canary.Name) {
			continue
		}
		if selects(w.pools[k].Spec.NodeSelector, labels.Set(withoutGateLabels(n.Labels))) {
			sel = append(sel, k)
		}
	}
	p, err := primaryPool(sel)
	return err == nil && slices.Contains(w.targets[0].Spec.MachineConfigPools, p)
}

// driveUntil alternates Jobs completing, the MCO and reconcile, a minute
// apart, until node's record reaches phase, or fails after a bound.
func (w *world) driveUntil(node string, phase nodegatev1alpha1.NodePhase) {
	w.t.Helper()
	for i := 0; i < 50 && w.rec(node).Phase != phase; i++ {
		w.completeAll()
		w.mco()
		w.now = w.now.Add(time.Minute)
		w.reconcile()
	}
	if got := w.rec(node).Phase; got != phase {
		w.t.Fatalf("setup: %s %s, want %s", node, got, phase)
	}
}
