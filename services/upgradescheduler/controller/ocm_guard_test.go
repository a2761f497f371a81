package controller_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/ocm"
	"github.com/upshift-io/upshift/tools/ocmsim"
)

// desiredVersion is ClusterVersion's spec.desiredUpdate version ("" for none).
func desiredVersion(ctx context.Context) string {
	GinkgoHelper()
	cv := &configv1.ClusterVersion{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
	if cv.Spec.DesiredUpdate == nil {
		return ""
	}
	return cv.Spec.DesiredUpdate.Version
}

// ocmGuardSpec: a policy withdrawn in OCM between the last periodic sync and
// commencement never lets the upgrade commence. The periodic sync is off
// (watchInterval an hour): only the scheduler's own checks can see it.
func ocmGuardSpec(ctx context.Context) {
	sim := ocmsim.Start()
	DeferCleanup(sim.Close)
	cv := &configv1.ClusterVersion{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
	sim.AddCluster(ocmsim.Cluster{ID: ocmInternalID, ExternalID: string(cv.Spec.ClusterID), ChannelGroup: "stable", NodeDrainGracePeriodMinutes: 45, Token: ocmToken})
	Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ocm.PullSecretNamespace}}))).To(Succeed())
	Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ocm.PullSecretName, Namespace: ocm.PullSecretNamespace},
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"cloud.openshift.com":{"auth":"` + ocmToken + `","email":"a@b.c"}}}`)},
	}))).To(Succeed())
	before := desiredVersion(ctx)
	offer(ctx, "4.16.13", "4.16.14", "4.16.15")

	const ns = "scheduler-ocm-guard"
	Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: config.ConfigMapName, Namespace: ns},
		Data: map[string]string{config.ConfigKey: "configManager:\n  source: OCM\n  ocmBaseUrl: " + sim.URL() + "\n  watchInterval: 60\n" +
			"upgradeType: OSD\nfeatureGate:\n  enabled: [ServiceLogNotification]\n"}})).To(Succeed())
	syncer, stop := startWithOCM(ctx, ns, 0)
	defer stop()
	key := client.ObjectKey{Namespace: ns, Name: ocm.UpgradeConfigName}
	get := func(g Gomega) *upgradev1alpha1.UpgradeConfig {
		got := &upgradev1alpha1.UpgradeConfig{}
		g.Expect(env.Client.Get(ctx, key, got)).To(Succeed())
		return got
	}

	// A sync racing the reconciler's status write conflicts; the periodic
	// syncer would try again, so does the test.
	syncOnce := func() {
		GinkgoHelper()
		Eventually(func() error { _, err := syncer.SyncOnce(ctx); return err }).Should(Succeed())
	}

	By("a policy deleted before its started notice: the notice finds it gone, the attempt is cancelled, nothing more happens")
	at := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second)
	sim.SetPolicy(ocmInternalID, ocmsim.Policy{ID: "g1", Version: "4.16.13", NextRun: at})
	syncOnce()
	sim.DeletePolicy(ocmInternalID, "g1")
	Eventually(ucPhase(ctx, key), 30*time.Second).Should(Equal("Cancelled/"))
	Expect(get(Default).Spec.Cancel).To(BeTrue(), "the removal became spec.cancel through the sync the notice triggered")
	Expect(desiredVersion(ctx)).To(Equal(before), "never commenced")
	Expect(sim.ServiceLogs()).To(BeEmpty(), "the control-plane-started service log comes after the started notice: never posted")
	for _, n := range get(Default).Status.Notifications {
		Expect(n.Outcome).NotTo(Equal(string(ocm.PolicyGone)), "a gone policy before commencement is not a delivery")
	}

	By("a policy deleted after its started notice, just before commencement: the last-minute check cancels it")
	started := make(chan struct{})
	sim.OnRequest(func(r ocmsim.Request) {
		if r.Op == ocmsim.OpPatchPolicyState && r.Applied && strings.Contains(r.Path, "/g2/") && strings.Contains(r.Body, "started") {
			sim.DeletePolicy(ocmInternalID, "g2")
			close(started)
		}
	})
	DeferCleanup(func() { sim.OnRequest(nil) })
	sim.SetPolicy(ocmInternalID, ocmsim.Policy{ID: "g2", Version: "4.16.14", NextRun: time.Now().UTC().Truncate(time.Second)})
	syncOnce()
	Eventually(func(g Gomega) string {
		uc := get(g)
		g.Expect(uc.Status.History).NotTo(BeEmpty())
		return uc.Status.History[0].Version + "/" + string(uc.Status.History[0].Phase)
	}, 30*time.Second).Should(Equal("4.16.14/Cancelled"))
	Expect(desiredVersion(ctx)).To(Equal(before), "never commenced")
	Expect(started).To(BeClosed(), "the policy was there when the attempt started (its started notice went out)")
	Expect(get(Default).Spec.Cancel).To(BeTrue(), "cancelled by the check before commencement")

	sim.OnRequest(nil)

	By("the cluster's drain grace period changed in OCM: the next sync reads it")
	sim.AddCluster(ocmsim.Cluster{ID: ocmInternalID, ExternalID: string(cv.Spec.ClusterID), ChannelGroup: "stable", NodeDrainGracePeriodMinutes: 30, Token: ocmToken})
	sim.SetPolicy(ocmInternalID, ocmsim.Policy{ID: "g3", Version: "4.16.15", NextRun: time.Now().Add(time.Hour).UTC().Truncate(time.Second)})
	syncOnce()
	Expect(get(Default).Spec.PDBForceDrainTimeout).To(Equal(int32(30)))

	By("OCM down when the started notice is due: retried with backoff, not on every reconcile")
	sim.SetPolicy(ocmInternalID, ocmsim.Policy{ID: "g3", Version: "4.16.15", NextRun: time.Now().Add(3 * time.Second).UTC().Truncate(time.Second)})
	syncOnce()
	sim.FailRandomly(1, 1, ocmsim.Fault{Status: 503})
	DeferCleanup(func() { sim.FailRandomly(0, 0) })
	Eventually(func(g Gomega) string {
		uc := get(g)
		for _, c := range uc.Status.History[0].Conditions {
			if c.Type == "StartedNotificationSent" {
				return c.LastError
			}
		}
		return ""
	}, 30*time.Second).ShouldNot(BeEmpty())
	base := len(sim.Requests())
	// The first retry is due 10 s after the failure, the next 20 s after
	// that: over 12 s, one or two attempts at most, each the first read sent
	// Retry.Steps times. An unthrottled retry makes an attempt per
	// reconcile, many per second.
	Consistently(func() int { return len(sim.Requests()) - base }, 12*time.Second, 200*time.Millisecond).Should(BeNumerically("<=", 2*ocm.Retry.Steps))
	Expect(len(sim.Requests())-base).To(BeNumerically(">=", 1), "it is retried")
	GinkgoWriter.Printf("OCM requests in 12 s of outage: %d\n", len(sim.Requests())-base)
	sim.FailRandomly(0, 0)

	Expect(env.Client.Delete(ctx, get(Default))).To(Succeed())
}
