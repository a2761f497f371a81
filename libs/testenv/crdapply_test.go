package testenv_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/api/crds"
	"github.com/upshift-io/upshift/libs/testenv"
)

// lastApplied is the annotation a client-side `kubectl apply` (and Argo
// CD's default sync) writes with the whole object as JSON. The apiserver
// refuses an object whose annotations total more than 256 KiB.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Upshift's CRDs as a user installs them without the charts: with
// `kubectl apply -f`, on a cluster that has none of them.
var _ = Describe("Upshift's CRDs applied client-side", Ordered, func() {
	var bare *testenv.Env

	BeforeAll(func(ctx context.Context) {
		var err error
		bare, err = testenv.Start(ctx, testenv.Options{WithoutUpshiftCRDs: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(bare.Stop)
	}, NodeTimeout(2*time.Minute))

	It("each is created with kubectl's last-applied annotation", func(ctx context.Context) {
		files, err := crds.Files(crds.UpshiftDir)
		Expect(err).NotTo(HaveOccurred())
		Expect(files).NotTo(BeEmpty())
		for _, f := range files {
			raw, err := fs.ReadFile(crds.FS, f)
			Expect(err).NotTo(HaveOccurred())
			obj := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal(raw, &obj.Object)).To(Succeed(), f)
			// What kubectl records: the object as the file gives it, as JSON.
			body, err := json.Marshal(obj.Object)
			Expect(err).NotTo(HaveOccurred())
			obj.SetAnnotations(map[string]string{lastApplied: string(body)})
			Expect(bare.Client.Create(ctx, obj)).To(Succeed(), "%s (%d bytes of JSON)", f, len(body))
		}
	})

	It("refuses ephemeral containers in a MutexRule's Job template, naming the field", func(ctx context.Context) {
		Eventually(func() bool {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := bare.Client.Get(ctx, client.ObjectKey{Name: "mutexrules.nodegate.upshift.io"}, crd); err != nil {
				return false
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true
				}
			}
			return false
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeTrue())
		Expect(bare.CreateNamespace(ctx, "rules")).To(Succeed())

		rule := func(name string, podSpec map[string]any) *unstructured.Unstructured {
			u := &unstructured.Unstructured{Object: map[string]any{
				"spec": map[string]any{
					"jobName":      "check",
					"jobNamespace": "rules",
					"jobSpec": map[string]any{
						"template": map[string]any{"spec": podSpec},
					},
				},
			}}
			u.SetGroupVersionKind(schema.GroupVersionKind{Group: "nodegate.upshift.io", Version: "v1alpha1", Kind: "MutexRule"})
			u.SetNamespace("rules")
			u.SetName(name)
			return u
		}
		containers := []any{map[string]any{"name": "drain-check", "image": "registry.example/check:1"}}
		Expect(bare.Client.Create(ctx, rule("plain", map[string]any{
			"containers": containers, "restartPolicy": "Never",
		}))).To(Succeed())

		err := bare.Client.Create(ctx, rule("ephemeral", map[string]any{
			"containers":          containers,
			"restartPolicy":       "Never",
			"ephemeralContainers": []any{map[string]any{"name": "debug", "image": "registry.example/debug:1"}},
		}))
		Expect(err).To(MatchError(And(
			ContainSubstring("spec.jobSpec.template.spec.ephemeralContainers"),
			ContainSubstring("ephemeral containers are added to running pods only"),
		)))
	})
})
