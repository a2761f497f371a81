package nodegate

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/nodegate/plan"
)

func hookSpec(container string, env ...corev1.EnvVar) *batchv1.JobSpec {
	return &batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: container, Image: "registry.example.com/hook:1", Env: env}},
	}}}
}

func newRun(name, rule string) *nodegatev1alpha1.MutexRunConfig {
	return &nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: nodegatev1alpha1.MutexRunConfigSpec{
		MutexRules:   []nodegatev1alpha1.ObjectReference{{Name: rule}},
		MutexTargets: []nodegatev1alpha1.ObjectReference{{Name: "workers"}},
		// The timeout comes from the namespace's UpgradeConfig; short steps.
		DrainRemediation: &nodegatev1alpha1.DrainRemediation{StepTimeout: &metav1.Duration{Duration: 3 * time.Second}},
	}}
}

func getRun(ctx SpecContext, name string) *nodegatev1alpha1.MutexRunConfig {
	GinkgoHelper()
	r := &nodegatev1alpha1.MutexRunConfig{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, r)).To(Succeed())
	return r
}

func workerPool(ctx SpecContext) *mcfgv1.MachineConfigPool {
	GinkgoHelper()
	p := &mcfgv1.MachineConfigPool{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "worker"}, p)).To(Succeed())
	return p
}

func workers(ctx SpecContext) []corev1.Node {
	GinkgoHelper()
	var nodes corev1.NodeList
	Expect(env.Client.List(ctx, &nodes, client.HasLabels{"node-role.kubernetes.io/worker"})).To(Succeed())
	return nodes.Items
}

func setDesiredVersion(ctx SpecContext, version string) {
	GinkgoHelper()
	cv := &configv1.ClusterVersion{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
	patch := client.MergeFrom(cv.DeepCopy())
	cv.Spec.DesiredUpdate = &configv1.Update{Version: version}
	Expect(env.Client.Patch(ctx, cv, patch)).To(Succeed())
}

func findNode(r *nodegatev1alpha1.MutexRunConfig, name string) *nodegatev1alpha1.NodeRecord {
	for i := range r.Status.Nodes {
		if r.Status.Nodes[i].Name == name {
			return &r.Status.Nodes[i]
		}
	}
	return nil
}

// records says each node's record on one line: what a failed summary
// needs to be understood.
func records(r *nodegatev1alpha1.MutexRunConfig) string {
	var b strings.Builder
	for _, n := range r.Status.Nodes {
		fmt.Fprintf(&b, "\n  %s (pool %s): %s %q", n.Name, n.Pool, n.Phase, n.LastError)
	}
	return b.String()
}

var _ = Describe("node-gate", Ordered, func() {
	var origPool mcfgv1.MachineConfigPoolSpec

	BeforeAll(func(ctx SpecContext) {
		Expect(env.Client.Create(ctx, &nodegatev1alpha1.MutexTarget{ObjectMeta: metav1.ObjectMeta{Name: "workers", Namespace: namespace},
			Spec: nodegatev1alpha1.MutexTargetSpec{MachineConfigPools: []string{"worker"}}})).To(Succeed())
		origPool = workerPool(ctx).Spec
	})

	It("gates all 6 workers of a 4.16.2 update with a two-hook rule running its pre-hooks one node ahead (lookahead 1) and forces a PDB-blocked drain, killed (SIGKILL) after its writes, without redoing a hook or a drain step and never with two workers unavailable", func(ctx SpecContext) {
		Expect(env.Client.Create(ctx, &nodegatev1alpha1.MutexRule{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: namespace},
			Spec: nodegatev1alpha1.MutexRuleSpec{JobName: "db", JobNamespace: namespace, Type: nodegatev1alpha1.RuleTypeKubernetes,
				JobSpec: hookSpec("pre", corev1.EnvVar{Name: "USER_VAR", Value: "kept"}), CleanUpJobSpec: hookSpec("post"),
				// The configuration the bench targets: a kill between a hook
				// Job created ahead and its node's turn must adopt that Job.
				Lookahead: 1}})).To(Succeed())
		run := newRun("update", "db")
		Expect(env.Client.Create(ctx, run)).To(Succeed())
		// The first pass waits for leader election and every cache.
		Eventually(func(g Gomega) { g.Expect(getRun(ctx, "update").Status.Phase).To(Equal(nodegatev1alpha1.RunIdle)) }).WithTimeout(3 * time.Minute).Should(Succeed())

		// A pod no eviction may take (PDB maxUnavailable 0), kept by a
		// finalizer, on one worker.
		target := workers(ctx)[3].Name
		Expect(env.CreateNamespace(ctx, "guarded")).To(Succeed())
		Expect(env.Client.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "guarded"},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}})).To(Succeed())
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "guarded", Labels: map[string]string{"app": "db"}, Finalizers: []string{"example.com/hold"}},
			Spec: corev1.PodSpec{NodeName: target, Containers: []corev1.Container{{Name: "db", Image: "registry.example.com/db:1"}}}}
		Expect(env.Client.Create(ctx, pod)).To(Succeed())

		tl := watchTimeline(ctx)
		// From here on node-gate is killed after each of its writes
		// (kill_test.go) until the last node's post-update hook Job exists.
		stopKilling := killOnWrites(ctx, "update", len(workers(ctx)))
		setDesiredVersion(ctx, "4.16.2")

		By("naming the blocking pod and its PDB in the status while the drain is blocked")
		Eventually(func(g Gomega) {
			rec := findNode(getRun(ctx, "update"), target)
			g.Expect(rec).NotTo(BeNil())
			g.Expect(rec.Drain).NotTo(BeNil())
			g.Expect(rec.Drain.BlockingPods).To(ContainElement(And(HaveField("Namespace", "guarded"), HaveField("Name", "db-0"), HaveField("PDBs", []string{"db"}))))
		}).WithTimeout(4 * time.Minute).Should(Succeed())

		By("forcing the pod off after the UpgradeConfig's one-minute timeout, step by step")
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
		}).WithTimeout(4 * time.Minute).Should(BeTrue())
		// The steps' Events are sent after each step, and a kill right
		// after it loses them: the audit log below says what was done.
		rec := findNode(getRun(ctx, "update"), target)
		Expect(rec.Drain.StartTime.Time).NotTo(BeZero())
		By("each forced-drain step taken at most once, across the kills (audit log)")
		steps := map[string]int{}
		evs, err := env.AuditEvents(framework.ServiceAccountUser(namespace, id.ServiceAccount))
		Expect(err).NotTo(HaveOccurred())
		for _, e := range evs {
			if o := e.ObjectRef; o != nil && o.Resource == "pods" && o.Namespace == "guarded" && o.Name == "db-0" && (e.Verb == "delete" || e.Verb == "patch") {
				steps[e.Verb]++
			}
		}
		// Delete, then delete with grace 0, then the finalizers patch (the
		// pod is gone, and only node-gate removes them); a step whose
		// request a kill lost is followed by the next one.
		Expect(steps["delete"]).To(And(BeNumerically(">=", 1), BeNumerically("<=", 2)), "deletes of db-0: %v", steps)
		Expect(steps["patch"]).To(Equal(1), "patches of db-0: %v", steps)

		Eventually(func(g Gomega) {
			g.Expect(getRun(ctx, "update").Status.Phase).To(Equal(nodegatev1alpha1.RunCompleted))
		}).WithTimeout(5 * time.Minute).Should(Succeed())
		killed := stopKilling()
		Expect(killed.Err).NotTo(HaveOccurred())
		AddReportEntry("kills", fmt.Sprintf("%d kills; writes a kill followed, by kind: %v", killed.Kills, killed.After))
		for _, kind := range killKinds {
			Expect(killed.After).To(HaveKeyWithValue(kind, BeNumerically(">=", 1)), "no kill after a write of kind %q; kills after %v", kind, killed.After)
		}
		r := getRun(ctx, "update")
		Expect(r.Status.Summary).To(Equal(nodegatev1alpha1.Summary{Total: 6, Succeeded: 6}), "the nodes' records: %s", records(r))
		d := findNode(r, target).Drain
		Expect(d.CompletionTime).NotTo(BeNil())
		// The clock ran at least the timeout before the first step.
		Expect(d.CompletionTime.Sub(d.StartTime.Time)).To(BeNumerically(">=", time.Minute))

		By("every hook ran exactly once per node (no second attempt, two Jobs per node), as the watch saw them created")
		var jobs batchv1.JobList
		Expect(env.Client.List(ctx, &jobs, client.InNamespace(namespace), client.MatchingLabels{plan.RunLabel: plan.RunKey(namespace, "update")})).To(Succeed())
		Expect(jobs.Items).To(HaveLen(12))
		for _, j := range jobs.Items {
			Expect(j.Name).To(HaveSuffix("-1"))
		}
		// A Job created twice would show here even if the first had been
		// deleted since: the watch saw every creation.
		Expect(killed.Jobs).To(HaveLen(12), "hooks created, by node and stage: %v", killed.Jobs)
		for key, uids := range killed.Jobs {
			Expect(uids).To(HaveLen(1), "hook Jobs created for %s", key)
		}

		By("the instance the kills left timed the last node's post-update hook")
		Eventually(func(g Gomega) {
			body, err := scraper.Scrape(metricsURL)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(body).To(ContainSubstring(`upshift_node_gate_hook_duration_seconds_count{result="Succeeded",stage="Post"}`))
		}).Should(Succeed())

		By("never more than maxUnavailable (1) workers unavailable after any write")
		Eventually(func() []string {
			tl.mu.Lock()
			defer tl.mu.Unlock()
			return slices.Sorted(maps.Keys(tl.unavailable))
		}).Should(BeEmpty())
		tl.mu.Lock()
		Expect(len(tl.mostUnavailable)).To(BeNumerically("<=", 1), "workers unavailable at once: %v", tl.mostUnavailable)
		tl.mu.Unlock()

		By("ordering from resourceVersions: pre-hook Complete < release < MCO Working; post-hook after Done; the MCO starts the next after the previous Done+Ready")
		// The timeline's watches may still be behind what the run's status
		// already shows (the last post-hook Job's Complete): wait for them.
		Eventually(func(g Gomega) {
			tl.mu.Lock()
			defer tl.mu.Unlock()
			for _, j := range jobs.Items {
				g.Expect(tl.jobDone).To(HaveKey(j.Name))
				g.Expect(tl.jobNode).To(HaveKey(j.Name))
			}
			for _, n := range r.Status.PlannedOrder {
				g.Expect(tl.labelled).To(HaveKey(n))
				g.Expect(tl.working).To(HaveKey(n))
				g.Expect(tl.done).To(HaveKey(n))
			}
		}).Should(Succeed())
		tl.mu.Lock()
		defer tl.mu.Unlock()
		order := r.Status.PlannedOrder
		Expect(order).To(HaveLen(6))
		// Completed records keep no hook runs (status compaction): the
		// Jobs themselves say which node and stage each was, by NODE_NAME
		// and by the container the rule's jobSpec or cleanUpJobSpec names.
		stages := map[string][]string{}
		for _, j := range jobs.Items {
			n, stage := tl.jobNode[j.Name], j.Spec.Template.Spec.Containers[0].Name
			stages[n] = append(stages[n], stage)
			done, ok := tl.jobDone[j.Name]
			Expect(ok).To(BeTrue(), j.Name)
			if stage == "pre" {
				Expect(done).To(BeNumerically("<", tl.labelled[n]), "pre-hook of %s completed after its release", n)
				Expect(done).To(BeNumerically("<", tl.working[n]), "pre-hook of %s completed after the MCO started", n)
			} else {
				Expect(done).To(BeNumerically(">", tl.done[n]), "post-hook of %s completed before the node was Done", n)
			}
		}
		preJobDone := map[string]uint64{}
		for _, j := range jobs.Items {
			if j.Spec.Template.Spec.Containers[0].Name == "pre" {
				preJobDone[tl.jobNode[j.Name]] = tl.jobDone[j.Name]
			}
		}
		for _, n := range order {
			Expect(stages[n]).To(ConsistOf("pre", "post"), "hook Jobs of %s", n)
			Expect(tl.labelled).To(HaveKey(n))
			Expect(tl.working).To(HaveKey(n))
			Expect(tl.done).To(HaveKey(n))
		}
		// The updates as the MCO started them. With lookahead a node whose
		// hooks are done is released ahead of its turn, into the worker
		// pool, whose maxUnavailable (the run's 1) keeps the MCO from
		// starting it before the node updating is Done: node-gate's release
		// is no longer what the next update waits for.
		started := slices.SortedFunc(slices.Values(order), func(a, b string) int { return cmp.Compare(tl.working[a], tl.working[b]) })
		hooksAhead, releasedAhead := 0, 0
		for i, n := range started {
			if i == 0 {
				continue
			}
			prev := started[i-1]
			if preJobDone[n] < tl.done[prev] {
				hooksAhead++
			}
			if tl.labelled[n] < tl.done[prev] {
				releasedAhead++
			}
			Expect(tl.working[n]).To(BeNumerically(">", tl.done[prev]), "the MCO started %s before %s (started before it) was Done and Ready; started %v", n, prev, started)
		}
		AddReportEntry("update order (planned order)", fmt.Sprintf("%v (%v)", started, order))
		// The lookahead did run hooks ahead, and released ahead: at least
		// the node after the one whose drain was blocked for a minute.
		Expect(hooksAhead).To(BeNumerically(">=", 1), "no node's pre-hook completed before the previous node was Done")
		Expect(releasedAhead).To(BeNumerically(">=", 1), "no node was released before the previous node was Done")
		AddReportEntry("pre-hooks completed, and nodes released, before the previous node was Done", fmt.Sprintf("%d, %d", hooksAhead, releasedAhead))

		By("restored: pool as before, gate pool deleted, no hold label")
		Eventually(func(g Gomega) {
			p := workerPool(ctx)
			g.Expect(p.Spec.Paused).To(Equal(origPool.Paused))
			g.Expect(p.Spec.NodeSelector).To(Equal(origPool.NodeSelector))
			g.Expect(p.Spec.MaxUnavailable).To(Equal(origPool.MaxUnavailable))
			g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: "worker-gate"}, &mcfgv1.MachineConfigPool{}))).To(BeTrue())
		}).Should(Succeed())
		for _, n := range workers(ctx) {
			Expect(n.Labels).NotTo(HaveKey(plan.HoldLabel))
		}
		Expect(env.Client.Delete(ctx, run)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(run), run))
		}).Should(BeTrue())

		By("settled: every worker on the worker pool's target, nothing left to move")
		// The next spec's run must start on a quiet cluster.
		Eventually(func(g Gomega) {
			target := workerPool(ctx).Spec.Configuration.Name
			for _, n := range workers(ctx) {
				g.Expect(n.Annotations[mcostate.DesiredConfig]).To(Equal(target), n.Name)
				g.Expect(mcostate.Done(n.Annotations)).To(BeTrue(), n.Name)
			}
		}).WithTimeout(2 * time.Minute).Should(Succeed())
	})

	It("pauses on a failing hook with the MCO touching no node, and deleting the run mid-way restores the pool exactly", func(ctx SpecContext) {
		bad := hookSpec("never")
		bad.ActiveDeadlineSeconds = ptr.To[int64](2)
		bad.BackoffLimit = ptr.To[int32](0)
		bad.Template.Spec.NodeSelector = map[string]string{"no-such-label": "x"}
		Expect(env.Client.Create(ctx, &nodegatev1alpha1.MutexRule{ObjectMeta: metav1.ObjectMeta{Name: "failing", Namespace: namespace},
			Spec: nodegatev1alpha1.MutexRuleSpec{JobName: "failing", JobNamespace: namespace, JobSpec: bad}})).To(Succeed())
		run := newRun("fail", "failing")
		nodeWrites0 := nodeWrites()
		Expect(env.Client.Create(ctx, run)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(getRun(ctx, "fail").Status.Phase).To(Equal(nodegatev1alpha1.RunIdle)) }).Should(Succeed())
		cfgBefore := workerPool(ctx).Spec.Configuration.Name
		before := map[string]string{}
		for _, n := range workers(ctx) {
			before[n.Name] = n.Annotations[mcostate.DesiredConfig]
		}
		setDesiredVersion(ctx, "4.16.3")
		Eventually(func(g Gomega) {
			r := getRun(ctx, "fail")
			g.Expect(r.Status.Phase).To(Equal(nodegatev1alpha1.RunPaused))
			c := meta.FindStatusCondition(r.Status.Conditions, plan.CondPaused)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(plan.ReasonHookFailed))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		// The worker pool has the new target by now; no node was given it.
		Eventually(func(g Gomega) {
			g.Expect(workerPool(ctx).Spec.Configuration.Name).NotTo(Equal(cfgBefore))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		// node-gate wrote Nodes only to hold them (it releases a node by
		// removing its hold label): every worker is held, and no node has
		// the new config.
		Expect(nodeWrites()).To(BeNumerically(">=", nodeWrites0+len(before)), "node-gate did not hold the workers")
		for _, n := range workers(ctx) {
			Expect(n.Annotations[mcostate.DesiredConfig]).To(Equal(before[n.Name]), n.Name)
			Expect(n.Labels).To(HaveKeyWithValue(plan.HoldLabel, "worker"), n.Name)
		}

		// The restore is killed too: after each hold label removed, and
		// after the pool's pause, selector and maxUnavailable given back
		// and the gate pool deleted.
		stopKilling := killOnWrites(ctx, "fail", 0)
		Expect(env.Client.Delete(ctx, run)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(run), run))
		}).WithTimeout(3 * time.Minute).Should(BeTrue())
		killed := stopKilling()
		Expect(killed.Err).NotTo(HaveOccurred())
		AddReportEntry("kills during the restore", fmt.Sprintf("%d kills; writes a kill followed, by kind: %v", killed.Kills, killed.After))
		Expect(killed.After).To(HaveKeyWithValue(killLabel, BeNumerically(">=", 1)), "no kill after a hold label's removal")
		Expect(killed.After).To(HaveKeyWithValue(killPool, BeNumerically(">=", 1)), "no kill after a pool's restore")
		p := workerPool(ctx)
		Expect(p.Spec.Paused).To(Equal(origPool.Paused))
		Expect(p.Spec.NodeSelector).To(Equal(origPool.NodeSelector))
		Expect(p.Spec.MaxUnavailable).To(Equal(origPool.MaxUnavailable))
		Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: "worker-gate"}, &mcfgv1.MachineConfigPool{}))).To(BeTrue())
	})

	It("refuses at admission a rule that would borrow privileges through node-gate, naming the field", admission)

	It("serves its metrics to the chart's metrics reader, was never refused a request and used every permission its chart grants", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			body, err := scraper.Scrape(metricsURL)
			g.Expect(err).NotTo(HaveOccurred())
			// Both runs are deleted (their series with them), and the
			// restore's kills left an instance that timed no hook (the
			// first spec reads what its instance timed). The forced-drain
			// steps are counted from zero by every instance.
			g.Expect(body).To(ContainSubstring(`upshift_node_gate_forced_drain_actions_total{kind="Delete"}`))
		}).Should(Succeed())
		perms, err := id.Chart.Permissions()
		Expect(err).NotTo(HaveOccurred())
		roles, err := id.Chart.BoundRoles(namespace, id.ServiceAccount)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			evs, err := env.AuditEvents(framework.ServiceAccountUser(namespace, id.ServiceAccount))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(framework.Refused(evs)).To(BeEmpty())
			g.Expect(framework.Unused(withoutSeriesPatch(framework.OfRoles(perms, roles...)), evs)).To(BeEmpty())
		}).Should(Succeed())
	})
})

// withoutSeriesPatch drops "patch events": the events library patches only
// when one Event repeats within its cache window, which these runs may or
// may not do; the grant is needed, its use is not deterministic here.
func withoutSeriesPatch(perms []framework.Permission) []framework.Permission {
	var out []framework.Permission
	for _, p := range perms {
		if p.APIGroup == "events.k8s.io" && p.Resource == "events" && p.Verb == "patch" {
			continue
		}
		out = append(out, p)
	}
	return out
}

// nodeWrites counts node-gate's writes of Nodes so far, from the audit log.
func nodeWrites() int {
	GinkgoHelper()
	evs, err := env.AuditEvents(framework.ServiceAccountUser(namespace, id.ServiceAccount))
	Expect(err).NotTo(HaveOccurred())
	return testenv.Writes(evs, "nodes", "")
}
