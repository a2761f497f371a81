package plan

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/mcostate"
)

func TestIdleWithoutUpdate(t *testing.T) {
	w := newWorld(t, 3)
	r := w.reconcile()
	if len(r.Actions) != 0 {
		t.Fatalf("no update pending, want no actions, got %+v", r.Actions)
	}
	if w.run.Status.Phase != nodegatev1alpha1.RunIdle {
		t.Fatalf("phase %s, want Idle", w.run.Status.Phase)
	}
	if c := w.cond(CondReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready = %+v, want True", c)
	}
	if w.run.Status.ObservedGeneration != 1 {
		t.Fatalf("observedGeneration %d", w.run.Status.ObservedGeneration)
	}
}

// An update requested on ClusterVersion pauses the gated pools before the
// MCO renders anything for them, records what it changes first, and parks
// every node in the paused gate pool.
func TestArmsOnRequestedUpdate(t *testing.T) {
	w := newWorld(t, 3)
	w.startUpdate("4.16.0")
	r := w.reconcile()
	pauses := actionsOf(r, SetPoolPaused)
	if len(pauses) != 1 || pauses[0].Pool != "worker" || !pauses[0].Paused {
		t.Fatalf("want worker paused, got %+v", r.Actions)
	}
	created := actionsOf(r, CreatePool)
	if len(r.Actions) != 2 || len(created) != 1 || created[0].Pool != "worker-gate" {
		t.Fatalf("only the pause and the gate pool, got %+v", r.Actions)
	}
	if gp := created[0].NewPool; gp.Spec.MachineConfigSelector.MatchLabels[mcRole] != "worker" || gp.Spec.NodeSelector.MatchLabels[HoldLabel] != "worker" || !gp.Spec.Paused {
		t.Fatalf("gate pool: %+v", gp.Spec)
	}
	// Once the gate pool is there, every worker is parked in it.
	r = w.reconcile()
	if held := actionsOf(r, LabelNode); len(held) != 3 || held[0].Label != HoldLabel {
		t.Fatalf("want the three workers held, got %+v", r.Actions)
	}
	rec := w.run.Status.Pools[0]
	if rec.OriginalPaused == nil || *rec.OriginalPaused {
		t.Fatalf("original paused=false must be recorded with the pause, got %+v", rec)
	}
	if w.run.Status.Phase != nodegatev1alpha1.RunWaiting || w.cond(CondProgressing).Reason != ReasonControlPlane {
		t.Fatalf("phase %s progressing %+v", w.run.Status.Phase, w.cond(CondProgressing))
	}
	// The MCO renders the new worker config: no node moves in the paused pool.
	w.renderRelease("4.16.0")
	w.reconcile()
	if moved := w.mco(); len(moved) != 1 || moved[0][0] != 'm' { // one master (maxUnavailable 1)
		t.Fatalf("only masters may move while workers are gated, moved %v", moved)
	}
	for _, n := range []string{"w00", "w01", "w02"} {
		if w.nodes[n].Annotations[mcostate.DesiredConfig] != rendered("worker", "4.15.0") {
			t.Fatalf("%s retargeted in a paused pool", n)
		}
	}
	// Still waiting: the control plane has not finished.
	r = w.reconcile()
	if len(actionsOf(r, CreateJob)) != 0 || len(releaseActions(r)) != 0 {
		t.Fatalf("nothing may start before the control plane finished: %+v", r.Actions)
	}
	if got := w.run.Status.PlannedOrder; len(got) != 3 {
		t.Fatalf("the planned order is previewed before anything moves, got %v", got)
	}
}

// One node through every phase: pre-hooks in order, release, completion
// only from the MCO annotations, post-hook, unlabel, next node.
func TestNodeLifecycle(t *testing.T) {
	w := newWorld(t, 3)
	w.startUpdate("4.16.0")
	w.reconcile()
	w.renderRelease("4.16.0")
	w.finishControlPlane()

	// The gate pool exists (the first pass made it, paused): the round
	// starts, every worker is held, the first hook starts.
	r := w.reconcile()
	// Zone a first, oldest first: w00 (zone-a), w01 (zone-b), w02 (zone-c).
	if got := strings.Join(w.run.Status.PlannedOrder, ","); got != "w00,w01,w02" {
		t.Fatalf("planned order %s", got)
	}
	if len(actionsOf(r, LabelNode)) != 3 || !w.pools["worker"].Spec.Paused {
		t.Fatalf("want every worker held, the pool paused until they are: %+v", r.Actions)
	}
	jobs := actionsOf(r, CreateJob)
	if len(jobs) != 1 {
		t.Fatalf("one pre-hook at a time, got %d", len(jobs))
	}
	j := jobs[0].Job
	if j.Namespace != ns || !strings.HasPrefix(j.Name, "drain-db-") || !strings.HasSuffix(j.Name, "-1") {
		t.Fatalf("job name %s/%s", j.Namespace, j.Name)
	}
	env := j.Spec.Template.Spec.Containers[0].Env
	names := []string{}
	for _, e := range env {
		names = append(names, e.Name+"="+e.Value)
	}
	want := "USER_VAR=kept,NODE_NAME=w00,MUTEX_RULE=drain-db,POOL=worker,TARGET_CONFIG=rendered-worker-4.16.0,TARGET_VERSION=4.16.0,RUN_ID=" + w.run.Status.RunID
	if strings.Join(names, ",") != want {
		t.Fatalf("env\n got %s\nwant %s", strings.Join(names, ","), want)
	}
	// The mutex operator's jobSpec runs off the node.
	mf := j.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0]
	if mf.Operator != corev1.NodeSelectorOpNotIn || mf.Values[0] != "w00" {
		t.Fatalf("placement %+v", mf)
	}
	if j.Spec.TTLSecondsAfterFinished == nil || len(j.OwnerReferences) != 1 || j.OwnerReferences[0].Name != "run" {
		t.Fatalf("ttl/owner: %+v %+v", j.Spec.TTLSecondsAfterFinished, j.OwnerReferences)
	}
	// blockOwnerDeletion true would need update on mutexrunconfigs/finalizers
	// under OwnerReferencesPermissionEnforcement (OpenShift), not granted.
	if b := j.OwnerReferences[0].BlockOwnerDeletion; b == nil || *b {
		t.Fatalf("blockOwnerDeletion must be set false: %v", b)
	}
	rec := w.rec("w00")
	if rec.Phase != nodegatev1alpha1.NodePreHooks || rec.Hooks[0].Attempts != 1 || rec.Hooks[0].JobName != j.Name {
		t.Fatalf("record %+v", rec)
	}
	// Reconciling again (the Job not yet in the cache) does not make a second
	// Job. Every node is held now: the pool runs, its maxUnavailable the
	// run's.
	r = w.reconcile()
	for _, a := range actionsOf(r, CreateJob) {
		if a.Job.Name != j.Name {
			t.Fatalf("a second Job %s while the first runs", a.Job.Name)
		}
	}
	if p := w.pools["worker"]; p.Spec.Paused || p.Spec.MaxUnavailable == nil || p.Spec.MaxUnavailable.String() != "1" {
		t.Fatalf("worker paused %v, maxUnavailable %v: want it running with the run's limit", p.Spec.Paused, p.Spec.MaxUnavailable)
	}
	w.setJob(ns+"/"+j.Name, batchv1.JobComplete)
	r = w.reconcile()
	jobs = actionsOf(r, CreateJob)
	if len(jobs) != 1 || jobs[0].Job.Labels[HookLabel] != "fence" {
		t.Fatalf("second pre-hook next, got %+v", r.Actions)
	}
	onNode := jobs[0].Job.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0]
	if onNode.Operator != corev1.NodeSelectorOpIn {
		t.Fatalf("fence runs on the node: %+v", onNode)
	}
	if len(releaseActions(r)) != 0 {
		t.Fatal("released before its pre-hooks finished")
	}
	w.completeAll()
	r = w.reconcile()
	if l := releaseActions(r); len(l) != 1 || l[0].Node != "w00" || len(r.Actions) != 1 {
		t.Fatalf("want w00 released, in one write, got %+v", r.Actions)
	}
	if w.rec("w00").Phase != nodegatev1alpha1.NodeReleased || len(r.Events) != 0 {
		t.Fatalf("record %+v, events %+v (a release is told by the status and metrics, not an Event)", w.rec("w00"), r.Events)
	}

	// The MCO's intermediate states are not completion.
	n := w.nodes["w00"]
	gateTarget := rendered("worker", "4.16.0")
	steps := []func(){
		func() {
			n.Annotations[mcostate.DesiredConfig] = gateTarget
			n.Annotations[mcostate.State] = mcostate.StateWorking
		},
		func() { n.Spec.Unschedulable = true },
		func() { n.Status.Conditions[0].Status = corev1.ConditionFalse },
		func() { n.Status.Conditions[0].Status = corev1.ConditionTrue; n.Spec.Unschedulable = false },
		func() { n.Annotations[mcostate.CurrentConfig] = gateTarget }, // current written, state still Working
	}
	for i, s := range steps {
		s()
		r = w.reconcile()
		if w.rec("w00").Phase != nodegatev1alpha1.NodeReleased || len(actionsOf(r, CreateJob)) != 0 {
			t.Fatalf("step %d: node counted as updated too early: %+v", i, w.rec("w00"))
		}
	}
	n.Annotations[mcostate.State] = mcostate.StateDone
	r = w.reconcile()
	jobs = actionsOf(r, CreateJob)
	if w.rec("w00").Phase != nodegatev1alpha1.NodePostHooks || len(jobs) != 1 || jobs[0].Job.Labels[HookLabel] != "cleanup" {
		t.Fatalf("post-hook after Done: %+v %+v", w.rec("w00"), r.Actions)
	}
	if len(releaseActions(r)) != 0 {
		t.Fatal("the next node is released before the previous one's post-hooks")
	}
	w.completeAll()
	r = w.reconcile()
	if len(actionsOf(r, UnlabelNode)) != 0 || len(actionsOf(r, LabelNode)) != 0 {
		t.Fatalf("w00 is done, in its own pool, nothing to move: %+v", r.Actions)
	}
	if w.rec("w00").Phase != nodegatev1alpha1.NodeCompleted || w.rec("w01").Phase != nodegatev1alpha1.NodePreHooks {
		t.Fatalf("w00 %s, w01 %s", w.rec("w00").Phase, w.rec("w01").Phase)
	}
	if w.run.Status.Progress != "1/3" || strings.Join(w.run.Status.CurrentNodes, ",") != "w01" {
		t.Fatalf("progress %s current %v", w.run.Status.Progress, w.run.Status.CurrentNodes)
	}

	w.driveToEnd()
	if _, ok := w.pools["worker-gate"]; ok {
		t.Fatal("gate pool must be deleted at the end")
	}
	for _, n := range w.nodes {
		if _, ok := n.Labels[HoldLabel]; ok {
			t.Fatalf("%s still labelled", n.Name)
		}
	}
	if p := w.pools["worker"]; p.Spec.Paused || p.Spec.MaxUnavailable != nil {
		t.Fatalf("worker left paused (%v) or with maxUnavailable %v", p.Spec.Paused, p.Spec.MaxUnavailable)
	}
	// Nothing moves after the round (no return trip); the run stays
	// Completed and gates nothing again for the same target.
	if moved := w.mco(); len(moved) != 0 {
		t.Fatalf("the MCO moved %v after the round", moved)
	}
	r = w.reconcile()
	if len(r.Actions) != 0 || w.run.Status.Phase != nodegatev1alpha1.RunCompleted {
		t.Fatalf("after the round: phase %s actions %+v", w.run.Status.Phase, r.Actions)
	}
	for _, n := range []string{"w00", "w01", "w02"} {
		if w.nodes[n].Annotations[mcostate.CurrentConfig] != rendered("worker", "4.16.0") {
			t.Fatalf("%s on %s", n, w.nodes[n].Annotations[mcostate.CurrentConfig])
		}
	}
}

// readyRound brings a world to the point where the gate pool exists and the
// first nodes are in their pre-hooks.
func readyRound(t testing.TB, workers int, mutate func(*world)) *world {
	w := newWorld(t, workers)
	if mutate != nil {
		mutate(w)
	}
	w.startUpdate("4.16.0")
	w.reconcile()
	w.renderRelease("4.16.0")
	w.finishControlPlane()
	w.reconcile()
	w.render()
	w.reconcile()
	return w
}

func countPhase(w *world, ph nodegatev1alpha1.NodePhase) int {
	n := 0
	for _, r := range w.run.Status.Nodes {
		if r.Phase == ph {
			n++
		}
	}
	return n
}

func TestMaxUnavailable(t *testing.T) {
	for _, tc := range []struct {
		workers int
		mu      intstr.IntOrString
		want    int
	}{
		{5, intstr.FromInt32(1), 1},
		{5, intstr.FromInt32(3), 3},
		{5, intstr.FromString("50%"), 2},   // of 5, rounded down
		{5, intstr.FromString("10%"), 1},   // never below 1
		{40, intstr.FromString("25%"), 10}, // worker then holds the 10 released nodes
		{50, intstr.FromString("10%"), 5},
	} {
		w := readyRound(t, tc.workers, func(w *world) { w.run.Spec.MaxUnavailable = ptr.To(tc.mu) })
		got := countPhase(w, nodegatev1alpha1.NodePreHooks)
		if got != tc.want {
			t.Errorf("%d workers, maxUnavailable %s: %d nodes started, want %d", tc.workers, tc.mu.String(), got, tc.want)
		}
		// The MCO applies the source pool's maxUnavailable to the pool's
		// members, which are only the released nodes (the others are held
		// in the gate pool): it must let every one of them update at once,
		// or the MCO, not the run, sets the pace; and no more, the MCO's
		// own bound. Every pre-update hook of the started nodes done (the
		// rule runs them one at a time).
		for i := 0; i < 10 && len(w.runningJobs()) > 0; i++ {
			w.completeAll()
			w.reconcile()
		}
		released := countPhase(w, nodegatev1alpha1.NodeReleased)
		if released != tc.want {
			t.Fatalf("%d workers, maxUnavailable %s: %d nodes released, want %d", tc.workers, tc.mu.String(), released, tc.want)
		}
		members := 0
		for _, n := range w.nodes {
			if _, worker := n.Labels[workerRole]; worker && n.Labels[HoldLabel] == "" {
				members++
			}
		}
		if mcoLimit := mcoMaxUnavailable(w.pools["worker"], members); mcoLimit != released {
			t.Errorf("%d workers, maxUnavailable %s: the MCO updates %d of the %d released nodes at once (worker maxUnavailable %v)",
				tc.workers, tc.mu.String(), mcoLimit, released, w.pools["worker"].Spec.MaxUnavailable)
		}
	}
}

// mcoMaxUnavailable is how many of a pool's members the MCO updates at once:
// spec.maxUnavailable, a percentage of the members rounded down, at least 1,
// default 1 (the machine-config operator's getMaxUnavailable).
func mcoMaxUnavailable(pool *mcfgv1.MachineConfigPool, members int) int {
	if pool.Spec.MaxUnavailable == nil {
		return 1
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(pool.Spec.MaxUnavailable, members, false)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

func firstJob(t *testing.T, w *world, node string) string {
	t.Helper()
	for _, h := range w.rec(node).Hooks {
		if h.Phase == nodegatev1alpha1.HookRunning {
			for key := range w.jobs {
				if strings.HasSuffix(key, "/"+h.JobName) {
					return key
				}
			}
			t.Fatalf("Job %s of %s not created", h.JobName, node)
		}
	}
	t.Fatalf("no running hook for %s: %+v", node, w.rec(node))
	return ""
}

func TestHookFailurePausesAndResumes(t *testing.T) {
	w := readyRound(t, 3, nil)
	w.setJob(firstJob(t, w, "w00"), batchv1.JobFailed)
	r := w.reconcile()
	if w.run.Status.Phase != nodegatev1alpha1.RunPaused || w.rec("w00").Phase != nodegatev1alpha1.NodeFailed {
		t.Fatalf("phase %s node %s", w.run.Status.Phase, w.rec("w00").Phase)
	}
	if c := w.cond(CondPaused); c.Status != metav1.ConditionTrue || c.Reason != ReasonHookFailed {
		t.Fatalf("Paused %+v", c)
	}
	if c := w.cond(CondDegraded); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "w00") {
		t.Fatalf("Degraded %+v", c)
	}
	if !hasEvent(r, ReasonHookFailed) || len(actionsOf(r, CreateJob)) != 0 || len(releaseActions(r)) != 0 {
		t.Fatalf("events/actions %+v %+v", r.Events, r.Actions)
	}
	// Time passing changes nothing.
	for i := 0; i < 3; i++ {
		w.now = w.now.Add(time.Hour)
		if r := w.reconcile(); len(r.Actions) != 0 {
			t.Fatalf("paused run acted: %+v", r.Actions)
		}
	}
	// A spec change resumes with a new attempt.
	w.run.Generation++
	r = w.reconcile()
	jobs := actionsOf(r, CreateJob)
	if len(jobs) != 1 || !strings.HasSuffix(jobs[0].Job.Name, "-2") || w.rec("w00").Hooks[0].Attempts != 2 {
		t.Fatalf("resume: %+v %+v", r.Actions, w.rec("w00").Hooks[0])
	}
	if w.run.Status.Phase != nodegatev1alpha1.RunProgressing || !hasEvent(r, "Resumed") {
		t.Fatalf("phase %s", w.run.Status.Phase)
	}
}

func TestRetriesIgnoreAbortTimeout(t *testing.T) {
	withPolicy := func(p nodegatev1alpha1.FailurePolicy, retries int32, timeout time.Duration) func(*world) {
		return func(w *world) {
			w.rules[0].Spec.JobSpec = nil
			h := &w.rules[0].Spec.PreHooks[0]
			h.FailurePolicy, h.Retries = p, retries
			if timeout > 0 {
				h.Timeout = &metav1.Duration{Duration: timeout}
			}
		}
	}
	t.Run("retries", func(t *testing.T) {
		w := readyRound(t, 2, withPolicy(nodegatev1alpha1.FailurePause, 1, 0))
		w.setJob(firstJob(t, w, "w00"), batchv1.JobFailed)
		r := w.reconcile()
		if j := actionsOf(r, CreateJob); len(j) != 1 || !strings.HasSuffix(j[0].Job.Name, "-2") || w.run.Status.Phase == nodegatev1alpha1.RunPaused {
			t.Fatalf("retry: %+v phase %s", r.Actions, w.run.Status.Phase)
		}
		w.setJob(firstJob(t, w, "w00"), batchv1.JobFailed)
		w.reconcile()
		if w.run.Status.Phase != nodegatev1alpha1.RunPaused {
			t.Fatalf("after the retries: %s", w.run.Status.Phase)
		}
	})
	t.Run("ignore", func(t *testing.T) {
		w := readyRound(t, 2, withPolicy(nodegatev1alpha1.FailureIgnore, 0, 0))
		w.setJob(firstJob(t, w, "w00"), batchv1.JobFailed)
		r := w.reconcile()
		if l := releaseActions(r); len(l) != 1 || w.rec("w00").Hooks[0].Phase != nodegatev1alpha1.HookIgnored {
			t.Fatalf("ignore releases: %+v %+v", r.Actions, w.rec("w00").Hooks)
		}
	})
	t.Run("abort restores", func(t *testing.T) {
		w := readyRound(t, 2, withPolicy(nodegatev1alpha1.FailureAbort, 0, 0))
		w.setJob(firstJob(t, w, "w00"), batchv1.JobFailed)
		for i := 0; i < 3; i++ {
			w.reconcile()
		}
		if w.run.Status.Phase != nodegatev1alpha1.RunAborted || w.pools["worker"].Spec.Paused {
			t.Fatalf("phase %s, worker paused %v", w.run.Status.Phase, w.pools["worker"].Spec.Paused)
		}
		if _, ok := w.pools["worker-gate"]; ok {
			t.Fatal("gate pool left behind")
		}
	})
	t.Run("timeout", func(t *testing.T) {
		w := readyRound(t, 2, withPolicy(nodegatev1alpha1.FailurePause, 0, 10*time.Minute))
		if w.last.RequeueAfter != 10*time.Minute {
			t.Fatalf("requeue %v", w.last.RequeueAfter)
		}
		key := firstJob(t, w, "w00")
		if d := w.jobs[key].Spec.ActiveDeadlineSeconds; d == nil || *d != 600 {
			t.Fatalf("activeDeadlineSeconds %v", d)
		}
		w.now = w.now.Add(9 * time.Minute)
		w.reconcile()
		if w.run.Status.Phase == nodegatev1alpha1.RunPaused {
			t.Fatal("paused before the timeout")
		}
		w.now = w.now.Add(2 * time.Minute)
		w.reconcile()
		if w.run.Status.Phase != nodegatev1alpha1.RunPaused || !strings.Contains(w.rec("w00").LastError, "timed out after 10m0s") {
			t.Fatalf("timeout: %s %q", w.run.Status.Phase, w.rec("w00").LastError)
		}
	})
}

func TestRefusesToStart(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*world)
		reason string
		msg    string
	}{
		{"node in two custom pools", func(w *world) {
			w.pools["infra"] = newPool("infra", map[string]string{"infra": ""}, "infra", "4.15.0")
			w.pools["db"] = newPool("db", map[string]string{"db": ""}, "db", "4.15.0")
			w.nodes["w01"].Labels["infra"] = ""
			w.nodes["w01"].Labels["db"] = ""
			w.targets[0].Spec.MachineConfigPools = []string{"worker", "infra"}
		}, ReasonTwoCustomPools, "w01 matches custom pools db, infra"},
		{"gate would select masters", func(w *world) {
			w.nodes["m0"].Labels[workerRole] = ""
		}, ReasonGateSelectsMasters, "control-plane nodes m0"},
		{"another run gates the pool", func(w *world) {
			w.others = []RunClaim{{Name: "other/first", Created: w.run.CreationTimestamp.Add(-time.Minute), Pools: []string{"worker"}}}
		}, ReasonPoolClaimed, "MachineConfigPool worker is gated by MutexRunConfig other/first"},
		{"missing rule", func(w *world) { w.rules = nil }, ReasonMissingRule, "MutexRule gate-ns/drain-db does not exist"},
		{"missing pool", func(w *world) { w.targets[0].Spec.MachineConfigPools = []string{"nope"} }, ReasonMissingPool, "nope"},
		{"gate pool name taken", func(w *world) {
			w.pools["worker-gate"] = newPool("worker-gate", map[string]string{"x": ""}, "worker", "4.15.0")
		}, ReasonGatePoolNameTaken, "worker-gate"},
		{"rule's job namespace not allowed", func(w *world) { w.jobNS = []string{"hooks"} }, ReasonJobNamespace, `spec.jobNamespace "gate-ns" is not one of node-gate's job namespaces [hooks]`},
		{"rule's Jobs outside its own namespace, not listed for it", func(w *world) { w.rules[0].Spec.JobNamespace = "hooks" }, ReasonJobNamespace,
			`MutexRule gate-ns/drain-db: spec.jobNamespace "hooks": the rules of namespace gate-ns may run hook Jobs only in gate-ns (the chart's ruleJobNamespaces)`},
		{"pool not gated", func(w *world) { w.gated = []string{"infra"} }, ReasonPoolNotGated, "MachineConfigPool worker is not one of the pools node-gate may gate [infra]"},
		{"a hook runs as node-gate's own ServiceAccount", func(w *world) {
			w.own = types.NamespacedName{Namespace: ns, Name: "node-gate"}
			w.rules[0].Spec.CleanUpJobSpec.Template.Spec.ServiceAccountName = "node-gate"
		}, ReasonServiceAccount, "MutexRule gate-ns/drain-db: spec.cleanUpJobSpec.template.spec.serviceAccountName: a hook cannot run as node-gate's own ServiceAccount gate-ns/node-gate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 3)
			tc.mutate(w)
			w.startUpdate("4.16.0")
			w.renderRelease("4.16.0")
			w.finishControlPlane()
			r := w.reconcile()
			if len(r.Actions) != 0 {
				t.Fatalf("a blocked run changes nothing, got %+v", r.Actions)
			}
			c := w.cond(CondBlocked)
			if w.run.Status.Phase != nodegatev1alpha1.RunBlocked || c.Status != metav1.ConditionTrue || c.Reason != tc.reason || !strings.Contains(c.Message, tc.msg) {
				t.Fatalf("phase %s Blocked %+v", w.run.Status.Phase, c)
			}
			if !hasEvent(r, tc.reason) {
				t.Fatalf("no %s Event: %+v", tc.reason, r.Events)
			}
		})
	}
	// Allowed job namespaces and gated pools that include the run's do not
	// block it.
	ok := newWorld(t, 1)
	ok.jobNS, ok.gated = []string{"hooks", ns}, []string{"infra", "worker"}
	ok.reconcile()
	if ok.cond(CondBlocked).Status != metav1.ConditionFalse {
		t.Fatalf("run within the allowed namespaces and pools blocked: %+v", ok.cond(CondBlocked))
	}
	// The older of two runs on one pool is not blocked by the younger.
	w := newWorld(t, 1)
	w.others = []RunClaim{{Name: "other/second", Created: w.run.CreationTimestamp.Add(time.Minute), Pools: []string{"worker"}}}
	w.reconcile()
	if w.cond(CondBlocked).Status != metav1.ConditionFalse {
		t.Fatalf("older run blocked: %+v", w.cond(CondBlocked))
	}
}

// A custom source pool gets a "not held" requirement (recorded first,
// restored at the end); worker needs none.
func TestCustomPoolSelectorRestored(t *testing.T) {
	w := newWorld(t, 2)
	w.pools["infra"] = newPool("infra", map[string]string{"node-role.kubernetes.io/infra": ""}, "infra", "4.15.0")
	for _, n := range []string{"w00", "w01"} {
		w.nodes[n].Labels["node-role.kubernetes.io/infra"] = ""
		w.nodes[n].Annotations[mcostate.CurrentConfig] = rendered("infra", "4.15.0")
		w.nodes[n].Annotations[mcostate.DesiredConfig] = rendered("infra", "4.15.0")
	}
	w.targets[0].Spec.MachineConfigPools = []string{"infra"}
	orig := w.pools["infra"].Spec.NodeSelector.DeepCopy()
	w.startUpdate("4.16.0")
	w.reconcile()
	w.renderRelease("4.16.0")
	w.finishControlPlane()
	w.reconcile()
	sel := w.pools["infra"].Spec.NodeSelector
	if len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Key != HoldLabel || sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpDoesNotExist {
		t.Fatalf("infra selector %+v", sel)
	}
	if !sameSelector(w.run.Status.Pools[0].OriginalNodeSelector, orig) {
		t.Fatalf("original not recorded: %+v", w.run.Status.Pools)
	}
	if w.pools["worker"].Spec.Paused {
		t.Fatal("worker is not a target")
	}
	w.driveToEnd()
	if !sameSelector(w.pools["infra"].Spec.NodeSelector, orig) || w.pools["infra"].Spec.Paused {
		t.Fatalf("infra not restored: %+v paused=%v", w.pools["infra"].Spec.NodeSelector, w.pools["infra"].Spec.Paused)
	}
	if w.run.Status.Pools[0].OriginalNodeSelector != nil {
		t.Fatal("originals are cleared once restored")
	}
}

// The mutex operator's model: a canary pool receives the released nodes;
// its selector is taken over for the run and given back.
func TestCanaryPool(t *testing.T) {
	w := newWorld(t, 2)
	canary := newPool("canary", map[string]string{workerRole: ""}, "worker", "4.15.0")
	canary.Spec.NodeSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "isCanary", Operator: metav1.LabelSelectorOpExists}}
	w.pools["canary"] = canary
	orig := canary.Spec.NodeSelector.DeepCopy()
	w.run.Spec.Canary = &nodegatev1alpha1.PoolReference{Name: "canary"}
	w.startUpdate("4.16.0")
	w.reconcile()
	w.renderRelease("4.16.0")
	w.finishControlPlane()
	r := w.reconcile()
	if len(actionsOf(r, CreatePool)) != 0 {
		t.Fatal("no gate pool is created in canary mode")
	}
	if s := w.pools["canary"].Spec.NodeSelector; len(s.MatchExpressions) != 1 || s.MatchExpressions[0].Key != ReleaseLabel || len(s.MatchLabels) != 0 {
		t.Fatalf("canary selector during the run: %+v", s)
	}
	w.driveToEnd()
	if !sameSelector(w.pools["canary"].Spec.NodeSelector, orig) {
		t.Fatalf("canary selector not restored: %+v", w.pools["canary"].Spec.NodeSelector)
	}
	if _, ok := w.pools["canary"]; !ok {
		t.Fatal("the user's canary pool must never be deleted")
	}

	// A canary selecting other MachineConfigs would change the nodes' config.
	w = newWorld(t, 1)
	w.pools["canary"] = newPool("canary", map[string]string{"x": ""}, "other", "4.15.0")
	w.run.Spec.Canary = &nodegatev1alpha1.PoolReference{Name: "canary"}
	w.reconcile()
	if c := w.cond(CondBlocked); c.Reason != ReasonCanaryMismatch {
		t.Fatalf("Blocked %+v", c)
	}
}

func TestDeletionRestoresMidRun(t *testing.T) {
	w := readyRound(t, 3, nil)
	w.completeAll()
	w.reconcile()
	w.completeAll()
	w.reconcile() // w00 released
	if !w.labelled["w00"] {
		t.Fatal("setup: w00 not released")
	}
	w.run.DeletionTimestamp = ptr.To(metav1.NewTime(w.now))
	var r Result
	for i := 0; i < 4 && !r.Finalized; i++ {
		r = w.reconcile()
	}
	if !r.Finalized {
		t.Fatalf("not finalized: %+v", r.Actions)
	}
	if w.pools["worker"].Spec.Paused {
		t.Fatal("worker left paused")
	}
	if _, ok := w.pools["worker-gate"]; ok {
		t.Fatal("gate pool left")
	}
	for _, n := range w.nodes {
		if _, ok := n.Labels[ReleaseLabel]; ok {
			t.Fatalf("%s left labelled", n.Name)
		}
	}
	// A pool the user had paused stays paused.
	w = newWorld(t, 2)
	w.pools["worker"].Spec.Paused = true
	w.startUpdate("4.16.0")
	w.reconcile()
	w.run.DeletionTimestamp = ptr.To(metav1.NewTime(w.now))
	// The gate pool armed with the request goes first.
	r = Result{}
	for i := 0; i < 3 && !r.Finalized; i++ {
		r = w.reconcile()
	}
	if !r.Finalized || !w.pools["worker"].Spec.Paused {
		t.Fatalf("finalized %v, paused %v", r.Finalized, w.pools["worker"].Spec.Paused)
	}
}

func TestNodesAddedAndRemovedMidRun(t *testing.T) {
	w := readyRound(t, 2, nil)
	w.nodes["w99"] = readyNode("w99", map[string]string{workerRole: ""}, rendered("worker", "4.15.0"), w.now)
	delete(w.nodes, "w01")
	w.reconcile()
	if r := w.rec("w99"); r == nil || r.Phase != nodegatev1alpha1.NodePending {
		t.Fatalf("new node %+v", r)
	}
	if r := w.rec("w01"); r.Phase != nodegatev1alpha1.NodeSkipped || !strings.Contains(r.LastError, "removed") {
		t.Fatalf("removed node %+v", r)
	}
	if got := w.run.Status.PlannedOrder; got[len(got)-1] != "w99" {
		t.Fatalf("planned order %v", got)
	}
	w.driveToEnd()
	if !w.labelled["w99"] || w.rec("w99").Phase != nodegatev1alpha1.NodeCompleted {
		t.Fatalf("the added node is gated too: %+v", w.rec("w99"))
	}
}

func TestStartGates(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*world)
		reason string
	}{
		{"spec paused", func(w *world) { w.run.Spec.Paused = true }, ReasonSpecPaused},
		{"outside window", func(w *world) {
			// now is Tuesday 10:00 UTC.
			w.run.Spec.MaintenanceWindows = []commonv1alpha1.MaintenanceWindow{{Days: []commonv1alpha1.Weekday{"Saturday"}, Start: "22:00", End: "02:00"}}
		}, ReasonOutsideWindow},
		{"alert firing", func(w *world) {
			w.run.Spec.HealthGate = &nodegatev1alpha1.HealthGate{IgnoredAlertNames: []string{"Watchdog"}}
			w.alerts = []alerts.Alert{{Labels: map[string]string{"alertname": "Watchdog"}, State: alerts.StateFiring},
				{Labels: map[string]string{"alertname": "KubeNodeNotReady"}, State: alerts.StateFiring}}
		}, ReasonAlertsFiring},
		{"alert silenced by the upgrade-scheduler only", func(w *world) {
			w.run.Spec.HealthGate = &nodegatev1alpha1.HealthGate{}
			w.maintenance = map[string]bool{"s-cp": true, "s-workers": true}
			w.alerts = []alerts.Alert{{Labels: map[string]string{"alertname": "KubeNodeNotReady"}, State: alerts.StateFiring,
				Suppressed: true, SilencedBy: []string{"s-cp", "s-workers"}}}
		}, ReasonAlertsFiring},
		{"alerts unreadable", func(w *world) {
			w.run.Spec.HealthGate = &nodegatev1alpha1.HealthGate{}
			w.alertsErr = errors.New("connection refused")
		}, ReasonAlertsUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := readyRound(t, 2, tc.mutate)
			if n := countPhase(w, nodegatev1alpha1.NodePending); n != 2 {
				t.Fatalf("%d nodes pending, want 2 (none started)", n)
			}
			if len(w.jobs) != 0 {
				t.Fatalf("jobs created: %v", slices.Sorted(maps.Keys(w.jobs)))
			}
			c := w.cond(CondProgressing)
			if c.Reason != tc.reason {
				t.Fatalf("Progressing %+v", c)
			}
			// Alerts have no watch: a gate they close is read again
			// in its time, not only when something else changes.
			if alertsGate := tc.reason == ReasonAlertsFiring || tc.reason == ReasonAlertsUnavailable; alertsGate && w.last.RequeueAfter != alertsRecheck {
				t.Fatalf("requeue %v, want %v", w.last.RequeueAfter, alertsRecheck)
			}
		})
	}
	// The window gives a requeue at its opening: Saturday 22:00.
	w := readyRound(t, 1, cases[1].mutate)
	want := time.Date(2026, 3, 7, 22, 0, 0, 0, time.UTC).Sub(w.now)
	if w.last.RequeueAfter != want {
		t.Fatalf("requeue %v want %v", w.last.RequeueAfter, want)
	}
	// An alert a person silenced (or inhibited), even alongside the
	// scheduler's silences, does not block.
	for _, a := range []alerts.Alert{
		{Labels: map[string]string{"alertname": "KnownIssue"}, State: alerts.StateFiring, Suppressed: true, SilencedBy: []string{"s-cp", "by-sre"}},
		{Labels: map[string]string{"alertname": "Inhibited"}, State: alerts.StateFiring, Suppressed: true, SilencedBy: []string{"s-cp"}, InhibitedBy: []string{"fp"}},
	} {
		w = readyRound(t, 1, func(w *world) {
			w.run.Spec.HealthGate = &nodegatev1alpha1.HealthGate{}
			w.maintenance = map[string]bool{"s-cp": true}
			w.alerts = []alerts.Alert{a}
		})
		if countPhase(w, nodegatev1alpha1.NodePreHooks) != 1 {
			t.Fatalf("%s blocked the gate: %+v", a.Name(), w.cond(CondProgressing))
		}
	}
	// Pending alerts block only when asked to.
	w = readyRound(t, 1, func(w *world) {
		w.run.Spec.HealthGate = &nodegatev1alpha1.HealthGate{}
		w.alerts = []alerts.Alert{{Labels: map[string]string{"alertname": "Slow"}, State: alerts.StatePending}}
	})
	if countPhase(w, nodegatev1alpha1.NodePreHooks) != 1 {
		t.Fatal("a pending alert blocked without includePending")
	}
}

// A run that waited for its window and then waits for its health gate is
// timed from the window's opening, not from when it began to wait for the
// window: readers would otherwise call it stalled the moment the window
// opens after a long wait (libs/gating).
func TestWindowThenHealthGateIsANewWait(t *testing.T) {
	// now is Tuesday 10:00 UTC; the window opens at 12:00.
	w := readyRound(t, 1, func(w *world) {
		w.run.Spec.MaintenanceWindows = []commonv1alpha1.MaintenanceWindow{{Days: []commonv1alpha1.Weekday{"Tuesday"}, Start: "12:00", End: "18:00"}}
		w.run.Spec.HealthGate = &nodegatev1alpha1.HealthGate{}
		w.alerts = []alerts.Alert{{Labels: map[string]string{"alertname": "KubeNodeNotReady"}, State: alerts.StateFiring}}
	})
	if c := w.cond(CondProgressing); c.Reason != ReasonOutsideWindow {
		t.Fatalf("Progressing %+v, want %s", c, ReasonOutsideWindow)
	}
	waitBegan := w.cond(CondProgressing).LastTransitionTime
	w.now = time.Date(2026, 3, 3, 12, 30, 0, 0, time.UTC)
	w.reconcile()
	c := w.cond(CondProgressing)
	if c.Reason != ReasonAlertsFiring || !c.LastTransitionTime.Time.Equal(w.now) {
		t.Fatalf("Progressing %+v (the window wait began %s), want %s since %s", c, waitBegan, ReasonAlertsFiring, w.now)
	}
	run := gating.Read(&w.run)
	if bound := 20 * time.Minute; run.Stalled(w.now.Add(time.Minute), bound) || !run.Stalled(w.now.Add(bound+time.Second), bound) {
		t.Fatalf("last progress %s, want %s", run.LastProgress, w.now)
	}
	// The same gate on the next pass is the same wait.
	w.now = w.now.Add(time.Minute)
	w.reconcile()
	if c := w.cond(CondProgressing); !c.LastTransitionTime.Time.Equal(w.now.Add(-time.Minute)) {
		t.Fatalf("Progressing %+v moved again", c)
	}
}

func TestPoolMembers(t *testing.T) {
	w := newWorld(t, 3)
	w.pools["infra"] = newPool("infra", map[string]string{"infra": ""}, "infra", "4.15.0")
	w.pools["db"] = newPool("db", map[string]string{"db": ""}, "db", "4.15.0")
	w.nodes["w01"].Labels["infra"] = ""            // custom wins over worker
	w.nodes["w02"].Labels["infra"] = ""            // two custom pools: none
	w.nodes["w02"].Labels["db"] = ""               //
	w.nodes["m0"].Labels[workerRole] = ""          // master wins
	w.nodes["w00"].Labels[ReleaseLabel] = "worker" // released nodes stay members of their source
	w.pools["worker-gate"] = newPool("worker-gate", map[string]string{ReleaseLabel: "worker"}, "worker", "4.15.0")
	w.pools["worker-gate"].Labels = map[string]string{GatePoolLabel: "worker"}
	in := w.input()
	for _, tc := range []struct {
		pools []string
		want  string
	}{
		{[]string{"worker"}, "w00"},
		{[]string{"infra"}, "w01"},
		{[]string{"worker", "infra"}, "w00,w01"},
		{[]string{"master"}, "m0,m1,m2"},
		{[]string{"db"}, ""},
	} {
		if got := strings.Join(PoolMembers(in.Pools, in.Nodes, tc.pools), ","); got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.pools, got, tc.want)
		}
	}
}

// After an abort everything is restored; a later spec change resumes the
// round where it stopped: pools paused again, the failed hook retried, the
// completed node not redone.
func TestAbortThenResume(t *testing.T) {
	w := readyRound(t, 2, func(w *world) {
		w.rules[0].Spec.JobSpec = nil
		w.rules[0].Spec.CleanUpJobSpec = nil
		w.rules[0].Spec.PreHooks[0].FailurePolicy = nodegatev1alpha1.FailureAbort
	})
	// w00 passes.
	for i := 0; i < 10 && w.rec("w00").Phase != nodegatev1alpha1.NodeCompleted; i++ {
		w.completeAll()
		w.render()
		w.mco()
		w.reconcile()
	}
	if w.rec("w00").Phase != nodegatev1alpha1.NodeCompleted {
		t.Fatalf("setup: %+v", w.rec("w00"))
	}
	w.setJob(firstJob(t, w, "w01"), batchv1.JobFailed)
	for i := 0; i < 3; i++ {
		w.reconcile()
	}
	if w.run.Status.Phase != nodegatev1alpha1.RunAborted || w.pools["worker"].Spec.Paused {
		t.Fatalf("abort: phase %s paused %v", w.run.Status.Phase, w.pools["worker"].Spec.Paused)
	}
	w.run.Generation++
	r := w.reconcile()
	if !w.pools["worker"].Spec.Paused || len(actionsOf(r, SetPoolPaused)) != 1 {
		t.Fatalf("resume re-arms: %+v", r.Actions)
	}
	w.reconcile()
	w.render()
	r = w.reconcile()
	for _, a := range actionsOf(r, CreateJob) {
		if envOf(a.Job, EnvNodeName) == "w00" {
			t.Fatal("completed node redone after resume")
		}
	}
	if w.rec("w01").Hooks[0].Attempts != 2 {
		t.Fatalf("failed hook retried: %+v", w.rec("w01").Hooks[0])
	}
	w.driveToEnd()
}

// A released node the MCO fails on is reported (Degraded, with the MCO's
// reason) and keeps its slot: the next node does not start.
func TestReleasedNodeDegraded(t *testing.T) {
	w := readyRound(t, 2, func(w *world) {
		w.rules[0].Spec.JobSpec = nil
		w.rules[0].Spec.PreHooks = nil
	})
	if !w.labelled["w00"] {
		t.Fatal("setup: w00 not released")
	}
	n := w.nodes["w00"]
	n.Annotations[mcostate.DesiredConfig] = rendered("worker", "4.16.0")
	n.Annotations[mcostate.State] = mcostate.StateDegraded
	n.Annotations[mcostate.Reason] = "failed to drain node: pods blocked by PDB"
	w.reconcile()
	c := w.cond(CondDegraded)
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonNodeDegraded || !strings.Contains(c.Message, "failed to drain node") {
		t.Fatalf("Degraded %+v", c)
	}
	if w.rec("w01").Phase != nodegatev1alpha1.NodePending {
		t.Fatalf("w01 started while w00 holds the only slot: %s", w.rec("w01").Phase)
	}
}

// TestOnlyTerminalJobConditions: the Job controller writes
// SuccessCriteriaMet (FailureTarget) while the pods still terminate, and
// Complete (Failed) after. A hook is done only at Complete, and a failure
// is acted on only at Failed (a retry must not overlap its predecessor).
func TestOnlyTerminalJobConditions(t *testing.T) {
	w := readyRound(t, 2, nil)
	job := firstJob(t, w, "w00")
	w.setJob(job, batchv1.JobSuccessCriteriaMet)
	w.reconcile()
	if h := w.rec("w00").Hooks[0]; h.Phase != nodegatev1alpha1.HookRunning {
		t.Fatalf("SuccessCriteriaMet alone moved the hook to %s", h.Phase)
	}
	w.setJob(job, batchv1.JobComplete)
	w.reconcile()
	if h := w.rec("w00").Hooks[0]; h.Phase != nodegatev1alpha1.HookSucceeded {
		t.Fatalf("Complete: hook %s", h.Phase)
	}

	w2 := readyRound(t, 2, nil)
	job2 := firstJob(t, w2, "w00")
	w2.setJob(job2, batchv1.JobFailureTarget)
	w2.reconcile()
	if w2.run.Status.Phase == nodegatev1alpha1.RunPaused || w2.rec("w00").Phase == nodegatev1alpha1.NodeFailed {
		t.Fatal("FailureTarget alone failed the hook")
	}
	w2.setJob(job2, batchv1.JobFailed)
	w2.reconcile()
	if w2.run.Status.Phase != nodegatev1alpha1.RunPaused {
		t.Fatalf("Failed: run %s", w2.run.Status.Phase)
	}
}

// TestJobTTLAtLeastMinimum: a Job that expires before node-gate reads its
// result would be created again, so a user's short TTL is raised.
func TestJobTTLAtLeastMinimum(t *testing.T) {
	rule := &nodegatev1alpha1.MutexRule{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"},
		Spec: nodegatev1alpha1.MutexRuleSpec{JobName: "r", JobNamespace: "ns"}}
	for _, tc := range []struct {
		user *int32
		want int32
	}{
		{nil, DefaultJobTTL},
		{ptr.To[int32](0), MinJobTTL},
		{ptr.To[int32](59), MinJobTTL},
		{ptr.To[int32](3600), 3600},
		{ptr.To[int32](7200), 7200},
	} {
		h := nodegatev1alpha1.Hook{Name: "h", JobSpec: *jobSpec("c")}
		h.JobSpec.TTLSecondsAfterFinished = tc.user
		j := BuildJob(h, rule, nodegatev1alpha1.StagePre, JobParams{Node: "w0", RunID: "id", RunKey: "k"})
		if got := j.Spec.TTLSecondsAfterFinished; got == nil || *got != tc.want {
			t.Errorf("user ttl %v: got %v, want %d", tc.user, got, tc.want)
		}
	}
}

// TestHookPodsPreferUnheldNodes: a hook pod that finished on a held node is
// evicted when the MCO drains that node in its turn, and the drain waits for
// it; so a hook that may run elsewhere prefers the nodes node-gate does not
// hold, after the hook's own preferences, which it keeps. A hook that runs on
// its node gets no preference (it has one node to go to).
func TestHookPodsPreferUnheldNodes(t *testing.T) {
	rule := &nodegatev1alpha1.MutexRule{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"},
		Spec: nodegatev1alpha1.MutexRuleSpec{JobName: "r", JobNamespace: "ns"}}
	users := corev1.PreferredSchedulingTerm{Weight: 50, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "disktype", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}}}
	unheld := corev1.PreferredSchedulingTerm{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: HoldLabel, Operator: corev1.NodeSelectorOpDoesNotExist}}}}
	for _, tc := range []struct {
		placement nodegatev1alpha1.Placement
		own       bool
		want      []corev1.PreferredSchedulingTerm
	}{
		{nodegatev1alpha1.PlacementAnywhere, false, []corev1.PreferredSchedulingTerm{unheld}},
		{nodegatev1alpha1.PlacementOffNode, false, []corev1.PreferredSchedulingTerm{unheld}},
		{nodegatev1alpha1.PlacementAnywhere, true, []corev1.PreferredSchedulingTerm{users, unheld}},
		{nodegatev1alpha1.PlacementOnNode, false, nil},
		{nodegatev1alpha1.PlacementOnNode, true, []corev1.PreferredSchedulingTerm{users}},
	} {
		h := nodegatev1alpha1.Hook{Name: "h", JobSpec: *jobSpec("c"), Placement: tc.placement}
		if tc.own {
			h.JobSpec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{users}}}
		}
		j := BuildJob(h, rule, nodegatev1alpha1.StagePre, JobParams{Node: "w0", RunID: "id", RunKey: "k"})
		var got []corev1.PreferredSchedulingTerm
		if a := j.Spec.Template.Spec.Affinity; a != nil && a.NodeAffinity != nil {
			got = a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		}
		if !equality.Semantic.DeepEqual(got, tc.want) {
			t.Errorf("placement %s, own preference %v: preferred terms\n got %+v\nwant %+v", tc.placement, tc.own, got, tc.want)
		}
		if tc.own && len(h.JobSpec.Template.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
			t.Errorf("placement %s: the rule's own spec was changed", tc.placement)
		}
	}
}

// TestCompletedHookNeverRecreated: once the record says a hook succeeded, its
// Job vanishing (TTL, a user) does not make the planner run it again.
func TestCompletedHookNeverRecreated(t *testing.T) {
	w := readyRound(t, 2, nil)
	key := firstJob(t, w, "w00")
	w.setJob(key, batchv1.JobComplete)
	w.reconcile()
	name := key[strings.Index(key, "/")+1:]
	var done *nodegatev1alpha1.HookRecord
	for i, h := range w.rec("w00").Hooks {
		if h.JobName == name {
			done = &w.rec("w00").Hooks[i]
		}
	}
	if done == nil || done.Phase != nodegatev1alpha1.HookSucceeded {
		t.Fatalf("hook record %+v", done)
	}
	delete(w.jobs, key)
	for pass := 0; pass < 3; pass++ {
		r := w.reconcile()
		for _, a := range actionsOf(r, CreateJob) {
			if a.Job.Name == name {
				t.Fatalf("pass %d: the completed hook's Job %s was created again", pass, name)
			}
		}
	}
	for _, h := range w.rec("w00").Hooks {
		if h.JobName == name && h.Phase != nodegatev1alpha1.HookSucceeded {
			t.Fatalf("hook record went back to %s", h.Phase)
		}
	}
}

// TestNewRoundHoldsNodesStillReleased: the last round's final label removal
// is lost (a restart after the status write), and a new release starts a
// new round while that node still sits in the gate pool. The node must not
// get the new target before the new round's pre-hooks: node-gate removes the
// label (the node returns to its paused source pool), counts it against
// maxUnavailable while it carries the label, and gates it once it is gone.
func TestNewRoundHoldsNodesStillReleased(t *testing.T) {
	w := newWorld(t, 3)
	gateMode(w, 1) // the canary's release label (without one, a hold label is set instead)
	w.startUpdate("4.16.0")
	w.reconcile()
	w.renderRelease("4.16.0")
	w.finishControlPlane()
	// Drive round one until its last pass, whose label removals are lost.
	stray := ""
	for i := 0; i < 500 && stray == ""; i++ {
		r := Plan(w.input())
		w.run.Status = *r.Status.DeepCopy()
		last := w.run.Status.Summary.Succeeded == 3
		for _, a := range r.Actions {
			if last && a.Kind == UnlabelNode {
				stray = a.Node
				continue
			}
			w.apply(a)
		}
		w.render()
		w.completeAll()
		w.mco()
		w.now = w.now.Add(time.Minute)
	}
	if stray == "" || w.nodes[stray].Labels[ReleaseLabel] != "worker" {
		t.Fatalf("setup: no node left labelled at the end of round one (stray %q)", stray)
	}
	oldRound := w.run.Status.RunID

	w.startUpdate("4.16.1")
	// The pass that arms for the control-plane update removes the stray's
	// label; that removal is lost too, so the gate pool must hold it.
	r0 := Plan(w.input())
	w.run.Status = *r0.Status.DeepCopy()
	unlabelled := false
	for _, a := range r0.Actions {
		if a.Kind == UnlabelNode && a.Node == stray {
			unlabelled = true
			continue
		}
		w.apply(a)
	}
	if !unlabelled || !hasEvent(r0, "StrayReleaseLabel") {
		t.Fatalf("arming pass: stray %s not unlabelled: %+v", stray, r0.Actions)
	}
	if c := w.cond(CondDegraded); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, stray) {
		t.Fatalf("arming pass: Degraded does not name the stray %s: %+v", stray, c)
	}
	// The unfavourable order: the pools render the new release and the MCO
	// acts on it before node-gate sees the render. The stray must already be
	// out of the gate pool (or the gate pool paused): it was unlabelled by
	// the pass that armed for the control-plane update.
	want := w.nodes[stray].Annotations[mcostate.DesiredConfig]
	w.renderRelease("4.16.1")
	w.mco()
	w.mco()
	if got := w.nodes[stray].Annotations[mcostate.DesiredConfig]; got != want {
		t.Fatalf("stray %s moved to %s during the control-plane update, without pre-hooks", stray, got)
	}
	w.finishControlPlane()
	roundTwo := w.now
	r := w.reconcile()
	if w.run.Status.RunID == oldRound {
		t.Fatalf("no new round started")
	}
	// Back in its paused source pool, the MCO leaves it where it is.
	w.mco()
	if got := w.nodes[stray].Annotations[mcostate.DesiredConfig]; got != want {
		t.Fatalf("stray %s moved to %s before its pre-hooks", stray, got)
	}
	if rec := w.rec(stray); rec == nil || rec.Phase != nodegatev1alpha1.NodePending {
		t.Fatalf("stray %s: record %+v, want Pending (held)", stray, rec)
	}
	unlabelled = false
	for _, a := range actionsOf(r, UnlabelNode) {
		unlabelled = unlabelled || a.Node == stray
	}
	if !unlabelled || !hasEvent(r, "StrayReleaseLabel") {
		t.Fatalf("stray %s not unlabelled: %+v", stray, r.Actions)
	}
	// The stray counted against maxUnavailable 1: no other node started.
	if jobs := actionsOf(r, CreateJob); len(jobs) != 0 {
		t.Fatalf("a node started while the stray still carried the label: %+v", jobs)
	}
	// Once the label is gone it is gated like the others: the run completes
	// and every node of round two ran its pre-hooks before it was released.
	w.driveToEnd()
	if s := w.run.Status.Summary; s.Succeeded != 3 {
		t.Fatalf("round two summary %+v", s)
	}
	// As it completed, its record showed the round's pre-hook start, and
	// that it came before the release.
	if rec := w.completed[stray]; rec.StartTime == nil || rec.StartTime.Time.Before(roundTwo) || rec.ReleasedTime == nil || rec.ReleasedTime.Before(rec.StartTime) {
		t.Fatalf("stray %s not gated in round two: %+v", stray, rec)
	}
}

// setRec overwrites a node's record in the run's status, as a test's way to
// reach a state several passes and races away.
func (w *world) setRec(node string, f func(r *nodegatev1alpha1.NodeRecord)) {
	r := w.rec(node)
	if r == nil {
		w.t.Fatalf("no record for %s", node)
	}
	f(r)
}

// TestUnsettledNodeCountsAgainstMaxUnavailable: a node whose label is gone
// but whose update the MCD is still applying (desiredConfig != currentConfig)
// is unavailable as the MCO counts it: no new node starts while it is.
func TestUnsettledNodeCountsAgainstMaxUnavailable(t *testing.T) {
	w := readyRound(t, 3, nil)
	first := w.run.Status.PlannedOrder[0]
	w.setRec(first, func(r *nodegatev1alpha1.NodeRecord) {
		r.Phase = nodegatev1alpha1.NodeCompleted
		r.ReleasedTime = ptr.To(metav1.NewTime(w.now))
	})
	// Unlabelled, but the MCD is still applying the gate's target.
	delete(w.nodes[first].Labels, HoldLabel)
	w.nodes[first].Annotations[mcostate.DesiredConfig] = rendered("worker", "4.16.0")
	w.nodes[first].Annotations[mcostate.State] = mcostate.StateWorking
	w.now = w.now.Add(time.Minute)
	r := w.reconcile()
	if len(actionsOf(r, CreateJob)) != 0 {
		t.Fatalf("a node started while %s (maxUnavailable 1) is still updating: %+v", first, r.Actions)
	}
	if c := w.cond(CondProgressing); c == nil || !strings.Contains(c.Message, first) {
		t.Fatalf("Progressing does not say which node holds the run: %+v", c)
	}
	// Once the MCD is done, the next node starts.
	w.nodes[first].Annotations[mcostate.CurrentConfig] = rendered("worker", "4.16.0")
	w.nodes[first].Annotations[mcostate.State] = mcostate.StateDone
	if r := w.reconcile(); len(actionsOf(r, CreateJob)) != 1 {
		t.Fatalf("no node started once %s settled: %+v", first, r.Actions)
	}
}

// TestReleaseLimitCountsReleasedRecords: the release limit counts a node
// released in an earlier pass whose label the cache does not show yet, even
// when that node comes later in the planned order.
func TestReleaseLimitCountsReleasedRecords(t *testing.T) {
	w := readyRound(t, 3, func(w *world) { w.run.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(2)) })
	order := w.run.Status.PlannedOrder
	ready, released, done := order[0], order[1], order[2]
	w.setRec(ready, func(r *nodegatev1alpha1.NodeRecord) {
		r.Phase = nodegatev1alpha1.NodePreHooks
		for i := range r.Hooks {
			if r.Hooks[i].Stage == nodegatev1alpha1.StagePre {
				r.Hooks[i].Phase = nodegatev1alpha1.HookSucceeded
			}
		}
	})
	w.setRec(released, func(r *nodegatev1alpha1.NodeRecord) {
		r.Phase = nodegatev1alpha1.NodeReleased
		r.StartTime = ptr.To(metav1.NewTime(w.now))
		r.ReleasedTime = ptr.To(metav1.NewTime(w.now))
	})
	delete(w.nodes[released].Labels, ReleaseLabel) // not in the cache yet
	w.setRec(done, func(r *nodegatev1alpha1.NodeRecord) {
		r.Phase = nodegatev1alpha1.NodeCompleted
		r.StartTime = ptr.To(metav1.NewTime(w.now))
	})
	w.nodes[done].Labels[ReleaseLabel] = "worker" // its removal not seen yet
	// Move the released node after the ready one in the records' order.
	w.run.Status.PlannedOrder = []string{ready, done, released}
	r := w.reconcile()
	for _, a := range actionsOf(r, LabelNode) {
		if a.Node == ready {
			t.Fatalf("%s released while %s (Released) and %s (labelled) fill maxUnavailable 2", ready, released, done)
		}
	}
	if rec := w.rec(ready); rec.Phase != nodegatev1alpha1.NodePreHooks {
		t.Fatalf("%s: %s, want held in PreHooks", ready, rec.Phase)
	}
}

// TestGateRerenderDuringPostHooks: the pool renders a new target while a
// node runs its post-update hooks. The node does not complete: it goes back
// to its pre-update hooks (held again, the pool paused until it is), is
// updated to the new target, runs its post-update hooks again, and only
// then completes.
func TestGateRerenderDuringPostHooks(t *testing.T) {
	w := readyRound(t, 2, nil)
	for i := 0; i < 50 && w.rec("w00").Phase != nodegatev1alpha1.NodePostHooks; i++ {
		w.completeAll()
		w.mco()
		w.now = w.now.Add(time.Minute)
		w.reconcile()
	}
	if ph := w.rec("w00").Phase; ph != nodegatev1alpha1.NodePostHooks {
		t.Fatalf("setup: w00 %s, want PostHooks", ph)
	}
	newTarget := rendered("worker", "4.16.0-mc2")
	w.pools["worker"].Spec.Configuration.Name = newTarget
	w.completeAll() // the post-update hooks finish
	w.reconcile()
	if rec := w.rec("w00"); rec.Phase != nodegatev1alpha1.NodePreHooks {
		t.Fatalf("w00 %s, want back to its pre-update hooks", rec.Phase)
	}
	if w.released("w00") || !w.pools["worker"].Spec.Paused {
		t.Fatal("the pool may move w00 to the new target before its pre-update hooks ran again")
	}
	if w.mco(); w.nodes["w00"].Annotations[mcostate.DesiredConfig] == newTarget {
		t.Fatal("w00 given the new target before its pre-update hooks ran again")
	}
	postRuns, preRuns := 0, 0
	for i := 0; i < 50 && w.rec("w00").Phase != nodegatev1alpha1.NodeCompleted; i++ {
		w.mco()
		w.now = w.now.Add(time.Minute)
		r := w.reconcile()
		for _, a := range actionsOf(r, CreateJob) {
			// Only w00 is past its pre-update hooks (maxUnavailable 1).
			switch a.Job.Labels[HookLabel] {
			case "cleanup":
				postRuns++
			case "fence":
				preRuns++
				if w.nodes["w00"].Annotations[mcostate.DesiredConfig] == newTarget {
					t.Fatal("w00's pre-update hook started after it was given the new target")
				}
			}
		}
		w.completeAll()
	}
	if rec := w.rec("w00"); rec.Phase != nodegatev1alpha1.NodeCompleted || w.nodes["w00"].Annotations[mcostate.CurrentConfig] != newTarget {
		t.Fatalf("w00 %s on %s, want Completed on %s", rec.Phase, w.nodes["w00"].Annotations[mcostate.CurrentConfig], newTarget)
	}
	if postRuns == 0 || preRuns == 0 {
		t.Fatalf("the hooks did not run again around the second update: pre %d post %d", preRuns, postRuns)
	}
}

// TestLabelPutBackIsReported: someone keeps putting the release label back
// on a node that passed the gate. node-gate keeps removing it and holds the
// next release (the MCO counts the node in the gate pool), and says so in
// Degraded and in Progressing instead of holding the run silently.
func TestLabelPutBackIsReported(t *testing.T) {
	w := readyRound(t, 3, func(w *world) { gateMode(w, 1) })
	for i := 0; i < 50 && w.rec("w00").Phase != nodegatev1alpha1.NodeCompleted; i++ {
		w.completeAll()
		w.mco()
		w.now = w.now.Add(time.Minute)
		w.reconcile()
	}
	if w.rec("w00").Phase != nodegatev1alpha1.NodeCompleted {
		t.Fatalf("setup: w00 %s", w.rec("w00").Phase)
	}
	for i := 0; i < 6; i++ {
		w.nodes["w00"].Labels[ReleaseLabel] = "worker" // put back after every removal
		w.completeAll()
		w.mco()
		w.now = w.now.Add(time.Minute)
		r := w.reconcile()
		if u := actionsOf(r, UnlabelNode); len(u) == 0 {
			t.Fatalf("pass %d: the label on w00 is not removed again", i)
		}
	}
	if w.labelled["w01"] {
		t.Fatal("w01 released while w00 still sat in the gate pool")
	}
	if c := w.cond(CondDegraded); c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonStrayReleaseLabel || !strings.Contains(c.Message, "w00") {
		t.Fatalf("Degraded does not report w00: %+v", c)
	}
	if c := w.cond(CondProgressing); c == nil || !strings.Contains(c.Message, "w00") {
		t.Fatalf("Progressing does not say w00 holds the release: %+v", c)
	}
}

// TestSourceMaxUnavailableKept: during a round the source pool's
// maxUnavailable is the run's limit (the MCO's own bound on how many of the
// released nodes update at once); someone changing it gets it set back, and
// the original comes back at the end.
func TestSourceMaxUnavailableKept(t *testing.T) {
	w := readyRound(t, 3, func(w *world) { w.pools["worker"].Spec.MaxUnavailable = ptr.To(intstr.FromString("50%")) })
	pool := w.pools["worker"]
	if pool.Spec.MaxUnavailable.String() != "1" {
		t.Fatalf("setup: worker maxUnavailable %v", pool.Spec.MaxUnavailable)
	}
	pool.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(3))
	r := w.reconcile()
	if a := actionsOf(r, SetPoolMaxUnavailable); len(a) != 1 || a[0].Pool != "worker" || a[0].MaxUnavailable.String() != "1" {
		t.Fatalf("want worker's maxUnavailable set back to 1: %+v", r.Actions)
	}
	if r := w.reconcile(); len(actionsOf(r, SetPoolMaxUnavailable)) != 0 {
		t.Fatalf("set again although it is 1: %+v", r.Actions)
	}
	w.driveToEnd()
	if got := w.pools["worker"].Spec.MaxUnavailable; got == nil || got.String() != "50%" {
		t.Fatalf("worker maxUnavailable %v at the end, want its original 50%%", got)
	}
}

// TestPoolHeldDuringNextControlPlaneUpdate: a node is released (its
// pre-update hooks ran for this round's target) when the next release is
// requested. Until the pools render it the source pool is paused: they may
// render it at any moment, and the node must not be given that one on the
// strength of hooks that ran for another.
func TestPoolHeldDuringNextControlPlaneUpdate(t *testing.T) {
	w := readyRound(t, 2, nil)
	for i := 0; i < 20 && w.rec("w00").Phase != nodegatev1alpha1.NodeReleased; i++ {
		w.completeAll()
		w.reconcile()
	}
	if w.rec("w00").Phase != nodegatev1alpha1.NodeReleased || w.pools["worker"].Spec.Paused {
		t.Fatalf("setup: w00 %s, worker paused %v", w.rec("w00").Phase, w.pools["worker"].Spec.Paused)
	}
	w.startUpdate("4.16.1")
	w.reconcile()
	if !w.pools["worker"].Spec.Paused {
		t.Fatal("worker left running while the control plane updates")
	}
	before := w.nodes["w00"].Annotations[mcostate.DesiredConfig]
	w.renderRelease("4.16.1")
	w.mco()
	if got := w.nodes["w00"].Annotations[mcostate.DesiredConfig]; got != before {
		t.Fatalf("w00 given %s during the control-plane update", got)
	}
}

// TestRenderDuringRoundGatedBeforeRestore: the pools render new content (a
// MachineConfig change, no cluster update) while a round is active. The
// nodes that passed the gate are held again (the source pool paused until
// they are), and the new content is gated in a new round.
func TestRenderDuringRoundGatedBeforeRestore(t *testing.T) {
	t.Run("with post-update hooks", func(t *testing.T) { renderDuringRound(t, nil) })
	// Without them a node released while it already runs the gate pool's
	// target passes the gate in the pass that releases it: it must not be
	// labelled then (the harness fails a pass that labels a node whose
	// record it finishes).
	t.Run("without post-update hooks", func(t *testing.T) {
		renderDuringRound(t, func(w *world) { w.rules[0].Spec.CleanUpJobSpec = nil })
	})
}

func renderDuringRound(t *testing.T, mutate func(*world)) {
	w := readyRound(t, 2, mutate)
	for i := 0; i < 50 && w.rec("w00").Phase != nodegatev1alpha1.NodeCompleted; i++ {
		w.completeAll()
		w.mco()
		w.now = w.now.Add(time.Minute)
		w.reconcile()
	}
	first := w.run.Status.RunID
	w.renderRelease("4.16.0-mc2")
	// node-gate sees the render before the MCO acts on it (the other order
	// is TestRenderSeenLateIsReported's).
	w.reconcile()
	for i := 0; i < 300 && !(w.run.Status.Phase == nodegatev1alpha1.RunCompleted && w.run.Status.RunID != first); i++ {
		w.completeAll()
		before := map[string]string{}
		for n, node := range w.nodes {
			before[n] = node.Annotations[mcostate.DesiredConfig]
		}
		w.mco()
		// w00 passed the gate before the render. (w01, released in the
		// first round, may get the new content on its hooks of that round:
		// it is updated once, after them.)
		for _, n := range []string{"w00"} {
			d := w.nodes[n].Annotations[mcostate.DesiredConfig]
			if d == before[n] || configVersion(d) == configVersion(w.nodes[n].Annotations[mcostate.CurrentConfig]) {
				continue
			}
			if configVersion(d) == "mc2" && (w.run.Status.RunID == first || w.rec(n).Phase != nodegatev1alpha1.NodeReleased) {
				t.Fatalf("%s given %s outside a round that gated it (round %s, first %s, record %+v)", n, d, w.run.Status.RunID, first, w.rec(n))
			}
		}
		w.now = w.now.Add(time.Minute)
		w.reconcile()
	}
	if w.run.Status.Phase != nodegatev1alpha1.RunCompleted || w.run.Status.RunID == first {
		t.Fatalf("no second round completed: %s %s", w.run.Status.Phase, w.run.Status.RunID)
	}
}

// Publish writes nothing for compacting alone, and compacts whatever it
// writes.
func TestPublishDoesNotWriteToCompactAlone(t *testing.T) {
	done := metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	withTimes := nodegatev1alpha1.NodeRecord{Name: "a", Pool: "worker", Phase: nodegatev1alpha1.NodeCompleted, StartTime: &done, CompletionTime: &done}
	bare := nodegatev1alpha1.NodeRecord{Name: "a", Pool: "worker", Phase: nodegatev1alpha1.NodeCompleted}
	pending := nodegatev1alpha1.NodeRecord{Name: "b", Pool: "worker", Phase: nodegatev1alpha1.NodePending}
	started := nodegatev1alpha1.NodeRecord{Name: "b", Pool: "worker", Phase: nodegatev1alpha1.NodePreHooks, StartTime: &done}
	status := func(rs ...nodegatev1alpha1.NodeRecord) nodegatev1alpha1.MutexRunConfigStatus {
		return nodegatev1alpha1.MutexRunConfigStatus{RunID: "r1", Nodes: rs}
	}
	// a's release label is gone: its record compacts.
	in := Input{Now: done.Time, Nodes: []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}}}
	for _, c := range []struct {
		name             string
		current, decided nodegatev1alpha1.MutexRunConfigStatus
		write            bool
		want             nodegatev1alpha1.MutexRunConfigStatus
	}{
		{"nothing changed", status(bare, pending), status(bare, pending), false, status(bare, pending)},
		{"only a record to compact", status(withTimes, pending), status(withTimes, pending), false, status(bare, pending)},
		{"a change: written compacted", status(withTimes, pending), status(withTimes, started), true, status(bare, started)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, write := Publish(c.current, c.decided, in)
			if write != c.write {
				t.Errorf("write = %v, want %v", write, c.write)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
		})
	}
}

// Compact drops the hook runs and blocking pods of completed records only;
// a completed record that has nothing more to say (no error, no pod forced
// off its drain) keeps name, pool and phase once its node's release label is
// gone or strayGrace has passed. It leaves the status it was given alone,
// and compacting again, then or later, is compacting once at the later time.
func TestCompact(t *testing.T) {
	done := metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	started := metav1.NewTime(done.Add(-time.Minute))
	hooks := []nodegatev1alpha1.HookRecord{{Rule: "ns/r", Name: "job", Stage: nodegatev1alpha1.StagePre, Phase: nodegatev1alpha1.HookSucceeded, Attempts: 2, JobName: "j-2"}}
	drain := func(forced int32) *commonv1alpha1.DrainRecord {
		return &commonv1alpha1.DrainRecord{Request: "drain-1", StartTime: started, CompletionTime: &done, ForcedPods: forced,
			BlockingPods: []commonv1alpha1.BlockingPod{{Namespace: "db", Name: "db-0"}}}
	}
	completed := func(lastError string, d *commonv1alpha1.DrainRecord) nodegatev1alpha1.NodeRecord {
		return nodegatev1alpha1.NodeRecord{Name: "n", Pool: "worker", Phase: nodegatev1alpha1.NodeCompleted, Hooks: hooks, Drain: d,
			StartTime: &started, ReleasedTime: &started, UpdatedTime: &done, CompletionTime: &done, LastError: lastError}
	}
	// kept is a completed record that keeps its times.
	kept := func(lastError string, d *commonv1alpha1.DrainRecord) nodegatev1alpha1.NodeRecord {
		r := completed(lastError, d)
		r.Hooks = nil
		if r.Drain != nil {
			r.Drain.BlockingPods = nil
		}
		return r
	}
	inFlight := func(phase nodegatev1alpha1.NodePhase) nodegatev1alpha1.NodeRecord {
		r := completed("exit 1", drain(0))
		r.Phase, r.CompletionTime = phase, nil
		return r
	}
	bare := nodegatev1alpha1.NodeRecord{Name: "n", Pool: "worker", Phase: nodegatev1alpha1.NodeCompleted}
	justBefore, atGrace := done.Add(strayGrace-time.Second), done.Add(strayGrace)
	const labelled, unlabelled, absent = "labelled", "unlabelled", "absent"
	for _, c := range []struct {
		name string
		in   nodegatev1alpha1.NodeRecord
		node string // the node in Input.Nodes: labelled, unlabelled or absent
		now  time.Time
		want nodegatev1alpha1.NodeRecord
	}{
		{"completed, labelled, within the grace: times and drain clock kept", completed("", drain(0)), labelled, justBefore, kept("", drain(0))},
		{"completed, labelled, grace over", completed("", drain(0)), labelled, atGrace, bare},
		{"completed, label gone", completed("", drain(0)), unlabelled, done.Time, bare},
		{"completed, node gone", completed("", nil), absent, done.Time, bare},
		{"completed with an error: kept", completed("hook ns/r/job ignored: exit 1", nil), unlabelled, atGrace, kept("hook ns/r/job ignored: exit 1", nil)},
		{"completed with pods forced off: kept", completed("", drain(1)), unlabelled, atGrace, kept("", drain(1))},
		{"already bare", bare, labelled, justBefore, bare},
		{"post-hooks: untouched", inFlight(nodegatev1alpha1.NodePostHooks), unlabelled, atGrace.Add(time.Hour), inFlight(nodegatev1alpha1.NodePostHooks)},
		{"failed: untouched", inFlight(nodegatev1alpha1.NodeFailed), unlabelled, atGrace.Add(time.Hour), inFlight(nodegatev1alpha1.NodeFailed)},
	} {
		t.Run(c.name, func(t *testing.T) {
			input := func(now time.Time) Input {
				in := Input{Now: now}
				switch c.node {
				case labelled:
					in.Nodes = []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{ReleaseLabel: "worker"}}}}
				case unlabelled:
					in.Nodes = []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n"}}}
				}
				return in
			}
			st := nodegatev1alpha1.MutexRunConfigStatus{RunID: "r1", Nodes: []nodegatev1alpha1.NodeRecord{c.in}}
			orig := st.DeepCopy()
			out := Compact(st, input(c.now))
			if d := cmp.Diff(c.want, out.Nodes[0]); d != "" {
				t.Errorf("compacted record (-want +got):\n%s", d)
			}
			if out.RunID != "r1" {
				t.Errorf("the rest of the status changed: %+v", out)
			}
			if !equality.Semantic.DeepEqual(orig, &st) {
				t.Errorf("the input changed: %s", cmp.Diff(orig, &st))
			}
			for _, later := range []time.Time{c.now, c.now.Add(strayGrace), c.now.Add(24 * time.Hour)} {
				if d := cmp.Diff(Compact(st, input(later)), Compact(out, input(later))); d != "" {
					t.Errorf("compacting at %s, then at %s differs from once at the later (-once +twice):\n%s", c.now, later, d)
				}
			}
		})
	}
}

// A node's passage is one line of the log, when it completes, with its
// hooks and times (its record in the status is compacted afterwards); no
// Normal Event is about a node: the Events are a few per run and per
// failure, and the run's Completed Event counts the nodes.
func TestPassagesAreLoggedNotEvents(t *testing.T) {
	w := newWorld(t, 3)
	w.startUpdate("4.16.0")
	w.reconcile()
	w.renderRelease("4.16.0")
	w.finishControlPlane()
	perNode := map[string][]string{}
	var normal, completed []string
	for i := 0; i < 500 && w.run.Status.Phase != nodegatev1alpha1.RunCompleted; i++ {
		res := w.reconcile()
		for _, e := range res.Events {
			if e.Warning {
				continue
			}
			normal = append(normal, e.Reason)
			if _, ok := e.Regarding.(*corev1.Node); ok {
				t.Errorf("Normal Event %s about node %s: %s", e.Reason, e.Regarding.(*corev1.Node).Name, e.Note)
			}
			if e.Reason == ReasonCompleted {
				completed = append(completed, e.Note)
			}
		}
		for _, ps := range res.Passages {
			perNode[ps.Node] = append(perNode[ps.Node], ps.Note)
		}
		w.render()
		w.completeAll()
		w.mco()
		w.now = w.now.Add(time.Minute)
	}
	if w.run.Status.Phase != nodegatev1alpha1.RunCompleted {
		t.Fatalf("run did not complete: %s", w.run.Status.Phase)
	}
	if len(perNode) != 3 {
		t.Errorf("passages for %d nodes, want 3: %q", len(perNode), perNode)
	}
	for _, n := range []string{"w00", "w01", "w02"} {
		ps := perNode[n]
		if len(ps) != 1 || !strings.HasPrefix(ps[0], "node "+n+" passed the gate (pool worker, round ") ||
			!strings.Contains(ps[0], "; Pre hook gate-ns/drain-db/job: Succeeded (Job drain-db-") ||
			!strings.Contains(ps[0], "; Post hook gate-ns/drain-db/cleanup: Succeeded") || !strings.Contains(ps[0], "; released after ") {
			t.Errorf("node %s: passages %q, want one with its hooks and times", n, ps)
		}
	}
	if len(completed) != 1 || !strings.Contains(completed[0], "(3 passed the gate, 0 skipped)") {
		t.Errorf("Completed Events %q, want one counting 3 nodes", completed)
	}
	// Per run: the round's start and end, and the pool paused for the gate
	// and restored.
	if len(normal) > 5 {
		t.Errorf("%d Normal Events for a run of 3 nodes, want a few per run: %q", len(normal), normal)
	}
}

// TestRenderSeenLateIsReported: a MachineConfig change outside a cluster
// update, acted on by the MCO before node-gate sees the render, reaches at
// most the pool's maxUnavailable (the run's limit) of the nodes that passed
// the gate while the pool runs; node-gate pauses the pool, holds the others
// and says which node got the content without its hooks.
func TestRenderSeenLateIsReported(t *testing.T) {
	w := readyRound(t, 3, nil)
	w.driveUntil("w01", nodegatev1alpha1.NodeCompleted)
	if w.rec("w00").Phase != nodegatev1alpha1.NodeCompleted || w.pools["worker"].Spec.Paused {
		t.Fatalf("setup: w00 %s, w01 %s, worker paused %v", w.rec("w00").Phase, w.rec("w01").Phase, w.pools["worker"].Spec.Paused)
	}
	w.renderRelease("4.16.0-mc2")
	var moved []string
	for _, n := range w.mco() { // before node-gate sees the render
		if strings.HasPrefix(n, "w") {
			moved = append(moved, n)
		}
	}
	if len(moved) != 1 {
		t.Fatalf("the MCO moved %v: want one node, the run's limit", moved)
	}
	var events []string
	w.driveToEndWith(func(r Result) {
		for _, e := range r.Events {
			if e.Reason == "UpdatedPastHooks" {
				events = append(events, e.Note)
			}
		}
	})
	for _, n := range moved {
		found := false
		for _, e := range events {
			found = found || strings.Contains(e, n)
		}
		if !found {
			t.Fatalf("%s got the new content without its hooks, unreported: %v", n, events)
		}
	}
}

// TestStrayReleaseHeldAgain: someone removes the hold label of a node that
// waits for its turn while its pool runs. node-gate holds it again, says so
// (StrayRelease), and counts it against maxUnavailable until the cache shows
// it held: no other node is released meanwhile.
func TestStrayReleaseHeldAgain(t *testing.T) {
	w := readyRound(t, 3, nil)
	w.driveUntil("w00", nodegatev1alpha1.NodeCompleted)
	if w.pools["worker"].Spec.Paused || w.released("w02") {
		t.Fatalf("setup: worker paused %v, w02 released %v", w.pools["worker"].Spec.Paused, w.released("w02"))
	}
	delete(w.nodes["w02"].Labels, HoldLabel)
	// w01's pre-update hooks are done: it would be released now.
	w.completeAll()
	if ph := w.rec("w01").Phase; ph != nodegatev1alpha1.NodePreHooks {
		t.Fatalf("setup: w01 %s, want in its pre-update hooks", ph)
	}
	in := w.input()
	r := Plan(in)
	held := false
	for _, a := range actionsOf(r, LabelNode) {
		held = held || (a.Node == "w02" && a.Label == HoldLabel)
	}
	if !held || !hasEvent(r, "StrayRelease") {
		t.Fatalf("w02 not held again and reported: %+v %+v", r.Actions, r.Events)
	}
	// w01 has its turn, but the unheld w02 fills maxUnavailable 1 until
	// the cache shows it held.
	for _, a := range releaseActions(r) {
		if a.Node != "w02" {
			t.Fatalf("%s released while w02, unheld, may be started by the MCO: %+v", a.Node, r.Actions)
		}
	}
}

// TestLostReleaseOfAnUpdatedNode: node-gate releases a node and restarts
// before writing the status, and the MCO updates the node meanwhile. The
// status the restarted process reads still has the node waiting (Pending,
// as if the releasing pass never ran), and the node is on its target
// outside the gate pool: the release mark the label patch set says the
// release was node-gate's own, so the record continues from it (hooks found
// again by name, no Job made twice) to Completed, with no stray reported and
// nothing skipped. Without the mark (someone else removed the label) the
// node is skipped as updated past its hooks.
func TestLostReleaseOfAnUpdatedNode(t *testing.T) {
	const node = "w01"
	for _, marked := range []bool{true, false} {
		t.Run(map[bool]string{true: "marked", false: "unmarked"}[marked], func(t *testing.T) {
			w := readyRound(t, 3, nil)
			w.driveUntil(node, nodegatev1alpha1.NodeReleased)
			if !w.released(node) {
				t.Fatalf("setup: %s not released", node)
			}
			target := w.pools["worker"].Spec.Configuration.Name
			if got := w.nodes[node].Annotations[ReleasedAnnotation]; got != w.run.Status.RunID+"/"+target {
				t.Fatalf("the release did not mark %s with its round and target: %q", node, got)
			}
			if !marked {
				delete(w.nodes[node].Annotations, ReleasedAnnotation)
			}
			preJobs := func() int {
				n := 0
				for _, j := range w.jobs {
					if j.Labels[NodeLabel] == shortHash(node) && (j.Labels[HookLabel] == LegacyPreHook || j.Labels[HookLabel] == "fence") {
						n++
					}
				}
				return n
			}
			jobs := preJobs()
			// Every status write since the node was admitted was lost: its
			// record is Pending again. The MCO updates it meanwhile.
			for i := range w.run.Status.Nodes {
				if r := &w.run.Status.Nodes[i]; r.Name == node {
					*r = nodegatev1alpha1.NodeRecord{Name: r.Name, Pool: r.Pool, Phase: nodegatev1alpha1.NodePending}
				}
			}
			for w.nodes[node].Annotations[mcostate.CurrentConfig] != target {
				w.mco()
			}
			r := w.reconcile()
			if !marked {
				if ph := w.rec(node).Phase; ph != nodegatev1alpha1.NodeSkipped || !hasEvent(r, "UpdatedPastHooks") {
					t.Fatalf("unmarked: %s %s, events %+v: want skipped and reported", node, ph, r.Events)
				}
				return
			}
			results := []Result{r}
			for i := 0; i < 20 && w.rec(node).Phase != nodegatev1alpha1.NodeCompleted; i++ {
				w.completeAll()
				results = append(results, w.reconcile())
			}
			if ph := w.rec(node).Phase; ph != nodegatev1alpha1.NodeCompleted {
				t.Fatalf("%s %s (%s), want it to continue from its release to Completed", node, ph, w.rec(node).LastError)
			}
			recovered := false
			for _, res := range results {
				for _, reason := range []string{"StrayRelease", "UpdatedPastHooks"} {
					if hasEvent(res, reason) {
						t.Fatalf("%s's own release reported as %s: %+v", node, reason, res.Events)
					}
				}
				recovered = recovered || hasEvent(res, "ReleaseRecovered")
			}
			if !recovered {
				t.Fatalf("the recovered release was not told")
			}
			if got := preJobs(); jobs != 2 || got != jobs {
				t.Fatalf("%s's pre-update hook Jobs: %d before the restart, %d after: want the same two", node, jobs, got)
			}
		})
	}
}

// TestActionsFirst: a pass whose actions are hook Jobs and hold labels may
// perform them before its status write (the release is the pass's first
// write); one that changes a pool or records an original may not; nor may
// a run with a canary. A release whose status write is lost is made again,
// without a write, by the next pass.
func TestActionsFirst(t *testing.T) {
	w := newWorld(t, 3)
	w.startUpdate("4.16.0")
	if r := w.reconcile(); r.ActionsFirst {
		t.Fatalf("the arming pass (pause, gate pool, originals) may not act first: %+v", r.Actions)
	}
	w.renderRelease("4.16.0")
	w.finishControlPlane()
	var release Result
	for i := 0; i < 20 && len(releaseActions(release)) == 0; i++ {
		w.completeAll()
		in := w.input()
		release = Plan(in)
		if len(releaseActions(release)) > 0 {
			break
		}
		w.reconcile()
	}
	if len(releaseActions(release)) != 1 || !release.ActionsFirst {
		t.Fatalf("the releasing pass: actions %+v, actionsFirst %v", release.Actions, release.ActionsFirst)
	}
	// The reconciler releases w00, then loses its status write.
	for _, a := range release.Actions {
		w.apply(a)
	}
	r := w.reconcile()
	if w.rec("w00").Phase != nodegatev1alpha1.NodeReleased || len(r.Actions) != 0 || hasEvent(r, "StrayRelease") {
		t.Fatalf("the next pass: w00 %s, actions %+v, events %+v: want w00 released without a write", w.rec("w00").Phase, r.Actions, r.Events)
	}

	c := newWorld(t, 3)
	gateMode(c, 1)
	c.startUpdate("4.16.0")
	c.reconcile()
	c.renderRelease("4.16.0")
	c.finishControlPlane()
	for i := 0; i < 20; i++ {
		c.completeAll()
		if r := c.reconcile(); r.ActionsFirst {
			t.Fatalf("a run with a canary acts first: %+v", r.Actions)
		}
	}
}
