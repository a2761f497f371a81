package ocpsim_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

func TestOCPSim(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ocpsim")
}

var _ = BeforeSuite(func() {
	// OCPSIM_TEST_LOG=1 streams what the simulator does to stderr.
	var w io.Writer = GinkgoWriter
	if os.Getenv("OCPSIM_TEST_LOG") != "" {
		w = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(w), zap.UseDevMode(false)))
})

// cluster is one control plane with the simulator running against it.
type cluster struct {
	env *testenv.Env
	c   client.Client
	// sim is the simulator on it (Restart, Stop).
	sim *simcluster.Simulation
}

// startCluster starts a fresh control plane (kube-controller-manager for PDBs,
// scheduler and kwok for workloads), seeds topology t and runs the simulator.
func startCluster(ctx context.Context, t ocpsim.Topology, o ocpsim.Options) *cluster {
	c, err := simcluster.Start(ctx, simcluster.Options{
		ControlPlane: testenv.Options{ControllerManager: true, Scheduler: true, Kwok: true}, Seed: &t, Sim: &o})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(context.Context) { Expect(c.Stop()).To(Succeed()) }, NodeTimeout(80*time.Second))
	env := c.Env
	return &cluster{env: env, c: env.Client, sim: c.Simulation}
}

func (k *cluster) cv(ctx context.Context) *configv1.ClusterVersion {
	var cv configv1.ClusterVersion
	Expect(k.c.Get(ctx, types.NamespacedName{Name: "version"}, &cv)).To(Succeed())
	return &cv
}

func (k *cluster) pool(ctx context.Context, name string) *mcfgv1.MachineConfigPool {
	var p mcfgv1.MachineConfigPool
	Expect(k.c.Get(ctx, types.NamespacedName{Name: name}, &p)).To(Succeed())
	return &p
}

func (k *cluster) node(ctx context.Context, name string) *corev1.Node {
	var n corev1.Node
	Expect(k.c.Get(ctx, types.NamespacedName{Name: name}, &n)).To(Succeed())
	return &n
}

func (k *cluster) annotate(ctx context.Context, obj client.Object, key, value string) {
	Expect(k.c.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	orig := obj.DeepCopyObject().(client.Object)
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	if value == "" {
		delete(a, key)
	} else {
		a[key] = value
	}
	obj.SetAnnotations(a)
	Expect(k.c.Patch(ctx, obj, client.MergeFrom(orig))).To(Succeed())
}

func (k *cluster) desiredUpdate(ctx context.Context, version string) {
	cv := k.cv(ctx)
	orig := cv.DeepCopy()
	cv.Spec.DesiredUpdate = &configv1.Update{Version: version}
	Expect(k.c.Patch(ctx, cv, client.MergeFrom(orig))).To(Succeed())
}

// addWorkerConfig creates a MachineConfig for role; the MCO renders a new
// config for the pool and rolls it out, without a CVO update.
func (k *cluster) addConfig(ctx context.Context, name, role string, annotations map[string]string) {
	mc := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{mco.RoleLabel: role}, Annotations: annotations}}
	mc.Spec.KernelArguments = []string{"test=" + name}
	mc.Spec.Extensions = []string{}
	Expect(k.c.Create(ctx, mc)).To(Succeed())
}

func condStatus(conds []mcfgv1.MachineConfigPoolCondition, t mcfgv1.MachineConfigPoolConditionType) corev1.ConditionStatus {
	for _, c := range conds {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func cvCond(cv *configv1.ClusterVersion, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
	for i := range cv.Status.Conditions {
		if cv.Status.Conditions[i].Type == t {
			return &cv.Status.Conditions[i]
		}
	}
	return nil
}

// nodeRecorder watches Nodes and records, per node, the MCO-visible changes
// in the order the apiserver reports them, and the peak number of
// unavailable nodes per pool.
type nodeRecorder struct {
	mu      sync.Mutex
	last    map[string]*corev1.Node
	steps   map[string][]string
	peak    map[string]int
	pools   []*mcfgv1.MachineConfigPool
	stopped chan struct{}
	// taint holds, per node, the writes that changed its UpdateInProgress
	// taint and its desiredConfig, by resourceVersion (the order etcd
	// committed them in): "taint=true", "desiredConfig", "taint=false".
	taint map[string][]rvStep
}

// rvStep is a change seen on a node and the resourceVersion of the write
// that made it.
type rvStep struct {
	step string
	rv   uint64
}

func startRecorder(ctx context.Context, k *cluster) *nodeRecorder {
	wc, err := client.NewWithWatch(k.env.Config, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	var pools mcfgv1.MachineConfigPoolList
	Expect(k.c.List(ctx, &pools)).To(Succeed())
	r := &nodeRecorder{last: map[string]*corev1.Node{}, steps: map[string][]string{}, peak: map[string]int{}, stopped: make(chan struct{}), taint: map[string][]rvStep{}}
	for i := range pools.Items {
		r.pools = append(r.pools, &pools.Items[i])
	}
	var nodes corev1.NodeList
	Expect(wc.List(ctx, &nodes)).To(Succeed())
	for i := range nodes.Items {
		r.last[nodes.Items[i].Name] = &nodes.Items[i]
	}
	w, err := wc.Watch(context.Background(), &corev1.NodeList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: nodes.ResourceVersion}})
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer close(r.stopped)
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			r.observe(n)
		}
	}()
	DeferCleanup(w.Stop)
	return r
}

func ready(n *corev1.Node) bool { return mco.IsReady(n) }

func (r *nodeRecorder) observe(n *corev1.Node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.last[n.Name]
	r.last[n.Name] = n
	if prev == nil {
		return
	}
	a, b := prev.Annotations, n.Annotations
	add := func(s string) { r.steps[n.Name] = append(r.steps[n.Name], s) }
	rv, err := strconv.ParseUint(n.ResourceVersion, 10, 64)
	Expect(err).NotTo(HaveOccurred())
	if a[mco.DesiredConfigAnnotation] != b[mco.DesiredConfigAnnotation] {
		add("desiredConfig")
		r.taint[n.Name] = append(r.taint[n.Name], rvStep{"desiredConfig", rv})
	}
	if had, has := mco.HasUpdateInProgressTaint(prev), mco.HasUpdateInProgressTaint(n); had != has {
		r.taint[n.Name] = append(r.taint[n.Name], rvStep{fmt.Sprintf("taint=%v", has), rv})
	}
	if a[mco.StateAnnotation] != b[mco.StateAnnotation] && b[mco.StateAnnotation] != mco.StateDone {
		add("state=" + b[mco.StateAnnotation])
	}
	if a[mco.DesiredDrainAnnotation] != b[mco.DesiredDrainAnnotation] {
		add("desiredDrain=" + strings.SplitN(b[mco.DesiredDrainAnnotation], "-", 2)[0])
	}
	if prev.Spec.Unschedulable != n.Spec.Unschedulable {
		add(fmt.Sprintf("unschedulable=%v", n.Spec.Unschedulable))
	}
	if a[mco.LastAppliedDrainAnnotation] != b[mco.LastAppliedDrainAnnotation] {
		add("lastAppliedDrain=" + strings.SplitN(b[mco.LastAppliedDrainAnnotation], "-", 2)[0])
	}
	if a[mco.PostConfigActionAnnotation] != b[mco.PostConfigActionAnnotation] {
		add("post-config-action=" + b[mco.PostConfigActionAnnotation])
	}
	if ready(prev) != ready(n) {
		add(fmt.Sprintf("Ready=%v", ready(n)))
	}
	if a[mco.StateAnnotation] != b[mco.StateAnnotation] && b[mco.StateAnnotation] == mco.StateDone {
		if b[mco.CurrentConfigAnnotation] == b[mco.DesiredConfigAnnotation] && a[mco.CurrentConfigAnnotation] != b[mco.CurrentConfigAnnotation] {
			add("state=Done+currentConfig")
		} else {
			add("state=Done")
		}
	}
	// availability per pool
	var all []*corev1.Node
	for _, x := range r.last {
		all = append(all, x)
	}
	for pool, nodes := range mco.NodesByPool(all, r.pools) {
		u := 0
		for _, x := range nodes {
			if mco.IsUnavailable(x) {
				u++
			}
		}
		if u > r.peak[pool] {
			r.peak[pool] = u
		}
	}
}

func (r *nodeRecorder) snapshot() (map[string][]string, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	steps := map[string][]string{}
	for k, v := range r.steps {
		steps[k] = append([]string(nil), v...)
	}
	peak := map[string]int{}
	for k, v := range r.peak {
		peak[k] = v
	}
	return steps, peak
}

// taintSteps returns a copy of the taint and desiredConfig writes per node.
func (r *nodeRecorder) taintSteps() map[string][]rvStep {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]rvStep{}
	for k, v := range r.taint {
		out[k] = append([]rvStep(nil), v...)
	}
	return out
}

// rebootSequence is the MCO's order for a reboot-requiring update
// (the MCO's ten steps of a node update).
var rebootSequence = []string{
	"desiredConfig", "state=Working", "desiredDrain=drain", "unschedulable=true", "lastAppliedDrain=drain",
	"post-config-action=Rebooting", "Ready=false", "Ready=true", "post-config-action=",
	"desiredDrain=uncordon", "unschedulable=false", "lastAppliedDrain=uncordon", "state=Done+currentConfig",
}

func machineKey(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "openshift-machine-api", Name: name}
}

func phase(m *machinev1beta1.Machine) string {
	if m.Status.Phase == nil {
		return ""
	}
	return *m.Status.Phase
}

func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		var n int
		if _, err := fmt.Sscanf(v, "%d", &n); err == nil {
			return n
		}
	}
	return def
}

func clusterKey(name string) types.NamespacedName { return types.NamespacedName{Name: name} }
