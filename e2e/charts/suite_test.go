// Package charts installs every Helm chart of the repository with the real
// helm binary into a real control plane (kube-controller-manager, the
// scheduler and kwok nodes), into namespaces that enforce the restricted Pod
// Security Standard: the charts' Deployments must be admitted, scheduled and
// become available; `helm upgrade` to a chart whose CRD gained a field must
// keep existing objects and serve the field; `helm uninstall` must leave the
// CRDs and their objects. The umbrella chart installs its default components
// the same way. New charts under charts/ are picked up without a change here.
package charts

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/mod/semver"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/testenv"
)

func TestCharts(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "charts e2e")
}

var (
	env  *testenv.Env
	helm *framework.Helm
	// unstampedAPIServer: the control plane's kube-apiserver reports a
	// version that is not SemVer (built without a version stamp), which
	// Helm cannot check a chart's kubeVersion against.
	unstampedAPIServer bool
	// suiteStart times the whole suite for the log.
	suiteStart time.Time
)

var _ = BeforeSuite(func(ctx context.Context) {
	suiteStart = time.Now()
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	// The charts install Upshift's CRDs themselves.
	cluster, err := framework.StartCluster(ctx, framework.ClusterOptions{
		ControlPlane: testenv.Options{ControllerManager: true, Scheduler: true, Kwok: true, WithoutUpshiftCRDs: true}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
	env = cluster.Env
	helm, err = framework.NewHelm(env.KubeconfigPath, GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	cs, err := env.Clientset()
	Expect(err).NotTo(HaveOccurred())
	version, err := cs.Discovery().ServerVersion()
	Expect(err).NotTo(HaveOccurred())
	unstampedAPIServer = !semver.IsValid(version.GitVersion)
	if unstampedAPIServer {
		fmt.Fprintf(GinkgoWriter, "kube-apiserver reports version %q: charts are installed without their kubeVersion\n", version.GitVersion)
	}

	// The OpenShift namespaces the charts grant Roles in exist on every
	// OpenShift cluster; a plain control plane has to be given them.
	for _, ns := range openshiftNamespaces {
		Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}

	// Three kwok worker nodes for the Deployments' pods: kwok marks them
	// Ready and runs (pretends to run) what is scheduled on them, without
	// pulling any image.
	for i := range 3 {
		Expect(env.Client.Create(ctx, kwokNode(fmt.Sprintf("worker-%d", i)))).To(Succeed())
	}
	Eventually(func(g Gomega) {
		nodes := &corev1.NodeList{}
		g.Expect(env.Client.List(ctx, nodes)).To(Succeed())
		ready := 0
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && len(n.Spec.Taints) == 0 {
					ready++
				}
			}
		}
		g.Expect(ready).To(Equal(3), "ready, untainted kwok nodes")
	}).WithContext(ctx).WithTimeout(60 * time.Second).Should(Succeed())
})

var _ = AfterSuite(func() {
	fmt.Fprintf(os.Stderr, "charts e2e: suite took %s\n", time.Since(suiteStart).Round(100*time.Millisecond))
})

// openshiftNamespaces are the OpenShift namespaces some chart has a Role in.
var openshiftNamespaces = []string{"openshift-machine-config-operator", "openshift-machine-api", "openshift-azure-operator"}

func kwokNode(name string) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("8"),
		corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok"},
			Annotations: map[string]string{testenv.KwokNodeAnnotation: testenv.KwokNodeValue},
		},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res, Phase: corev1.NodeRunning},
	}
}
