package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/metricstest"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/nodegate/controller"
	"github.com/upshift-io/upshift/services/nodegate/metrics"
	"github.com/upshift-io/upshift/services/nodegate/plan"
	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

const ns = "gate"

// The specs share one simulated cluster (1 master, 3 workers at 4.16.1)
// and run in order: a gated update to 4.16.2 with a restart half-way, a
// failing hook on a MachineConfig change then the run deleted, and a
// PDB-blocked drain forced during the update to 4.16.3.
var _ = Describe("node-gate", Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		d := mco.DefaultDurations()
		d.DrainTimeout = 1000 * time.Hour // the remediation, not the MCD, acts on a blocked drain here
		sim, err := simcluster.Simulate(ctx, env, ocpsim.Topology{Version: "4.16.1", Masters: 1, Workers: 3}, ocpsim.Options{TimeScale: 600, MCO: d})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(context.Context) { Expect(sim.Stop()).To(Succeed()) }, NodeTimeout(20*time.Second))
		Expect(env.CreateNamespace(ctx, ns)).To(Succeed())
		Expect(env.Client.Create(ctx, &nodegatev1alpha1.MutexTarget{ObjectMeta: metav1.ObjectMeta{Name: "workers", Namespace: ns},
			Spec: nodegatev1alpha1.MutexTargetSpec{MachineConfigPools: []string{"worker"}}})).To(Succeed())
	})

	It("gates every worker (one added mid-run too): pre-hooks done before the MCO starts on it, the next released only after it is Done and Ready, restored at the end, across a restart", gatedUpdate)
	It("pauses on a failing hook without the MCO touching any node, and restores pools and selectors exactly when the run is deleted", failingHook)
	It("forces a PDB-blocked drain past its timeout, step by step, naming the pod", blockedDrain)
	It("writes the mutex operator's status on rules and targets: ValidConfig, NodeListGathered and the nodes, following pools and node labels", objectStatus)
})

// objectStatus: the status node-gate keeps on MutexRules and MutexTargets.
func objectStatus(ctx SpecContext) {
	startGate(ctx)
	target := func(name string) func(Gomega) *nodegatev1alpha1.MutexTarget {
		return func(g Gomega) *nodegatev1alpha1.MutexTarget {
			t := &nodegatev1alpha1.MutexTarget{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, t)).To(Succeed())
			return t
		}
	}
	conditions := func(t *nodegatev1alpha1.MutexTarget) []string {
		var out []string
		for _, typ := range []string{plan.ConditionValidConfig, plan.ConditionNodeListGathered} {
			if c := meta.FindStatusCondition(t.Status.Conditions, typ); c != nil {
				out = append(out, typ+"="+string(c.Status)+"/"+c.Reason)
			}
		}
		return out
	}
	var names []string
	for _, n := range workers(ctx) {
		names = append(names, n.Name)
	}
	Expect(names).NotTo(BeEmpty())

	By("the worker target: the worker pool's nodes, both conditions True")
	Eventually(func(g Gomega) {
		t := target("workers")(g)
		g.Expect(t.Status.Nodes).To(ConsistOf(names))
		g.Expect(conditions(t)).To(Equal([]string{"ValidConfig=True/MachineConfigPoolFetchSucceeded", "NodeListGathered=True/MachineConfigPoolFetchSucceeded"}))
	}).Should(Succeed())

	By("a target naming a pool that does not exist: False, naming it; the nodes of the one that exists listed")
	Expect(env.Client.Create(ctx, &nodegatev1alpha1.MutexTarget{ObjectMeta: metav1.ObjectMeta{Name: "with-gpu", Namespace: ns},
		Spec: nodegatev1alpha1.MutexTargetSpec{MachineConfigPools: []string{"worker", "gpu"}}})).To(Succeed())
	Eventually(func(g Gomega) {
		t := target("with-gpu")(g)
		g.Expect(t.Status.Nodes).To(ConsistOf(names))
		g.Expect(conditions(t)).To(Equal([]string{"ValidConfig=False/MachineConfigPoolFetchFailed", "NodeListGathered=False/MachineConfigPoolFetchFailed"}))
		g.Expect(meta.FindStatusCondition(t.Status.Conditions, plan.ConditionValidConfig).Message).To(ContainSubstring("gpu"))
	}).Should(Succeed())

	By("the pool created (paused: the MCO leaves its nodes alone) and a worker labelled into it: it moves from one target's nodes to the other's")
	gpu := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: mcfgv1.MachineConfigPoolSpec{
		Paused:                true,
		NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/gpu": ""}},
		MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"machineconfiguration.openshift.io/role": "worker"}},
	}}
	Expect(env.Client.Create(ctx, gpu)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, gpu))).To(Succeed()) })
	moved := names[0]
	label := func(ctx context.Context, value *string) {
		GinkgoHelper()
		patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{"node-role.kubernetes.io/gpu": value}}}
		data, err := json.Marshal(patch)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: moved}}, client.RawPatch(types.MergePatchType, data))).To(Succeed())
	}
	label(ctx, ptr.To(""))
	DeferCleanup(func(ctx context.Context) { label(ctx, nil) })
	Eventually(func(g Gomega) {
		g.Expect(target("workers")(g).Status.Nodes).NotTo(ContainElement(moved))
		t := target("with-gpu")(g)
		g.Expect(t.Status.Nodes).To(ConsistOf(names))
		g.Expect(conditions(t)).To(Equal([]string{"ValidConfig=True/MachineConfigPoolFetchSucceeded", "NodeListGathered=True/MachineConfigPoolFetchSucceeded"}))
	}).Should(Succeed())

	By("a rule node-gate can run: ValidConfig True")
	rule := twoHookRule("status-rule")
	Expect(env.Client.Create(ctx, rule)).To(Succeed())
	Eventually(func(g Gomega) string {
		got := &nodegatev1alpha1.MutexRule{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rule), got)).To(Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, plan.ConditionValidConfig)
		g.Expect(c).NotTo(BeNil())
		return string(c.Status) + "/" + c.Reason
	}).Should(Equal("True/ValidConfig"))
}

func twoHookRule(name string) *nodegatev1alpha1.MutexRule {
	pre := hookSpec("pre", corev1.EnvVar{Name: "USER_VAR", Value: "kept"})
	post := hookSpec("post")
	return &nodegatev1alpha1.MutexRule{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: nodegatev1alpha1.MutexRuleSpec{
		JobName: name, JobNamespace: ns, Type: nodegatev1alpha1.RuleTypeKubernetes,
		JobSpec: &pre,
		PreHooks: []nodegatev1alpha1.Hook{{Name: "fence", JobSpec: hookSpec("fence"), Placement: nodegatev1alpha1.PlacementOnNode,
			Timeout: &metav1.Duration{Duration: 10 * time.Minute}}},
		CleanUpJobSpec: &post,
	}}
}

func newRun(name, rule string) *nodegatev1alpha1.MutexRunConfig {
	return &nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: nodegatev1alpha1.MutexRunConfigSpec{
		MutexRules:   []nodegatev1alpha1.ObjectReference{{Name: rule}},
		MutexTargets: []nodegatev1alpha1.ObjectReference{{Name: "workers"}},
	}}
}

func gatedUpdate(ctx SpecContext) {
	Expect(env.Client.Create(ctx, twoHookRule("db"))).To(Succeed())
	run := newRun("update", "db")
	Expect(env.Client.Create(ctx, run)).To(Succeed())
	key := client.ObjectKeyFromObject(run)
	g := startGate(ctx)
	Eventually(func(g Gomega) {
		r := getRun(ctx, key)
		g.Expect(r.Finalizers).To(ContainElement(controller.Finalizer))
		g.Expect(r.Status.Phase).To(Equal(nodegatev1alpha1.RunIdle))
	}).Should(Succeed())
	Expect(getPool(ctx, "worker").Spec.Paused).To(BeFalse())

	oldConfig := getPool(ctx, "worker").Spec.Configuration.Name
	origMaxUnavailable := getPool(ctx, "worker").Spec.MaxUnavailable
	tl := watchTimeline(ctx)
	// The master pool is paused for the first part of the update: the
	// control plane cannot complete (the CVO waits for the masters) while
	// the pools render 4.16.2, so that holdUntil Rendered (the default) is
	// seen releasing workers before ClusterVersion completes.
	setPoolPaused(ctx, "master", true)
	DeferCleanup(func(ctx context.Context) { setPoolPaused(ctx, "master", false) })
	setDesiredVersion(ctx, "4.16.2")

	By("pausing the worker pool as soon as the update is requested, the original recorded")
	Eventually(func(g Gomega) {
		g.Expect(getPool(ctx, "worker").Spec.Paused).To(BeTrue())
		r := getRun(ctx, key)
		g.Expect(r.Status.Pools).To(ContainElement(And(HaveField("Name", "worker"), HaveField("OriginalPaused", ptr.To(false)))))
	}).Should(Succeed())

	By("every worker held in the paused gate pool; once the round runs, worker's maxUnavailable is the run's limit, and goes back to it when someone changes it")
	Eventually(func(g Gomega) {
		g.Expect(getPool(ctx, "worker-gate").Spec.Paused).To(BeTrue())
		g.Expect(getPool(ctx, "worker-gate").Spec.NodeSelector).To(Equal(&metav1.LabelSelector{MatchLabels: map[string]string{plan.HoldLabel: "worker"}}))
		for _, n := range workers(ctx) {
			g.Expect(n.Labels).To(HaveKeyWithValue(plan.HoldLabel, "worker"), n.Name)
		}
	}).Should(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(getRun(ctx, key).Status.Pools).To(ContainElement(And(HaveField("Name", "worker"),
			HaveField("OriginalMaxUnavailable", HaveValue(HaveField("Value", Equal(origMaxUnavailable)))))))
		g.Expect(getPool(ctx, "worker").Spec.MaxUnavailable).To(HaveValue(Equal(intstr.FromInt32(1))))
	}).WithTimeout(2 * time.Minute).Should(Succeed())
	Expect(env.Client.Patch(ctx, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"maxUnavailable":3}}`)))).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(getPool(ctx, "worker").Spec.MaxUnavailable).To(HaveValue(Equal(intstr.FromInt32(1))))
	}).Should(Succeed())

	By("restarting node-gate once the first node passed, while the control plane still updates; then letting the masters update")
	Eventually(func(g Gomega) {
		g.Expect(getRun(ctx, key).Status.Summary.Succeeded).To(BeNumerically(">=", 1))
	}).WithTimeout(3 * time.Minute).Should(Succeed())
	setPoolPaused(ctx, "master", false)
	g.stop()
	g = startGate(ctx)

	By("a worker added mid-run boots on the configuration its pool targets: recorded, nothing to gate")
	tmpl := workers(ctx)[0]
	current := getPool(ctx, "worker").Spec.Configuration.Name
	Expect(current).NotTo(Equal(oldConfig))
	added := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ocp-worker-added", Labels: map[string]string{}, Annotations: map[string]string{
		testenv.KwokNodeAnnotation: testenv.KwokNodeValue,
		mcostate.CurrentConfig:     current, mcostate.DesiredConfig: current, mcostate.State: mcostate.StateDone,
		mcostate.DesiredDrain: "uncordon-" + current, mcostate.LastAppliedDrain: "uncordon-" + current,
	}}}
	for k, v := range tmpl.Labels {
		if k != plan.HoldLabel && k != plan.ReleaseLabel && k != "kubernetes.io/hostname" {
			added.Labels[k] = v
		}
	}
	added.Labels["kubernetes.io/hostname"] = added.Name
	Expect(env.Client.Create(ctx, added)).To(Succeed())

	Eventually(func(g Gomega) {
		r := getRun(ctx, key)
		g.Expect(r.Status.Phase).To(Equal(nodegatev1alpha1.RunCompleted), "%+v", r.Status.Conditions)
	}).WithTimeout(4 * time.Minute).Should(Succeed())

	r := getRun(ctx, key)
	Expect(r.Status.Summary).To(Equal(nodegatev1alpha1.Summary{Total: 4, Succeeded: 3, Skipped: 1}))
	Expect(r.Status.PlannedOrder).To(HaveLen(3))
	Expect(findNode(r, added.Name)).To(HaveField("Phase", nodegatev1alpha1.NodeSkipped))

	By("each node-gate process planned the run's first pass from Nodes listed past its cache, and only that pass")
	evs, err := env.AuditEvents(gateUser)
	Expect(err).NotTo(HaveOccurred())
	live := 0
	for _, ev := range evs {
		// The informers list with a resourceVersion (or watch); a read
		// past the cache names none.
		if ev.Verb == "list" && ev.ObjectRef != nil && ev.ObjectRef.Resource == "nodes" &&
			!strings.Contains(ev.RequestURI, "resourceVersion") && !strings.Contains(ev.RequestURI, "watch") {
			live++
		}
	}
	Expect(live).To(Equal(2), "two processes, one run")

	By("every hook ran once per node: one attempt, three Jobs per node")
	var jobs batchv1.JobList
	Expect(env.Client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{plan.RunLabel: plan.RunKey(ns, "update")})).To(Succeed())
	Expect(jobs.Items).To(HaveLen(9))
	perNode := map[string]int{}
	for _, j := range jobs.Items {
		Expect(j.Name).To(HaveSuffix("-1"), "a second attempt means a hook ran twice")
		Expect(j.OwnerReferences).To(ContainElement(And(HaveField("Kind", "MutexRunConfig"), HaveField("Name", "update"))))
		Expect(j.Spec.TTLSecondsAfterFinished).To(Equal(ptr.To(plan.DefaultJobTTL)))
		env := j.Spec.Template.Spec.Containers[0].Env
		names := []string{}
		for _, e := range env {
			names = append(names, e.Name)
		}
		want := []string{plan.EnvNodeName, plan.EnvMutexRule, plan.EnvPool, plan.EnvTargetConfig, plan.EnvTargetVersion, plan.EnvRunID}
		if j.Spec.Template.Spec.Containers[0].Name == "pre" {
			want = append([]string{"USER_VAR"}, want...)
		}
		Expect(names).To(Equal(want))
		for _, e := range env {
			switch e.Name {
			case plan.EnvMutexRule:
				Expect(e.Value).To(Equal("db"))
			case plan.EnvPool:
				Expect(e.Value).To(Equal("worker"))
			case plan.EnvTargetVersion:
				Expect(e.Value).To(Equal("4.16.2"))
			case plan.EnvRunID:
				Expect(e.Value).To(Equal(r.Status.RunID))
			case plan.EnvTargetConfig:
				Expect(e.Value).To(And(HavePrefix("rendered-worker-"), Not(HavePrefix("rendered-worker-gate-"))))
			case plan.EnvNodeName:
				perNode[e.Value]++
			}
		}
	}
	Expect(perNode).To(HaveLen(3))
	for n, c := range perNode {
		Expect(c).To(Equal(3), n)
	}

	By("ordering, from the watches: pre-hook Jobs complete before the MCO marks the node Working; the next node released after the previous is Done and Ready")
	// The timeline's watches may still be behind what the run's status
	// already shows (the last post-hook Job's Complete): wait for them.
	Eventually(func(g Gomega) {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		g.Expect(tl.cvCompleted).To(HaveKey("4.16.2"))
		for _, n := range r.Status.PlannedOrder {
			g.Expect(tl.working).To(HaveKey(n))
			g.Expect(tl.done).To(HaveKey(n))
			g.Expect(tl.labelled).To(HaveKey(n))
			if rec := findNode(r, n); rec != nil {
				for _, h := range rec.Hooks {
					g.Expect(tl.jobDone).To(HaveKey(h.JobName))
					g.Expect(tl.jobNode).To(HaveKey(h.JobName))
				}
			}
		}
	}).Should(Succeed())
	tl.mu.Lock()
	defer tl.mu.Unlock()
	order := r.Status.PlannedOrder
	// holdUntil Rendered (the default): the first worker is released once
	// the pools rendered 4.16.2, while the control plane still updates, as
	// the MCO would update it without a gate.
	Expect(tl.labelled[order[0]]).To(BeNumerically("<", tl.cvCompleted["4.16.2"]), "the first worker was released only after the control plane completed")
	for i, n := range order {
		rec := findNode(r, n)
		Expect(rec).NotTo(BeNil())
		Expect(tl.working).To(HaveKey(n))
		Expect(tl.done).To(HaveKey(n))
		Expect(tl.labelled).To(HaveKey(n))
		for _, h := range rec.Hooks {
			done, ok := tl.jobDone[h.JobName]
			Expect(ok).To(BeTrue(), "job %s never completed", h.JobName)
			Expect(tl.jobNode[h.JobName]).To(Equal(n))
			if h.Stage == nodegatev1alpha1.StagePre {
				Expect(done).To(BeNumerically("<", tl.labelled[n]), "pre-hook %s of %s completed after the node was released", h.Name, n)
				Expect(done).To(BeNumerically("<", tl.working[n]), "pre-hook %s of %s completed after the MCO started", h.Name, n)
			} else {
				Expect(done).To(BeNumerically(">", tl.done[n]), "post-hook %s of %s completed before the node was Done", h.Name, n)
			}
		}
		if i > 0 {
			prev := order[i-1]
			Expect(tl.labelled[n]).To(BeNumerically(">", tl.done[prev]), "%s released before %s was Done+Ready", n, prev)
		}
	}

	// Reaction from a node's Done+Ready to the next node's release label,
	// as the watch saw both. It includes the next node's pre-hook Jobs (three
	// here, each created, scheduled, run by kwok and marked Complete by the
	// Job controller), so it is an upper bound of node-gate's own reaction.
	var gaps []time.Duration
	for i := 1; i < len(order); i++ {
		gaps = append(gaps, tl.labelledAt[order[i]].Sub(tl.doneAt[order[i-1]]))
	}
	AddReportEntry("Done → next release (includes the next node's 3 pre-hook Jobs)", fmt.Sprint(gaps))
	GinkgoWriter.Printf("Done → next release: %v\n", gaps)

	By("restored: pool unpaused with its maxUnavailable, gate pool gone, no hold label")
	Eventually(func(g Gomega) {
		g.Expect(getPool(ctx, "worker").Spec.Paused).To(BeFalse())
		g.Expect(getPool(ctx, "worker").Spec.MaxUnavailable).To(Equal(origMaxUnavailable))
		err := env.Client.Get(ctx, client.ObjectKey{Name: "worker" + plan.GatePoolSuffix}, &mcfgv1.MachineConfigPool{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		for _, n := range workers(ctx) {
			g.Expect(n.Labels).NotTo(HaveKey(plan.HoldLabel))
		}
	}).Should(Succeed())
	Expect(getPool(ctx, "worker").Spec.NodeSelector).To(Equal(&metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""}}))

	By("metrics and Events")
	Expect(g.metric("upshift_node_gate_nodes", map[string]string{"run": ns + "/update", "phase": "Completed"})).To(Equal(3.0))
	Expect(g.metric("upshift_node_gate_nodes", map[string]string{"run": ns + "/update", "phase": "Skipped"})).To(Equal(1.0))
	Eventually(func(g Gomega) {
		// No Normal Event per node: a node's passage is in the log (other
		// components' Events on the node aside).
		g.Expect(eventReasons(ctx, "Node", "default", order[len(order)-1])).NotTo(
			ContainElement(BeElementOf("GateCompleted", "GateStarted", "HookStarted", "HookSucceeded", "NodeReleased", "NodeUpdated")))
		g.Expect(eventReasons(ctx, "MutexRunConfig", ns, "update")).To(ContainElements("RoundStarted", "Completed"))
	}).Should(Succeed())
	// The restarted instance timed the hooks it saw end.
	Expect(g.metric("upshift_node_gate_hook_duration_seconds", map[string]string{"stage": "Post", "result": "Succeeded"})).To(BeNumerically(">=", 1))
	Expect(env.Client.Delete(ctx, run)).To(Succeed())
	Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(ctx, key, run)) }).Should(BeTrue())
}

func findNode(r *nodegatev1alpha1.MutexRunConfig, name string) *nodegatev1alpha1.NodeRecord {
	for i := range r.Status.Nodes {
		if r.Status.Nodes[i].Name == name {
			return &r.Status.Nodes[i]
		}
	}
	return nil
}

func failingHook(ctx SpecContext) {
	// A hook that cannot be scheduled and has a 2 s deadline: the Job
	// controller fails it (DeadlineExceeded).
	bad := hookSpec("never")
	bad.ActiveDeadlineSeconds = ptr.To[int64](2)
	bad.BackoffLimit = ptr.To[int32](0)
	bad.Template.Spec.NodeSelector = map[string]string{"no-such-label": "x"}
	Expect(env.Client.Create(ctx, &nodegatev1alpha1.MutexRule{ObjectMeta: metav1.ObjectMeta{Name: "failing", Namespace: ns},
		Spec: nodegatev1alpha1.MutexRuleSpec{JobName: "failing", JobNamespace: ns, JobSpec: &bad}})).To(Succeed())
	run := newRun("fail", "failing")
	Expect(env.Client.Create(ctx, run)).To(Succeed())
	key := client.ObjectKeyFromObject(run)
	gt := startGate(ctx)
	Eventually(func(g Gomega) { g.Expect(getRun(ctx, key).Status.Phase).To(Equal(nodegatev1alpha1.RunIdle)) }).Should(Succeed())
	nodeWrites := gateNodeWrites()
	before := map[string]string{}
	for _, n := range workers(ctx) {
		before[n.Name] = n.Annotations[mcostate.DesiredConfig]
	}

	setDesiredVersion(ctx, "4.16.3")

	Eventually(func(g Gomega) {
		r := getRun(ctx, key)
		g.Expect(r.Status.Phase).To(Equal(nodegatev1alpha1.RunPaused))
		c := meta.FindStatusCondition(r.Status.Conditions, plan.CondPaused)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(plan.ReasonHookFailed))
		d := meta.FindStatusCondition(r.Status.Conditions, plan.CondDegraded)
		g.Expect(d.Message).To(ContainSubstring("DeadlineExceeded"))
	}).Should(Succeed())
	// Events are sent asynchronously after the status write.
	Eventually(func() []string { return eventReasons(ctx, "MutexRunConfig", ns, "fail") }).Should(ContainElement(plan.ReasonHookFailed))
	runLabel := map[string]string{"run": ns + "/fail"}
	Eventually(func() float64 { return gt.metric(metrics.PausedName, runLabel) }).Should(Equal(1.0))
	// The worker pool has rendered the new config; no node was told to run
	// it: every worker is held (node-gate wrote Nodes only to hold them),
	// and no node has the new config.
	By("deleting the run restores the pool and its selector exactly, and removes the gate pool")
	origSel := getPool(ctx, "worker").Spec.NodeSelector
	Expect(gateNodeWrites()).To(BeNumerically(">=", nodeWrites+len(before)), "node-gate did not hold the workers")
	for _, n := range workers(ctx) {
		Expect(n.Annotations[mcostate.DesiredConfig]).To(Equal(before[n.Name]), n.Name)
		Expect(n.Labels).To(HaveKeyWithValue(plan.HoldLabel, "worker"), n.Name)
	}
	Expect(env.Client.Delete(ctx, run)).To(Succeed())
	Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(ctx, key, run)) }).Should(BeTrue())
	// The deleted run's series go with it (else NodeGateRunPaused would
	// fire forever): no series of the paused gauge names the run.
	Eventually(func(g Gomega) {
		all, err := metricstest.Series(gt.reg, metrics.PausedName)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(all).NotTo(HaveKey("run=" + ns + "/fail"))
	}).Should(Succeed())
	p := getPool(ctx, "worker")
	Expect(p.Spec.Paused).To(BeFalse())
	Expect(p.Spec.NodeSelector).To(Equal(origSel))
	Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: "worker" + plan.GatePoolSuffix}, &mcfgv1.MachineConfigPool{}))).To(BeTrue())
	// The MCO, no longer gated, updates the workers by itself.
	Eventually(func(g Gomega) {
		p := getPool(ctx, "worker")
		g.Expect(mco.PoolCondition(&p.Status, mcfgv1.MachineConfigPoolUpdated).Status).To(Equal(corev1.ConditionTrue))
		for _, n := range workers(ctx) {
			g.Expect(n.Annotations[mcostate.CurrentConfig]).To(Equal(p.Spec.Configuration.Name))
		}
	}).WithTimeout(2 * time.Minute).Should(Succeed())
}

func blockedDrain(ctx SpecContext) {
	// Pin a guarded pod (PDB maxUnavailable 0, a finalizer) to the worker
	// that will be released first: its drain can never evict it.
	Expect(env.Client.Create(ctx, &nodegatev1alpha1.MutexRule{ObjectMeta: metav1.ObjectMeta{Name: "noop", Namespace: ns},
		Spec: nodegatev1alpha1.MutexRuleSpec{JobName: "noop", JobNamespace: ns, JobSpec: ptr.To(hookSpec("noop"))}})).To(Succeed())
	run := newRun("drain", "noop")
	run.Spec.DrainRemediation = &nodegatev1alpha1.DrainRemediation{Timeout: &metav1.Duration{Duration: 2 * time.Second}, StepTimeout: &metav1.Duration{Duration: 2 * time.Second}}
	Expect(env.Client.Create(ctx, run)).To(Succeed())
	key := client.ObjectKeyFromObject(run)
	startGate(ctx)
	Eventually(func(g Gomega) { g.Expect(getRun(ctx, key).Status.Phase).To(Equal(nodegatev1alpha1.RunIdle)) }).Should(Succeed())

	ws := workers(ctx)
	target := ws[0].Name
	Expect(env.CreateNamespace(ctx, "guarded")).To(Succeed())
	Expect(env.Client.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "guarded"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}})).To(Succeed())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "guarded", Labels: map[string]string{"app": "db"}, Finalizers: []string{"example.com/hold"}},
		Spec: corev1.PodSpec{NodeName: target, Containers: []corev1.Container{{Name: "db", Image: "registry.example.com/db:1"}}}}
	Expect(env.Client.Create(ctx, pod)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
	}).Should(Succeed())

	// This time the update is a MachineConfig change. The pool is paused by
	// its admin first: a MachineConfig change, unlike a cluster update,
	// gives no signal before the MCO retargets an unpaused pool's nodes.
	Expect(env.Client.Patch(ctx, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":true}}`)))).To(Succeed())
	Expect(env.Client.Create(ctx, &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-worker-kargs",
		Labels: map[string]string{"machineconfiguration.openshift.io/role": "worker"}},
		Spec: mcfgv1.MachineConfigSpec{KernelArguments: []string{"nosmt"}}})).To(Succeed())
	Eventually(func(g Gomega) {
		rec := findNode(getRun(ctx, key), target)
		g.Expect(rec).NotTo(BeNil())
		g.Expect(rec.Drain).NotTo(BeNil())
		g.Expect(rec.Drain.BlockingPods).To(ContainElement(And(HaveField("Name", "db-0"), HaveField("PDBs", []string{"db"}))))
	}).WithTimeout(3 * time.Minute).Should(Succeed())

	By("the pod is forced off: graceful delete, grace 0, then its finalizer removed")
	Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
	}).Should(BeTrue())
	// Events are sent asynchronously after each action.
	Eventually(func(g Gomega) {
		g.Expect(eventReasons(ctx, "Pod", "guarded", "db-0")).To(ContainElements("DrainDelete", "DrainForceDelete", "DrainRemoveFinalizers"))
		g.Expect(eventReasons(ctx, "Node", "default", target)).To(ContainElements("DrainBlocked", "DrainDelete", "DrainRemoveFinalizers"))
	}).Should(Succeed())

	Eventually(func(g Gomega) {
		rec := findNode(getRun(ctx, key), target)
		g.Expect(rec.Drain.CompletionTime).NotTo(BeNil())
		g.Expect(rec.Drain.ForcedPods).To(Equal(int32(1)))
	}).Should(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(getRun(ctx, key).Status.Phase).To(Equal(nodegatev1alpha1.RunCompleted))
	}).WithTimeout(3 * time.Minute).Should(Succeed())
	// The admin's pause is the original: it stays.
	Expect(getPool(ctx, "worker").Spec.Paused).To(BeTrue())
}
