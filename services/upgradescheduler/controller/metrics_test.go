package controller_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/metricstest"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/metrics"
)

// series scrapes the registry the suite's schedulers export to (as /metrics
// would serve it) and returns the series of a gauge whose labels contain
// filter, as "label=value,..." (names sorted) -> value.
func series(name, filter string) func() map[string]float64 {
	return func() map[string]float64 {
		GinkgoHelper()
		all, err := metricstest.Series(registry, name)
		Expect(err).NotTo(HaveOccurred())
		out := map[string]float64{}
		for key, v := range all {
			if strings.Contains(key, filter) {
				out[key] = v
			}
		}
		return out
	}
}

// stepsObserved is the number of observations of the step duration histogram.
func stepsObserved() uint64 {
	GinkgoHelper()
	all, err := metricstest.Series(registry, metrics.StepDuration)
	Expect(err).NotTo(HaveOccurred())
	var n uint64
	for key, v := range all {
		if strings.HasSuffix(key, "#count") {
			n += uint64(v)
		}
	}
	return n
}

// metricsSpec runs last in the controller's ordered container: it builds on
// the cluster the upgrades before it left (ClusterVersion at its target).
func metricsSpec(ctx context.Context) {
	const ns = "scheduler-metrics"
	Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: config.ConfigMapName, Namespace: ns},
		Data: map[string]string{config.ConfigKey: "upgradeWindow:\n  timeOut: 60\n"}})).To(Succeed())
	cv := &configv1.ClusterVersion{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
	Expect(cv.Spec.DesiredUpdate).NotTo(BeNil())
	current := cv.Spec.DesiredUpdate.Version

	By("a degraded ClusterOperator")
	co := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "dns"}}
	Expect(env.Client.Create(ctx, co)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, co)).To(Succeed()) })
	co.Status.Conditions = []configv1.ClusterOperatorStatusCondition{
		{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, LastTransitionTime: metav1.Now()},
		{Type: configv1.OperatorDegraded, Status: configv1.ConditionTrue, Reason: "DNSDegraded", LastTransitionTime: metav1.Now()},
	}
	Expect(env.Client.Status().Update(ctx, co)).To(Succeed())

	By("and a cordoned node")
	cordoned := readyNode("cordoned-by-hand")
	cordoned.Spec.Unschedulable = true
	create(ctx, cordoned)
	DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, cordoned)).To(Succeed()) })

	clk := clocktesting.NewFakePassiveClock(time.Now())
	stop := startControllerWithClock(ctx, ns, clk)
	defer stop()

	By("an upgrade the cluster has already done stops at the post-upgrade check")
	done := &upgradev1alpha1.UpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "already-done", Namespace: ns},
		Spec: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: current, Channel: "stable-4.16"},
			UpgradeAt: clk.Now().UTC().Format(time.RFC3339), Type: upgradev1alpha1.ARO},
	}
	Expect(env.Client.Create(ctx, done)).To(Succeed())
	Eventually(ucPhase(ctx, client.ObjectKeyFromObject(done))).Should(Equal("Upgrading/ClusterHealthyAfterUpgrade"))
	own := "name=already-done,namespace=" + ns
	muo := "upgradeconfig_name=already-done"
	Eventually(series(metrics.PreflightCheckFailing, own)).Should(And(
		HaveKeyWithValue("check=ClusterOperators,"+own, 1.0), HaveKeyWithValue("check=Nodes,"+own, 1.0),
		HaveKeyWithValue("check=MachineConfigPools,"+own, 0.0)))
	Expect(series(metrics.HealthCheckFailed, muo)()).To(And(
		HaveKeyWithValue("reason=cluster_operators_degraded,state=Upgrading,"+muo+",version="+current, 1.0),
		// A cordoned node is an advisory finding: not in MUO's series.
		HaveKeyWithValue("reason=cluster_nodes_not_ready_or_cordoned,state=Upgrading,"+muo+",version="+current, 0.0),
		HaveKeyWithValue("reason=machine_config_pools_degraded,state=Upgrading,"+muo+",version="+current, 0.0)))
	Expect(series(metrics.ClusterCheckFailed, muo)()).To(Equal(map[string]float64{muo: 1}))
	Expect(series(metrics.CurrentStepInfo, own)()).To(Equal(map[string]float64{own + ",step=ClusterHealthyAfterUpgrade": 1}))

	By("both failures are Events of their own (not folded into one series), the advisory one said to be so")
	Eventually(func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Name == done.Name && (e.Reason == "HealthCheckFailed" || e.Reason == "HealthCheckAdvisory") {
				notes = append(notes, e.Reason+" "+e.Note)
			}
		}
		return notes
	}).Should(ConsistOf(HavePrefix("HealthCheckFailed ClusterOperators: "), HavePrefix("HealthCheckAdvisory Nodes: ")))

	By("the operator recovers while the node stays cordoned, an advisory finding: the upgrade ends")
	co.Status.Conditions[1].Status = configv1.ConditionFalse
	Expect(env.Client.Status().Update(ctx, co)).To(Succeed())
	Eventually(ucPhase(ctx, client.ObjectKeyFromObject(done))).Should(Equal("Upgraded/"))
	Eventually(series(metrics.PreflightCheckFailing, own)).Should(And(
		HaveKeyWithValue("check=ClusterOperators,"+own, 0.0), HaveKeyWithValue("check=Nodes,"+own, 1.0)))
	Expect(series(metrics.ClusterCheckFailed, muo)()).To(Equal(map[string]float64{muo: 0}))
	Expect(series(metrics.Phase, own)()).To(HaveKeyWithValue(own+",phase=Upgraded", 1.0))

	By("a target the cluster does not offer fails validation")
	bad := &upgradev1alpha1.UpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "not-offered", Namespace: ns},
		Spec: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.16.99", Channel: "stable-4.16"},
			UpgradeAt: clk.Now().UTC().Format(time.RFC3339), Type: upgradev1alpha1.ARO,
			Deadlines: &upgradev1alpha1.Deadlines{Start: &upgradev1alpha1.Deadline{Policy: upgradev1alpha1.DeadlineAlert}}},
	}
	Expect(env.Client.Create(ctx, bad)).To(Succeed())
	own, muo = "name=not-offered,namespace="+ns, "upgradeconfig_name=not-offered"
	Eventually(series(metrics.ValidationFailed, muo)).Should(Equal(map[string]float64{muo: 1}))
	Expect(series(metrics.Phase, own)()).To(HaveKeyWithValue(own+",phase=Pending", 1.0))
	Expect(series(metrics.UpgradeWindowBreached, muo)()).To(Equal(map[string]float64{muo: 0}))
	Expect(series(metrics.DeadlineExceeded, own)()).To(HaveKeyWithValue("deadline=start,"+own, 0.0))

	By("an hour later (upgradeWindow.timeOut) the start deadline has passed: policy alert keeps it pending")
	clk.SetTime(clk.Now().Add(61 * time.Minute))
	// Time alone triggers nothing the test can wait for; any change does.
	Expect(env.Client.Patch(ctx, bad, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"poke":"1"}}}`)))).To(Succeed())
	Eventually(series(metrics.UpgradeWindowBreached, muo)).Should(Equal(map[string]float64{muo: 1}))
	Expect(series(metrics.DeadlineExceeded, own)()).To(And(HaveKeyWithValue("deadline=start,"+own, 1.0),
		HaveKeyWithValue("deadline=controlPlane,"+own, 0.0)))
	Expect(series(metrics.Phase, own)()).To(HaveKeyWithValue(own+",phase=Pending", 1.0))
	Expect(series(metrics.ValidationFailed, muo)()).To(Equal(map[string]float64{muo: 1}))
	// The other UpgradeConfig's series are its own.
	Expect(series(metrics.UpgradeWindowBreached, "upgradeconfig_name=already-done")()).To(
		Equal(map[string]float64{"upgradeconfig_name=already-done": 0}))
}
