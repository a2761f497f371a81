package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// muoExample is an UpgradeConfig as MUO's documentation writes one (quoted
// scalars included): it must apply unchanged.
const muoExample = `
apiVersion: upgrade.managed.openshift.io/v1alpha1
kind: UpgradeConfig
metadata:
  name: managed-upgrade-config
spec:
  type: "OSD"
  upgradeAt: "2024-01-01T12:00:00Z"
  PDBForceDrainTimeout: 60
  desired:
    channel: "fast-4.14"
    version: "4.14.15"
`

// muoOCMShaped is what MUO's OCM provider writes: ARO type, capacity
// reservation always on.
const muoOCMShaped = `
apiVersion: upgrade.managed.openshift.io/v1alpha1
kind: UpgradeConfig
metadata:
  name: managed-upgrade-config
spec:
  type: ARO
  upgradeAt: "2026-11-23T03:00:00+01:00"
  PDBForceDrainTimeout: 0
  capacityReservation: true
  desired:
    channel: eus-4.16
    version: 4.15.31
`

var nsCount int

func newNamespace(ctx context.Context) string {
	nsCount++
	name := fmt.Sprintf("upgradeconfig-%d", nsCount)
	Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

func fromYAML(doc, ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
	u.SetNamespace(ns)
	return u
}

var _ = Describe("UpgradeConfig written for MUO", func() {
	for name, doc := range map[string]string{"MUO's documented example": muoExample, "an OCM-provider UpgradeConfig": muoOCMShaped} {
		It("applies unchanged and reads back the same: "+name, func(ctx context.Context) {
			ns := newNamespace(ctx)
			u := fromYAML(doc, ns)
			sent := u.DeepCopy()
			Expect(env.Client.Create(ctx, u)).To(Succeed())

			// Unstructured: the stored spec is exactly what was sent (no
			// defaulting, no pruning).
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(u.GroupVersionKind())
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(u), got)).To(Succeed())
			Expect(asJSON(got.Object["spec"])).To(MatchJSON(asJSON(sent.Object["spec"])))

			// Typed: the Go types carry every field and write back the same JSON.
			typed := &upgradev1alpha1.UpgradeConfig{}
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(u), typed)).To(Succeed())
			b, err := json.Marshal(typed.Spec)
			Expect(err).NotTo(HaveOccurred())
			var roundTripped map[string]any
			Expect(json.Unmarshal(b, &roundTripped)).To(Succeed())
			Expect(asJSON(roundTripped)).To(MatchJSON(asJSON(sent.Object["spec"])))
		})
	}

	It("keeps MUO's status, with history newest first, and shows MUO's columns in `kubectl get upgrade`", func(ctx context.Context) {
		ns := newNamespace(ctx)
		uc := &upgradev1alpha1.UpgradeConfig{}
		Expect(yaml.Unmarshal([]byte(muoExample), uc)).To(Succeed())
		uc.Namespace = ns
		Expect(env.Client.Create(ctx, uc)).To(Succeed())

		// The status MUO writes, as JSON (so that the Go types are tested, not assumed).
		status := `{"history":[{"version":"4.14.15","precedingVersion":"4.14.10","phase":"Upgrading",
		  "startTime":"2024-01-01T12:00:00Z",
		  "conditions":[
		    {"type":"ControlPlaneUpgraded","status":"False","reason":"ControlPlaneUpgraded not done","message":"ControlPlaneUpgraded still in progress","lastProbeTime":"2024-01-01T12:40:00Z","lastTransitionTime":"2024-01-01T12:30:00Z","startTime":"2024-01-01T12:30:00Z"},
		    {"type":"UpgradeCommenced","status":"True","reason":"UpgradeCommenced done","message":"UpgradeCommenced is completed","lastProbeTime":"2024-01-01T12:30:00Z","lastTransitionTime":"2024-01-01T12:30:00Z","startTime":"2024-01-01T12:29:00Z","completeTime":"2024-01-01T12:30:00Z"}]},
		  {"version":"4.14.10","precedingVersion":"4.14.8","phase":"Upgraded","startTime":"2023-12-01T12:00:00Z","completeTime":"2023-12-01T14:00:00Z","workerStartTime":"2023-12-01T13:00:00Z","workerCompleteTime":"2023-12-01T13:50:00Z"}]}`
		var st upgradev1alpha1.UpgradeConfigStatus
		Expect(json.Unmarshal([]byte(status), &st)).To(Succeed())
		uc.Status = st
		Expect(env.Client.Status().Update(ctx, uc)).To(Succeed())

		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(upgradev1alpha1.GroupVersion.WithKind("UpgradeConfig"))
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(uc), got)).To(Succeed())
		Expect(asJSON(got.Object["status"])).To(MatchJSON(status))

		// `kubectl get upgrade`: the short name resolves, and the table has MUO's
		// columns filled from history[0] and its newest condition.
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "upgradeconfigs.upgrade.managed.openshift.io"}, crd)).To(Succeed())
		Expect(crd.Spec.Names.ShortNames).To(Equal([]string{"upgrade"}))
		Expect(crd.Spec.Scope).To(Equal(apiextensionsv1.NamespaceScoped))

		table := getTable(ctx, ns, uc.Name)
		var cols, wide []string
		for _, c := range table.ColumnDefinitions {
			if c.Priority == 0 {
				cols = append(cols, c.Name)
			} else {
				wide = append(wide, c.Name)
			}
		}
		// MUO's columns, and like MUO's CRD no Age column; Upshift's
		// preflight report only with -o wide.
		Expect(cols).To(Equal([]string{"Name", "desired_version", "phase", "stage", "status", "reason", "message"}))
		Expect(wide).To(Equal([]string{"findings", "workers_eta"}))
		Expect(table.Rows).To(HaveLen(1))
		Expect(table.Rows[0].Cells[1:7]).To(Equal([]any{"4.14.15", "Upgrading", "ControlPlaneUpgraded", "False", "ControlPlaneUpgraded not done", "ControlPlaneUpgraded still in progress"}))
	})

	It("accepts and keeps Upshift's additive fields", func(ctx context.Context) {
		ns := newNamespace(ctx)
		u := fromYAML(muoExample+`
  paused: true
  maintenanceWindows:
  - days: [Saturday, Sunday]
    start: "22:00"
    end: "02:00"
    timeZone: Europe/Berlin
  - start: "00:00"
    end: "00:00"
  deadlines:
    start: {minutes: 60, policy: fail}
    controlPlane: {policy: pause}
    workers: {minutes: 0}
    postCheck: {minutes: 30, policy: alert}
`, ns)
		sent := u.DeepCopy()
		Expect(env.Client.Create(ctx, u)).To(Succeed())
		typed := &upgradev1alpha1.UpgradeConfig{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(u), typed)).To(Succeed())
		b, _ := json.Marshal(typed.Spec)
		var roundTripped map[string]any
		Expect(json.Unmarshal(b, &roundTripped)).To(Succeed())
		Expect(asJSON(roundTripped)).To(MatchJSON(asJSON(sent.Object["spec"])))
	})
})

func getTable(ctx context.Context, ns, name string) *metav1.Table {
	hc, err := rest.HTTPClientFor(env.Config)
	Expect(err).NotTo(HaveOccurred())
	url := fmt.Sprintf("%s/apis/%s/namespaces/%s/upgradeconfigs/%s", strings.TrimSuffix(env.Config.Host, "/"), upgradev1alpha1.GroupVersion, ns, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	Expect(err).NotTo(HaveOccurred())
	// What kubectl asks for to print `kubectl get`.
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK), string(raw))
	table := &metav1.Table{}
	Expect(json.Unmarshal(raw, table)).To(Succeed())
	return table
}

func asJSON(v any) string {
	GinkgoHelper()
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}
