package controller_test

import (
	"context"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/services/mcptracker/controller"
	"github.com/upshift-io/upshift/services/mcptracker/track"
	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

// observed is the test's own record of the MCO's moves, from watches
// independent of the tracker: when each pool's first node's desiredConfig
// moved to a new value, and when each pool turned Updated=True.
type observed struct {
	mu           sync.Mutex
	firstDesired map[string]time.Time // node name -> first desiredConfig change
	updatedAt    map[string]time.Time // pool -> last Updated=True transition
}

func watchMCO(ctx context.Context) *observed {
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	o := &observed{firstDesired: map[string]time.Time{}, updatedAt: map[string]time.Time{}}
	var nodes corev1.NodeList
	Expect(wc.List(ctx, &nodes)).To(Succeed())
	last := map[string]string{}
	for _, n := range nodes.Items {
		last[n.Name] = n.Annotations[mcostate.DesiredConfig]
	}
	nw, err := wc.Watch(context.Background(), &corev1.NodeList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: nodes.ResourceVersion}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(nw.Stop)
	go func() {
		for ev := range nw.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			now := time.Now()
			o.mu.Lock()
			if d := n.Annotations[mcostate.DesiredConfig]; d != last[n.Name] {
				last[n.Name] = d
				if _, seen := o.firstDesired[n.Name]; !seen {
					o.firstDesired[n.Name] = now
				}
			}
			o.mu.Unlock()
		}
	}()
	var pools mcfgv1.MachineConfigPoolList
	Expect(wc.List(ctx, &pools)).To(Succeed())
	wasUpdated := map[string]bool{}
	for _, p := range pools.Items {
		wasUpdated[p.Name] = mco.PoolCondition(&p.Status, mcfgv1.MachineConfigPoolUpdated).Status == corev1.ConditionTrue
	}
	pw, err := wc.Watch(context.Background(), &mcfgv1.MachineConfigPoolList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: pools.ResourceVersion}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(pw.Stop)
	go func() {
		for ev := range pw.ResultChan() {
			p, ok := ev.Object.(*mcfgv1.MachineConfigPool)
			if !ok {
				continue
			}
			now := time.Now()
			c := mco.PoolCondition(&p.Status, mcfgv1.MachineConfigPoolUpdated)
			up := c != nil && c.Status == corev1.ConditionTrue
			o.mu.Lock()
			if up && !wasUpdated[p.Name] {
				o.updatedAt[p.Name] = now
			}
			wasUpdated[p.Name] = up
			o.mu.Unlock()
		}
	}()
	return o
}

// firstMove is the earliest desiredConfig change among nodes with prefix.
func (o *observed) firstMove(prefix string) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	var first time.Time
	for n, t := range o.firstDesired {
		if strings.HasPrefix(n, prefix) && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first
}

func (o *observed) updated(pool string) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.updatedAt[pool]
}

// within: the API keeps whole seconds, and watches add a little latency. b
// (this test's own observation) is truncated as the API truncates a: two
// watches less than a second apart then give times a second apart at most,
// whatever fraction the truncation takes off.
func within(a *metav1.Time, b time.Time) {
	GinkgoHelper()
	Expect(a).NotTo(BeNil())
	Expect(b.IsZero()).To(BeFalse())
	Expect(a.Time.Sub(b.Truncate(time.Second)).Abs()).To(BeNumerically("<=", 1500*time.Millisecond), "tracker %v, observed %v", a.Time, b)
}

func mcoRollout() {
	It("times every pool from the node annotations, exports metrics without an UpgradeConfig, and writes its status fields", func(ctx SpecContext) {
		sim, err := simcluster.Simulate(ctx, env, ocpsim.Topology{Version: "4.16.1", Masters: 1, Workers: 2,
			CustomPools: []ocpsim.CustomPool{{Name: "infra", Nodes: 1, Paused: true}}}, ocpsim.Options{TimeScale: 600})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(context.Context) { Expect(sim.Stop()).To(Succeed()) }, NodeTimeout(20*time.Second))

		// Passes paced as on a real cluster: at 600× the default half second
		// between them is five simulated minutes, longer than a node's whole
		// update, and a node updated between two passes is never timed.
		t := startTracker(ctx, &controller.Reconciler{Namespace: "rollout", MinWriteInterval: 200 * time.Millisecond,
			MinPassInterval: controller.DefaultMinPassInterval / 600})

		By("exporting metrics with no UpgradeConfig at all")
		Eventually(func(g Gomega) {
			for pool, n := range map[string]float64{"master": 1, "worker": 2, "infra": 1} {
				v, ok := t.metric("upshift_mcp_tracker_nodes", map[string]string{"pool": pool, "state": "done"})
				g.Expect(ok).To(BeTrue(), pool)
				g.Expect(v).To(Equal(n), pool)
			}
			v, _ := t.metric("upshift_mcp_tracker_pool_degraded", map[string]string{"pool": "worker"})
			g.Expect(v).To(BeZero())
		}).Should(Succeed())
		Expect(t.writes()).To(BeZero())

		uc := newUpgradeConfig(ctx, env.Client, "rollout", "4.16.2", time.Now())
		key := client.ObjectKeyFromObject(uc)
		Eventually(func(g Gomega) {
			got := getUC(ctx, env.Client, key)
			for _, p := range []string{"master", "worker", "infra"} {
				g.Expect(poolStatus(got, p)).NotTo(BeNil(), p)
			}
			c := findCond(got, upgradev1alpha1.WorkersUpgradedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(track.ReasonAllPoolsUpdated))
		}).Should(Succeed())

		obs := watchMCO(ctx)
		By("rolling a new worker MachineConfig out: worker and infra render new targets; infra is paused")
		mc := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-worker-tracker", Labels: map[string]string{mco.RoleLabel: "worker"}}}
		mc.Spec.KernelArguments = []string{"tracker=1"}
		mc.Spec.Extensions = []string{}
		Expect(env.Client.Create(ctx, mc)).To(Succeed())

		var worker *upgradev1alpha1.PoolUpdate
		Eventually(func(g Gomega) {
			got := getUC(ctx, env.Client, key)
			worker = poolStatus(got, "worker")
			g.Expect(worker).NotTo(BeNil())
			g.Expect(worker.CompleteTime).NotTo(BeNil())
			g.Expect(worker.Nodes.Done).To(Equal(int32(2)))
			g.Expect(got.Status.History[0].WorkerCompleteTime).NotTo(BeNil())
		}, time.Minute).Should(Succeed())
		within(worker.StartTime, obs.firstMove("ocp-worker"))
		within(worker.CompleteTime, obs.updated("worker"))
		got := getUC(ctx, env.Client, key)
		Expect(got.Status.History[0].WorkerStartTime.Equal(worker.StartTime)).To(BeTrue())
		Expect(got.Status.History[0].WorkerCompleteTime.Equal(worker.CompleteTime)).To(BeTrue())
		Expect(got.Status.History[0].Phase).To(Equal(upgradev1alpha1.UpgradePhaseUpgrading), "the scheduler's fields are untouched")

		By("a paused pool whose target moved has not started: its updated count is 0, yet no node was told to move")
		infraPool := &mcfgv1.MachineConfigPool{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "infra"}, infraPool)).To(Succeed())
		Expect(infraPool.Status.UpdatedMachineCount).To(BeZero())
		infra := poolStatus(got, "infra")
		Expect(infra.TargetConfig).To(Equal(infraPool.Spec.Configuration.Name))
		Expect(infra.StartTime).To(BeNil())
		Expect(infra.Nodes.Pending).To(Equal(int32(1)))
		c := findCond(got, upgradev1alpha1.WorkersUpgradedCondition)
		Expect(c.Status).To(Equal(metav1.ConditionFalse))
		Expect(c.Reason).To(Equal(track.ReasonPoolsUpdating))
		Expect(c.Message).To(ContainSubstring("infra (0 of 1 nodes done)"))

		v, _ := t.metric("upshift_mcp_tracker_node_update_duration_seconds", map[string]string{"pool": "worker"})
		Expect(v).To(Equal(2.0), "one observation per worker node")
		d, _ := t.metric("upshift_mcp_tracker_pool_update_duration_seconds", map[string]string{"pool": "worker"})
		Expect(d).To(Equal(worker.CompleteTime.Sub(worker.StartTime.Time).Seconds()))

		By("unpausing infra: it starts and completes, and WorkersUpgraded turns True")
		patch := client.MergeFrom(infraPool.DeepCopy())
		infraPool.Spec.Paused = false
		Expect(env.Client.Patch(ctx, infraPool, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getUC(ctx, env.Client, key)
			infra := poolStatus(got, "infra")
			g.Expect(infra.CompleteTime).NotTo(BeNil())
			g.Expect(findCond(got, upgradev1alpha1.WorkersUpgradedCondition).Status).To(Equal(metav1.ConditionTrue))
		}, time.Minute).Should(Succeed())
		got = getUC(ctx, env.Client, key)
		within(poolStatus(got, "infra").StartTime, obs.firstMove("ocp-infra"))
		within(poolStatus(got, "infra").CompleteTime, obs.updated("infra"))

		By("the Events name each pool's start and completion")
		Eventually(func(g Gomega) {
			var evs eventsv1.EventList
			g.Expect(env.Client.List(ctx, &evs, client.InNamespace("rollout"))).To(Succeed())
			var msgs []string
			for _, e := range evs.Items {
				if e.Regarding.Name == uc.Name {
					msgs = append(msgs, e.Reason+": "+e.Note)
				}
			}
			g.Expect(msgs).To(ContainElements(
				HavePrefix("PoolUpdateStarted: pool worker started updating to "),
				HavePrefix("PoolUpdateCompleted: pool worker completed its update to "),
				HavePrefix("PoolUpdateStarted: pool infra started updating to "),
				HavePrefix("PoolUpdateCompleted: pool infra completed its update to "),
			))
		}).Should(Succeed())

		By("owning only its own fields, under its field manager")
		full := &upgradev1alpha1.UpgradeConfig{}
		Expect(env.Client.Get(ctx, key, full)).To(Succeed())
		var own string
		for _, mf := range full.ManagedFields {
			if mf.Manager == controller.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
				own = mf.FieldsV1.GetRawString()
			}
		}
		Expect(own).To(ContainSubstring(`"f:pools"`))
		Expect(own).To(ContainSubstring(`"f:workerStartTime"`))
		Expect(own).To(ContainSubstring(`"k:{\"type\":\"WorkersUpgraded\"}"`))
		Expect(own).NotTo(ContainSubstring(`"f:phase"`))
		Expect(own).NotTo(ContainSubstring(`"f:spec"`))

		By("a restart between two worker updates: the previous duration is exported at once, from status.pools")
		got = getUC(ctx, env.Client, key)
		first := poolStatus(got, "worker")
		firstSeconds := int64(first.CompleteTime.Sub(first.StartTime.Time).Seconds())
		Expect(first.LastUpdateDurationSeconds).To(Equal(firstSeconds))
		t.stop()
		// Paused, the pool's target moves but no node is told to move: the
		// next update is pending for as long as the test needs.
		workerPool := &mcfgv1.MachineConfigPool{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "worker"}, workerPool)).To(Succeed())
		patch = client.MergeFrom(workerPool.DeepCopy())
		workerPool.Spec.Paused = true
		Expect(env.Client.Patch(ctx, workerPool, patch)).To(Succeed())
		mc2 := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-worker-tracker-2", Labels: map[string]string{mco.RoleLabel: "worker"}}}
		mc2.Spec.KernelArguments = []string{"tracker=2"}
		mc2.Spec.Extensions = []string{}
		Expect(env.Client.Create(ctx, mc2)).To(Succeed())
		Eventually(func(g Gomega) string {
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "worker"}, workerPool)).To(Succeed())
			return workerPool.Spec.Configuration.Name
		}).ShouldNot(Equal(first.TargetConfig))

		t2 := startTracker(ctx, &controller.Reconciler{Namespace: "rollout", MinWriteInterval: 200 * time.Millisecond,
			MinPassInterval: controller.DefaultMinPassInterval / 600})
		Eventually(func(g Gomega) {
			p := poolStatus(getUC(ctx, env.Client, key), "worker")
			g.Expect(p.TargetConfig).To(Equal(workerPool.Spec.Configuration.Name))
			g.Expect(p.CompleteTime).To(BeNil())
			g.Expect(p.LastUpdateDurationSeconds).To(Equal(firstSeconds))
			d, ok := t2.metric("upshift_mcp_tracker_pool_update_duration_seconds", map[string]string{"pool": "worker"})
			g.Expect(ok).To(BeTrue(), "the slow-update alert's previous duration after a restart")
			g.Expect(d).To(Equal(float64(firstSeconds)))
		}).Should(Succeed())
		_, completeExported := t2.metric("upshift_mcp_tracker_pool_update_complete_timestamp_seconds", map[string]string{"pool": "worker"})
		Expect(completeExported).To(BeFalse(), "the next update is not complete")

		By("unpausing: the second update runs with the first one's duration exported, and replaces it once complete")
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "worker"}, workerPool)).To(Succeed())
		patch = client.MergeFrom(workerPool.DeepCopy())
		workerPool.Spec.Paused = false
		Expect(env.Client.Patch(ctx, workerPool, patch)).To(Succeed())
		var second *upgradev1alpha1.PoolUpdate
		Eventually(func(g Gomega) {
			second = poolStatus(getUC(ctx, env.Client, key), "worker")
			g.Expect(second.TargetConfig).To(Equal(workerPool.Spec.Configuration.Name))
			g.Expect(second.CompleteTime).NotTo(BeNil())
		}, time.Minute).Should(Succeed())
		secondSeconds := int64(second.CompleteTime.Sub(second.StartTime.Time).Seconds())
		Expect(second.LastUpdateDurationSeconds).To(Equal(secondSeconds))
		Eventually(func() float64 {
			d, _ := t2.metric("upshift_mcp_tracker_pool_update_duration_seconds", map[string]string{"pool": "worker"})
			return d
		}).Should(Equal(float64(secondSeconds)))
	}, NodeTimeout(3*time.Minute))
}

func findCond(uc *upgradev1alpha1.UpgradeConfig, t string) *metav1.Condition {
	for i := range uc.Status.Conditions {
		if uc.Status.Conditions[i].Type == t {
			return &uc.Status.Conditions[i]
		}
	}
	return nil
}
