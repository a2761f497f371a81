package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/controller"
	"github.com/upshift-io/upshift/services/updatestatus/snapshot"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

// ran is what one run of the command printed.
type ran struct {
	out, notices, errOut string
}

// runSource runs the command against cfg with --source=source at now.
func runSource(ctx context.Context, cfg *rest.Config, source Source, details string, now time.Time) (ran, error) {
	var out, notices, errOut bytes.Buffer
	err := RunStatus(ctx, StatusOptions{
		Details: details, Source: string(source),
		RESTConfig: func() (*rest.Config, error) { return cfg, nil },
		Now:        func() time.Time { return now },
		Out:        &out, Notices: &notices, ErrOut: &errOut,
	})
	return ran{out: out.String(), notices: notices.String(), errOut: errOut.String()}, err
}

// The acceptance test of the client-side source: on a control plane that
// carries only OpenShift's objects, the command prints the report the
// update-status-controller's status prints once the controller runs there.
//
// The two are compared at one moment: the controller runs on a clock
// stopped at the time the command is told is now. That is the moment they
// must agree. At any other, the controller's report legitimately differs
// from a fresh assessment: it keeps what it saw first across its
// recomputations (the start of a health insight whose start the cluster does
// not record is the controller's first sighting of it; see assess's package
// doc), while an assessment here sees everything for the first time.
var _ = Describe("the client-side source on a control plane without Upshift", Ordered, func() {
	for _, fixture := range []string{"pdb-drain", "early-control-plane"} {
		Context("with the objects of "+fixture, Ordered, func() {
			var (
				env          *testenv.Env
				now          time.Time
				assessedHere map[string]ran // the client-side reports by --details
				loaded       *snapshot.Loaded
			)

			BeforeAll(func(ctx SpecContext) {
				cluster, err := simcluster.Start(ctx, simcluster.Options{ControlPlane: testenv.Options{WithoutUpshiftCRDs: true}})
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(cluster.Stop)
				env = cluster.Env
				loaded = createSnapshot(ctx, env, fixture)
				// Whole seconds: the API keeps the controller's times so.
				now = loaded.Snapshot.Now.Truncate(time.Second)
			})

			It("assesses the cluster here, saying so on stderr", func(ctx SpecContext) {
				assessedHere = map[string]ran{}
				for _, details := range []string{"none", "all"} {
					r, err := runSource(ctx, env.Config, SourceClient, details, now)
					Expect(err).NotTo(HaveOccurred())
					Expect(r.errOut).To(Equal(clientSourceLine("") + "\n"))
					// A report of an update in progress, with its nodes.
					Expect(r.out).To(ContainSubstring("= Control Plane ="))
					Expect(r.out).To(ContainSubstring("= Worker Upgrade ="))
					// What was read is what the files hold: the report is
					// the files' own at the same time, without alerts.
					Expect(r.out).To(Equal(renderSnapshot(loaded, now, details)))
					// The control plane's client authenticates with a
					// certificate: like oc, no alerts then, and oc's notice.
					Expect(r.notices).To(HavePrefix("Unable to fetch alerts, ignoring alerts in 'Update Health':  "))
					assessedHere[details] = r
				}
			})

			It("falls back to it in auto when the UpgradeStatus CRD is not installed", func(ctx SpecContext) {
				r, err := runSource(ctx, env.Config, SourceAuto, "none", now)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.errOut).To(Equal(clientSourceLine("the UpgradeStatus CRD is not installed") + "\n"))
				Expect(r.out).To(Equal(assessedHere["none"].out))

				_, err = runSource(ctx, env.Config, SourceController, "none", now)
				Expect(err).To(MatchError(ContainSubstring("the UpgradeStatus CRD (update.upshift.io/v1alpha1) is not installed")))
			})

			It("falls back to it in auto when the CRD is installed but there is no UpgradeStatus", func(ctx SpecContext) {
				installUpshiftCRDs(ctx, env)
				Eventually(func(g Gomega, ctx context.Context) {
					r, err := runSource(ctx, env.Config, SourceAuto, "none", now)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(r.errOut).To(Equal(clientSourceLine(`no UpgradeStatus "cluster"`) + "\n"))
					g.Expect(r.out).To(Equal(assessedHere["none"].out))
				}).WithContext(ctx).WithTimeout(20 * time.Second).Should(Succeed())
			})

			It("prints byte for byte what the controller's status prints, once the controller has published it", func(ctx SpecContext) {
				startController(env, now)
				for _, details := range []string{"none", "all"} {
					Eventually(func(g Gomega, ctx context.Context) string {
						r, err := runSource(ctx, env.Config, SourceController, details, now)
						g.Expect(err).NotTo(HaveOccurred())
						return r.out
					}).WithContext(ctx).WithTimeout(30*time.Second).Should(Equal(assessedHere[details].out), "--details=%s", details)
				}

				By("using the controller's status in auto, and saying so")
				r, err := runSource(ctx, env.Config, SourceAuto, "none", now)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.errOut).To(HavePrefix(`Source: update-status-controller (UpgradeStatus "cluster"`))
				Expect(strings.Count(r.errOut, "\n")).To(Equal(1))
				Expect(r.notices).To(BeEmpty())
				Expect(r.out).To(Equal(assessedHere["none"].out))
			})
		})
	}
})

// createSnapshot creates the objects of the fixture snapshot testdata/<name>
// in env, statuses included, and returns it loaded.
func createSnapshot(ctx context.Context, env *testenv.Env, name string) *snapshot.Loaded {
	GinkgoHelper()
	loaded, err := snapshot.Load("testdata/" + name + snapshot.ClusterVersionSuffix)
	Expect(err).NotTo(HaveOccurred())
	s := loaded.Snapshot
	create := func(obj client.Object, withStatus func(client.Object)) {
		GinkgoHelper()
		obj.SetResourceVersion("")
		obj.SetUID("")
		obj.SetManagedFields(nil)
		obj.SetOwnerReferences(nil)
		obj.SetCreationTimestamp(metav1.Time{})
		want := obj.DeepCopyObject().(client.Object)
		Expect(env.Client.Create(ctx, obj)).To(Succeed(), "creating %T %s", obj, obj.GetName())
		if withStatus != nil {
			withStatus(want)
			want.SetResourceVersion(obj.GetResourceVersion())
			want.SetUID(obj.GetUID())
			want.SetCreationTimestamp(obj.GetCreationTimestamp())
			Expect(env.Client.Status().Update(ctx, want)).To(Succeed(), "status of %T %s", obj, obj.GetName())
		}
	}
	keep := func(client.Object) {} // the object as read: its status too
	create(s.ClusterVersion.DeepCopy(), keep)
	for i := range s.ClusterOperators {
		create(s.ClusterOperators[i].DeepCopy(), keep)
	}
	for i := range s.MachineConfigPools {
		create(s.MachineConfigPools[i].DeepCopy(), keep)
	}
	for i := range s.MachineConfigs {
		create(s.MachineConfigs[i].DeepCopy(), nil)
	}
	for _, n := range s.Nodes {
		create(n.DeepCopy(), keep)
	}
	if data, err := os.ReadFile(loaded.Files.MCODeployment); err == nil {
		d := &appsv1.Deployment{}
		Expect(yaml.Unmarshal(data, d)).To(Succeed())
		Expect(env.CreateNamespace(ctx, d.Namespace)).To(Succeed())
		d.Status = appsv1.DeploymentStatus{}
		create(d, nil)
	}
	return loaded
}

// renderSnapshot is the report of the loaded snapshot's files at now, as
// the client-side source reads their objects from a control plane: no
// alerts (the control plane has no monitoring), and without an MCO
// Deployment file no Deployment, whose image is then unknown.
func renderSnapshot(loaded *snapshot.Loaded, now time.Time, details string) string {
	GinkgoHelper()
	snap := loaded.Snapshot
	snap.Now, snap.WallClock, snap.Alerts = now, now, nil
	if _, err := os.Stat(loaded.Files.MCODeployment); err != nil {
		snap.MCOImage, snap.MCOImageUnknown = "", true
	}
	result, err := assess.AssessForDisplay(snap)
	Expect(err).NotTo(HaveOccurred())
	return renderLocally(result, details, now)
}

// installUpshiftCRDs installs the CRDs of the update-status-controller and
// node-gate, as their charts do, and waits until they are served.
func installUpshiftCRDs(ctx context.Context, env *testenv.Env) {
	GinkgoHelper()
	crds, err := testenv.CRDs()
	Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, crd := range crds {
		if crd.Spec.Group != "update.upshift.io" && crd.Spec.Group != "nodegate.upshift.io" {
			continue
		}
		Expect(env.Client.Create(ctx, crd)).To(Succeed())
		names = append(names, crd.Name)
	}
	Expect(names).NotTo(BeEmpty())
	Eventually(func(g Gomega, ctx context.Context) {
		for _, name := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
			g.Expect(crd.Status.Conditions).To(ContainElement(And(
				HaveField("Type", apiextensionsv1.Established), HaveField("Status", apiextensionsv1.ConditionTrue))), name)
		}
	}).WithContext(ctx).WithTimeout(20 * time.Second).Should(Succeed())
}

// startController runs the update-status controller in-process, as its
// binary does, on a clock stopped at now, until the spec's suite ends.
func startController(env *testenv.Env, now time.Time) {
	GinkgoHelper()
	opts := controller.ManagerOptions("")
	opts.RestConfig = env.Config
	// One controller per fixture in this process: the same name each time.
	opts.Controller = ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}
	mgr, err := runtime.NewManager("update-status-controller", &runtime.Flags{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", KubeAPIQPS: 50, KubeAPIBurst: 100,
	}, opts)
	Expect(err).NotTo(HaveOccurred())
	r := &controller.Reconciler{
		Client:   mgr.GetClient(),
		Recorder: events.NewRecorder(mgr.GetEventRecorder("update-status-controller")),
		Metrics:  controller.NewMetrics(prometheus.NewRegistry()),
		Clock:    clocktesting.NewFakePassiveClock(now),
	}
	Expect(r.SetupWithManager(mgr)).To(Succeed())
	mgrCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(mgrCtx)).To(Succeed())
	}()
	DeferCleanup(func() { cancel(); <-done })
}
