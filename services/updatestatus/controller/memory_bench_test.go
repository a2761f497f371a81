//go:build linux

// The measurement reads /proc (peak RSS) and uses Linux-only process
// attributes.

package controller_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/metricstest"
	upruntime "github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/updatestatus/controller"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

// BenchmarkFirstStartMemory measures the controller's memory on a large
// cluster: it seeds benchNodes Nodes shaped as a kubelet (kwok) registers
// them, starts the controller as the binary does (same manager options, the
// chart's client QPS), waits until it has published every
// NodeProgressInsight, lets it recompute once more over the full cache, and
// reports
//
//   - peak-RSS-MiB: the process's peak resident set (VmHWM) from the
//     controller's start, the number `make bench` reports for the binary
//     (the seeding's memory is returned to the OS and the peak reset
//     before the controller starts);
//   - retained-heap-MiB: the heap still in use after a GC once the
//     controller is idle, over what it was before the controller started:
//     its caches and state.
//
// It takes minutes (5,000 Nodes to seed, 5,000 writes at the chart's 150 QPS), so it is a
// benchmark, outside the default `go test` run:
//
//	go test ./controller/ -run '^$' -bench FirstStartMemory -benchtime 1x
func BenchmarkFirstStartMemory(b *testing.B) {
	if b.N > 1 {
		b.Skip("one run is the measurement; use -benchtime 1x")
	}
	RegisterFailHandler(func(message string, _ ...int) { b.Fatal(message) })
	logf.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster, err := simcluster.Start(ctx, simcluster.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cluster.Stop() }()
	env := cluster.Env

	const workers = benchNodes - 3
	started := time.Now().Add(-20 * time.Minute)
	createClusterVersion(ctx, env.Client, started)
	for _, co := range []string{"kube-apiserver", "etcd", "machine-config", "network", "dns", "ingress"} {
		createClusterOperator(ctx, env.Client, co, toVersion, started)
	}
	createRenderedConfig(ctx, env.Client, "rendered-master-a", toVersion)
	createRenderedConfig(ctx, env.Client, "rendered-worker-a", toVersion)
	createPool(ctx, env.Client, "master", "rendered-master-a", 3)
	createPool(ctx, env.Client, "worker", "rendered-worker-a", workers)
	seedNodes(ctx, b, env, "master", 3, "rendered-master-a")
	seedNodes(ctx, b, env, "worker", workers, "rendered-worker-a")

	// What the seeding allocated goes back to the OS, and the peak is
	// reset: from here on the process's memory is the controller's.
	runtime.GC()
	debug.FreeOSMemory()
	baseHeap := heapInUse()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Fatalf("resetting the peak RSS: %v", err)
	}
	baseRSS := procStatusKiB(b, "VmHWM")
	baseCPU := cpuTime(b)
	stopSampling := sampleHeapPeak()

	if *benchBinary != "" {
		benchBinaryFirstStart(ctx, b, env)
		return
	}

	b.ResetTimer()
	opts := controller.ManagerOptions(namespace)
	opts.RestConfig = env.Config
	opts.Controller = ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}
	mgr, err := upruntime.NewManager("update-status-controller", &upruntime.Flags{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", KubeAPIQPS: 150, KubeAPIBurst: 300,
	}, opts)
	if err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	r := &controller.Reconciler{Client: mgr.GetClient(), Recorder: events.NewRecorder(mgr.GetEventRecorder("update-status-controller")),
		Metrics: controller.NewMetrics(reg), Namespace: namespace}
	if err := r.SetupWithManager(mgr); err != nil {
		b.Fatal(err)
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	defer func() { stopMgr(); <-done }()

	// Every insight applied: one write per node.
	waitFor(b, 10*time.Minute, func() bool { return nodeInsightWrites(b, reg) >= benchNodes })
	// One more recomputation, over a cache that holds every insight: the
	// steady state.
	before := reconciles()
	touchNodeWith(ctx, env, "worker-0")
	waitFor(b, time.Minute, func() bool { return reconciles() > before })
	b.StopTimer()

	peak := procStatusKiB(b, "VmHWM")
	cpu := cpuTime(b) - baseCPU
	heapPeak, goalPeak := stopSampling()
	runtime.GC()
	retained := heapInUse() - baseHeap
	if *benchHeapProfile != "" {
		f, err := os.Create(*benchHeapProfile)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			b.Fatal(err)
		}
		_ = f.Close()
	}
	b.ReportMetric(float64(peak-baseRSS)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(peak)/1024, "peak-RSS-total-MiB")
	b.ReportMetric(float64(retained)/(1<<20), "retained-heap-MiB")
	b.ReportMetric(cpu.Seconds(), "CPU-s")
	b.ReportMetric(float64(heapPeak)/(1<<20), "peak-heap-objects-MiB")
	b.ReportMetric(float64(goalPeak)/(1<<20), "peak-heap-goal-MiB")
	// Keep the manager (and so its caches) reachable up to the measurement.
	runtime.KeepAlive(mgr)
}

const benchNodes = 5000

var benchBinary = flag.String("usc.binary", "", "BenchmarkFirstStartMemory runs this update-status-controller binary instead of the controller in-process, and reports its peak RSS")

// benchBinaryFirstStart is BenchmarkFirstStartMemory for the built binary:
// its own process, its own GC settings, its VmHWM.
func benchBinaryFirstStart(ctx context.Context, b *testing.B, env *testenv.Env) {
	cmd := exec.Command(*benchBinary, "--kubeconfig="+env.KubeconfigPath, "--leader-elect=false",
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--namespace="+namespace,
		"--kube-api-qps=150", "--kube-api-burst=300", "--log-level=error")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	b.ResetTimer()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	published := func() int {
		npis := &updatev1alpha1.NodeProgressInsightList{}
		if err := env.Client.List(ctx, npis); err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, npi := range npis.Items {
			if npi.Status.Name != "" {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(10 * time.Minute)
	for published() < benchNodes {
		if time.Now().After(deadline) {
			b.Fatalf("not every insight published within 10 minutes; the binary said:\n%s", out.String())
		}
		time.Sleep(2 * time.Second)
	}
	b.StopTimer()
	b.ReportMetric(float64(procStatusKiBOf(b, cmd.Process.Pid, "VmHWM"))/1024, "binary-peak-RSS-MiB")
}

var benchHeapProfile = flag.String("usc.heapprofile", "", "BenchmarkFirstStartMemory writes the heap profile of the idle controller here")

// seedNodes creates n Nodes of a pool, with the labels, annotations and
// status a kubelet and the MCO give them (see ocpsim's machineapi.Node),
// already Done on config.
func seedNodes(ctx context.Context, b *testing.B, env *testenv.Env, role string, n int, config string) {
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods: resource.MustParse("250"),
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	sem := make(chan struct{}, 32)
	for i := range n {
		name := fmt.Sprintf("%s-%d", role, i)
		now := metav1.Now()
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels: map[string]string{
					"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
					"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
					"node.kubernetes.io/instance-type": "m5.4xlarge", "topology.kubernetes.io/zone": "us-east-1a",
					"topology.kubernetes.io/region": "us-east-1", "node.openshift.io/os_id": "rhcos",
					"node-role.kubernetes.io/" + role: "", "type": "kwok",
				},
				Annotations: map[string]string{
					"kwok.x-k8s.io/node": "fake", "machine.openshift.io/machine": "openshift-machine-api/" + name,
					annoCurrent: config, annoDesired: config, annoState: "Done",
				},
			},
			Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-" + strconv.Itoa(100000+i)},
			// Nodes keep the status they are created with.
			Status: corev1.NodeStatus{
				Capacity: res, Allocatable: res, Phase: corev1.NodeRunning,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
					Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}},
				Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)},
					{Type: corev1.NodeHostName, Address: name}},
				NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.29.0", OSImage: "Red Hat Enterprise Linux CoreOS",
					OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: "cri-o://1.29.0"},
			},
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := env.Client.Create(ctx, node); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		b.Fatalf("%d Nodes not created, first: %v", len(errs), errs[0])
	}
}

func touchNodeWith(ctx context.Context, env *testenv.Env, name string) {
	// A change the assessment does not read would be filtered out; the
	// Node's unschedulable flag is read.
	n := &corev1.Node{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
	n.Spec.Unschedulable = true
	Expect(env.Client.Update(ctx, n)).To(Succeed())
}

func nodeInsightWrites(b *testing.B, reg prometheus.Gatherer) float64 {
	all, err := metricstest.Series(reg, "upshift_update_status_writes_total")
	if err != nil {
		b.Fatal(err)
	}
	for key, v := range all {
		if strings.Contains(key, "nodeprogressinsight") {
			return v
		}
	}
	return 0
}

func waitFor(b *testing.B, timeout time.Duration, cond func() bool) {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("not done within %s", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sampleHeapPeak samples, until the returned function is called, the bytes of
// live and not yet collected heap objects and the GC's heap goal, and
// returns their highest values.
func sampleHeapPeak() func() (objects, goal uint64) {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	stop, done := make(chan struct{}), make(chan struct{})
	var maxObjects, maxGoal uint64
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(samples)
			maxObjects, maxGoal = max(maxObjects, samples[0].Value.Uint64()), max(maxGoal, samples[1].Value.Uint64())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() (uint64, uint64) { close(stop); <-done; return maxObjects, maxGoal }
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// procStatusKiB reads a kB field of /proc/self/status.
func procStatusKiB(b *testing.B, field string) int64 {
	return procStatusKiBOf(b, os.Getpid(), field)
}

// procStatusKiBOf reads a kB field of /proc/<pid>/status.
func procStatusKiBOf(b *testing.B, pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(field+":")); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(v)), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kib
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
