package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/services/mcptracker/controller"
)

// manualPool creates a pool selecting label node-role.kubernetes.io/<name>
// and n nodes in it, all Done on cfg; no simulator moves them, the test
// does.
func manualPool(ctx context.Context, name, cfg string, n int) []string {
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}}
	p.Spec.MachineConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"none": name}}
	p.Spec.Configuration.Name = cfg
	Expect(env.Client.Create(ctx, p)).To(Succeed())
	// Other specs' trackers must not see this pool after the spec.
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, p))).To(Succeed()) })
	setPool(ctx, name, cfg, true)
	var names []string
	for i := range n {
		nd := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("%s-%d", name, i),
			Labels:      map[string]string{"node-role.kubernetes.io/" + name: ""},
			Annotations: map[string]string{mcostate.CurrentConfig: cfg, mcostate.DesiredConfig: cfg, mcostate.State: mcostate.StateDone},
		}}
		Expect(env.Client.Create(ctx, nd)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, nd))).To(Succeed()) })
		nd.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		Expect(env.Client.Status().Update(ctx, nd)).To(Succeed())
		names = append(names, nd.Name)
	}
	return names
}

// setPool sets the pool's target and Updated condition, as the MCO would.
func setPool(ctx context.Context, name, cfg string, updated bool) {
	Expect(retry.RetryOnConflict(patient, func() error {
		p := &mcfgv1.MachineConfigPool{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		p.Spec.Configuration.Name = cfg
		if err := env.Client.Update(ctx, p); err != nil {
			return err
		}
		st := corev1.ConditionFalse
		if updated {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []mcfgv1.MachineConfigPoolCondition{{Type: mcfgv1.MachineConfigPoolUpdated, Status: st, LastTransitionTime: metav1.Now()}}
		return env.Client.Status().Update(ctx, p)
	})).To(Succeed())
}

// annotate sets MCO annotations on a node ("" removes one).
func annotate(ctx context.Context, name string, kv ...string) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	a := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			a[kv[i]] = nil
		} else {
			a[kv[i]] = kv[i+1]
		}
	}
	raw := fmt.Sprintf(`{"metadata":{"annotations":%s}}`, mustJSON(a))
	Expect(env.Client.Patch(ctx, n, client.RawPatch("application/merge-patch+json", []byte(raw)))).To(Succeed())
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

func twoWriters() {
	It("the scheduler's full status updates and the tracker's applies never lose each other's fields", func(ctx SpecContext) {
		// The pool is worker, so that MUO's worker times are written during
		// the race too.
		nodes := manualPool(ctx, "worker", "rendered-worker-1", 4)
		t := startTracker(ctx, &controller.Reconciler{Namespace: "race", MinWriteInterval: time.Millisecond, MinPassInterval: time.Millisecond})
		uc := newUpgradeConfig(ctx, env.Client, "race", "4.16.2", time.Now().Add(-time.Minute))
		key := client.ObjectKeyFromObject(uc)
		Eventually(func(g Gomega) { g.Expect(poolStatus(getUC(ctx, env.Client, key), "worker")).NotTo(BeNil()) }).Should(Succeed())

		// Every version of the object the apiserver hands out is checked:
		// once a writer's field is there, it must stay there, and the
		// scheduler's counter must never go back.
		wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.Scheme})
		Expect(err).NotTo(HaveOccurred())
		w, err := wc.Watch(ctx, &upgradev1alpha1.UpgradeConfigList{}, client.InNamespace("race"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(w.Stop)
		var (
			mu         sync.Mutex
			violations []string
			versions   int
		)
		watchDone := make(chan struct{})
		go func() {
			defer close(watchDone)
			lastStep, sawWorkerStart := -1, false
			for ev := range w.ResultChan() {
				if ev.Type != watch.Modified && ev.Type != watch.Added {
					continue
				}
				got := ev.Object.(*upgradev1alpha1.UpgradeConfig)
				mu.Lock()
				versions++
				if got.Status.History[0].WorkerStartTime != nil {
					sawWorkerStart = true
				} else if sawWorkerStart {
					violations = append(violations, "rv "+got.ResourceVersion+": workerStartTime is gone")
				}
				if poolStatus(got, "worker") == nil || meta.FindStatusCondition(got.Status.Conditions, upgradev1alpha1.WorkersUpgradedCondition) == nil {
					violations = append(violations, "rv "+got.ResourceVersion+": the tracker's fields are gone")
				}
				step := -1
				if s, ok := strings.CutPrefix(got.Status.CurrentStep, "step-"); ok {
					step, _ = strconv.Atoi(s)
				}
				if step < lastStep {
					violations = append(violations, fmt.Sprintf("rv %s: the scheduler's step went back from %d to %d", got.ResourceVersion, lastStep, step))
				}
				lastStep = max(lastStep, step)
				if len(got.Status.History) != 1 || got.Status.History[0].Phase != upgradev1alpha1.UpgradePhaseUpgrading {
					violations = append(violations, "rv "+got.ResourceVersion+": the scheduler's history entry changed")
				}
				mu.Unlock()
			}
		}()

		const rounds = 40
		var conflicts atomic.Int32
		writesBefore := t.writes()
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { // the upgrade-scheduler's way: read, change its fields, Status().Update
			defer GinkgoRecover()
			defer wg.Done()
			for i := 1; i <= rounds; i++ {
				Expect(retry.RetryOnConflict(patient, func() error {
					cur := &upgradev1alpha1.UpgradeConfig{}
					if err := env.Client.Get(ctx, key, cur); err != nil {
						return err
					}
					cur.Status.CurrentStep = fmt.Sprintf("step-%d", i)
					meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Step", Message: strconv.Itoa(i)})
					cur.Status.History[0].Conditions = upgradev1alpha1.Conditions{{Type: "ControlPlaneUpgraded", Status: corev1.ConditionFalse, Reason: strconv.Itoa(i)}}
					err := env.Client.Status().Update(ctx, cur)
					if apierrors.IsConflict(err) {
						conflicts.Add(1)
					}
					return err
				})).To(Succeed())
			}
		}()
		go func() { // the MCO moving nodes: every move changes the tracker's fields
			defer GinkgoRecover()
			defer wg.Done()
			setPool(ctx, "worker", "rendered-worker-2", false)
			for i := range rounds {
				n := nodes[i%len(nodes)]
				switch i / len(nodes) % 3 {
				case 0:
					annotate(ctx, n, mcostate.DesiredConfig, "rendered-worker-2", mcostate.State, mcostate.StateWorking)
				case 1:
					annotate(ctx, n, mcostate.DesiredDrain, "drain-rendered-worker-2", mcostate.LastAppliedDrain, "uncordon-rendered-worker-1")
				case 2:
					annotate(ctx, n, mcostate.DesiredDrain, "uncordon-rendered-worker-2", mcostate.LastAppliedDrain, "uncordon-rendered-worker-2")
				}
			}
			for _, n := range nodes {
				annotate(ctx, n, mcostate.CurrentConfig, "rendered-worker-2", mcostate.State, mcostate.StateDone)
			}
			setPool(ctx, "worker", "rendered-worker-2", true)
		}()
		wg.Wait()

		Eventually(func(g Gomega) {
			got := getUC(ctx, env.Client, key)
			g.Expect(got.Status.CurrentStep).To(Equal(fmt.Sprintf("step-%d", rounds)))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, "Progressing").Message).To(Equal(strconv.Itoa(rounds)))
			g.Expect(got.Status.History[0].Conditions[0].Reason).To(Equal(strconv.Itoa(rounds)))
			worker := poolStatus(got, "worker")
			g.Expect(worker.CompleteTime).NotTo(BeNil())
			g.Expect(worker.Nodes.Done).To(Equal(int32(len(nodes))))
			g.Expect(got.Status.History[0].WorkerStartTime.Equal(worker.StartTime)).To(BeTrue())
			g.Expect(got.Status.History[0].WorkerCompleteTime.Equal(worker.CompleteTime)).To(BeTrue())
		}).Should(Succeed())
		w.Stop()
		<-watchDone
		mu.Lock()
		defer mu.Unlock()
		Expect(violations).To(BeEmpty())
		writes := t.writes() - writesBefore
		AddReportEntry("race", fmt.Sprintf("%d object versions, %d tracker applies, %d scheduler conflicts", versions, int(writes), conflicts.Load()))
		// Both wrote throughout: the race is real.
		Expect(writes).To(BeNumerically(">=", 5))
		Expect(versions).To(BeNumerically(">=", rounds+5))
	}, NodeTimeout(2*time.Minute))
}

func boundedWrites() {
	It("coalesces many node transitions into few writes, always writing the final state, and reports a stuck node", func(ctx SpecContext) {
		const interval = 2 * time.Second
		nodes := manualPool(ctx, "bulk", "rendered-bulk-1", 10)
		solo := manualPool(ctx, "solo", "rendered-solo-1", 1)
		t := startTracker(ctx, &controller.Reconciler{Namespace: "bulk", MinWriteInterval: interval, StuckAfter: 4 * time.Second})

		By("with no UpgradeConfig yet, the Events go on the pool")
		// The tracker must have seen the pool before it moves: a pool first
		// seen mid-update gets no start.
		Eventually(func(g Gomega) {
			v, _ := t.metric("upshift_mcp_tracker_nodes", map[string]string{"pool": "solo", "state": "done"})
			g.Expect(v).To(Equal(1.0))
		}).Should(Succeed())
		setPool(ctx, "solo", "rendered-solo-2", false)
		annotate(ctx, solo[0], mcostate.DesiredConfig, "rendered-solo-2")
		Eventually(func(g Gomega) {
			var evs eventsv1.EventList
			g.Expect(env.Client.List(ctx, &evs)).To(Succeed())
			var started []string
			for _, e := range evs.Items {
				if e.Reason == "PoolUpdateStarted" && e.Regarding.Kind == "MachineConfigPool" && e.Regarding.Name == "solo" {
					started = append(started, e.Note)
				}
			}
			g.Expect(started).To(ConsistOf("pool solo started updating to rendered-solo-2: node solo-0 was told to move to it"))
		}).Should(Succeed())
		annotate(ctx, solo[0], mcostate.CurrentConfig, "rendered-solo-2")
		setPool(ctx, "solo", "rendered-solo-2", true)
		uc := newUpgradeConfig(ctx, env.Client, "bulk", "4.16.2", time.Now().Add(-time.Minute))
		key := client.ObjectKeyFromObject(uc)
		Eventually(func(g Gomega) { g.Expect(poolStatus(getUC(ctx, env.Client, key), "bulk")).NotTo(BeNil()) }).Should(Succeed())

		before := t.writes()
		began := time.Now()
		setPool(ctx, "bulk", "rendered-bulk-2", false)
		transitions := 0
		for _, n := range nodes[1:] {
			annotate(ctx, n, mcostate.DesiredConfig, "rendered-bulk-2", mcostate.State, mcostate.StateWorking)
			annotate(ctx, n, mcostate.DesiredDrain, "drain-rendered-bulk-2")
			annotate(ctx, n, mcostate.LastAppliedDrain, "drain-rendered-bulk-2")
			annotate(ctx, n, mcostate.CurrentConfig, "rendered-bulk-2", mcostate.State, mcostate.StateDone)
			transitions += 4
		}
		// nodes[0] starts and never finishes: stuck after 4 s.
		annotate(ctx, nodes[0], mcostate.DesiredConfig, "rendered-bulk-2", mcostate.State, mcostate.StateWorking, mcostate.Reason, "waiting for the kubelet")
		transitions++
		elapsed := time.Since(began)

		Eventually(func(g Gomega) {
			bulk := poolStatus(getUC(ctx, env.Client, key), "bulk")
			g.Expect(bulk.Nodes.Done).To(Equal(int32(9)))
			g.Expect(bulk.Nodes.Updating).To(Equal(int32(1)))
			g.Expect(bulk.StuckNodes).To(Equal(int32(1)))
			g.Expect(bulk.SlowestNode.Name).To(Equal(nodes[0]))
			g.Expect(bulk.SlowestNode.Reason).To(Equal("waiting for the kubelet"))
		}).Should(Succeed())
		v, _ := t.metric("upshift_mcp_tracker_nodes_stuck", map[string]string{"pool": "bulk"})
		Expect(v).To(Equal(1.0))

		writes := t.writes() - before
		// At most one write per interval while the nodes moved (one more
		// for a partial interval), one for the end state, one when the node
		// turned stuck, and one for the write that made bulk's status show:
		// the counter counts it once the apply returns, which may be after
		// before was read.
		bound := float64(int(elapsed/interval) + 4)
		AddReportEntry("coalescing", fmt.Sprintf("%d node transitions in %v, %d writes (%.2f per transition)", transitions, elapsed.Round(time.Millisecond), int(writes), writes/float64(transitions)))
		Expect(writes).To(BeNumerically("<=", bound))
		Expect(writes / float64(transitions)).To(BeNumerically("<", 0.5))

		Eventually(func(g Gomega) {
			var evs eventsv1.EventList
			g.Expect(env.Client.List(ctx, &evs, client.InNamespace("bulk"))).To(Succeed())
			var stuck []string
			for _, e := range evs.Items {
				if e.Reason == "NodeStuck" && e.Regarding.Name == uc.Name {
					stuck = append(stuck, e.Note)
				}
			}
			g.Expect(stuck).To(ConsistOf(And(HavePrefix("node "+nodes[0]+" of pool bulk has been updating for "), HaveSuffix(": waiting for the kubelet"))))
			g.Expect(stuck[0]).To(ContainSubstring("pool bulk"))
		}).Should(Succeed())

		By("a node turning degraded: the condition, the metric and one Event name it and the daemon's reason")
		annotate(ctx, nodes[0], mcostate.State, mcostate.StateDegraded, mcostate.Reason, "failed to drain node: bulk-0 after 1h0m0s")
		Eventually(func(g Gomega) {
			got := getUC(ctx, env.Client, key)
			c := meta.FindStatusCondition(got.Status.Conditions, upgradev1alpha1.WorkersUpgradedCondition)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal("PoolsDegraded"))
			g.Expect(c.Message).To(ContainSubstring("bulk (node bulk-0: failed to drain node: bulk-0 after 1h0m0s)"))
			g.Expect(poolStatus(got, "bulk").Nodes.Degraded).To(Equal(int32(1)))
			v, _ := t.metric("upshift_mcp_tracker_pool_degraded", map[string]string{"pool": "bulk"})
			g.Expect(v).To(Equal(1.0))
			var evs eventsv1.EventList
			g.Expect(env.Client.List(ctx, &evs, client.InNamespace("bulk"))).To(Succeed())
			var degraded []string
			for _, e := range evs.Items {
				if e.Reason == "PoolDegraded" && e.Regarding.Name == uc.Name {
					degraded = append(degraded, e.Note)
				}
			}
			g.Expect(degraded).To(ConsistOf("pool bulk is degraded updating to rendered-bulk-2: node bulk-0: failed to drain node: bulk-0 after 1h0m0s"))
		}).Should(Succeed())
	}, NodeTimeout(2*time.Minute))
}
