package testenv_test

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/testenv"
)

func kwokNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Annotations: map[string]string{testenv.KwokNodeAnnotation: testenv.KwokNodeValue},
		Labels:      map[string]string{"kubernetes.io/hostname": name},
	}}
}

func nodeReady(ctx context.Context, name string) func(Gomega) {
	return func(g Gomega) {
		n := &corev1.Node{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
		var ready corev1.ConditionStatus
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status
			}
		}
		g.Expect(ready).To(Equal(corev1.ConditionTrue), "node %s Ready", name)
	}
}

var _ = Describe("the test control plane", func() {
	It("runs Alertmanager with the environment (Options.Alertmanager)", func(ctx SpecContext) {
		Expect(env.Alertmanager).NotTo(BeNil())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, env.Alertmanager.URL+"/api/v2/status", nil)
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		var status struct {
			Cluster struct {
				Status string `json:"status"`
			} `json:"cluster"`
			VersionInfo map[string]string `json:"versionInfo"`
		}
		Expect(json.NewDecoder(resp.Body).Decode(&status)).To(Succeed())
		// A lone instance: gossip is off, as StartAlertmanager asks.
		Expect(status.Cluster.Status).To(Equal("disabled"))
		Expect("alertmanager-v" + status.VersionInfo["version"]).To(Equal(testenv.AlertmanagerBinary))
	})

	It("runs a Job to completion on a kwok node (kube-controller-manager + kwok)", func(ctx SpecContext) {
		Expect(env.Client.Create(ctx, kwokNode("job-node"))).To(Succeed())
		Eventually(nodeReady(ctx, "job-node")).WithTimeout(30 * time.Second).Should(Succeed())

		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				NodeName:      "job-node",
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "hello", Image: "hello"}},
			}}},
		}
		Expect(env.Client.Create(ctx, job)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Status.Conditions).To(ContainElement(And(
				HaveField("Type", batchv1.JobComplete), HaveField("Status", corev1.ConditionTrue))))
		}).WithTimeout(60 * time.Second).Should(Succeed())
	})

	It("schedules pods without a nodeName (kube-scheduler)", func(ctx SpecContext) {
		Expect(env.Client.Create(ctx, kwokNode("sched-node"))).To(Succeed())
		Eventually(nodeReady(ctx, "sched-node")).WithTimeout(30 * time.Second).Should(Succeed())
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "unscheduled", Namespace: "default"},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"kubernetes.io/hostname": "sched-node"},
				Containers:   []corev1.Container{{Name: "c", Image: "c"}},
			},
		}
		Expect(env.Client.Create(ctx, pod)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.Spec.NodeName).To(Equal("sched-node"))
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		}).WithTimeout(60 * time.Second).Should(Succeed())
	})

	It("lets a PodDisruptionBudget block an eviction with 429 (disruption controller)", func(ctx SpecContext) {
		Expect(env.CreateNamespace(ctx, "pdb")).To(Succeed())
		Expect(env.Client.Create(ctx, kwokNode("pdb-node"))).To(Succeed())
		Eventually(nodeReady(ctx, "pdb-node")).WithTimeout(30 * time.Second).Should(Succeed())
		for _, name := range []string{"guarded-0", "guarded-1", "free-0"} {
			app := "guarded"
			if name == "free-0" {
				app = "free"
			}
			Expect(env.Client.Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "pdb", Labels: map[string]string{"app": app}},
				Spec:       corev1.PodSpec{NodeName: "pdb-node", Containers: []corev1.Container{{Name: "c", Image: "c"}}},
			})).To(Succeed())
		}
		strict := pdb("guarded", 2) // minAvailable equals the pods' count
		loose := pdb("free", 0)
		Expect(env.Client.Create(ctx, strict)).To(Succeed())
		Expect(env.Client.Create(ctx, loose)).To(Succeed())
		// Wait until the disruption controller has computed both budgets, so
		// the 429 below comes from the budget and not from a stale status.
		Eventually(func(g Gomega) {
			for _, p := range []*policyv1.PodDisruptionBudget{strict, loose} {
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
				g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
			}
			g.Expect(strict.Status.CurrentHealthy).To(BeEquivalentTo(2))
			g.Expect(loose.Status.DisruptionsAllowed).To(BeEquivalentTo(1))
		}).WithTimeout(60 * time.Second).Should(Succeed())

		evict := func(name string) error {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "pdb"}}
			return env.Client.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{})
		}
		err := evict("guarded-0")
		Expect(apierrors.IsTooManyRequests(err)).To(BeTrue(), "want 429, got %v", err)
		// The same request against a budget with room succeeds: the 429 above
		// was the budget's doing.
		Expect(evict("free-0")).To(Succeed())
	})

	It("installs the OpenShift and Upshift CRDs", func(ctx SpecContext) {
		for _, list := range []client.ObjectList{
			&configv1.ClusterVersionList{}, &configv1.ClusterOperatorList{},
			&mcfgv1.MachineConfigPoolList{}, &mcfgv1.MachineConfigList{},
			&updatev1alpha1.UpgradeStatusList{}, &updatev1alpha1.NodeProgressInsightList{},
		} {
			Expect(env.Client.List(ctx, list)).To(Succeed(), "%T", list)
		}
	})

	It("authenticates as a ServiceAccount with exactly its RBAC", func(ctx SpecContext) {
		Expect(env.CreateNamespace(ctx, "sa")).To(Succeed())
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "sa"}}
		Expect(env.Client.Create(ctx, sa)).To(Succeed())
		Expect(env.Client.Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "sa"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}},
		})).To(Succeed())
		Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "sa"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "reader", Namespace: "sa"}},
		})).To(Succeed())

		cfg, err := env.ServiceAccountConfig(ctx, "sa", "reader")
		Expect(err).NotTo(HaveOccurred())
		c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			return c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("sa"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		err = c.List(ctx, &corev1.SecretList{}, client.InNamespace("sa"))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want 403 listing secrets, got %v", err)
	})
})

func pdb(app string, minAvailable int) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: "pdb"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(int32(minAvailable))),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
}
