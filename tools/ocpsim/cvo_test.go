package ocpsim_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/cvo"
	"github.com/upshift-io/upshift/tools/ocpsim/faults"
)

// The CVO as the upgrade-scheduler sees it: channels, conditional updates,
// Upgradeable and its preconditions, image-mode requests. One cluster walks
// through all of it, in order.
var _ = Describe("cluster-version-operator", Ordered, func() {
	var k *cluster
	const (
		fast16, cand17 = "fast-4.16", "candidate-4.17"
		apiMsg         = "kube-apiserver should not be updated to the next minor version (fault injected by ocpsim)"
	)
	aRisk := ocpsim.Risk{Name: "ARisk", Message: "Clusters with A may lose their ingress.", URL: "https://issues.example.com/A"}
	bRisk := ocpsim.Risk{Name: "BRisk", Message: "Clusters with B need a manual step.", URL: "https://issues.example.com/B", PromQL: `group(cluster_infrastructure_provider{type="AWS"})`, PromQLResult: cvo.PromQLNoMatch}
	all := []string{"stable-4.16", fast16, "candidate-4.16", cand17}

	patchSpec := func(ctx context.Context, mutate func(*configv1.ClusterVersion)) {
		cv := k.cv(ctx)
		orig := cv.DeepCopy()
		mutate(cv)
		Expect(k.c.Patch(ctx, cv, client.MergeFrom(orig))).To(Succeed())
	}
	setChannel := func(ctx context.Context, ch string) {
		patchSpec(ctx, func(cv *configv1.ClusterVersion) { cv.Spec.Channel = ch })
	}
	request := func(ctx context.Context, u configv1.Update) {
		patchSpec(ctx, func(cv *configv1.ClusterVersion) { cv.Spec.DesiredUpdate = &u })
	}
	available := func(cv *configv1.ClusterVersion) []string {
		var out []string
		for _, r := range cv.Status.AvailableUpdates {
			out = append(out, r.Version)
		}
		return out
	}
	conditional := func(cv *configv1.ClusterVersion, v string) *configv1.ConditionalUpdate {
		for i := range cv.Status.ConditionalUpdates {
			if cv.Status.ConditionalUpdates[i].Release.Version == v {
				return &cv.Status.ConditionalUpdates[i]
			}
		}
		return nil
	}
	completed := func(ctx context.Context, version string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			cv := k.cv(ctx)
			g.Expect(cv.Status.History[0].Version).To(Equal(version))
			g.Expect(cv.Status.History[0].State).To(Equal(configv1.CompletedUpdate))
			g.Expect(cvCond(cv, configv1.OperatorProgressing).Message).To(Equal("Cluster version is " + version))
		}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
	}

	BeforeAll(func(ctx SpecContext) {
		k = startCluster(ctx, ocpsim.Topology{Version: "4.16.1", Channel: "stable-4.16", Masters: 1, Workers: 1,
			Releases: []ocpsim.GraphRelease{
				{Version: "4.16.1", Channels: all},
				{Version: "4.16.2", Channels: all},
				{Version: "4.16.3", Channels: []string{fast16, "candidate-4.16", cand17}, Risks: []ocpsim.Risk{aRisk}},
				{Version: "4.16.4", Channels: []string{fast16, "candidate-4.16"}, Risks: []ocpsim.Risk{aRisk, bRisk}},
				{Version: "4.16.5", Channels: []string{fast16, "candidate-4.16"}, Risks: []ocpsim.Risk{bRisk}},
				{Version: "4.17.0", Channels: []string{cand17}},
				{Version: "4.17.1", Channels: []string{cand17}, Risks: []ocpsim.Risk{aRisk}},
			}}, ocpsim.Options{
			TimeScale: 600,
			Operators: []cvo.Operator{
				{Name: "etcd", RunLevel: 12, Duration: 2 * time.Minute, Namespace: "openshift-etcd"},
				{Name: "kube-apiserver", RunLevel: 20, Duration: 3 * time.Minute, Namespace: "openshift-kube-apiserver"},
				{Name: cvo.MachineConfig, RunLevel: 80, Duration: time.Minute, Namespace: "openshift-machine-config-operator"},
			},
		})
	}, NodeTimeout(2*time.Minute))

	It("lists the channel's updates and the channels of the current release", func(ctx SpecContext) {
		cv := k.cv(ctx)
		Expect(available(cv)).To(Equal([]string{"4.16.2"}))
		Expect(cv.Status.ConditionalUpdates).To(BeEmpty())
		Expect(cv.Status.Desired.Channels).To(ConsistOf(all))
		Expect(cv.Status.AvailableUpdates[0].Image).To(Equal(cvo.ReleaseImage("4.16.2")))
		Expect(cv.Status.AvailableUpdates[0].Image).To(MatchRegexp(`^quay\.io/openshift-release-dev/ocp-release@sha256:[a-f0-9]{64}$`))
		Expect(cvCond(cv, configv1.RetrievedUpdates).Status).To(Equal(configv1.ConditionTrue))
		Expect(cvCond(cv, configv1.OperatorUpgradeable)).To(BeNil(), "nothing blocks minor updates")
	})

	It("recomputes availableUpdates and conditionalUpdates when the channel changes", func(ctx SpecContext) {
		setChannel(ctx, fast16)
		Eventually(func(g Gomega) {
			cv := k.cv(ctx)
			// 4.16.5's only risk does not apply: recommended, so in both lists
			g.Expect(available(cv)).To(Equal([]string{"4.16.5", "4.16.2"}))
			g.Expect(cv.Status.ConditionalUpdates).To(HaveLen(3))
			c3 := conditional(cv, "4.16.3")
			g.Expect(c3).NotTo(BeNil())
			g.Expect(c3.Release.Image).To(Equal(cvo.ReleaseImage("4.16.3")))
			g.Expect(c3.Risks).To(Equal([]configv1.ConditionalUpdateRisk{{Name: "ARisk", Message: aRisk.Message, URL: aRisk.URL, MatchingRules: []configv1.ClusterCondition{{Type: "Always"}}}}))
			g.Expect(c3.Conditions).To(ConsistOf(And(HaveField("Type", "Recommended"), HaveField("Status", metav1.ConditionFalse),
				HaveField("Reason", "ARisk"), HaveField("Message", "Clusters with A may lose their ingress. https://issues.example.com/A"))))
			c4 := conditional(cv, "4.16.4")
			g.Expect(c4.Risks).To(HaveLen(2))
			g.Expect(c4.Risks[1].MatchingRules).To(Equal([]configv1.ClusterCondition{{Type: "PromQL", PromQL: &configv1.PromQLClusterCondition{PromQL: bRisk.PromQL}}}))
			g.Expect(c4.Conditions[0].Reason).To(Equal("ARisk"), "only ARisk applies")
			c5 := conditional(cv, "4.16.5")
			g.Expect(c5.Conditions[0].Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c5.Conditions[0].Reason).To(Equal("NotExposedToRisks"))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())

		setChannel(ctx, "stable-4.99")
		Eventually(func(g Gomega) {
			cv := k.cv(ctx)
			g.Expect(cv.Status.AvailableUpdates).To(BeEmpty())
			g.Expect(cv.Status.ConditionalUpdates).To(BeEmpty())
			r := cvCond(cv, configv1.RetrievedUpdates)
			g.Expect(r.Status).To(Equal(configv1.ConditionFalse))
			g.Expect(r.Reason).To(Equal("VersionNotFound"))
			g.Expect(r.Message).To(Equal(`Unable to retrieve available updates: currently reconciling cluster version 4.16.1 not found in the "stable-4.99" channel`))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())

		setChannel(ctx, cand17)
		Eventually(func(g Gomega) {
			cv := k.cv(ctx)
			g.Expect(available(cv)).To(Equal([]string{"4.17.0", "4.16.2"}))
			g.Expect(conditional(cv, "4.17.1")).NotTo(BeNil())
			g.Expect(conditional(cv, "4.16.3")).NotTo(BeNil())
			g.Expect(cvCond(cv, configv1.RetrievedUpdates).Status).To(Equal(configv1.ConditionTrue))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	})

	It("reports Upgradeable=False as the CVO aggregates it: one reason, or MultipleReasons", func(ctx SpecContext) {
		Expect(ocpsim.InjectFault(ctx, k.c, faults.Request{Kind: "clusteroperator", Name: "kube-apiserver", Fault: faults.OperatorNotUpgradeable})).To(Succeed())
		single := "Cluster operator kube-apiserver should not be upgraded between minor versions: " + apiMsg
		Eventually(func(g Gomega) {
			u := cvCond(k.cv(ctx), configv1.OperatorUpgradeable)
			g.Expect(u).NotTo(BeNil())
			g.Expect(u.Status).To(Equal(configv1.ConditionFalse))
			g.Expect(u.Reason).To(Equal("InjectedFault"))
			g.Expect(u.Message).To(Equal(single))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())

		Expect(ocpsim.InjectFault(ctx, k.c, faults.Request{Kind: "clusterversion", Name: "version", Fault: faults.AdminAckRequired})).To(Succeed())
		ack := "Kubernetes 1.30 and therefore OpenShift 4.17 remove several APIs which require admin consideration. Please see the knowledge article https://access.redhat.com/articles/6955381 for details and instructions."
		Eventually(func(g Gomega) {
			cv := k.cv(ctx)
			u := cvCond(cv, configv1.OperatorUpgradeable)
			g.Expect(u.Reason).To(Equal("MultipleReasons"))
			g.Expect(u.Message).To(Equal("Cluster should not be upgraded between minor versions for multiple reasons: InjectedFault,AdminAckRequired\n* " + single + "\n* " + ack))
			g.Expect(cvCond(cv, "UpgradeableAdminAckRequired")).NotTo(BeNil())
			g.Expect(cvCond(cv, "UpgradeableClusterOperators").Reason).To(Equal("InjectedFault"))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())

		k.annotate(ctx, k.cv(ctx), faults.Annotation, "")
		Eventually(func(g Gomega) {
			cv := k.cv(ctx)
			g.Expect(cvCond(cv, configv1.OperatorUpgradeable).Reason).To(Equal("InjectedFault"))
			g.Expect(cvCond(cv, "UpgradeableAdminAckRequired")).To(BeNil())
			g.Expect(cvCond(cv, "UpgradeableClusterOperators")).To(BeNil())
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	})

	It("Upgradeable=False lets a z-stream through; a conditional target is taken with its image and the risk recorded", func(ctx SpecContext) {
		By("a version alone is not enough for a conditional update")
		request(ctx, configv1.Update{Version: "4.16.3"})
		Eventually(func(g Gomega) {
			cv := k.cv(ctx)
			g.Expect(cvCond(cv, "Invalid")).NotTo(BeNil())
			g.Expect(cvCond(cv, cvo.ReleaseAccepted).Reason).To(Equal("RetrievePayload"))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())

		By("version and image, as oc adm upgrade --allow-not-recommended sends them")
		request(ctx, configv1.Update{Version: "4.16.3", Image: cvo.ReleaseImage("4.16.3")})
		completed(ctx, "4.16.3")
		cv := k.cv(ctx)
		Expect(cvCond(cv, "Invalid")).To(BeNil())
		Expect(cv.Status.History[0].Verified).To(BeTrue())
		Expect(cv.Status.History[0].AcceptedRisks).To(Equal("Precondition \"ClusterVersionRecommendedUpdate\" failed because of \"ARisk\": Update from 4.16.1 to 4.16.3 is not recommended:\n\nClusters with A may lose their ingress. https://issues.example.com/A"))
		Expect(cvCond(cv, cvo.ReleaseAccepted).Status).To(Equal(configv1.ConditionTrue))
		Expect(cvCond(cv, configv1.OperatorUpgradeable).Status).To(Equal(configv1.ConditionFalse), "still not upgradeable")
		Expect(available(cv)).To(Equal([]string{"4.17.0"}), "updates are now those of 4.16.3 in %s", cand17)
		Expect(cv.Status.Desired.Channels).To(ConsistOf(fast16, "candidate-4.16", cand17))
	})

	It("Upgradeable=False blocks a minor update with PreconditionChecks until it clears", func(ctx SpecContext) {
		request(ctx, configv1.Update{Version: "4.17.0"})
		want := fmt.Sprintf(`Preconditions failed for payload loaded version="4.17.0" image=%q: Precondition "ClusterVersionUpgradeable" failed because of "InjectedFault": Cluster operator kube-apiserver should not be upgraded between minor versions: %s`,
			cvo.ReleaseImage("4.17.0"), apiMsg)
		blocked := func(g Gomega) {
			cv := k.cv(ctx)
			ra := cvCond(cv, cvo.ReleaseAccepted)
			g.Expect(ra.Status).To(Equal(configv1.ConditionFalse))
			g.Expect(ra.Reason).To(Equal("PreconditionChecks"))
			g.Expect(ra.Message).To(Equal(want))
			g.Expect(cvCond(cv, "Invalid")).To(BeNil())
			// the CVO keeps reconciling the release it has
			g.Expect(cv.Status.Desired.Version).To(Equal("4.16.3"))
			g.Expect(cv.Status.History[0].Version).To(Equal("4.16.3"))
			g.Expect(cvCond(cv, "Failing").Status).To(Equal(configv1.ConditionFalse))
			g.Expect(cvCond(cv, configv1.OperatorProgressing).Status).To(Equal(configv1.ConditionFalse))
		}
		Eventually(blocked, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		Consistently(blocked, time.Second, 100*time.Millisecond).Should(Succeed())

		var api configv1.ClusterOperator
		Expect(k.c.Get(ctx, clusterKey("kube-apiserver"), &api)).To(Succeed())
		k.annotate(ctx, &api, faults.Annotation, "")
		completed(ctx, "4.17.0")
		cv := k.cv(ctx)
		Expect(cvCond(cv, configv1.OperatorUpgradeable)).To(BeNil())
		Expect(cvCond(cv, cvo.ReleaseAccepted).Reason).To(Equal("PayloadLoaded"))
		Expect(cv.Status.History[0].AcceptedRisks).To(BeEmpty())
		Expect(cv.Status.History[1].CompletionTime).NotTo(BeNil())
	})

	It("takes an image by digest alone when it names a release of the graph, and refuses one it cannot verify", func(ctx SpecContext) {
		unknown := "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("0", 64)
		request(ctx, configv1.Update{Image: unknown})
		Eventually(func(g Gomega) {
			cv := k.cv(ctx)
			ra := cvCond(cv, cvo.ReleaseAccepted)
			g.Expect(ra.Status).To(Equal(configv1.ConditionFalse))
			g.Expect(ra.Reason).To(Equal("RetrievePayload"))
			g.Expect(ra.Message).To(Equal(fmt.Sprintf(`Retrieving payload failed version="" image=%q failure=The update cannot be verified: unable to verify sha256:%s against keyrings: verifier-public-key-redhat`, unknown, strings.Repeat("0", 64))))
			g.Expect(cvCond(cv, "Invalid")).To(BeNil())
			g.Expect(cv.Status.Desired.Version).To(Equal("4.17.0"))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())

		request(ctx, configv1.Update{Image: cvo.ReleaseImage("4.17.1")})
		completed(ctx, "4.17.1")
		cv := k.cv(ctx)
		Expect(cv.Status.Desired.Image).To(Equal(cvo.ReleaseImage("4.17.1")))
		Expect(cv.Status.History[0].Image).To(Equal(cvo.ReleaseImage("4.17.1")))
		Expect(cv.Status.History[0].Verified).To(BeTrue())
		Expect(cv.Status.History[0].AcceptedRisks).To(ContainSubstring("Update from 4.17.0 to 4.17.1 is not recommended"))
		Expect(cv.Status.Desired.Channels).To(Equal([]string{cand17}))
	})

	It("force takes an image it cannot verify through a blocking precondition, and records both risks", func(ctx SpecContext) {
		Expect(ocpsim.InjectFault(ctx, k.c, faults.Request{Kind: "clusteroperator", Name: "kube-apiserver", Fault: faults.OperatorNotUpgradeable})).To(Succeed())
		Eventually(func() *configv1.ClusterOperatorStatusCondition {
			return cvCond(k.cv(ctx), configv1.OperatorUpgradeable)
		}, 10*time.Second, 50*time.Millisecond).ShouldNot(BeNil())
		image := "registry.example.com/ocp/release:4.18.0-x86_64"
		request(ctx, configv1.Update{Image: image, Force: true})
		completed(ctx, "4.18.0")
		cv := k.cv(ctx)
		Expect(cvCond(cv, configv1.RetrievedUpdates).Reason).To(Equal("VersionNotFound"), "4.18.0 is no release of the update service")
		Expect(cv.Status.AvailableUpdates).To(BeEmpty())
		Expect(cv.Status.Desired.Channels).To(BeEmpty())
		h := cv.Status.History[0]
		Expect(h.Image).To(Equal(image))
		Expect(h.Verified).To(BeFalse())
		Expect(h.AcceptedRisks).To(HavePrefix(fmt.Sprintf(`Target release version="" image=%q cannot be verified, but continuing anyway because the update was forced: `, image)))
		Expect(h.AcceptedRisks).To(ContainSubstring("\nForced through blocking failures: Multiple precondition checks failed:\n* Precondition \"ClusterVersionUpgradeable\" failed because of \"InjectedFault\": Cluster operator kube-apiserver should not be upgraded between minor versions: " + apiMsg + "\n* Precondition \"ClusterVersionRecommendedUpdate\" failed because of \"UnknownUpdate\": "))
	})
})
