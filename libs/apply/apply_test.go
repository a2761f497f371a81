package apply_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	upgradeac "github.com/upshift-io/upshift/api/upgrade/v1alpha1/applyconfiguration/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/apply"
	"github.com/upshift-io/upshift/libs/testenv"
)

func TestApply(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "apply")
}

var env *testenv.Env

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	env, err = testenv.Start(ctx, testenv.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Stop)
	Expect(env.CreateNamespace(ctx, "ns")).To(Succeed())
}, NodeTimeout(time.Minute))

var _ = Describe("Status", func() {
	It("lets two managers own disjoint fields of one status, each keeping the other's", func(ctx context.Context) {
		uc := &upgradev1alpha1.UpgradeConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "uc"},
			Spec:       upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.16.2", Channel: "stable-4.16"}, UpgradeAt: "2026-01-01T00:00:00Z", Type: upgradev1alpha1.OSD},
		}
		Expect(env.Client.Create(ctx, uc)).To(Succeed())
		now := metav1.NewTime(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))

		// The scheduler's part: the phase of the history entry and a step.
		scheduler := upgradeac.UpgradeConfig("uc", "ns").WithStatus(upgradeac.UpgradeConfigStatus().
			WithCurrentStep("ControlPlaneUpgraded").
			WithHistory(upgradeac.UpgradeHistory().WithVersion("4.16.2").WithPhase(upgradev1alpha1.UpgradePhaseUpgrading).WithStartTime(now)))
		rv1, err := apply.Status(ctx, env.Client, scheduler, "scheduler")
		Expect(err).NotTo(HaveOccurred())
		// The tracker's part of the same entry, and a condition.
		tracker := upgradeac.UpgradeConfig("uc", "ns").WithStatus(upgradeac.UpgradeConfigStatus().
			WithHistory(upgradeac.UpgradeHistory().WithVersion("4.16.2").WithWorkerStartTime(now)).
			WithConditions(metav1ac.Condition().WithType("WorkersUpgraded").WithStatus(metav1.ConditionFalse).
				WithReason("Updating").WithMessage("1 of 3").WithLastTransitionTime(now)))
		rv2, err := apply.Status(ctx, env.Client, tracker, "tracker")
		Expect(err).NotTo(HaveOccurred())
		Expect(rv2).NotTo(Equal(rv1))

		// The scheduler moves on, restating only its fields: the tracker's stay.
		scheduler = upgradeac.UpgradeConfig("uc", "ns").WithStatus(upgradeac.UpgradeConfigStatus().
			WithCurrentStep("AllWorkerNodesUpgraded").
			WithHistory(upgradeac.UpgradeHistory().WithVersion("4.16.2").WithPhase(upgradev1alpha1.UpgradePhaseUpgrading).WithStartTime(now)))
		rv3, err := apply.Status(ctx, env.Client, scheduler, "scheduler")
		Expect(err).NotTo(HaveOccurred())

		got := &upgradev1alpha1.UpgradeConfig{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(uc), got)).To(Succeed())
		Expect(got.ResourceVersion).To(Equal(rv3))
		Expect(got.Status.CurrentStep).To(Equal("AllWorkerNodesUpgraded"))
		Expect(got.Status.History).To(HaveLen(1))
		h := got.Status.History[0]
		Expect(h.Phase).To(Equal(upgradev1alpha1.UpgradePhaseUpgrading))
		Expect(h.WorkerStartTime).NotTo(BeNil())
		Expect(got.Status.Conditions).To(HaveLen(1))

		// A field a manager leaves out of its next apply is removed.
		_, err = apply.Status(ctx, env.Client, upgradeac.UpgradeConfig("uc", "ns").WithStatus(upgradeac.UpgradeConfigStatus().
			WithHistory(upgradeac.UpgradeHistory().WithVersion("4.16.2").WithWorkerStartTime(now))), "tracker")
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(uc), got)).To(Succeed())
		Expect(got.Status.Conditions).To(BeEmpty())
		Expect(got.Status.History[0].Phase).To(Equal(upgradev1alpha1.UpgradePhaseUpgrading))
	})
})

var _ = Describe("Object and FromObject", func() {
	It("applies a typed object without generated configurations and returns the version written", func(ctx context.Context) {
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"mine": "1"}}
		ac, err := apply.FromObject(cm)
		Expect(err).NotTo(HaveOccurred())
		rv, err := apply.Object(ctx, env.Client, ac, "one")
		Expect(err).NotTo(HaveOccurred())
		got := &corev1.ConfigMap{}
		Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "cm"}, got)).To(Succeed())
		Expect(got.ResourceVersion).To(Equal(rv))
		Expect(got.Data).To(Equal(map[string]string{"mine": "1"}))
		Expect(got.ManagedFields).To(ContainElement(HaveField("Manager", "one")))
	})
})
