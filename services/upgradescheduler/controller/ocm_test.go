package controller_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/controller"
	"github.com/upshift-io/upshift/services/upgradescheduler/metrics"
	"github.com/upshift-io/upshift/services/upgradescheduler/ocm"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
	"github.com/upshift-io/upshift/tools/ocmsim"
)

const ocmInternalID = "1l0ocmsimcluster0000000000000000"

var ocmToken = base64.StdEncoding.EncodeToString([]byte("cloud-user:cloud-secret"))

// startWithOCM runs the scheduler with the OCM integration on, and the
// policy syncer running every syncEvery when it is not zero.
func startWithOCM(ctx context.Context, namespace string, syncEvery time.Duration) (*controller.PolicySyncer, func()) {
	return startWithOCMThrough(ctx, namespace, syncEvery, nil)
}

// startWithOCMThrough is startWithOCM with the OCM connection's transport
// wrapped (nil: as it is).
func startWithOCMThrough(ctx context.Context, namespace string, syncEvery time.Duration, transport func(http.RoundTripper) http.RoundTripper) (*controller.PolicySyncer, func()) {
	mgr, err := runtime.NewManager("upgrade-scheduler", &runtime.Flags{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", KubeAPIQPS: 50, KubeAPIBurst: 100,
	}, func() runtime.Options {
		opts := controller.ManagerOptions(namespace)
		opts.RestConfig = env.Config
		opts.Controller = ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}
		return opts
	}())
	Expect(err).NotTo(HaveOccurred())
	r := &controller.Reconciler{
		Client: mgr.GetClient(), Recorder: events.NewRecorder(mgr.GetEventRecorder("upgrade-scheduler")), Namespace: namespace, Clock: clock.RealClock{},
		Metrics: schedulerMetrics,
		OCM:     &controller.OCM{Reader: mgr.GetAPIReader(), Timeout: 2 * time.Second, Transport: transport},
	}
	Expect(r.SetupWithManager(mgr)).To(Succeed())
	syncer := &controller.PolicySyncer{R: r, Interval: syncEvery}
	if syncEvery > 0 {
		Expect(mgr.Add(syncer)).To(Succeed())
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	Eventually(func() bool { return mgr.GetCache().WaitForCacheSync(ctx) }).Should(BeTrue())
	return syncer, func() { cancel(); <-done }
}

// offer makes ClusterVersion offer versions, the cluster at its current target.
func offer(ctx context.Context, versions ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cv := &configv1.ClusterVersion{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
		cv.Status.AvailableUpdates = nil
		for i, v := range versions {
			cv.Status.AvailableUpdates = append(cv.Status.AvailableUpdates, configv1.Release{Version: v,
				Image: "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat(fmt.Sprint(i+1), 64)})
		}
		g.Expect(env.Client.Status().Update(ctx, cv)).To(Succeed())
	}).Should(Succeed())
}

// cvoCompletes plays the CVO: once ClusterVersion points at version, it
// reports the version Completed.
func cvoCompletes(ctx context.Context, version string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cv := &configv1.ClusterVersion{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
		g.Expect(cv.Spec.DesiredUpdate).NotTo(BeNil())
		g.Expect(cv.Spec.DesiredUpdate.Version).To(Equal(version))
		cv.Status.Desired = configv1.Release{Version: version, Image: "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("f", 64)}
		cv.Status.History = append([]configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: version, Image: cv.Status.Desired.Image,
			StartedTime: metav1.Now(), CompletionTime: ptr.To(metav1.Now()), Verified: true}}, cv.Status.History...)
		g.Expect(env.Client.Status().Update(ctx, cv)).To(Succeed())
		// Long enough for notifications retried under the injected OCM
		// faults: a step that fails three times waits 10 + 20 + 40 s.
	}, 3*time.Minute).Should(Succeed())
}

func eventReasons(ctx context.Context, ns string) func(Gomega) []string {
	return func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			out = append(out, e.Reason)
		}
		return out
	}
}

func ocmSpec(ctx context.Context) {
	sim := ocmsim.Start()
	DeferCleanup(sim.Close)
	cv := &configv1.ClusterVersion{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
	externalID := string(cv.Spec.ClusterID)
	sim.AddCluster(ocmsim.Cluster{ID: ocmInternalID, ExternalID: externalID, ChannelGroup: "stable", NodeDrainGracePeriodMinutes: 45, Token: ocmToken})
	Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ocm.PullSecretNamespace}}))).To(Succeed())
	Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ocm.PullSecretName, Namespace: ocm.PullSecretNamespace},
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"quay.io":{"auth":"cXVheQ=="},"cloud.openshift.com":{"auth":"` + ocmToken + `","email":"a@b.c"}}}`)},
	})).To(Succeed())
	current := cv.Status.History[0].Version
	Expect(current).To(Equal("4.16.9"), "the cluster as the earlier specs left it")
	offer(ctx, "4.16.10", "4.16.11", "4.16.12")
	// No worker MachineSet: the capacity reservation is skipped (its
	// temporary machines are not the subject here).
	Expect(env.Client.DeleteAllOf(ctx, &machinev1beta1.MachineSet{}, client.InNamespace(plan.MachineAPINamespace))).To(Succeed())

	By("LOCAL with an ARO UpgradeConfig: the user's object runs and stays; OCM hears nothing")
	const local = "scheduler-local"
	Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: local}})).To(Succeed())
	Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: config.ConfigMapName, Namespace: local},
		Data: map[string]string{config.ConfigKey: "configManager:\n  source: LOCAL\n  localConfigName: managed-upgrade-config\n" +
			"  ocmBaseUrl: " + sim.URL() + "\nupgradeType: ARO\nfeatureGate:\n  enabled: [ServiceLogNotification]\n"}})).To(Succeed())
	syncer, stop := startWithOCM(ctx, local, 0)
	luc := &upgradev1alpha1.UpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: ocm.UpgradeConfigName, Namespace: local},
		Spec: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.16.10", Channel: "stable-4.16"},
			UpgradeAt: time.Now().UTC().Format(time.RFC3339), Type: upgradev1alpha1.ARO},
	}
	Expect(env.Client.Create(ctx, luc)).To(Succeed())
	before := time.Now().Unix()
	_, err := syncer.SyncOnce(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(series(metrics.SyncTimestamp, "upgradeconfig_name=managed-upgrade-config")()).To(HaveEach(BeNumerically(">=", before)),
		"a LOCAL sync is recorded, as MUO records it (SRE's sync alert fires on its absence)")
	Expect(series(metrics.SyncTimestamp, "upgradeconfig_name=managed-upgrade-config")()).To(HaveLen(1))
	cvoCompletes(ctx, "4.16.10")
	Eventually(ucPhase(ctx, client.ObjectKeyFromObject(luc))).Should(Equal("Upgraded/"))
	_, err = syncer.SyncOnce(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(luc), luc)).To(Succeed(), "LOCAL never deletes the user's UpgradeConfig")
	for _, c := range luc.Status.History[0].Conditions {
		if c.Type == plan.StepStartedNotificationSent || c.Type == plan.StepCompletedNotificationSent {
			Expect(c.Message).To(ContainSubstring("no notifier configured"))
		}
	}
	Expect(sim.Requests()).To(BeEmpty(), "no OCM traffic at all with LOCAL")
	stop()

	By("OCM: a scheduled policy creates the managed UpgradeConfig, mapped as MUO maps it")
	const ns = "scheduler-ocm"
	Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: config.ConfigMapName, Namespace: ns},
		Data: map[string]string{config.ConfigKey: "configManager:\n  source: OCM\n  ocmBaseUrl: " + sim.URL() + "\n  watchInterval: 1\n" +
			"upgradeType: OSD\nfeatureGate:\n  enabled: [ServiceLogNotification, PreHealthCheck]\n"}})).To(Succeed())
	// A customer's budget that allows no disruption: MUO's PreHealthCheck
	// gate names it, and never blocks on it.
	zero := intstr.FromInt32(0)
	Expect(env.Client.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}})).To(Succeed())
	const pdbFinding = `PDBHealthcheckFailed: [{"Name":"db","Namespace":"scheduler-ocm"}]`
	at := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	sim.SetPolicy(ocmInternalID, ocmsim.Policy{ID: "p1", Version: "4.16.11", NextRun: at})
	_, stop = startWithOCM(ctx, ns, 200*time.Millisecond)
	defer func() { stop() }()
	key := client.ObjectKey{Namespace: ns, Name: ocm.UpgradeConfigName}
	get := func(g Gomega) *upgradev1alpha1.UpgradeConfig {
		got := &upgradev1alpha1.UpgradeConfig{}
		g.Expect(env.Client.Get(ctx, key, got)).To(Succeed())
		return got
	}
	Eventually(func(g Gomega) upgradev1alpha1.UpgradeConfigSpec { return get(g).Spec }).Should(Equal(upgradev1alpha1.UpgradeConfigSpec{
		Desired: upgradev1alpha1.Update{Version: "4.16.11", Channel: "stable-4.16"}, UpgradeAt: at.Format(time.RFC3339),
		PDBForceDrainTimeout: 45, Type: upgradev1alpha1.OSD, CapacityReservation: true}))
	Eventually(ucPhase(ctx, key)).Should(Equal("Pending/"))
	uid := get(Default).UID

	By("scheduled more than two hours ahead: the budget is in the preflight report and in MUO's PreHealthCheckSL")
	Eventually(func(g Gomega) []string {
		var out []string
		for _, l := range sim.ServiceLogs() {
			if l.Summary() == "Cluster has encountered pre-upgrade healthcheck failure" {
				g.Expect(l.DocReferences()).To(Equal([]string{"https://access.redhat.com/solutions/7081505"}))
				out = append(out, l.Description())
			}
		}
		return out
	}).Should(ConsistOf(And(HavePrefix("Cluster upgrade to version 4.16.11 has been scheduled for more than 2 hours, cluster pre-upgrade health check has identified the following points which may impact the upgrade process: "),
		ContainSubstring(pdbFinding), HaveSuffix(". Please take actions to review and fix the issues before the upgrade begins to have seamless upgrade experience"))))
	Eventually(func(g Gomega) string {
		for _, c := range get(g).Status.Preflight {
			if c.Check == plan.CheckPDBConfiguration && !c.Passed && c.Advisory {
				return c.Details
			}
		}
		return ""
	}).Should(ContainSubstring("scheduler-ocm/db"))

	By("rescheduled in OCM: updated in place, history kept, PolicyChanged")
	sim.SetPolicy(ocmInternalID, ocmsim.Policy{ID: "p1", Version: "4.16.11", NextRun: at.Add(time.Hour)})
	Eventually(func(g Gomega) string { return get(g).Spec.UpgradeAt }).Should(Equal(at.Add(time.Hour).Format(time.RFC3339)))
	Expect(get(Default).UID).To(Equal(uid))
	Expect(get(Default).Status.History).NotTo(BeEmpty())
	Eventually(eventReasons(ctx, ns)).Should(ContainElement("PolicyChanged"))

	By("removed in OCM before commencement: cancelled cleanly, never deleted")
	sim.DeletePolicy(ocmInternalID, "p1")
	Eventually(ucPhase(ctx, key)).Should(Equal("Cancelled/"))
	Expect(get(Default).UID).To(Equal(uid))
	Eventually(eventReasons(ctx, ns)).Should(ContainElement("PolicyRemoved"))

	By("a new policy for the same release, due now, with OCM failing 30% of requests (some answers lost after taking effect): the cancelled attempt starts again")
	sim.FailRandomly(0.3, 42, ocmsim.Fault{Status: 500}, ocmsim.Fault{Status: 503}, ocmsim.Fault{Status: 429}, ocmsim.Fault{LoseResponse: true})
	sim.SetPolicy(ocmInternalID, ocmsim.Policy{ID: "p2", Version: "4.16.11", NextRun: time.Now().UTC().Truncate(time.Second)})
	Eventually(func(g Gomega) string { return get(g).Annotations[ocm.PolicyAnnotation] }, 3*time.Minute).Should(Equal("p2"))
	Expect(get(Default).UID).To(Equal(uid))
	Expect(get(Default).Spec.Cancel).To(BeFalse())
	cvoCompletes(ctx, "4.16.11")
	// Three OCM steps remain, each retried with backoff under the faults.
	Eventually(ucPhase(ctx, key), 5*time.Minute).Should(Equal("Upgraded/"))
	sim.FailRandomly(0, 0)

	By("each policy state once, in order; each service log once")
	var states []string
	for _, s := range sim.StateHistory(ocmInternalID, "p2") {
		states = append(states, s.Value)
	}
	// The cluster has no worker MachineSet to copy: MUO's scale-skipped
	// notice, written as delayed.
	Expect(states).To(Equal([]string{"scheduled", "started", "delayed", "completed"}))
	count := map[string]int{}
	for _, l := range sim.ServiceLogs() {
		count[l.Summary()]++
		Expect(l.ClusterID()).To(Equal(ocmInternalID))
		Expect(l.ServiceName()).To(Equal(ocm.ServiceName))
	}
	Expect(count).To(Equal(map[string]int{
		"Cluster has encountered pre-upgrade healthcheck failure":    1,
		"Cluster has encountered healthcheck failure during upgrade": 1,
		"Cluster is starting with control and worker plane upgrade":  1,
		"Cluster has finished control plane upgrade":                 1,
		"Cluster has finished with worker plane upgrade":             1,
	}), "the budget held nothing, and each notice went out once")
	applied, faults := 0, 0
	for _, r := range sim.Requests() {
		if r.Applied && r.Op == ocmsim.OpPatchPolicyState {
			applied++
		}
		if r.Fault != "" {
			faults++
		}
		Expect(r.Op).NotTo(Equal(ocmsim.OpUnknown))
	}
	Expect(applied).To(Equal(3), "started, scale skipped and completed, each written once")
	Expect(faults).To(BeNumerically(">", 0), "the fault injection must have hit something")
	var events []string
	for _, n := range get(Default).Status.Notifications {
		if n.Version == "4.16.11" {
			events = append(events, n.Event)
		}
	}
	Expect(events).To(Equal([]string{plan.EventPreHealthCheckSL, plan.EventStarted, plan.EventHealthCheckSL, plan.EventScaleSkipped,
		plan.EventControlPlaneStartedSL, plan.EventControlPlaneFinishedSL, plan.EventWorkerPlaneFinishedSL, plan.EventCompleted}))
	GinkgoWriter.Printf("OCM requests %d, faults injected %d\n", len(sim.Requests()), faults)

	By("the notification metrics: MUO's gauge per event, and no event counted sent twice")
	all := []string{plan.EventPreHealthCheckSL, plan.EventStarted, plan.EventHealthCheckSL, plan.EventScaleSkipped, plan.EventControlPlaneStartedSL,
		plan.EventControlPlaneFinishedSL, plan.EventWorkerPlaneFinishedSL, plan.EventCompleted}
	want := map[string]float64{}
	for _, e := range all {
		want["event="+e+",upgradeconfig_name="+ocm.UpgradeConfigName+",version=4.16.11"] = 1
	}
	Eventually(series(metrics.Notification, "version=4.16.11")).Should(Equal(want))
	counted := series(metrics.Notifications, "event=")()
	for _, e := range all {
		sent, again := counted["event="+e+",result=sent"], counted["event="+e+",result=already_sent"]
		Expect(sent).To(BeNumerically("<=", 1), e)
		Expect(sent+again).To(BeNumerically(">=", 1), e)
	}
	Expect(series(metrics.OCMRequests, "op=patch_policy_state")()).To(HaveKey("code=200,op=patch_policy_state"))

	By("a policy removed in OCM after commencement: recorded, and the upgrade runs to its end")
	sim.SetPolicy(ocmInternalID, ocmsim.Policy{ID: "p3", Version: "4.16.12", NextRun: time.Now().UTC().Truncate(time.Second)})
	Eventually(func(g Gomega) string {
		cv := &configv1.ClusterVersion{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
		g.Expect(cv.Spec.DesiredUpdate).NotTo(BeNil())
		return cv.Spec.DesiredUpdate.Version
	}, time.Minute).Should(Equal("4.16.12"))
	sim.DeletePolicy(ocmInternalID, "p3")
	Eventually(func(g Gomega) map[string]string { return get(g).Annotations }).Should(HaveKey(ocm.PolicyRemovedAnnotation))
	Expect(get(Default).Spec.Cancel).To(BeFalse())
	cvoCompletes(ctx, "4.16.12")
	Eventually(ucPhase(ctx, key), time.Minute).Should(Equal("Upgraded/"))
	var outcomes []string
	for _, n := range get(Default).Status.Notifications {
		if n.Version == "4.16.12" {
			outcomes = append(outcomes, n.Event+"="+n.Outcome)
		}
	}
	Expect(outcomes).To(ContainElements(plan.EventStarted+"=Sent", plan.EventCompleted+"=PolicyGone"))
	Expect(get(Default).UID).To(Equal(uid))

	Expect(env.Client.Delete(ctx, get(Default))).To(Succeed())
	Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(ctx, key, &upgradev1alpha1.UpgradeConfig{})) }).Should(BeTrue())
	stop()

	By("ocmBaseUrl naming the in-cluster ocm-agent: the policies come through the agent's routes, with no credential")
	agent := sim.StartAgent(ocmInternalID)
	DeferCleanup(agent.Close)
	const agentNS = "scheduler-ocm-agent"
	Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNS}})).To(Succeed())
	Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: config.ConfigMapName, Namespace: agentNS},
		Data: map[string]string{config.ConfigKey: "configManager:\n  source: OCM\n  ocmBaseUrl: http://" + config.OCMAgentHost + "\n  watchInterval: 1\n" +
			"upgradeType: OSD\n"}})).To(Succeed())
	seen := len(sim.Requests())
	agentAt := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	sim.SetPolicy(ocmInternalID, ocmsim.Policy{ID: "p4", Version: "4.16.13", NextRun: agentAt})
	// The agent's service name resolves in the cluster only: the test
	// sends its requests to the local agent instead.
	_, stop = startWithOCMThrough(ctx, agentNS, 200*time.Millisecond, redirectHost(config.OCMAgentHost, agent.URL))
	agentKey := client.ObjectKey{Namespace: agentNS, Name: ocm.UpgradeConfigName}
	Eventually(func(g Gomega) upgradev1alpha1.UpgradeConfigSpec {
		got := &upgradev1alpha1.UpgradeConfig{}
		g.Expect(env.Client.Get(ctx, agentKey, got)).To(Succeed())
		return got.Spec
	}).Should(Equal(upgradev1alpha1.UpgradeConfigSpec{
		Desired: upgradev1alpha1.Update{Version: "4.16.13", Channel: "stable-4.16"}, UpgradeAt: agentAt.Format(time.RFC3339),
		PDBForceDrainTimeout: 45, Type: upgradev1alpha1.OSD, CapacityReservation: true}))
	ops := map[string]bool{}
	for _, r := range sim.Requests()[seen:] {
		ops[r.Op] = true
		Expect(r.Authorization).To(BeEmpty(), "%s through the agent carries no credential", r.Op)
	}
	Expect(ops).To(HaveKey(ocmsim.OpAgentGetCluster))
	Expect(ops).To(HaveKey(ocmsim.OpAgentListPolicies))
	Expect(ops).NotTo(HaveKey(ocmsim.OpSearchClusters), "nothing goes to OCM directly")
}

// redirectHost sends the requests for host to the server at target (a
// test's stand-in for a cluster-internal service name).
func redirectHost(host, target string) func(http.RoundTripper) http.RoundTripper {
	u, err := url.Parse(target)
	Expect(err).NotTo(HaveOccurred())
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if r.URL.Host == host {
				r = r.Clone(r.Context())
				r.URL.Host, r.Host = u.Host, u.Host
			}
			return rt.RoundTrip(r)
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
