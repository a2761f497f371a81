package controller_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/controller"
	"github.com/upshift-io/upshift/services/upgradescheduler/metrics"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
	"github.com/upshift-io/upshift/services/upgradescheduler/silence"
)

// silenceTTL is short so that renewals happen within the test, and long
// enough that a lease outlives a restart of the scheduler on a loaded machine
// (renewal comes with half of it left).
const silenceTTL = 20 * time.Second

// startWithAlertmanager runs the scheduler with the real Alertmanager for
// its silences and its critical-alerts check.
func startWithAlertmanager(ctx context.Context, namespace string) func() {
	mgr, err := runtime.NewManager("upgrade-scheduler", &runtime.Flags{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", KubeAPIQPS: 50, KubeAPIBurst: 100,
	}, func() runtime.Options {
		opts := controller.ManagerOptions(namespace)
		opts.RestConfig = env.Config
		opts.Controller = ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}
		return opts
	}())
	Expect(err).NotTo(HaveOccurred())
	sc, err := silence.NewClient(env.Alertmanager.URL, nil, 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	ac, err := alerts.New(alerts.Config{URL: env.Alertmanager.URL, API: alerts.Alertmanager, Timeout: 2 * time.Second})
	Expect(err).NotTo(HaveOccurred())
	Expect((&controller.Reconciler{
		Client: mgr.GetClient(), Recorder: events.NewRecorder(mgr.GetEventRecorder("upgrade-scheduler")), Namespace: namespace, Clock: clock.RealClock{},
		Metrics:      schedulerMetrics,
		Integrations: plan.Integrations{Silences: true}, Silences: sc, SilenceTTL: silenceTTL, Alerts: ac,
	}).SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	return func() { cancel(); <-done }
}

// postAlert sends an alert to Alertmanager as Prometheus does; an end in the
// past resolves it.
func postAlert(name, namespace string, ends time.Time) {
	GinkgoHelper()
	body, err := json.Marshal([]map[string]any{{
		"labels":   map[string]string{"alertname": name, "severity": "critical", "namespace": namespace},
		"startsAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
		"endsAt":   ends.UTC().Format(time.RFC3339),
	}})
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.Post(env.Alertmanager.URL+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Body.Close()).To(Succeed())
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
}

func ownerSilences(ctx context.Context, uid string) func(Gomega) []silence.Silence {
	sc, err := silence.NewClient(env.Alertmanager.URL, nil, 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	return func(g Gomega) []silence.Silence {
		got, err := sc.List(ctx, silence.OwnerFilter(uid))
		g.Expect(err).NotTo(HaveOccurred())
		return got
	}
}

func activeLeases(ss []silence.Silence) map[string]silence.Silence {
	out := map[string]silence.Silence{}
	for _, s := range ss {
		if s.State == silence.StateActive {
			out[s.Lease()] = s
		}
	}
	return out
}

func silencesSpec(ctx context.Context) {
	const ns = "scheduler-silences"
	Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: config.ConfigMapName, Namespace: ns},
		Data: map[string]string{config.ConfigKey: "maintenance:\n  controlPlaneTime: 90\n  ignoredAlerts:\n    controlPlaneCriticals: [ClusterOperatorDown]\n" +
			"healthCheck:\n  ignoredCriticals: [IgnoredCriticalSRE]\n"}})).To(Succeed())
	// The cluster as the earlier specs left it, offering one more release.
	cv := &configv1.ClusterVersion{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
	from := cv.Spec.DesiredUpdate.Version
	cv.Status.Desired = configv1.Release{Version: from, Image: "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("b", 64)}
	cv.Status.History = append([]configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: from, Image: cv.Status.Desired.Image,
		StartedTime: metav1.Now(), CompletionTime: ptr.To(metav1.Now()), Verified: true}}, cv.Status.History...)
	cv.Status.AvailableUpdates = []configv1.Release{{Version: "4.16.9", Image: "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("c", 64)}}
	Expect(env.Client.Status().Update(ctx, cv)).To(Succeed())

	By("a firing critical alert in a platform namespace, and an ignored one")
	postAlert("KubeAPIErrorBudgetBurn", "openshift-kube-apiserver", time.Now().Add(time.Hour))
	postAlert("IgnoredCriticalSRE", "openshift-monitoring", time.Now().Add(time.Hour))

	stop := startWithAlertmanager(ctx, ns)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	uc := &upgradev1alpha1.UpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-config", Namespace: ns},
		Spec: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.16.9", Channel: "stable-4.16"},
			UpgradeAt: time.Now().UTC().Format(time.RFC3339), Type: upgradev1alpha1.OSD, PDBForceDrainTimeout: 60},
	}
	Expect(env.Client.Create(ctx, uc)).To(Succeed())
	key := client.ObjectKeyFromObject(uc)
	get := func(g Gomega) *upgradev1alpha1.UpgradeConfig {
		got := &upgradev1alpha1.UpgradeConfig{}
		g.Expect(env.Client.Get(ctx, key, got)).To(Succeed())
		return got
	}

	By("the pre-upgrade check is blocked by the critical alert, never by the ignored one")
	Eventually(func(g Gomega) {
		got := get(g)
		g.Expect(got.Status.CurrentStep).To(Equal(string(plan.StepClusterHealthyBeforeUpgrade)))
		var pf *upgradev1alpha1.PreflightCheck
		for i := range got.Status.Preflight {
			if got.Status.Preflight[i].Check == plan.CheckCriticalAlerts {
				pf = &got.Status.Preflight[i]
			}
		}
		g.Expect(pf).NotTo(BeNil())
		g.Expect(pf.Passed).To(BeFalse())
		g.Expect(pf.Details).To(Equal("critical alerts firing: KubeAPIErrorBudgetBurn"))
	}).Should(Succeed())
	Eventually(func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Reason == "HealthCheckFailed" {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}).Should(ContainElement("CriticalAlerts: critical alerts firing: KubeAPIErrorBudgetBurn"))
	cv = &configv1.ClusterVersion{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
	Expect(cv.Spec.DesiredUpdate.Version).To(Equal(from), "not commenced while the alert fires")

	By("resolving it lets the upgrade start; the control-plane silences are created and recorded")
	postAlert("KubeAPIErrorBudgetBurn", "openshift-kube-apiserver", time.Now().Add(-time.Second))
	// The check looks again 30 s after it failed: alerts come with no event.
	Eventually(func(g Gomega) string { return get(g).Status.CurrentStep }, 90*time.Second).Should(Equal(string(plan.StepControlPlaneUpgraded)))
	uid := string(get(Default).UID)
	var cp silence.Silence
	Eventually(func(g Gomega) {
		live := activeLeases(ownerSilences(ctx, uid)(g))
		g.Expect(live).To(HaveLen(2))
		cp = live["4.16.9/control-plane"]
		g.Expect(cp.ID).NotTo(BeEmpty())
		g.Expect(live["4.16.9/control-plane-criticals"].Matchers[0].Value).To(Equal("(ClusterOperatorDown)"))
		got := get(g)
		g.Expect(got.Status.Silences).To(ContainElement(HaveField("ID", cp.ID)))
	}).Should(Succeed())
	own := "name=managed-upgrade-config,namespace=" + ns
	Eventually(series(metrics.SilencesActive, own)).Should(Equal(map[string]float64{own: 2}))

	By("renewed in place while the control plane upgrades")
	Eventually(func(g Gomega) time.Time {
		return activeLeases(ownerSilences(ctx, uid)(g))["4.16.9/control-plane"].EndsAt
	}, 30*time.Second).Should(BeTemporally(">", cp.EndsAt))
	Expect(activeLeases(ownerSilences(ctx, uid)(Default))["4.16.9/control-plane"].ID).To(Equal(cp.ID))

	By("a restart with the status record lost re-adopts the silences: no second one")
	stop()
	stopped = true
	Eventually(func(g Gomega) error {
		got := get(g)
		got.Status.Silences = nil
		return env.Client.Status().Update(ctx, got)
	}).Should(Succeed())
	stop = startWithAlertmanager(ctx, ns)
	stopped = false
	Eventually(func(g Gomega) []upgradev1alpha1.SilenceLease { return get(g).Status.Silences }).Should(HaveLen(2))
	Expect(ownerSilences(ctx, uid)(Default)).To(HaveLen(2), "every silence ever made for this UpgradeConfig")

	By("the control plane completes: its silences expire; the workers are already updated, so no worker silence; none is left")
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
	cv.Status.Desired = configv1.Release{Version: "4.16.9", Image: "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("c", 64)}
	cv.Status.History = append([]configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "4.16.9", Image: cv.Status.Desired.Image,
		StartedTime: metav1.Now(), CompletionTime: ptr.To(metav1.Now()), Verified: true}}, cv.Status.History...)
	Expect(env.Client.Status().Update(ctx, cv)).To(Succeed())
	Eventually(ucPhase(ctx, key)).Should(Equal("Upgraded/"))
	Eventually(func(g Gomega) {
		all := ownerSilences(ctx, uid)(g)
		g.Expect(activeLeases(all)).To(BeEmpty())
		var leases []string
		for _, s := range all {
			leases = append(leases, s.Lease())
		}
		g.Expect(leases).To(ConsistOf("4.16.9/control-plane", "4.16.9/control-plane-criticals"))
		got := get(g)
		g.Expect(got.Status.Silences).To(BeEmpty())
		for _, c := range got.Status.History[0].Conditions {
			if c.Type == plan.StepWorkersMaintenanceWindowCreated {
				g.Expect(c.Message).To(HaveSuffix("every worker pool is already updated: no worker silence created"))
			}
		}
	}).Should(Succeed())
	Eventually(series(metrics.SilencesActive, own)).Should(Equal(map[string]float64{own: 0}))

	Expect(env.Client.Delete(ctx, get(Default))).To(Succeed())
	Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(ctx, key, &upgradev1alpha1.UpgradeConfig{})) }).Should(BeTrue())
}
