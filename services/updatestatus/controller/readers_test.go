package controller_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/services/updatestatus/controller"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

// What the controller reads besides its informers: the MCO Deployment's
// image (one GET) and alerts (an HTTP API on an interval). A control plane
// of its own, so that this cluster's ClusterVersion and operators are not
// the other specs'.
var _ = Describe("what the controller reads beside its informers", Ordered, func() {
	var (
		c       client.Client
		prom    *fakePrometheus
		started = time.Now().Add(-20 * time.Minute).Truncate(time.Second)
	)
	const (
		mcoNamespace = "openshift-machine-config-operator"
		imageA       = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:aaaa"
		imageB       = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:bbbb"
		imageC       = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:cccc"
	)

	BeforeAll(func(ctx SpecContext) {
		cluster, err := simcluster.Start(ctx, simcluster.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cluster.Stop)
		own := cluster.Env
		c = own.Client
		prom = newFakePrometheus()
		DeferCleanup(prom.Close)

		alertsClient, err := alerts.New(alerts.Config{URL: prom.URL, Timeout: time.Second})
		Expect(err).NotTo(HaveOccurred())
		stop := startReconciler(context.WithoutCancel(ctx), own, &controller.Reconciler{Alerts: &controller.Alerts{
			Client: alertsClient, URL: prom.URL, Interval: 200 * time.Millisecond,
		}}, nil, nil, nil)
		DeferCleanup(stop)

		Expect(own.CreateNamespace(ctx, mcoNamespace)).To(Succeed())
		Expect(c.Create(ctx, mcoDeployment(mcoNamespace, imageA))).To(Succeed())
		createClusterOperator(ctx, c, "etcd", toVersion, started.Add(5*time.Minute))
		createClusterOperator(ctx, c, "machine-config", toVersion, started.Add(10*time.Minute))
		setMachineConfigOperator(ctx, c, imageA, false)
		createClusterVersion(ctx, c, started)
	}, NodeTimeout(2*time.Minute))

	status := func(ctx context.Context, g Gomega) *updatev1alpha1.UpgradeStatus {
		us := &updatev1alpha1.UpgradeStatus{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: updatev1alpha1.UpgradeStatusName}, us)).To(Succeed())
		g.Expect(us.Status.ControlPlane).NotTo(BeNil())
		return us
	}
	machineConfigUpdating := func(us *updatev1alpha1.UpgradeStatus) *metav1.Condition {
		for _, co := range us.Status.ControlPlane.ClusterOperators {
			if co.Name == "machine-config" {
				return meta.FindStatusCondition(co.Conditions, updatev1alpha1.ConditionUpdating)
			}
		}
		return nil
	}

	It("counts machine-config as updated when it runs the Deployment's image", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			us := status(ctx, g)
			g.Expect(us.Status.ControlPlane.ClusterVersion.Completion).To(BeEquivalentTo(100))
			g.Expect(machineConfigUpdating(us)).To(HaveField("Reason", updatev1alpha1.ReasonUpdated))
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("follows a new MCO image (a multi-arch migration) when the operator changes", func(ctx SpecContext) {
		setDeploymentImage(ctx, c, mcoNamespace, imageB)
		// The new MCO pod starts: the operator reports Progressing, still
		// with the old image.
		setMachineConfigOperator(ctx, c, imageA, true)
		Eventually(func(g Gomega) {
			us := status(ctx, g)
			g.Expect(us.Status.ControlPlane.ClusterVersion.Completion).To(BeEquivalentTo(50))
			g.Expect(machineConfigUpdating(us)).To(HaveField("Reason", updatev1alpha1.ReasonProgressing))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		setMachineConfigOperator(ctx, c, imageB, false)
		Eventually(func(g Gomega) {
			g.Expect(status(ctx, g).Status.ControlPlane.ClusterVersion.Completion).To(BeEquivalentTo(100))
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("treats an unreadable image as unknown, not as outdated", func(ctx SpecContext) {
		// The operator reports an image no Deployment runs: outdated.
		setMachineConfigOperator(ctx, c, imageC, true)
		Eventually(func(g Gomega) {
			g.Expect(status(ctx, g).Status.ControlPlane.ClusterVersion.Completion).To(BeEquivalentTo(50))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		// Then the Deployment cannot be read: the image is unknown, and the
		// operator's version decides (neither the last image read nor
		// "outdated").
		Expect(c.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: mcoNamespace, Name: "machine-config-operator"}})).To(Succeed())
		setMachineConfigOperator(ctx, c, imageC, false)
		Eventually(func(g Gomega) {
			us := status(ctx, g)
			g.Expect(us.Status.ControlPlane.ClusterVersion.Completion).To(BeEquivalentTo(100))
			g.Expect(machineConfigUpdating(us)).To(HaveField("Reason", updatev1alpha1.ReasonUpdated))
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("turns a firing alert into a health insight and says alerts are available", func(ctx SpecContext) {
		prom.respond(http.StatusOK, promv1.Alert{
			Labels:      model.LabelSet{"alertname": "KubeNodeNotReady", "severity": "critical", "namespace": "openshift-monitoring"},
			Annotations: model.LabelSet{"summary": "Node is not ready.", "description": "worker-3 has been unready for more than 15 minutes."},
			State:       promv1.AlertStateFiring, ActiveAt: started.Add(time.Minute),
		})
		Eventually(func(g Gomega) {
			us := status(ctx, g)
			cond := meta.FindStatusCondition(us.Status.Conditions, updatev1alpha1.ConditionAlertsAvailable)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(us.Status.Health).To(ContainElement(And(
				HaveField("Impact.Summary", "Alert is firing: Node is not ready."),
				HaveField("Impact.Level", updatev1alpha1.CriticalImpactLevel),
				HaveField("Scope.Type", updatev1alpha1.ScopeTypeCluster),
			)))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		// The same alert read again is no change. Comparing two reads of
		// it once panicked on its time (the poller runs in this process:
		// the suite would die here).
		reads := prom.readCount()
		Eventually(prom.readCount).WithTimeout(5 * time.Second).Should(BeNumerically(">=", reads+2))
		Expect(status(ctx, Default).Status.Health).To(ContainElement(HaveField("Impact.Summary", "Alert is firing: Node is not ready.")))
	})

	It("reports an unreachable alerts API as a condition and leaves the alerts out", func(ctx SpecContext) {
		prom.respond(http.StatusServiceUnavailable)
		Eventually(func(g Gomega) {
			us := status(ctx, g)
			cond := meta.FindStatusCondition(us.Status.Conditions, updatev1alpha1.ConditionAlertsAvailable)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(updatev1alpha1.ReasonCannotReadAlerts))
			g.Expect(cond.Message).To(And(ContainSubstring(prom.URL), ContainSubstring("503")))
			g.Expect(us.Status.Health).NotTo(ContainElement(HaveField("Impact.Summary", ContainSubstring("Alert is firing"))))
			// The rest of the status is still current.
			g.Expect(meta.IsStatusConditionTrue(us.Status.Conditions, updatev1alpha1.ConditionStatusAvailable)).To(BeTrue())
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("reads alerts again once the API is back", func(ctx SpecContext) {
		prom.respond(http.StatusOK)
		Eventually(func(g Gomega) {
			us := status(ctx, g)
			g.Expect(meta.IsStatusConditionTrue(us.Status.Conditions, updatev1alpha1.ConditionAlertsAvailable)).To(BeTrue())
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})
})

func mcoDeployment(namespace, image string) *appsv1.Deployment {
	labels := map[string]string{"k8s-app": "machine-config-operator"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "machine-config-operator"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "kube-rbac-proxy", Image: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:proxy"},
					{Name: "machine-config-operator", Image: image},
				}},
			},
		},
	}
}

func setDeploymentImage(ctx context.Context, c client.Client, namespace, image string) {
	d := &appsv1.Deployment{}
	Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "machine-config-operator"}, d)).To(Succeed())
	before := d.DeepCopy()
	d.Spec.Template.Spec.Containers[1].Image = image
	Expect(c.Patch(ctx, d, client.MergeFrom(before))).To(Succeed())
}

// setMachineConfigOperator makes the machine-config operator report the
// target version and image, Progressing or not, as the MCO does.
func setMachineConfigOperator(ctx context.Context, c client.Client, image string, progressing bool) {
	co := &configv1.ClusterOperator{}
	Expect(c.Get(ctx, client.ObjectKey{Name: "machine-config"}, co)).To(Succeed())
	co.Status.Versions = []configv1.OperandVersion{{Name: "operator", Version: toVersion}, {Name: "operator-image", Version: image}}
	status, msg := configv1.ConditionFalse, "Cluster version is "+toVersion
	if progressing {
		status, msg = configv1.ConditionTrue, "Working towards "+toVersion
	}
	for i := range co.Status.Conditions {
		if co.Status.Conditions[i].Type == configv1.OperatorProgressing {
			co.Status.Conditions[i].Status, co.Status.Conditions[i].Message = status, msg
			co.Status.Conditions[i].LastTransitionTime = metav1.Now()
		}
	}
	Expect(c.Status().Update(ctx, co)).To(Succeed())
}

// fakePrometheus serves /api/v1/alerts as Prometheus does, with the alerts
// and status code of the last respond call.
type fakePrometheus struct {
	*httptest.Server
	mu     sync.Mutex
	code   int
	alerts []promv1.Alert
	reads  int // alert reads answered
}

func newFakePrometheus() *fakePrometheus {
	p := &fakePrometheus{code: http.StatusOK}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/alerts" {
			http.NotFound(w, r)
			return
		}
		p.mu.Lock()
		code, as := p.code, p.alerts
		p.reads++
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if code != http.StatusOK {
			_, _ = w.Write([]byte(`{"status":"error","errorType":"unavailable","error":"` + strings.ToLower(http.StatusText(code)) + `"}`))
			return
		}
		type alert struct {
			Labels      model.LabelSet    `json:"labels"`
			Annotations model.LabelSet    `json:"annotations"`
			State       promv1.AlertState `json:"state"`
			ActiveAt    time.Time         `json:"activeAt"`
			Value       string            `json:"value"`
		}
		out := []alert{}
		for _, a := range as {
			out = append(out, alert{a.Labels, a.Annotations, a.State, a.ActiveAt, "1e+00"})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"alerts": out}})
	}))
	return p
}

func (p *fakePrometheus) readCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reads
}

func (p *fakePrometheus) respond(code int, as ...promv1.Alert) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.code, p.alerts = code, as
}
