package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// largeSnapshotWorkers is the size of the offline-mode scale check: a large
// cluster, as big as the controller's own scale target.
const largeSnapshotWorkers = 5000

// largeMockBound is the most TestMockLargeSnapshot allows for one mock-mode
// run (load, assess, render) of the 5,000-worker snapshot in-process. The
// whole command, process start included, must stay under a second on the
// project's 2-core machine (see docs/benchmarks/update-status-controller.md);
// this bound is looser because the test shares the machine with whatever else
// runs, and it is there to catch a return of the slow paths (a decoder or a
// loop several times slower), not to measure. Under the race detector it is
// scaled by raceSlowdown.
const largeMockBound = 3 * time.Second

// writeLargeSnapshot writes largeSnapshot(workers) as the files of a
// --mock-clusterversion snapshot in dir, the way `oc get -o yaml` writes them
// (v1 Lists of objects with their apiVersion and kind), and returns the path
// of its ClusterVersion file. The Nodes get what a kubelet reports beside the
// MCO's annotations (the pressure conditions with heartbeats, addresses, node
// info, capacity), so that the files are as large to read as real ones.
func writeLargeSnapshot(t testing.TB, dir string, workers int) string {
	t.Helper()
	s := largeSnapshot(workers)
	prefix := filepath.Join(dir, fmt.Sprintf("large-%d", workers))

	cv := s.ClusterVersion.DeepCopy()
	cv.APIVersion, cv.Kind = "config.openshift.io/v1", "ClusterVersion"
	writeYAML(t, prefix+"-cv.yaml", cv)

	var cos, pools, configs, nodes []runtime.Object
	for i := range s.ClusterOperators {
		co := s.ClusterOperators[i].DeepCopy()
		co.APIVersion, co.Kind = "config.openshift.io/v1", "ClusterOperator"
		cos = append(cos, co)
	}
	for i := range s.MachineConfigPools {
		p := s.MachineConfigPools[i].DeepCopy()
		p.APIVersion, p.Kind = "machineconfiguration.openshift.io/v1", "MachineConfigPool"
		pools = append(pools, p)
	}
	for i := range s.MachineConfigs {
		mc := s.MachineConfigs[i].DeepCopy()
		mc.APIVersion, mc.Kind = "machineconfiguration.openshift.io/v1", "MachineConfig"
		configs = append(configs, mc)
	}
	for i, n := range s.Nodes {
		nodes = append(nodes, asKubeletReports(n, i, s.Now))
	}
	writeYAML(t, prefix+"-co.yaml", list(cos))
	writeYAML(t, prefix+"-mcp.yaml", list(pools))
	writeYAML(t, prefix+"-mc.yaml", list(configs))
	writeYAML(t, prefix+"-node.yaml", list(nodes))
	return prefix + "-cv.yaml"
}

// asKubeletReports returns a copy of n with what a kubelet and the MCO add to
// a Node of a real cluster.
func asKubeletReports(n *corev1.Node, i int, now time.Time) *corev1.Node {
	n = n.DeepCopy()
	n.APIVersion, n.Kind = "v1", "Node"
	n.UID = types.UID(fmt.Sprintf("4f0c6a52-0000-4000-8000-%012d", i))
	n.ResourceVersion = fmt.Sprint(4865640000 + i)
	n.CreationTimestamp = metav1.NewTime(now.Add(-100 * time.Hour))
	for k, v := range map[string]string{
		"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": "m6a.xlarge", "beta.kubernetes.io/os": "linux",
		"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux",
		"node.kubernetes.io/instance-type": "m6a.xlarge", "topology.kubernetes.io/region": "us-east-2",
		"topology.kubernetes.io/zone": "us-east-2a", "node.openshift.io/os_id": "rhcos",
	} {
		n.Labels[k] = v
	}
	config := n.Annotations["machineconfiguration.openshift.io/desiredConfig"]
	for k, v := range map[string]string{
		"machineconfiguration.openshift.io/controlPlaneTopology":                      "HighlyAvailable",
		"machineconfiguration.openshift.io/desiredDrain":                              "uncordon-" + config,
		"machineconfiguration.openshift.io/lastAppliedDrain":                          "uncordon-" + config,
		"machineconfiguration.openshift.io/lastSyncedControllerConfigResourceVersion": "4865176381",
		"machineconfiguration.openshift.io/reason":                                    "",
		"volumes.kubernetes.io/controller-managed-attach-detach":                      "true",
		"csi.volume.kubernetes.io/nodeid":                                             fmt.Sprintf(`{"ebs.csi.aws.com":"i-0%016x"}`, i),
	} {
		n.Annotations[k] = v
	}
	n.Spec.ProviderID = fmt.Sprintf("aws:///us-east-2a/i-0%016x", i)
	heartbeat := metav1.NewTime(now.Add(-time.Minute))
	since := metav1.NewTime(now.Add(-100 * time.Hour))
	for _, c := range []struct{ typ, reason, message string }{
		{"MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		{"DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		{"PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
	} {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeConditionType(c.typ),
			Status: corev1.ConditionFalse, Reason: c.reason, Message: c.message, LastHeartbeatTime: heartbeat, LastTransitionTime: since})
	}
	for j := range n.Status.Conditions {
		if n.Status.Conditions[j].Type == corev1.NodeReady {
			n.Status.Conditions[j].Reason, n.Status.Conditions[j].Message = "KubeletReady", "kubelet is posting ready status"
			n.Status.Conditions[j].LastHeartbeatTime = heartbeat
		}
	}
	n.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250)},
		{Type: corev1.NodeHostName, Address: n.Name}, {Type: corev1.NodeInternalDNS, Address: n.Name},
	}
	n.Status.NodeInfo = corev1.NodeSystemInfo{
		MachineID: fmt.Sprintf("ec2%029x", i), SystemUUID: fmt.Sprintf("ec2%029x", i), BootID: fmt.Sprintf("%032x", i),
		KernelVersion: "5.14.0-427.50.1.el9_4.x86_64", OSImage: "Red Hat Enterprise Linux CoreOS 418.94.202501221327-0",
		ContainerRuntimeVersion: "cri-o://1.31.5-2.rhaos4.18.git9e3e0d8.el9", KubeletVersion: "v1.31.5",
		OperatingSystem: "linux", Architecture: "amd64",
	}
	return n
}

// list is a v1 List of objects, as `oc get -o yaml` writes several.
func list(objs []runtime.Object) *corev1.List {
	l := &corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	for _, o := range objs {
		l.Items = append(l.Items, runtime.RawExtension{Object: o})
	}
	return l
}

func writeYAML(t testing.TB, path string, obj any) {
	t.Helper()
	data, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// largeSnapshotDir is where the large snapshot is written: a temporary folder,
// or UPSHIFT_LARGE_SNAPSHOT_DIR when set, to keep the files for timing the
// built command on them.
func largeSnapshotDir(t testing.TB) string {
	if dir := os.Getenv("UPSHIFT_LARGE_SNAPSHOT_DIR"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// TestMockLargeSnapshot runs mock mode, exactly as the command does, on the
// files of a 5,000-worker cluster, and fails when it takes longer than
// largeMockBound. It checks the report too, so that a fast run that prints
// the wrong thing does not pass: the worker pool's summary and the omitted
// nodes' line, with counts that follow from largeSnapshot's mix.
func TestMockLargeSnapshot(t *testing.T) {
	cvFile := writeLargeSnapshot(t, largeSnapshotDir(t), largeSnapshotWorkers)
	var out bytes.Buffer
	start := time.Now()
	err := RunStatus(context.Background(), StatusOptions{MockClusterVersion: cvFile, Out: &out, ErrOut: io.Discard, Notices: io.Discard})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mock mode on %d workers: %v", largeSnapshotWorkers, took)
	if bound := largeMockBound * raceSlowdown; took > bound {
		t.Errorf("mock mode on %d workers took %v, more than %v", largeSnapshotWorkers, took, bound)
	}
	// 40 % of the workers are updated, 10 % updating, the rest outdated.
	for _, want := range []string{
		"worker        Progressing   40% (2000/5000)",
		"Omitted additional 4990 Total",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

// BenchmarkMockLargeSnapshot is mock mode on the 5,000-worker snapshot's
// files: decoding them, assessing and rendering. Profile it with
// -cpuprofile.
func BenchmarkMockLargeSnapshot(b *testing.B) {
	cvFile := writeLargeSnapshot(b, largeSnapshotDir(b), largeSnapshotWorkers)
	b.ReportAllocs()
	for b.Loop() {
		if err := RunStatus(context.Background(), StatusOptions{MockClusterVersion: cvFile, Out: io.Discard, ErrOut: io.Discard, Notices: io.Discard}); err != nil {
			b.Fatal(err)
		}
	}
}
