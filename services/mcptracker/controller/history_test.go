package controller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// status.history is keyed by version so that the tracker can own two fields
// of an entry: an entry without a version still applies (it gets ""), two
// entries of one version are refused.
var _ = Describe("status.history keyed by version", func() {
	It("accepts MUO's entries and refuses a repeated version", func(ctx context.Context) {
		Expect(env.CreateNamespace(ctx, "history")).To(Succeed())
		uc := &upgradev1alpha1.UpgradeConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: "history", Name: "managed-upgrade-config"},
			Spec: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.16.2", Channel: "stable-4.16"},
				UpgradeAt: "2026-01-01T00:00:00Z", PDBForceDrainTimeout: 60, Type: upgradev1alpha1.OSD},
		}
		Expect(env.Client.Create(ctx, uc)).To(Succeed())
		uc.Status.History = []upgradev1alpha1.UpgradeHistory{
			{Version: "4.16.2", Phase: upgradev1alpha1.UpgradePhasePending},
			{Phase: upgradev1alpha1.UpgradePhaseFailed},
		}
		Expect(env.Client.Status().Update(ctx, uc)).To(Succeed())
		got := getUC(ctx, env.Client, client.ObjectKeyFromObject(uc))
		Expect(got.Status.History).To(HaveLen(2))
		Expect(got.Status.History[1].Version).To(BeEmpty())

		got.Status.History = append(got.Status.History, upgradev1alpha1.UpgradeHistory{Version: "4.16.2", Phase: upgradev1alpha1.UpgradePhaseNew})
		err := env.Client.Status().Update(ctx, got)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("Duplicate value"))
	})
})
