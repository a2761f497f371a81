package updatestatus

import (
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/tools/ocpsim/faults"
)

const (
	fromVersion = "4.16.1"
	toVersion   = "4.16.2"
	nextVersion = "4.16.3"
	workers     = 6
	masters     = 3
)

func getStatus(ctx context.Context, g Gomega) *updatev1alpha1.UpgradeStatus {
	us := &updatev1alpha1.UpgradeStatus{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: updatev1alpha1.UpgradeStatusName}, us)).To(Succeed())
	return us
}

func controlPlaneUpdating(us *updatev1alpha1.UpgradeStatus) bool {
	return us.Status.ControlPlane != nil &&
		meta.IsStatusConditionTrue(us.Status.ControlPlane.Conditions, updatev1alpha1.ConditionUpdating)
}

// observer records, while an update runs, what the published status went
// through: the test asserts on the history, not on lucky timing.
type observer struct {
	target      string // only the update to this version counts
	mu          sync.Mutex
	completions []int32
	nodeReasons map[string]bool // reasons of Updating=True node conditions
}

func (o *observer) watch(ctx context.Context) {
	defer GinkgoRecover()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		us := &updatev1alpha1.UpgradeStatus{}
		npis := &updatev1alpha1.NodeProgressInsightList{}
		if env.Client.Get(ctx, client.ObjectKey{Name: "cluster"}, us) != nil || env.Client.List(ctx, npis) != nil {
			continue
		}
		o.mu.Lock()
		// Until the status shows the new target it describes the previous
		// update (completed, 100%): that is not part of this one's history.
		if cv := us.Status.ControlPlane; cv != nil && cv.ClusterVersion != nil && cv.ClusterVersion.Versions.Target.Version == o.target {
			c := cv.ClusterVersion.Completion
			if n := len(o.completions); n == 0 || o.completions[n-1] != c {
				o.completions = append(o.completions, c)
			}
		}
		for _, n := range npis.Items {
			if c := meta.FindStatusCondition(n.Status.Conditions, updatev1alpha1.ConditionUpdating); c != nil && c.Status == metav1.ConditionTrue {
				o.nodeReasons[c.Reason] = true
			}
		}
		o.mu.Unlock()
	}
}

var _ = Describe("the update-status-controller", Ordered, func() {
	It("becomes ready once its caches have synced", func(ctx SpecContext) {
		Eventually(func() (int, error) {
			resp, err := http.Get(readyzURL)
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			return resp.StatusCode, nil
		}).WithTimeout(60 * time.Second).Should(Equal(http.StatusOK))
	})

	It("publishes a settled cluster: not updating, one insight per node", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			us := getStatus(ctx, g)
			g.Expect(meta.IsStatusConditionTrue(us.Status.Conditions, updatev1alpha1.ConditionStatusAvailable)).To(BeTrue())
			g.Expect(us.Status.ControlPlane).NotTo(BeNil())
			g.Expect(meta.IsStatusConditionFalse(us.Status.ControlPlane.Conditions, updatev1alpha1.ConditionUpdating)).To(BeTrue())
			g.Expect(us.Status.ControlPlane.ClusterVersion.Versions.Target.Version).To(Equal(fromVersion))
			npis := &updatev1alpha1.NodeProgressInsightList{}
			g.Expect(env.Client.List(ctx, npis)).To(Succeed())
			g.Expect(npis.Items).To(HaveLen(masters + workers))
		}).WithTimeout(60 * time.Second).Should(Succeed())
	})

	It("follows an update: Updating goes True then False, versions, start and completion move", func(ctx SpecContext) {
		obs := &observer{target: toVersion, nodeReasons: map[string]bool{}}
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		go obs.watch(watchCtx)

		requested := time.Now().Truncate(time.Second)
		cv := &configv1.ClusterVersion{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
		patch := client.MergeFrom(cv.DeepCopy())
		cv.Spec.DesiredUpdate = &configv1.Update{Version: toVersion}
		Expect(env.Client.Patch(ctx, cv, patch)).To(Succeed())

		Eventually(func(g Gomega) {
			us := getStatus(ctx, g)
			g.Expect(controlPlaneUpdating(us)).To(BeTrue())
			insight := us.Status.ControlPlane.ClusterVersion
			g.Expect(insight.Versions.Target.Version).To(Equal(toVersion))
			g.Expect(insight.Versions.Previous).NotTo(BeNil())
			g.Expect(insight.Versions.Previous.Version).To(Equal(fromVersion))
			g.Expect(insight.StartedAt.Time).To(BeTemporally(">=", requested.Add(-time.Second)))
			g.Expect(insight.CompletedAt).To(BeNil())
		}).WithTimeout(30 * time.Second).Should(Succeed())

		Eventually(func(g Gomega) {
			us := getStatus(ctx, g)
			g.Expect(controlPlaneUpdating(us)).To(BeFalse())
			insight := us.Status.ControlPlane.ClusterVersion
			g.Expect(insight.Assessment).To(Equal(updatev1alpha1.ControlPlaneAssessmentCompleted))
			g.Expect(insight.Completion).To(BeEquivalentTo(100))
			g.Expect(insight.CompletedAt).NotTo(BeNil())
			g.Expect(insight.CompletedAt.Time).To(BeTemporally(">=", insight.StartedAt.Time))
			npis := &updatev1alpha1.NodeProgressInsightList{}
			g.Expect(env.Client.List(ctx, npis)).To(Succeed())
			g.Expect(npis.Items).To(HaveLen(masters + workers))
			for _, n := range npis.Items {
				g.Expect(n.Status.Version).To(Equal(toVersion), "node %s", n.Name)
			}
			for _, p := range us.Status.WorkerPools {
				g.Expect(p.Pool.Assessment).To(Equal(updatev1alpha1.PoolCompleted), "pool %s", p.Name)
			}
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		stopWatch()

		By("machine-config reports the MCO image it runs, and counts as updated with it")
		mcoCO := &configv1.ClusterOperator{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "machine-config"}, mcoCO)).To(Succeed())
		Expect(mcoCO.Status.Versions).To(ContainElement(HaveField("Name", "operator-image")))
		us := &updatev1alpha1.UpgradeStatus{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: updatev1alpha1.UpgradeStatusName}, us)).To(Succeed())
		Expect(us.Status.ControlPlane.ClusterOperators).To(ContainElement(And(
			HaveField("Name", "machine-config"),
			HaveField("Conditions", ContainElement(And(
				HaveField("Type", updatev1alpha1.ConditionUpdating),
				HaveField("Reason", updatev1alpha1.ReasonUpdated)))))))

		obs.mu.Lock()
		defer obs.mu.Unlock()
		By("completion rose from below 100 to 100 without going back")
		Expect(obs.completions).To(ContainElement(BeNumerically("<", 100)))
		Expect(obs.completions[len(obs.completions)-1]).To(BeEquivalentTo(100))
		for i := 1; i < len(obs.completions); i++ {
			Expect(obs.completions[i]).To(BeNumerically(">=", obs.completions[i-1]), "completions %v", obs.completions)
		}
		By("node insights followed the nodes through their update phases")
		Expect(obs.nodeReasons).To(HaveKey(updatev1alpha1.ReasonNodeUpdating))
		Expect(len(obs.nodeReasons)).To(BeNumerically(">=", 2), "saw only %v", obs.nodeReasons)
	})

	It("follows a second update, with an Event for each", func(ctx SpecContext) {
		cv := &configv1.ClusterVersion{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
		patch := client.MergeFrom(cv.DeepCopy())
		cv.Spec.DesiredUpdate = &configv1.Update{Version: nextVersion}
		Expect(env.Client.Patch(ctx, cv, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			us := getStatus(ctx, g)
			g.Expect(controlPlaneUpdating(us)).To(BeFalse())
			insight := us.Status.ControlPlane.ClusterVersion
			g.Expect(insight.Versions.Target.Version).To(Equal(nextVersion))
			g.Expect(insight.Versions.Previous.Version).To(Equal(toVersion))
			g.Expect(insight.Completion).To(BeEquivalentTo(100))
			// The ClusterVersion completes with the control plane; workers follow.
			for _, p := range us.Status.WorkerPools {
				g.Expect(p.Pool.Assessment).To(Equal(updatev1alpha1.PoolCompleted), "pool %s", p.Name)
			}
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		// One Event for each finished update, each telling its own versions.
		Eventually(func(g Gomega) []string {
			evs := &eventsv1.EventList{}
			g.Expect(env.Client.List(ctx, evs, client.InNamespace("default"))).To(Succeed())
			var notes []string
			for _, ev := range evs.Items {
				if ev.Reason == "ControlPlaneUpdateCompleted" && ev.Regarding.Kind == "UpgradeStatus" {
					notes = append(notes, ev.Note)
				}
			}
			return notes
		}).WithTimeout(20 * time.Second).Should(ConsistOf(
			"Control plane finished updating from "+fromVersion+" to "+toVersion,
			"Control plane finished updating from "+toVersion+" to "+nextVersion,
		))
	})

	It("raises a health insight for an operator degraded for a while", func(ctx SpecContext) {
		co := &configv1.ClusterOperator{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "network"}, co)).To(Succeed())
		patch := client.MergeFrom(co.DeepCopy())
		co.Annotations[faults.Annotation] = string(faults.OperatorDegraded)
		Expect(env.Client.Patch(ctx, co, patch)).To(Succeed())
		// ocpsim degrades the operator; then it has "been degraded" for ten
		// minutes, past the five-minute threshold of the health rule.
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(co), co)).To(Succeed())
			before := co.DeepCopy()
			var found bool
			for i := range co.Status.Conditions {
				c := &co.Status.Conditions[i]
				if c.Type == configv1.OperatorDegraded && c.Status == configv1.ConditionTrue {
					c.LastTransitionTime = metav1.NewTime(time.Now().Add(-10 * time.Minute))
					found = true
				}
			}
			g.Expect(found).To(BeTrue(), "ocpsim has not degraded the operator yet")
			g.Expect(env.Client.Status().Patch(ctx, co, client.MergeFrom(before))).To(Succeed())
		}).WithTimeout(30 * time.Second).Should(Succeed())

		Eventually(func(g Gomega) {
			us := getStatus(ctx, g)
			var health *updatev1alpha1.HealthInsight
			for i := range us.Status.Health {
				if strings.Contains(us.Status.Health[i].Impact.Summary, "network") {
					health = &us.Status.Health[i]
				}
			}
			g.Expect(health).NotTo(BeNil(), "health insights: %+v", us.Status.Health)
			g.Expect(health.Impact.Summary).To(ContainSubstring("Cluster Operator network is degraded"))
			g.Expect(health.Impact.Level).To(Equal(updatev1alpha1.InsightImpactLevel("Warning")))
			g.Expect(health.Scope.Type).To(Equal(updatev1alpha1.ScopeTypeControlPlane))
		}).WithTimeout(60 * time.Second).Should(Succeed())
	})

	It("keeps the prototype ConfigMap key within seconds of the ConfigMap appearing", func(ctx SpecContext) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "status-api-cm-prototype", Namespace: namespace}}
		Expect(env.Client.Create(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) string {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
			return cm.Data["usc-cv-version"]
		}).WithTimeout(10 * time.Second).Should(And(
			ContainSubstring("assessment: Completed"),
			ContainSubstring("version: "+nextVersion),
			ContainSubstring("startedAt: "),
		))
	})

	It("renders the status with kubectl upshift status", func(ctx SpecContext) {
		var out, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, bins["kubectl-upshift"], "status", "--kubeconfig="+env.KubeconfigPath)
		cmd.Stdout, cmd.Stderr = &out, &stderr
		Expect(cmd.Run()).To(Succeed(), stderr.String())
		Expect(out.String()).To(ContainSubstring("The cluster is not updating."))
	})

	It("serves its metrics over HTTPS, to an identity with the metrics-reader role only", func(ctx SpecContext) {
		_, err := (&framework.Scraper{User: "anonymous", CA: scraper.CA, ServerName: scraper.ServerName}).Scrape(metricsURL)
		Expect(err).To(MatchError(ContainSubstring("401")))
		body, err := scraper.Scrape(metricsURL)
		Expect(err).NotTo(HaveOccurred())
		Expect(body).To(And(
			ContainSubstring(`upshift_build_info{component="update-status-controller"`),
			ContainSubstring(`upshift_update_status_control_plane_completion_percent 100`),
			ContainSubstring(`upshift_update_status_insights{level="none",type="node"} 9`),
			ContainSubstring(`upshift_update_status_insights{level="Warning",type="health"}`),
			ContainSubstring(`upshift_update_status_reconcile_duration_seconds_count`),
			ContainSubstring(`upshift_update_status_control_plane_assessment{assessment="Completed"} 1`),
			ContainSubstring(`upshift_update_status_control_plane_assessment{assessment="Stalled"} 0`),
			ContainSubstring(`upshift_update_status_updating 0`),
			ContainSubstring(`upshift_update_status_pool_completion_percent{pool="worker"} 100`),
			ContainSubstring(`upshift_update_status_pool_assessment{assessment="Completed",pool="worker"} 1`),
			ContainSubstring(`upshift_update_status_pool_nodes{phase="Completed",pool="worker"} 6`),
			ContainSubstring(`upshift_update_status_pool_nodes{phase="Completed",pool="master"} 3`),
			ContainSubstring(`upshift_update_status_last_success_timestamp_seconds `),
			Not(ContainSubstring(`seconds_since_last_success`)),
		))
	})

	It("drops the insight of a node that leaves every pool", func(ctx SpecContext) {
		nodes := &corev1.NodeList{}
		Expect(env.Client.List(ctx, nodes, client.HasLabels{"node-role.kubernetes.io/worker"})).To(Succeed())
		Expect(nodes.Items).NotTo(BeEmpty())
		node := &nodes.Items[0]
		patch := client.MergeFrom(node.DeepCopy())
		delete(node.Labels, "node-role.kubernetes.io/worker")
		Expect(env.Client.Patch(ctx, node, patch)).To(Succeed())
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Name: node.Name}, &updatev1alpha1.NodeProgressInsight{})
		}).WithTimeout(20 * time.Second).Should(MatchError(ContainSubstring("not found")))
	})

	It("reads node-gate's runs once node-gate is installed after it, and reports a pool a run paused as gated, never as paused by an administrator", func(ctx SpecContext) {
		gatedByNodeGate(ctx)
	})

	It("was never refused a request and used every permission its chart grants", func(ctx SpecContext) {
		authErr := regexp.MustCompile(`(?i)forbidden|unauthorized|is not allowed`)
		var refusals []string
		for _, line := range strings.Split(controller.Logs(), "\n") {
			if authErr.MatchString(line) {
				refusals = append(refusals, line)
			}
		}
		Expect(refusals).To(BeEmpty(), "authorization errors in the controller's log")
		perms, err := chart.Permissions()
		Expect(err).NotTo(HaveOccurred())
		Expect(perms).NotTo(BeEmpty())
		// Every role the chart ships is either the controller's own or the
		// metrics-reader role meant for the scraper; each is checked against
		// the identity that holds it.
		controllerRoles, err := chart.BoundRoles(namespace, saName)
		Expect(err).NotTo(HaveOccurred())
		readerRole, err := chart.MetricsReaderRole()
		Expect(err).NotTo(HaveOccurred())
		readerRoles := []string{framework.RoleKey("ClusterRole", "", readerRole)}
		Expect(framework.RolesWith(perms)).To(ConsistOf(append(controllerRoles, readerRoles...)))
		Eventually(func(g Gomega) {
			events, err := env.AuditEvents(framework.ServiceAccountUser(namespace, saName))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(events).NotTo(BeEmpty())
			g.Expect(framework.Refused(events)).To(BeEmpty())
			g.Expect(framework.Unused(framework.OfRoles(perms, controllerRoles...), events)).To(BeEmpty())
			// The scraper never talks to the apiserver: the controller asks
			// it, in a SubjectAccessReview, whether the scraper may get
			// /metrics. Those answers show the scraper used its role.
			delegated, err := framework.Delegated(events)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(framework.Refused(delegated)).To(BeEmpty())
			g.Expect(framework.Unused(framework.OfRoles(perms, readerRoles...),
				framework.ByUser(delegated, scraper.User))).To(BeEmpty())
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("ships a Deployment, Service, PodDisruptionBudget and dashboard the apiserver accepts", func(ctx SpecContext) {
		rendered, err := framework.RenderChart(chartName, release, namespace,
			"dashboard.enabled=true", "metrics.certSecret=usc-metrics-tls")
		Expect(err).NotTo(HaveOccurred())
		objs := rendered.Kinds("Deployment", "Service", "PodDisruptionBudget", "ConfigMap")
		Expect(objs).To(HaveLen(4))
		for _, o := range objs {
			Expect(env.Client.Create(ctx, o.DeepCopy(), client.DryRunAll)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
		}
		dep := &appsv1.Deployment{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(rendered.Kinds("Deployment")[0].Object, dep)).To(Succeed())
		pdb := &policyv1.PodDisruptionBudget{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(rendered.Kinds("PodDisruptionBudget")[0].Object, pdb)).To(Succeed())
		By("the PodDisruptionBudget covers the replicas and lets one go at a time")
		Expect(*dep.Spec.Replicas).To(BeEquivalentTo(2))
		Expect(pdb.Spec.MaxUnavailable.IntValue()).To(Equal(1))
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		Expect(err).NotTo(HaveOccurred())
		Expect(sel.Matches(labels.Set(dep.Spec.Template.Labels))).To(BeTrue())
		By("the replicas prefer different nodes")
		terms := dep.Spec.Template.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		Expect(terms).To(HaveLen(1))
		Expect(terms[0].PodAffinityTerm.TopologyKey).To(Equal("kubernetes.io/hostname"))
		sel, err = metav1.LabelSelectorAsSelector(terms[0].PodAffinityTerm.LabelSelector)
		Expect(err).NotTo(HaveOccurred())
		Expect(sel.Matches(labels.Set(dep.Spec.Template.Labels))).To(BeTrue())
		By("metrics are served with the mounted certificate")
		Expect(dep.Spec.Template.Spec.Containers[0].Args).To(ContainElements(
			"--metrics-secure=true", "--metrics-cert-dir=/etc/upshift/metrics-certs"))
		By("the dashboard carries the Grafana sidecar's label")
		Expect(rendered.Kinds("ConfigMap")[0].GetLabels()).To(HaveKeyWithValue("grafana_dashboard", "1"))
	})

	// Last, so that a failure here skips nothing: it checks the chart's
	// alerts and dashboard against metrics other parts of the controller
	// export, after an update has set them all.
	It("exports every metric its chart's alerts and dashboard query", func(ctx SpecContext) {
		rendered, err := framework.RenderChart(chartName, release, namespace,
			"prometheusRule.enabled=true", "dashboard.enabled=true")
		Expect(err).NotTo(HaveOccurred())
		queries, err := rendered.MonitoringQueries()
		Expect(err).NotTo(HaveOccurred())
		var alerts, panels int
		for _, q := range queries {
			switch {
			case strings.HasPrefix(q.Source, "PrometheusRule"):
				alerts++
			case strings.Contains(q.Source, " panel "):
				panels++
			}
		}
		Expect(alerts).To(Equal(4), "queries: %v", queries)
		Expect(panels).To(BeNumerically(">=", 10), "queries: %v", queries)

		body, err := scraper.Scrape(metricsURL)
		Expect(err).NotTo(HaveOccurred())
		exposed, err := framework.ParseExposition(body)
		Expect(err).NotTo(HaveOccurred())
		missing, err := exposed.MissingFor(queries)
		Expect(err).NotTo(HaveOccurred())
		Expect(missing).To(BeEmpty(), "the controller does not export what the chart queries")
	})
})
