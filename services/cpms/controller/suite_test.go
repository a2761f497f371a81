package controller_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/cpms/controller"
	"github.com/upshift-io/upshift/services/cpms/metrics"
	"github.com/upshift-io/upshift/services/cpms/plan"
	"github.com/upshift-io/upshift/services/cpms/platform"
	"github.com/upshift-io/upshift/services/cpms/webhook"
	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

func TestController(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "cpms-controller: reconciler and webhook against a real apiserver")
}

// The controller's identity, so the audit log tells its requests from the
// test's and the simulators'.
const (
	controllerNS   = "upshift"
	controllerSA   = "cpms-controller"
	controllerUser = "system:serviceaccount:" + controllerNS + ":" + controllerSA
)

var (
	cluster      *simcluster.Cluster
	env          *testenv.Env
	controllerRC *rest.Config
	// controllerMetrics is the registry of the controller running now.
	controllerMetrics *prometheus.Registry
)

var _ = BeforeSuite(func(ctx context.Context) {
	// Shown only for a failed spec (GinkgoWriter).
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	cluster, err = simcluster.Start(ctx, simcluster.Options{ControlPlane: testenv.Options{
		AuditLog: true,
		// The garbage collector, so that a set deleted without releasing
		// its machines would take the control plane with it.
		ControllerManager:  true,
		Controllers:        []string{"garbagecollector"},
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{webhook.Configuration(controllerNS, controllerSA)},
	}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cluster.Stop)
	env = cluster.Env

	// The webhook server, for the whole suite (the controller restarts;
	// the webhook must answer meanwhile, or its finalizer could not go on).
	srv := ctrlwebhook.NewServer(ctrlwebhook.Options{Host: env.Webhook.Host, Port: env.Webhook.Port, CertDir: env.Webhook.CertDir})
	webhook.Register(srv, scheme.Scheme, env.Client, env.Client)
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(srv.Start(wctx)).To(Succeed())
	}()
	DeferCleanup(func() { cancel(); <-done })

	Expect(env.CreateNamespace(ctx, controller.Namespace)).To(Succeed())
	// The chart's least-privilege role is e2e/cpms's to check; here the
	// identity only has to be distinct.
	controllerRC, err = env.AdminServiceAccountConfig(ctx, controllerNS, controllerSA)
	Expect(err).NotTo(HaveOccurred())

	startSimulators()
}, NodeTimeout(3*time.Minute))

// startSimulators runs ocpsim's machine-api (machines provision, get a Node,
// drain and terminate when deleted, held by preDrain hooks) and etcd
// operator (the EtcdQuorumOperator hook on every live control-plane machine,
// released from a deleting one once enough members vote) for the suite.
// 600x: an instance launch and join of 6 simulated minutes take 0.6 s. A
// member votes 10 simulated minutes (1 s) after its node is Ready, as a real
// one takes minutes, and an old member is removed 20 simulated minutes (2 s)
// after its machine's deletion: the deletion is then always seen held by the
// hook, however late the controller deletes (releasing the hook as soon as a
// replacement voted raced the controller's own watch on a loaded machine).
func startSimulators() {
	Expect(cluster.Restart(ocpsim.Options{TimeScale: 600, EtcdPromotion: 10 * time.Minute, EtcdMemberRemoval: 20 * time.Minute, Parts: []ocpsim.Part{ocpsim.PartMachineAPI, ocpsim.PartEtcd},
		Log: logf.Log.WithName("ocpsim")})).To(Succeed())
}

// startController runs the controller in a manager of its own, as its
// ServiceAccount, with the binary's cache options; stop stops it and waits.
func startController(cfg plan.Config) (stop func()) {
	GinkgoHelper()
	mgr, err := runtime.NewManager("cpms-controller", &runtime.Flags{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", KubeAPIQPS: 50, KubeAPIBurst: 100,
	}, func() runtime.Options {
		opts := controller.ManagerOptions()
		opts.RestConfig = controllerRC
		opts.Controller = ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}
		return opts
	}())
	Expect(err).NotTo(HaveOccurred())
	// A fresh registry per controller, as a process has one.
	controllerMetrics = prometheus.NewRegistry()
	Expect((&controller.Reconciler{
		Client:   mgr.GetClient(),
		Recorder: events.NewRecorder(mgr.GetEventRecorder("cpms-controller")),
		Metrics:  metrics.New(controllerMetrics),
		Config:   cfg,
	}).SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	return func() { cancel(); <-done }
}

// ---- the invariant watcher ----

// machineWatcher records every Machine event of openshift-machine-api and
// checks the rollout invariants on each: never more than replicas+1
// machines, never two indexes holding more than one machine.
type machineWatcher struct {
	mu          sync.Mutex
	machines    map[string]bool
	added       []string
	maxMachines int
	violations  []string
	events      int
	// running and deleting: when each machine was first seen Running with a
	// nodeRef, and first seen with a deletionTimestamp.
	running, deleting map[string]time.Time
}

func watchMachines(ctx context.Context) *machineWatcher {
	GinkgoHelper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	var list machinev1beta1.MachineList
	Expect(env.Client.List(ctx, &list, client.InNamespace(controller.Namespace))).To(Succeed())
	w := &machineWatcher{machines: map[string]bool{}, running: map[string]time.Time{}, deleting: map[string]time.Time{}}
	for _, m := range list.Items {
		w.machines[m.Name] = true
	}
	w.check("initial list")
	wi, err := wc.Watch(ctx, &machinev1beta1.MachineList{}, client.InNamespace(controller.Namespace), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		for ev := range wi.ResultChan() {
			m, ok := ev.Object.(*machinev1beta1.Machine)
			if !ok {
				continue
			}
			w.mu.Lock()
			w.events++
			now := time.Now()
			if _, seen := w.running[m.Name]; !seen && ptr.Deref(m.Status.Phase, "") == machinev1beta1.PhaseRunning && m.Status.NodeRef != nil {
				w.running[m.Name] = now
			}
			if _, seen := w.deleting[m.Name]; !seen && m.DeletionTimestamp != nil {
				w.deleting[m.Name] = now
			}
			switch ev.Type {
			case watch.Added:
				if !w.machines[m.Name] {
					w.added = append(w.added, m.Name)
				}
				w.machines[m.Name] = true
			case watch.Deleted:
				delete(w.machines, m.Name)
			}
			w.mu.Unlock()
			w.check(fmt.Sprintf("%s %s", ev.Type, m.Name))
		}
	}()
	DeferCleanup(wi.Stop)
	return w
}

func (w *machineWatcher) check(at string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.machines) > w.maxMachines {
		w.maxMachines = len(w.machines)
	}
	if len(w.machines) > 4 {
		w.violations = append(w.violations, fmt.Sprintf("%s: %d machines", at, len(w.machines)))
	}
	perIndex := map[int][]string{}
	for name := range w.machines {
		i, _ := platform.IndexFromName(name)
		perIndex[i] = append(perIndex[i], name)
	}
	var inFlight []string
	for i, names := range perIndex {
		if len(names) > 1 {
			sort.Strings(names)
			inFlight = append(inFlight, fmt.Sprintf("%d: %s", i, strings.Join(names, ",")))
		}
	}
	if len(inFlight) > 1 {
		sort.Strings(inFlight)
		w.violations = append(w.violations, fmt.Sprintf("%s: indexes in flight %s", at, strings.Join(inFlight, "; ")))
	}
}

// reaction is, for each replacement, the time from it being seen Running
// with its Node to the machine it replaced (same index) being seen deleting.
func (w *machineWatcher) reaction() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	for _, repl := range w.added {
		up, ok := w.running[repl]
		if !ok {
			continue
		}
		i, _ := platform.IndexFromName(repl)
		for old, t := range w.deleting {
			if j, _ := platform.IndexFromName(old); j == i && old != repl && !t.Before(up) {
				out = append(out, t.Sub(up))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (w *machineWatcher) report() (violations, added []string, maxMachines, events int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.violations...), append([]string(nil), w.added...), w.maxMachines, w.events
}

// ---- fixtures ----

const region = "us-east-1"

var zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// seedMachines creates the installer's three masters; the simulated
// machine-api brings them up and the simulated etcd operator hooks them.
func seedMachines(ctx context.Context) {
	GinkgoHelper()
	for i, z := range zones {
		m := machineapi.Machine(machineapi.MachineSpec{Name: fmt.Sprintf("c1-master-%d", i), InfraName: "c1", Role: "master", Region: region, Zone: z, InstanceType: "m6i.xlarge"})
		Expect(env.Client.Create(ctx, m)).To(Succeed())
	}
	Eventually(func(g Gomega) {
		var list machinev1beta1.MachineList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(controller.Namespace))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(3))
		for _, m := range list.Items {
			g.Expect(ptr.Deref(m.Status.Phase, "")).To(Equal(machinev1beta1.PhaseRunning), m.Name)
			g.Expect(m.Spec.LifecycleHooks.PreDrain).To(ContainElement(HaveField("Name", plan.EtcdHookName)), m.Name)
		}
	}).Should(Succeed())
}

// controlPlaneSet is a ControlPlaneMachineSet over the seeded masters, its
// template matching them (instance type m6i.xlarge, one zone per index).
func controlPlaneSet(state machinev1.ControlPlaneMachineSetState) *machinev1.ControlPlaneMachineSet {
	labels := map[string]string{
		machineapi.ClusterLabel: "c1", machineapi.RoleLabel: "master", machineapi.TypeLabel: "master",
	}
	var fds []machinev1.AWSFailureDomain
	for _, z := range zones {
		fds = append(fds, machinev1.AWSFailureDomain{Placement: machinev1.AWSFailureDomainPlacement{AvailabilityZone: z}})
	}
	return &machinev1.ControlPlaneMachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: controller.Namespace, Name: controller.Name},
		Spec: machinev1.ControlPlaneMachineSetSpec{
			State:    state,
			Replicas: ptr.To(int32(3)),
			Strategy: machinev1.ControlPlaneMachineSetStrategy{Type: machinev1.RollingUpdate},
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{machineapi.RoleLabel: "master", machineapi.TypeLabel: "master"}},
			Template: machinev1.ControlPlaneMachineSetTemplate{
				MachineType: machinev1.OpenShiftMachineV1Beta1MachineType,
				OpenShiftMachineV1Beta1Machine: &machinev1.OpenShiftMachineV1Beta1MachineTemplate{
					FailureDomains: &machinev1.FailureDomains{Platform: "AWS", AWS: &fds},
					ObjectMeta:     machinev1.ControlPlaneMachineSetTemplateObjectMeta{Labels: labels},
					Spec: machinev1beta1.MachineSpec{
						ObjectMeta:   machinev1beta1.ObjectMeta{Labels: map[string]string{"node-role.kubernetes.io/master": ""}},
						ProviderSpec: machinev1beta1.ProviderSpec{Value: machineapi.NewProviderSpec(region, "", "m6i.xlarge")},
					},
				},
			},
		},
	}
}
