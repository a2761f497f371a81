package controller_test

import (
	"context"
	"time"

	. "github.com/onsi/gomega"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
)

// fileIntegrityCRD is enough of the File Integrity Operator's CRD to hold the
// object the scheduler annotates.
func fileIntegrityCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "fileintegrities.fileintegrity.openshift.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "fileintegrity.openshift.io", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "fileintegrities", Singular: "fileintegrity", Kind: "FileIntegrity", ListKind: "FileIntegrityList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
}

// fedrampSpec runs after the upgrades before it: ClusterVersion is at its
// target, so an OSD UpgradeConfig for that target goes straight to the
// post-upgrade tasks.
func fedrampSpec(ctx context.Context) {
	const ns = "scheduler-fedramp"
	for _, n := range []string{ns, "openshift-file-integrity"} {
		Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})).To(Succeed())
	}
	Expect(env.Client.Create(ctx, fileIntegrityCRD())).To(Succeed())
	fi := &unstructured.Unstructured{}
	fi.SetAPIVersion("fileintegrity.openshift.io/v1alpha1")
	fi.SetKind("FileIntegrity")
	fi.SetNamespace("openshift-file-integrity")
	fi.SetName("osd-fileintegrity")
	fi.SetAnnotations(map[string]string{"kept": "yes"})
	Eventually(func() error { return env.Client.Create(ctx, fi.DeepCopy()) }).Should(Succeed())
	Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: config.ConfigMapName, Namespace: ns},
		Data: map[string]string{config.ConfigKey: "environment:\n  fedramp: true\n"}})).To(Succeed())
	cv := &configv1.ClusterVersion{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
	before := fileIntegrityPatches()

	stop := startController(ctx, ns)
	defer stop()
	uc := &upgradev1alpha1.UpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-config", Namespace: ns},
		Spec: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: cv.Spec.DesiredUpdate.Version, Channel: "stable-4.16"},
			UpgradeAt: time.Now().UTC().Format(time.RFC3339), Type: upgradev1alpha1.OSD},
	}
	Expect(env.Client.Create(ctx, uc)).To(Succeed())
	Eventually(ucPhase(ctx, client.ObjectKeyFromObject(uc))).Should(Equal("Upgraded/"))

	got := fi.DeepCopy()
	Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(fi), got)).To(Succeed())
	Expect(got.GetAnnotations()).To(HaveKeyWithValue("file-integrity.openshift.io/re-init", ""))
	Expect(got.GetAnnotations()).To(HaveKeyWithValue("kept", "yes"))
	Expect(fileIntegrityPatches()-before).To(Equal(1), "FileIntegrity patches")
}

// fileIntegrityPatches counts the successful patches of FileIntegrity objects.
func fileIntegrityPatches() int {
	events, err := env.AuditEvents("upshift-admin")
	Expect(err).NotTo(HaveOccurred())
	n := 0
	for _, e := range events {
		if e.Verb == "patch" && e.ObjectRef != nil && e.ObjectRef.Resource == "fileintegrities" && e.ResponseStatus != nil && e.ResponseStatus.Code < 300 {
			n++
		}
	}
	return n
}
