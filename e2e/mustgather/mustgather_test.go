package mustgather

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/mustgather"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocpsim"
)

const (
	namespace  = "upshift"
	muoNS      = "openshift-managed-upgrade-operator"
	podName    = "usc-update-status-controller-7d9f-abcde"
	container  = "controller"
	nodeName   = "gather-node"
	currentLog = "current log line of the controller\n"
	prevLog    = "previous log line, before the restart\n"
	metricLine = "upshift_mustgather_e2e_metric 42\n"
)

// sentinels are values that must never be in an archive, raw or encoded:
// Secrets' data, and the literal environment values of pods and
// Deployments.
var sentinels = map[string]string{
	"pull secret auth": "mg-sentinel-pull-auth-4b1e9c",
	"component secret": "mg-sentinel-tls-key-8f2a71",
	"muo secret":       "mg-sentinel-muo-token-19cd03",
	"pod env":          "mg-sentinel-pod-env-5e6f70",
	"deployment env":   "mg-sentinel-deploy-env-a1b2c3",
	"hook env":         "mg-sentinel-hook-env-d4e5f6",
}

var (
	env        *testenv.Env
	bins       map[string]string
	adminDir   string
	adminSum   *mustgather.Summary
	limitedDir string
	limitedSum *mustgather.Summary
	limitedErr error
)

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	bins, err = framework.BuildBinaries(GinkgoT().TempDir(),
		"github.com/upshift-io/upshift/cmd/kubectl-upshift", "github.com/upshift-io/upshift/cmd/upshift-must-gather")
	Expect(err).NotTo(HaveOccurred())
	cluster, err := framework.StartCluster(ctx, framework.ClusterOptions{
		Seed: &ocpsim.Topology{Version: "4.16.1", Masters: 3, Workers: 2},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
	env = cluster.Env

	ip := hostIP()
	kubelet := startKubelet(ip)
	DeferCleanup(kubelet.Close)
	metrics := startMetrics(ip)
	DeferCleanup(metrics.Close)

	seedUpshift(ctx)
	seedSecrets(ctx)
	seedComponentPod(ctx, ip, port(kubelet.URL), port(metrics.URL))

	adminDir = filepath.Join(GinkgoT().TempDir(), "must-gather.admin")
	adminSum, err = mustgather.Gather(ctx, mustgather.Options{Config: env.Config, Dir: adminDir, Progress: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	Expect(mustgather.WriteTarGz(adminDir, adminDir+".tar.gz")).To(Succeed())

	limited := readerOfUpshiftOnly(ctx)
	limitedDir = filepath.Join(GinkgoT().TempDir(), "must-gather.limited")
	limitedSum, limitedErr = mustgather.Gather(ctx, mustgather.Options{Config: limited, Dir: limitedDir, Namespaces: []string{namespace}, Progress: GinkgoWriter})
})

var _ = Describe("an archive gathered as cluster-admin", func() {
	It("holds every object of every Upshift kind and every platform kind the components read", func(ctx SpecContext) {
		for _, path := range []string{
			// Upshift's kinds, found through discovery.
			"namespaces/openshift-managed-upgrade-operator/upgrade.managed.openshift.io/upgradeconfigs/managed-upgrade-config.yaml",
			"cluster-scoped-resources/update.upshift.io/upgradestatuses/cluster.yaml",
			"cluster-scoped-resources/update.upshift.io/nodeprogressinsights/" + nodeName + ".yaml",
			"namespaces/upshift/nodegate.upshift.io/mutexrules/drain-hook.yaml",
			"namespaces/upshift/nodegate.upshift.io/mutextargets/workers.yaml",
			"namespaces/upshift/nodegate.upshift.io/mutexrunconfigs/workers-run.yaml",
			"cluster-scoped-resources/aromonitor.upshift.io/monitorconfigs/cluster.yaml",
			// The platform's.
			"cluster-scoped-resources/config.openshift.io/clusterversions/version.yaml",
			"cluster-scoped-resources/config.openshift.io/clusteroperators/machine-config.yaml",
			"cluster-scoped-resources/config.openshift.io/infrastructures/cluster.yaml",
			"cluster-scoped-resources/machineconfiguration.openshift.io/machineconfigpools/worker.yaml",
			"cluster-scoped-resources/machineconfiguration.openshift.io/machineconfigpools/master.yaml",
			"cluster-scoped-resources/core/nodes/" + nodeName + ".yaml",
			"namespaces/openshift-machine-api/machine.openshift.io/controlplanemachinesets/cluster.yaml",
			"cluster-scoped-resources/aro.openshift.io/clusters/cluster.yaml",
			// The component's namespace.
			"namespaces/upshift/upshift.yaml",
			"namespaces/upshift/pods/" + podName + "/" + podName + ".yaml",
			"namespaces/upshift/apps/deployments/usc-update-status-controller.yaml",
			"namespaces/upshift/coordination.k8s.io/leases/upshift-update-status-controller.yaml",
			"namespaces/openshift-managed-upgrade-operator/core/configmaps/managed-upgrade-operator-config.yaml",
			"namespaces/upshift/core/events.yaml",
			"namespaces/openshift-machine-api/core/events.yaml",
			"namespaces/openshift-managed-upgrade-operator/core/events.yaml",
			mustgather.SummaryFile, mustgather.TimestampFile,
		} {
			Expect(filepath.Join(adminDir, path)).To(BeARegularFile())
		}
		// Every seeded Machine and MachineSet, and every Node.
		for gr, n := range map[string]int{
			"namespaces/openshift-machine-api/machine.openshift.io/machines":    countOf(ctx, "machines.machine.openshift.io"),
			"namespaces/openshift-machine-api/machine.openshift.io/machinesets": countOf(ctx, "machinesets.machine.openshift.io"),
			"cluster-scoped-resources/core/nodes":                               countOf(ctx, "nodes"),
		} {
			Expect(n).To(BeNumerically(">", 0), gr)
			Expect(filepath.Join(adminDir, gr)).To(haveFiles(n), gr)
		}
		// Objects read back as what they were.
		var uc unstructured.Unstructured
		readYAML("namespaces/openshift-managed-upgrade-operator/upgrade.managed.openshift.io/upgradeconfigs/managed-upgrade-config.yaml", &uc.Object)
		Expect(uc.GetKind()).To(Equal("UpgradeConfig"))
		version, _, _ := unstructured.NestedString(uc.Object, "spec", "desired", "version")
		Expect(version).To(Equal("4.16.2"))
		var events unstructured.UnstructuredList
		readYAML("namespaces/upshift/core/events.yaml", &events.Object)
		Expect(events.Object["kind"]).To(Equal("EventList"))
		Expect(events.Object["items"]).To(HaveLen(1))
	})

	It("holds the component's logs, current and before its restart, and its metrics", func() {
		dir := filepath.Join(adminDir, "namespaces/upshift/pods", podName, container, container, "logs")
		Expect(os.ReadFile(filepath.Join(dir, "current.log"))).To(BeEquivalentTo(currentLog))
		Expect(os.ReadFile(filepath.Join(dir, "previous.log"))).To(BeEquivalentTo(prevLog))
		Expect(os.ReadFile(filepath.Join(adminDir, mustgather.MetricsPath(namespace, podName)))).To(BeEquivalentTo(metricLine))
	})

	It("holds no Secret value, no literal environment value and no MachineConfig, in any file or in the .tar.gz", func() {
		files := map[string][]byte{}
		Expect(filepath.WalkDir(adminDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			raw, err := os.ReadFile(p)
			files[p] = raw
			return err
		})).To(Succeed())
		for name, raw := range untar(adminDir + ".tar.gz") {
			files["tar:"+name] = raw
		}
		Expect(len(files)).To(BeNumerically(">", 50))
		forbidden := forbiddenStrings()
		for path, raw := range files {
			for what, s := range forbidden {
				Expect(bytes.Contains(raw, []byte(s))).To(BeFalse(), "%s holds %s (%q)", path, what, s)
			}
			Expect(path).NotTo(ContainSubstring("machineconfigs"))
			Expect(path).NotTo(ContainSubstring("/core/secrets/"))
		}
		Expect(files).To(HaveKey(filepath.Join(adminDir, "namespaces/upshift/pods", podName, container, container, "logs", "current.log")))
		Expect(files).To(HaveKey("tar:must-gather.admin/" + mustgather.SummaryFile))
		// The Secrets of the component's namespace by name, and nothing of
		// openshift-config's.
		Expect(os.ReadFile(filepath.Join(adminDir, mustgather.SecretNamesPath(namespace)))).To(BeEquivalentTo("usc-metrics-certs\n"))
		Expect(filepath.Join(adminDir, "namespaces/openshift-config")).NotTo(BeADirectory())
		// The environment is there, redacted, references kept.
		var pod corev1.Pod
		readYAML(mustgather.PodPath(namespace, podName), &pod)
		Expect(pod.Spec.Containers[0].Env).To(ConsistOf(
			corev1.EnvVar{Name: "API_TOKEN", Value: mustgather.Redacted},
			corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		))
		// And in a node-gate hook's Job spec.
		var rule unstructured.Unstructured
		readYAML("namespaces/upshift/nodegate.upshift.io/mutexrules/drain-hook.yaml", &rule.Object)
		containers, _, err := unstructured.NestedSlice(rule.Object, "spec", "jobSpec", "template", "spec", "containers")
		Expect(err).NotTo(HaveOccurred())
		Expect(containers).To(ConsistOf(HaveKeyWithValue("env", ConsistOf(map[string]any{"name": "TOKEN", "value": mustgather.Redacted}))))
	})

	It("says in its summary what it gathered and what it could not", func() {
		raw, err := os.ReadFile(filepath.Join(adminDir, mustgather.SummaryFile))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(ContainSubstring("component namespaces: upshift\n"))
		Expect(string(raw)).To(ContainSubstring("upgradeconfigs.upgrade.managed.openshift.io: 1"))
		Expect(string(raw)).To(ContainSubstring("never gathered, by design:"))
		Expect(adminSum.Namespaces).To(Equal([]string{namespace}))
		// As admin on this cluster, nothing is missing.
		Expect(adminSum.Missing).To(BeEmpty())
	})
})

var _ = Describe("the commands", func() {
	It("write the archive the library writes: kubectl upshift must-gather, and the image's gather reading metrics from the pod's IP", func() {
		want := relFiles(adminDir)
		dest := filepath.Join(GinkgoT().TempDir(), "mg-kubectl")
		out, err := exec.Command(bins["kubectl-upshift"], "must-gather", "--kubeconfig="+env.KubeconfigPath,
			"--dest-dir="+dest, "-n", namespace, "--archive").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(string(out)).To(ContainSubstring("wrote " + dest + ".tar.gz"))
		Expect(relFiles(dest)).To(Equal(want))
		Expect(dest + ".tar.gz").To(BeARegularFile())

		// As oc runs it, but with a kubeconfig: the metrics come straight
		// from the pod's IP, not through the apiserver.
		dest = filepath.Join(GinkgoT().TempDir(), "mg-image")
		out, err = exec.Command(bins["upshift-must-gather"], "--kubeconfig="+env.KubeconfigPath, "--dest-dir="+dest).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(relFiles(dest)).To(Equal(relFiles(adminDir, "version")))
		Expect(os.ReadFile(filepath.Join(dest, mustgather.MetricsPath(namespace, podName)))).To(BeEquivalentTo(metricLine))
		Expect(os.ReadFile(filepath.Join(dest, "version"))).To(HavePrefix("upshift-must-gather "))
	})
})

var _ = Describe("an archive gathered by someone who may read Upshift's objects only", func() {
	It("holds them, and names each kind it was refused, without failing", func() {
		Expect(limitedErr).NotTo(HaveOccurred())
		Expect(filepath.Join(limitedDir, "cluster-scoped-resources/update.upshift.io/upgradestatuses/cluster.yaml")).To(BeARegularFile())
		Expect(filepath.Join(limitedDir, "cluster-scoped-resources/core/nodes")).NotTo(BeADirectory())
		missing := map[string]string{}
		for _, m := range limitedSum.Missing {
			missing[m.What] = m.Why
		}
		Expect(missing).To(HaveKeyWithValue("nodes", HavePrefix("forbidden: ")))
		Expect(missing).To(HaveKeyWithValue("clusterversions.config.openshift.io", HavePrefix("forbidden: ")))
		Expect(missing).To(HaveKeyWithValue("secret names in upshift", HavePrefix("forbidden: ")))
		raw, err := os.ReadFile(filepath.Join(limitedDir, mustgather.SummaryFile))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(MatchRegexp(`(?m)^  nodes: forbidden: nodes is forbidden: User "system:serviceaccount:upshift:upshift-reader" cannot list resource "nodes"`))
	})
})

// forbiddenStrings are the sentinels and their base64 forms, and the base64
// of each Secret value as the apiserver stores it.
func forbiddenStrings() map[string]string {
	out := map[string]string{}
	for what, s := range sentinels {
		out[what] = s
		for enc, e := range map[string]*base64.Encoding{"std": base64.StdEncoding, "raw": base64.RawStdEncoding, "url": base64.URLEncoding} {
			out[what+" as base64 "+enc] = e.EncodeToString([]byte(s))
		}
	}
	out["pull secret as stored"] = base64.StdEncoding.EncodeToString(pullSecret())
	return out
}

func pullSecret() []byte {
	auth := base64.StdEncoding.EncodeToString([]byte("user:" + sentinels["pull secret auth"]))
	return []byte(`{"auths":{"cloud.openshift.com":{"auth":"` + sentinels["pull secret auth"] + `"},"quay.io":{"auth":"` + auth + `"}}}`)
}

// seedUpshift creates one object of every Upshift kind, ARO's Cluster, and
// what sits beside them.
func seedUpshift(ctx context.Context) {
	for _, ns := range []string{namespace, muoNS} {
		Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	for _, doc := range []string{`
apiVersion: upgrade.managed.openshift.io/v1alpha1
kind: UpgradeConfig
metadata: {name: managed-upgrade-config, namespace: openshift-managed-upgrade-operator}
spec: {type: OSD, upgradeAt: "2026-12-02T03:00:00Z", PDBForceDrainTimeout: 60, desired: {version: 4.16.2, channel: stable-4.16}}
`, `
apiVersion: update.upshift.io/v1alpha1
kind: UpgradeStatus
metadata: {name: cluster}
`, `
apiVersion: update.upshift.io/v1alpha1
kind: NodeProgressInsight
metadata: {name: ` + nodeName + `}
`, `
apiVersion: nodegate.upshift.io/v1alpha1
kind: MutexRule
metadata: {name: drain-hook, namespace: upshift}
spec:
  jobName: drain-hook
  jobNamespace: upshift
  jobSpec:
    template:
      spec:
        restartPolicy: Never
        containers: [{name: hook, image: x, env: [{name: TOKEN, value: ` + sentinels["hook env"] + `}]}]
`, `
apiVersion: nodegate.upshift.io/v1alpha1
kind: MutexTarget
metadata: {name: workers, namespace: upshift}
spec: {machineConfigPools: [worker]}
`, `
apiVersion: nodegate.upshift.io/v1alpha1
kind: MutexRunConfig
metadata: {name: workers-run, namespace: upshift}
spec: {mutexTargets: [{name: workers}]}
`, `
apiVersion: aromonitor.upshift.io/v1alpha1
kind: MonitorConfig
metadata: {name: cluster}
`, `
apiVersion: v1
kind: ConfigMap
metadata: {name: managed-upgrade-operator-config, namespace: openshift-managed-upgrade-operator}
data: {config.yaml: "upgradeType: OSD\n"}
`} {
		u := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
		Expect(env.Client.Create(ctx, u)).To(Succeed(), doc)
	}
	aro, err := framework.AROClusterObject()
	Expect(err).NotTo(HaveOccurred())
	Expect(env.Client.Create(ctx, aro)).To(Succeed())
	Expect(env.Client.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "upshift-update-status-controller"}})).To(Succeed())
	for _, ns := range []string{namespace, "openshift-machine-api", muoNS} {
		Expect(env.Client.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: "gather-event"},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "anything"},
			Reason:         "Gathered", Message: "an event in " + ns, Type: corev1.EventTypeNormal,
		})).To(Succeed())
	}
}

// seedSecrets creates Secrets holding the sentinels where the components
// read theirs: the pull secret, the component's namespace, MUO's.
func seedSecrets(ctx context.Context) {
	Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-config"}}))).To(Succeed())
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-config", Name: "pull-secret"},
			Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: pullSecret()}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "usc-metrics-certs",
			// kubectl apply keeps the applied object, data and all, here.
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"tls.key":"` + sentinels["component secret"] + `"}}`}},
			Type: corev1.SecretTypeOpaque, StringData: map[string]string{"tls.key": sentinels["component secret"]}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: muoNS, Name: "ocm-token"},
			StringData: map[string]string{"token": sentinels["muo secret"]}},
	} {
		Expect(env.Client.Create(ctx, s)).To(Succeed())
	}
}

// seedComponentPod creates a Deployment and the pod of a component as its
// chart would, on a Node whose kubelet is the test's server, with a
// container restarted once, its metrics served at ip:metricsPort.
func seedComponentPod(ctx context.Context, ip string, kubeletPort, metricsPort int32) {
	labels := map[string]string{"app.kubernetes.io/part-of": "upshift", "app.kubernetes.io/name": "update-status-controller"}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
	Expect(env.Client.Create(ctx, node)).To(Succeed())
	node.Status = corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: kubeletPort}},
	}
	Expect(env.Client.Status().Update(ctx, node)).To(Succeed())
	Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "default"}})).To(Succeed())

	spec := corev1.PodSpec{
		NodeName: nodeName,
		Containers: []corev1.Container{{
			Name: container, Image: "ghcr.io/upshift-io/update-status-controller:v0",
			Args:  []string{"--metrics-secure=false", fmt.Sprintf("--metrics-bind-address=:%d", metricsPort)},
			Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: metricsPort}},
			Env: []corev1.EnvVar{
				{Name: "API_TOKEN", Value: sentinels["pod env"]},
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			},
		}},
	}
	deploy := &unstructured.Unstructured{}
	deployYAML := fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata:
  name: usc-update-status-controller
  namespace: upshift
  labels: {app.kubernetes.io/part-of: upshift}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{"env":"%[1]s"}'}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: update-status-controller}}
  template:
    metadata: {labels: {app.kubernetes.io/name: update-status-controller}}
    spec: {containers: [{name: controller, image: x, env: [{name: HTTPS_PROXY, value: "http://u:%[1]s@proxy:3128"}]}]}
`, sentinels["deployment env"])
	Expect(yaml.Unmarshal([]byte(deployYAML), &deploy.Object)).To(Succeed())
	Expect(env.Client.Create(ctx, deploy)).To(Succeed())

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: podName, Labels: labels}, Spec: spec}
	Expect(env.Client.Create(ctx, pod)).To(Succeed())
	now := metav1.Now()
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: ip, HostIPs: []corev1.HostIP{{IP: ip}},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: container, Ready: true, RestartCount: 1, Image: spec.Containers[0].Image, ImageID: "sha256:0",
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, StartedAt: now, FinishedAt: now}},
		}},
	}
	Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
}

// readerOfUpshiftOnly is a ServiceAccount that may list Upshift's kinds and
// pods, and nothing else.
func readerOfUpshiftOnly(ctx context.Context) *rest.Config {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "upshift-reader"}}
	Expect(env.Client.Create(ctx, sa)).To(Succeed())
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "upshift-reader"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"update.upshift.io", "nodegate.upshift.io", "aromonitor.upshift.io", "upgrade.managed.openshift.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
	}}
	Expect(env.Client.Create(ctx, role)).To(Succeed())
	Expect(env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "upshift-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: sa.Name}},
	})).To(Succeed())
	cfg, err := env.ServiceAccountConfig(ctx, namespace, sa.Name)
	Expect(err).NotTo(HaveOccurred())
	return cfg
}

// startKubelet serves container logs as a kubelet does, to the apiserver
// (which does not verify a kubelet's certificate unless told a CA).
func startKubelet(ip string) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/containerLogs/"+namespace+"/"+podName+"/"+container, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("previous") == "true" {
			_, _ = io.WriteString(w, prevLog)
			return
		}
		_, _ = io.WriteString(w, currentLog)
	})
	s := httptest.NewUnstartedServer(mux)
	s.Listener = listen(ip)
	s.TLS = &tls.Config{}
	s.StartTLS()
	return s
}

// startMetrics serves the component's /metrics over plain HTTP.
func startMetrics(ip string) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, metricLine) })
	s := httptest.NewUnstartedServer(mux)
	s.Listener = listen(ip)
	s.Start()
	return s
}

func listen(ip string) net.Listener {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	Expect(err).NotTo(HaveOccurred())
	return l
}

// hostIP is an IPv4 address of this machine other than loopback: the
// apiserver's pod proxy refuses loopback and link-local pod IPs.
func hostIP() string {
	addrs, err := net.InterfaceAddrs()
	Expect(err).NotTo(HaveOccurred())
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	Fail("this machine has no IPv4 address other than loopback: the apiserver's pod proxy needs one to reach the test's metrics server")
	return ""
}

func port(url string) int32 {
	_, p, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(url, "https://"), "http://"))
	Expect(err).NotTo(HaveOccurred())
	var n int32
	_, err = fmt.Sscan(p, &n)
	Expect(err).NotTo(HaveOccurred())
	return n
}

func countOf(ctx context.Context, resource string) int {
	list := &unstructured.UnstructuredList{}
	switch resource {
	case "nodes":
		list.SetAPIVersion("v1")
		list.SetKind("NodeList")
	case "machines.machine.openshift.io":
		list.SetAPIVersion("machine.openshift.io/v1beta1")
		list.SetKind("MachineList")
	case "machinesets.machine.openshift.io":
		list.SetAPIVersion("machine.openshift.io/v1beta1")
		list.SetKind("MachineSetList")
	}
	Expect(env.Client.List(ctx, list, client.InNamespace(""))).To(Succeed())
	return len(list.Items)
}

func readYAML(rel string, into any) {
	raw, err := os.ReadFile(filepath.Join(adminDir, rel))
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.Unmarshal(raw, into)).To(Succeed())
}

// haveFiles: the folder holds exactly n files.
func haveFiles(n int) OmegaMatcher {
	return WithTransform(func(dir string) (int, error) {
		entries, err := os.ReadDir(dir)
		return len(entries), err
	}, Equal(n))
}

// relFiles are the files under dir, relative to it, sorted, with extra.
func relFiles(dir string, extra ...string) []string {
	out := append([]string(nil), extra...)
	Expect(filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out = append(out, rel)
		return err
	})).To(Succeed())
	sort.Strings(out)
	return out
}

// untar reads every file of a .tar.gz.
func untar(path string) map[string][]byte {
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	gz, err := gzip.NewReader(f)
	Expect(err).NotTo(HaveOccurred())
	tr := tar.NewReader(gz)
	out := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		Expect(err).NotTo(HaveOccurred())
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		raw, err := io.ReadAll(tr)
		Expect(err).NotTo(HaveOccurred())
		out[hdr.Name] = raw
	}
}
