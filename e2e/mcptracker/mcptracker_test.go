package mcptracker

import (
	"context"
	"fmt"
	"sort"
	"sync"
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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/faults"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
)

const ucName = "managed-upgrade-config"

var ucKey = client.ObjectKey{Namespace: namespace, Name: ucName}

// tolerance: the tracker's times must match ocpsim's within one simulated
// second. At 600× that is 1/600 s of wall time, finer than the API's
// timestamps, which keep whole seconds: two readings of one instant may
// differ by up to a second once truncated, so the bound is a second plus one
// simulated second.
const tolerance = time.Second + time.Second/timeScale

// newUC is an UpgradeConfig as OCM writes them for MUO (as the
// upgrade-scheduler's suite writes it), without capacity reservation to keep
// the run short.
func newUC(version string, upgradeAt time.Time) *upgradev1alpha1.UpgradeConfig {
	return &upgradev1alpha1.UpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: ucName, Namespace: namespace},
		Spec: upgradev1alpha1.UpgradeConfigSpec{
			Desired:   upgradev1alpha1.Update{Version: version, Channel: "stable-4.16"},
			UpgradeAt: upgradeAt.UTC().Format(time.RFC3339), Type: upgradev1alpha1.OSD,
			PDBForceDrainTimeout: 60,
		},
	}
}

func getUC(ctx context.Context) *upgradev1alpha1.UpgradeConfig {
	GinkgoHelper()
	uc := &upgradev1alpha1.UpgradeConfig{}
	Expect(env.Client.Get(ctx, ucKey, uc)).To(Succeed())
	return uc
}

// poolOf is the pool a seeded node belongs to, from the role labels the
// pools' node selectors match.
func poolOf(n *corev1.Node) string {
	for _, p := range []string{"master", "infra"} {
		if _, ok := n.Labels["node-role.kubernetes.io/"+p]; ok {
			return p
		}
	}
	return "worker"
}

// record is the suite's own account of ocpsim's moves, from watches
// independent of the tracker: per pool, when the first node's desiredConfig
// moved, and ocpsim's Updated=True transition time; and how many MCO
// annotation changes the nodes went through (the node transitions).
type record struct {
	mu          sync.Mutex
	firstMove   map[string]time.Time
	updated     map[string]metav1.Time
	transitions int
}

func watchSim(ctx context.Context) *record {
	GinkgoHelper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	r := &record{firstMove: map[string]time.Time{}, updated: map[string]metav1.Time{}}
	var nodes corev1.NodeList
	Expect(wc.List(ctx, &nodes)).To(Succeed())
	last := map[string]map[string]string{}
	for _, n := range nodes.Items {
		last[n.Name] = mcostate.Annotations(n.Annotations)
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
			a := mcostate.Annotations(n.Annotations)
			r.mu.Lock()
			prev := last[n.Name]
			if a[mcostate.DesiredConfig] != prev[mcostate.DesiredConfig] {
				if _, seen := r.firstMove[poolOf(n)]; !seen {
					r.firstMove[poolOf(n)] = now
				}
			}
			if fmt.Sprint(a) != fmt.Sprint(prev) {
				r.transitions++
			}
			last[n.Name] = a
			r.mu.Unlock()
		}
	}()
	var pools mcfgv1.MachineConfigPoolList
	Expect(wc.List(ctx, &pools)).To(Succeed())
	pw, err := wc.Watch(context.Background(), &mcfgv1.MachineConfigPoolList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: pools.ResourceVersion}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(pw.Stop)
	go func() {
		for ev := range pw.ResultChan() {
			p, ok := ev.Object.(*mcfgv1.MachineConfigPool)
			if !ok {
				continue
			}
			c := mco.PoolCondition(&p.Status, mcfgv1.MachineConfigPoolUpdated)
			r.mu.Lock()
			if _, moved := r.firstMove[p.Name]; moved && c != nil && c.Status == corev1.ConditionTrue {
				// ocpsim's own record of the completion.
				r.updated[p.Name] = c.LastTransitionTime
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *record) times(pool string) (time.Time, metav1.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok1 := r.firstMove[pool]
	c, ok2 := r.updated[pool]
	return s, c, ok1 && ok2
}

func (r *record) nodeTransitions() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.transitions
}

// within checks a tracker time against want. want is truncated to the
// second as the API's timestamps are: a want this test's own watch took (a
// moment later than the tracker's, or earlier) then differs from the tracker's
// by at most a second while the two watches lag each other by under a second.
// Untruncated, a lag of a few milliseconds failed the check whenever the
// tracker's truncation took almost a second off.
func within(g Gomega, what string, got *metav1.Time, want time.Time) {
	g.Expect(got).NotTo(BeNil(), what)
	g.Expect(got.Time.Sub(want.Truncate(time.Second)).Abs()).To(BeNumerically("<=", tolerance), "%s: tracker %v, ocpsim %v", what, got.Time, want)
}

func poolStatus(uc *upgradev1alpha1.UpgradeConfig, name string) *upgradev1alpha1.PoolUpdate {
	for i := range uc.Status.Pools {
		if uc.Status.Pools[i].Name == name {
			return &uc.Status.Pools[i]
		}
	}
	return nil
}

// machineConfig is a MachineConfig for one pool (by the role label the
// seeded pools select on): ocpsim renders it into the pool's next target.
func machineConfig(name, role string) *mcfgv1.MachineConfig {
	return &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"machineconfiguration.openshift.io/role": role}}}
}

func events(ctx context.Context, ns string) func(Gomega) []eventsv1.Event {
	return func(g Gomega) []eventsv1.Event {
		var list eventsv1.EventList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		return list.Items
	}
}

func reasonsAbout(evs []eventsv1.Event, kind, name string) []string {
	var out []string
	for _, e := range evs {
		if e.Regarding.Kind == kind && e.Regarding.Name == name {
			out = append(out, e.Reason)
		}
	}
	return out
}

// statusWrites counts the tracker's status applies in the audit log.
func statusWrites() int {
	GinkgoHelper()
	evs, err := env.AuditEvents(framework.ServiceAccountUser(namespace, trackID.ServiceAccount))
	Expect(err).NotTo(HaveOccurred())
	n := 0
	for _, e := range evs {
		if e.Verb == "patch" && e.ObjectRef != nil && e.ObjectRef.Resource == "upgradeconfigs" && e.ObjectRef.Subresource == "status" &&
			e.ResponseStatus != nil && e.ResponseStatus.Code < 300 {
			n++
		}
	}
	return n
}

var _ = Describe("the mcp-tracker", Ordered, func() {
	AfterEach(func(ctx SpecContext) {
		if !CurrentSpecReport().Failed() {
			return
		}
		uc := &upgradev1alpha1.UpgradeConfig{}
		if err := env.Client.Get(ctx, ucKey, uc); err == nil {
			out, _ := yaml.Marshal(uc.Status)
			GinkgoWriter.Println("UpgradeConfig status:\n" + string(out))
		}
		for _, ns := range []string{namespace, "default"} {
			evs := events(ctx, ns)(Default)
			sort.Slice(evs, func(i, j int) bool { return evs[i].EventTime.Before(&evs[j].EventTime) })
			for _, e := range evs {
				GinkgoWriter.Printf("event %s %s %s/%s %s: %s\n", e.EventTime.Format(time.RFC3339Nano), e.Type, e.Regarding.Kind, e.Regarding.Name, e.Reason, e.Note)
			}
		}
	})

	It("tracks a pool updated by hand, with no UpgradeConfig: metrics, and Events on the pool", func(ctx SpecContext) {
		By("waiting for the tracker's first pass (leader, caches synced): every pool's nodes exported")
		Eventually(scrapeOnce, time.Minute).Should(And(
			ContainSubstring(`upshift_mcp_tracker_nodes{pool="master",state="done"} 3`),
			ContainSubstring(`upshift_mcp_tracker_nodes{pool="worker",state="done"} 6`),
			ContainSubstring(fmt.Sprintf(`upshift_mcp_tracker_nodes{pool="infra",state="done"} %d`, infraNodes))))
		Expect(env.Client.Create(ctx, machineConfig("50-infra-by-hand", "infra"))).To(Succeed())
		Eventually(func(g Gomega) []string {
			return reasonsAbout(events(ctx, "default")(g), "MachineConfigPool", "infra")
		}, time.Minute).Should(ContainElements("PoolUpdateStarted", "PoolUpdateCompleted"))
		Eventually(func(g Gomega) string {
			return scrapeOnce(g)
		}).Should(And(
			ContainSubstring(fmt.Sprintf(`upshift_mcp_tracker_nodes{pool="infra",state="done"} %d`, infraNodes)),
			ContainSubstring(`upshift_mcp_tracker_pool_update_duration_seconds{pool="infra"}`),
			ContainSubstring(`upshift_mcp_tracker_node_update_duration_seconds_count{pool="infra"} `+fmt.Sprint(infraNodes))))
	})

	It("times master, worker and infra through an upgrade New → Upgraded as ocpsim records them, next to the scheduler's fields, neither writer ever dropping the other's", func(ctx SpecContext) {
		rec := watchSim(ctx)
		revs := watchRevisions(ctx)
		writesBefore := statusWrites()
		started := time.Now()
		Expect(env.Client.Create(ctx, newUC("4.16.2", time.Now().Truncate(time.Second)))).To(Succeed())

		Eventually(func(g Gomega) upgradev1alpha1.UpgradePhase {
			uc := &upgradev1alpha1.UpgradeConfig{}
			g.Expect(env.Client.Get(ctx, ucKey, uc)).To(Succeed())
			g.Expect(uc.Status.History).NotTo(BeEmpty())
			return uc.Status.History[0].Phase
		}, 4*time.Minute).Should(Equal(upgradev1alpha1.UpgradePhaseUpgraded))
		AddReportEntry("upgrade New → Upgraded (wall)", time.Since(started).String())

		By("status.pools: every pool, timed as ocpsim records it")
		Eventually(func(g Gomega) {
			uc := &upgradev1alpha1.UpgradeConfig{}
			g.Expect(env.Client.Get(ctx, ucKey, uc)).To(Succeed())
			for _, pool := range []string{"master", "worker", "infra"} {
				start, complete, ok := rec.times(pool)
				g.Expect(ok).To(BeTrue(), "ocpsim moved and completed pool %s", pool)
				p := poolStatus(uc, pool)
				g.Expect(p).NotTo(BeNil(), "status.pools[%s]", pool)
				within(g, pool+" start", p.StartTime, start)
				within(g, pool+" complete", p.CompleteTime, complete.Time)
			}
			h := uc.Status.History[0]
			start, complete, _ := rec.times("worker")
			within(g, "history[0].workerStartTime", h.WorkerStartTime, start)
			within(g, "history[0].workerCompleteTime", h.WorkerCompleteTime, complete.Time)
			c := meta.FindStatusCondition(uc.Status.Conditions, upgradev1alpha1.WorkersUpgradedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		}).Should(Succeed())

		By("the scheduler's fields are intact")
		uc := getUC(ctx)
		h := uc.Status.History[0]
		Expect(h.Version).To(Equal("4.16.2"))
		Expect(h.PrecedingVersion).To(Equal("4.16.1"))
		Expect(h.StartTime).NotTo(BeNil())
		Expect(h.CompleteTime).NotTo(BeNil())
		Expect(h.Conditions).NotTo(BeEmpty())
		for _, c := range h.Conditions {
			Expect(c.Status).To(Equal(corev1.ConditionTrue), string(c.Type))
		}
		Expect(reasonsAbout(events(ctx, namespace)(Default), "UpgradeConfig", ucName)).To(ContainElements("PoolUpdateStarted", "PoolUpdateCompleted"))

		By("racing writers: no revision lost a field of either, each owns its own by apply, neither was refused")
		all := revs.all()
		Expect(len(all)).To(BeNumerically(">", 10), "the watch saw the update's revisions")
		Expect(lostFields(all)).To(BeEmpty())
		Expect(statusManagers(getUC(ctx))).To(ConsistOf("upgrade-scheduler/Apply", "mcp-tracker/Apply"))
		Expect(mustMisowned(getUC(ctx))).To(BeEmpty(), "one writer per field (docs/architecture.md)")
		Expect(refusedStatusWrites(schedID)).To(BeZero(), "the scheduler's status writes refused with a conflict")
		Expect(refusedStatusWrites(trackID)).To(BeZero(), "the tracker's status writes refused with a conflict")
		AddReportEntry("UpgradeConfig revisions compared", len(all))

		writes, transitions := statusWrites()-writesBefore, rec.nodeTransitions()
		Expect(transitions).To(BeNumerically(">", 0))
		AddReportEntry("tracker status writes per node transition",
			fmt.Sprintf("%d writes / %d node MCO-annotation changes = %.3f", writes, transitions, float64(writes)/float64(transitions)))
		scrape()
	})

	It("raises the condition and the Event when a node degrades", func(ctx SpecContext) {
		var nodes corev1.NodeList
		Expect(env.Client.List(ctx, &nodes, client.HasLabels{"node-role.kubernetes.io/infra"})).To(Succeed())
		Expect(nodes.Items).To(HaveLen(infraNodes))
		bad := nodes.Items[0].Name
		Expect(ocpsim.InjectFault(ctx, env.Client, faults.Request{Kind: "node", Name: bad, Fault: faults.Unreconcilable})).To(Succeed())
		Expect(env.Client.Create(ctx, machineConfig("51-infra-unreconcilable", "infra"))).To(Succeed())

		Eventually(func(g Gomega) {
			uc := &upgradev1alpha1.UpgradeConfig{}
			g.Expect(env.Client.Get(ctx, ucKey, uc)).To(Succeed())
			c := meta.FindStatusCondition(uc.Status.Conditions, upgradev1alpha1.WorkersUpgradedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal("PoolsDegraded"))
			g.Expect(c.Message).To(ContainSubstring("infra"))
			p := poolStatus(uc, "infra")
			g.Expect(p).NotTo(BeNil())
			g.Expect(p.Nodes.Degraded).To(BeEquivalentTo(1))
			g.Expect(p.SlowestNode).NotTo(BeNil())
			g.Expect(p.SlowestNode.Name).To(Equal(bad))
		}, time.Minute).Should(Succeed())
		Eventually(func(g Gomega) {
			var found bool
			for _, e := range events(ctx, namespace)(g) {
				if e.Regarding.Kind == "UpgradeConfig" && e.Reason == "PoolDegraded" && e.Type == corev1.EventTypeWarning {
					g.Expect(e.Note).To(ContainSubstring(bad), "the Event names the node")
					found = true
				}
			}
			g.Expect(found).To(BeTrue(), "a PoolDegraded Warning on the UpgradeConfig")
		}).Should(Succeed())
		Eventually(scrapeOnce).Should(ContainSubstring(`upshift_mcp_tracker_pool_degraded{pool="infra"} 1`))
	})

	// The events library folds an Event that repeats (same object version,
	// reason and reporter) into a series, which it patches: two nodes found
	// stuck in one pass do that, on the UpgradeConfig and, with none, on the
	// pool. The chart's patch grants are exercised here.
	It("folds repeated NodeStuck Events into a series, on the UpgradeConfig and on the pool", func(ctx SpecContext) {
		By("holding the worker pool: paused with a new target, two of its nodes cordoned (pending and blocked)")
		worker := &mcfgv1.MachineConfigPool{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "worker"}, worker)).To(Succeed())
		patch := client.MergeFrom(worker.DeepCopy())
		worker.Spec.Paused = true
		Expect(env.Client.Patch(ctx, worker, patch)).To(Succeed())
		was := worker.Spec.Configuration.Name
		Expect(env.Client.Create(ctx, machineConfig("52-worker-held", "worker"))).To(Succeed())
		Eventually(func(g Gomega) string {
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "worker"}, worker)).To(Succeed())
			return worker.Spec.Configuration.Name
		}).ShouldNot(Equal(was))
		var nodes corev1.NodeList
		Expect(env.Client.List(ctx, &nodes, client.HasLabels{"node-role.kubernetes.io/worker"})).To(Succeed())
		var held []string
		for _, n := range nodes.Items {
			if _, infra := n.Labels["node-role.kubernetes.io/infra"]; infra || len(held) == 2 {
				continue
			}
			p := client.MergeFrom(n.DeepCopy())
			n.Spec.Unschedulable = true
			Expect(env.Client.Patch(ctx, &n, p)).To(Succeed())
			held = append(held, n.Name)
		}
		Expect(held).To(HaveLen(2))
		DeferCleanup(func(ctx context.Context) {
			for _, name := range held {
				n := &corev1.Node{}
				Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
				p := client.MergeFrom(n.DeepCopy())
				n.Spec.Unschedulable = false
				Expect(env.Client.Patch(ctx, n, p)).To(Succeed())
			}
			Expect(env.Client.Get(ctx, client.ObjectKey{Name: "worker"}, worker)).To(Succeed())
			p := client.MergeFrom(worker.DeepCopy())
			worker.Spec.Paused = false
			Expect(env.Client.Patch(ctx, worker, p)).To(Succeed())
			stop(trackChart, tracker)
			tracker = start(trackChart, trackID)
		})

		// A restarted tracker times every node's state from its first pass,
		// so both held nodes turn stuck in one pass.
		series := func(ns, kind, name string) func(Gomega) int32 {
			return func(g Gomega) int32 {
				var most int32
				for _, e := range events(ctx, ns)(g) {
					if e.Reason == "NodeStuck" && e.Regarding.Kind == kind && e.Regarding.Name == name && e.Series != nil {
						most = max(most, e.Series.Count)
					}
				}
				return most
			}
		}
		By("restarting the tracker with a 2 s stuck threshold: the UpgradeConfig gets a NodeStuck series")
		stop(trackChart, tracker)
		tracker = start(trackChart, trackID, "2s")
		Eventually(series(namespace, "UpgradeConfig", ucName), time.Minute).Should(BeNumerically(">=", 2))

		By("without an UpgradeConfig, after one more restart: the worker pool gets a NodeStuck series")
		uc := getUC(ctx)
		Expect(env.Client.Delete(ctx, uc)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, ucKey, &upgradev1alpha1.UpgradeConfig{}))
		}, time.Minute).Should(BeTrue())
		stop(trackChart, tracker)
		tracker = start(trackChart, trackID, "2s")
		Eventually(series("default", "MachineConfigPool", "worker"), time.Minute).Should(BeNumerically(">=", 2))
	})

	It("counts node-gate's gate pool in its source pool, once node-gate is installed after it", countsGatePoolInSource)

	// Every scrape of the suite went into exposed.
	It("exported every metric its chart's alerts and dashboard query", func(ctx SpecContext) {
		scrape()
		rendered, err := framework.RenderChart(trackChart, trackRelease, namespace,
			"prometheusRule.enabled=true", "dashboard.enabled=true")
		Expect(err).NotTo(HaveOccurred())
		queries, err := rendered.MonitoringQueries()
		Expect(err).NotTo(HaveOccurred())
		Expect(queries).NotTo(BeEmpty())
		missing, err := exposed.MissingFor(queries)
		Expect(err).NotTo(HaveOccurred())
		Expect(missing).To(BeEmpty(), "the tracker never exported what the chart queries")
	})

	It("was never refused a request and used every permission its chart grants (both binaries)", func(ctx SpecContext) {
		for _, id := range []*framework.Identity{trackID, schedID} {
			perms, err := id.Chart.Permissions()
			Expect(err).NotTo(HaveOccurred())
			roles, err := id.Chart.BoundRoles(namespace, id.ServiceAccount)
			Expect(err).NotTo(HaveOccurred())
			Eventually(func(g Gomega) {
				evs, err := env.AuditEvents(framework.ServiceAccountUser(namespace, id.ServiceAccount))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(framework.Refused(evs)).To(BeEmpty(), id.ServiceAccount)
				if id == trackID {
					// The scheduler's chart grants what this suite does not
					// exercise (capacity reservation, MUO's ConfigMap
					// writes...): its own suite checks that; here only that
					// it was never refused.
					g.Expect(framework.Unused(framework.OfRoles(perms, roles...), evs)).To(BeEmpty(), id.ServiceAccount)
				}
			}).Should(Succeed())
		}
	})
})

// exposed is every series and label any scrape of the suite saw.
var exposed = framework.Exposition{}

// scrapeOnce reads the tracker's metrics as the chart's metrics-reader and
// adds them to exposed.
func scrapeOnce(g Gomega) string {
	body, err := scraper.Scrape(metrics)
	g.Expect(err).NotTo(HaveOccurred())
	exp, err := framework.ParseExposition(body)
	g.Expect(err).NotTo(HaveOccurred())
	exposed.Merge(exp)
	return body
}

func scrape() string {
	GinkgoHelper()
	var body string
	Eventually(func(g Gomega) { body = scrapeOnce(g) }).Should(Succeed())
	return body
}
