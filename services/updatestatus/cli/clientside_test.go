package cli

import (
	"bytes"
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/libs/alerts"
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
				thanos       *fakeThanos
				// user is a kubeconfig with a bearer token that trusts the
				// Thanos querier, as a user's on OpenShift does.
				user *rest.Config
			)

			BeforeAll(func(ctx SpecContext) {
				cluster, err := simcluster.Start(ctx, simcluster.Options{ControlPlane: testenv.Options{WithoutUpshiftCRDs: true}})
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(cluster.Stop)
				env = cluster.Env
				loaded = createSnapshot(ctx, env, fixture)
				// Whole seconds: the API keeps the controller's times so.
				now = loaded.Snapshot.Now.Truncate(time.Second)

				user, err = env.AdminServiceAccountConfig(ctx, "users", "admin")
				Expect(err).NotTo(HaveOccurred())
				thanos = startThanos(loaded, user.BearerToken)
				user.CAData = append(append([]byte{}, user.CAData...), thanos.caPEM...)
				createThanosRoute(ctx, env, thanos.host)
			})

			It("assesses the cluster here, with the alerts of the Thanos querier's Route, saying so on stderr", func(ctx SpecContext) {
				assessedHere = map[string]ran{}
				for _, details := range []string{"none", "all"} {
					r, err := runSource(ctx, user, SourceClient, details, now)
					Expect(err).NotTo(HaveOccurred())
					Expect(r.errOut).To(Equal(clientSourceLine("") + "\n"))
					Expect(r.notices).To(BeEmpty(), "the alerts were read")
					// A report of an update in progress, with its nodes.
					Expect(r.out).To(ContainSubstring("= Control Plane ="))
					Expect(r.out).To(ContainSubstring("= Worker Upgrade ="))
					// What was read is what the files hold: the report is
					// the files' own at the same time.
					Expect(r.out).To(Equal(renderSnapshot(loaded, now, details, false)))
					assessedHere[details] = r
				}
				Expect(thanos.served.Load()).To(BeNumerically(">=", 2))
				if len(loaded.Snapshot.Alerts) > 0 {
					Expect(assessedHere["all"].out).NotTo(Equal(renderSnapshot(loaded, now, "all", true)), "the file's alerts show")
				}
			})

			It("goes on without the alerts after oc's notice when it cannot read them", func(ctx SpecContext) {
				// The control plane's own client authenticates with a
				// certificate, which the monitoring API does not accept.
				r, err := runSource(ctx, env.Config, SourceClient, "all", now)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.notices).To(And(HavePrefix("Unable to fetch alerts, ignoring alerts in 'Update Health':  "), ContainSubstring("bearer token")))
				Expect(r.out).To(Equal(renderSnapshot(loaded, now, "all", true)))
			})

			It("prints the objects the controller would publish with -o yaml, the notice on stderr", func(ctx SpecContext) {
				var out, errOut bytes.Buffer
				Expect(RunStatus(ctx, StatusOptions{Source: string(SourceClient), Output: "yaml", Out: &out, ErrOut: &errOut,
					Now: func() time.Time { return now }, RESTConfig: func() (*rest.Config, error) { return env.Config, nil }})).To(Succeed())
				Expect(out.String()).To(HavePrefix("apiVersion: v1\nitems:\n- apiVersion: update.upshift.io/v1alpha1\n  kind: UpgradeStatus\n"))
				want, err := assess.AssessForDisplay(snapshotAt(loaded, now, true))
				Expect(err).NotTo(HaveOccurred())
				Expect(strings.Count(out.String(), "kind: NodeProgressInsight\n")).To(Equal(len(want.Nodes)))
				Expect(errOut.String()).To(And(HavePrefix(clientSourceLine("")+"\n"), ContainSubstring("Unable to fetch alerts")))
			})

			It("falls back to it in auto when the UpgradeStatus CRD is not installed", func(ctx SpecContext) {
				r, err := runSource(ctx, user, SourceAuto, "none", now)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.errOut).To(Equal(clientSourceLine("the UpgradeStatus CRD is not installed") + "\n"))
				Expect(r.out).To(Equal(assessedHere["none"].out))

				_, err = runSource(ctx, env.Config, SourceController, "none", now)
				Expect(err).To(MatchError(ContainSubstring("the UpgradeStatus CRD (update.upshift.io/v1alpha1) is not installed")))
			})

			It("falls back to it in auto when the CRD is installed but there is no UpgradeStatus", func(ctx SpecContext) {
				installUpshiftCRDs(ctx, env)
				Eventually(func(g Gomega, ctx context.Context) {
					r, err := runSource(ctx, user, SourceAuto, "none", now)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(r.errOut).To(Equal(clientSourceLine(`no UpgradeStatus "cluster"`) + "\n"))
					g.Expect(r.out).To(Equal(assessedHere["none"].out))
				}).WithContext(ctx).WithTimeout(20 * time.Second).Should(Succeed())
			})

			It("prints byte for byte what the controller's status prints, once the controller has published it", func(ctx SpecContext) {
				startController(env, now, thanos)
				for _, details := range []string{"none", "all"} {
					Eventually(func(g Gomega, ctx context.Context) string {
						r, err := runSource(ctx, user, SourceController, details, now)
						g.Expect(err).NotTo(HaveOccurred())
						return r.out
					}).WithContext(ctx).WithTimeout(30*time.Second).Should(Equal(assessedHere[details].out), "--details=%s", details)
				}

				By("using the controller's status in auto, and saying so")
				r, err := runSource(ctx, user, SourceAuto, "none", now)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.errOut).To(HavePrefix(`Source: update-status-controller (UpgradeStatus "cluster"`))
				Expect(strings.Count(r.errOut, "\n")).To(Equal(1))
				Expect(r.notices).To(BeEmpty())
				Expect(r.out).To(Equal(assessedHere["none"].out))
			})

			It("falls back to it in auto for a user who may read OpenShift's objects but not the UpgradeStatus", func(ctx SpecContext) {
				reader := clientSideReader(ctx, env)
				Eventually(func(g Gomega, ctx context.Context) {
					r, err := runSource(ctx, reader, SourceAuto, "none", now)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(r.errOut).To(Equal(clientSourceLine("not allowed to read UpgradeStatuses") + "\n"))
					// The Thanos querier knows the admin's token only.
					g.Expect(r.notices).To(HavePrefix("Unable to fetch alerts"))
					g.Expect(r.out).To(Equal(renderSnapshot(loaded, now, "none", true)))
				}).WithContext(ctx).WithTimeout(20 * time.Second).Should(Succeed())
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
// the client-side source reads their objects from a control plane.
func renderSnapshot(loaded *snapshot.Loaded, now time.Time, details string, withoutAlerts bool) string {
	GinkgoHelper()
	result, err := assess.AssessForDisplay(snapshotAt(loaded, now, withoutAlerts))
	Expect(err).NotTo(HaveOccurred())
	return renderLocally(result, details, now)
}

// snapshotAt is the loaded snapshot at now as created in a control plane
// and read back: without an MCO Deployment file there is no Deployment,
// whose image is then unknown.
func snapshotAt(loaded *snapshot.Loaded, now time.Time, withoutAlerts bool) assess.Snapshot {
	snap := loaded.Snapshot
	snap.Now, snap.WallClock = now, now
	if withoutAlerts {
		snap.Alerts = nil
	}
	if _, err := os.Stat(loaded.Files.MCODeployment); err != nil {
		snap.MCOImage, snap.MCOImageUnknown = "", true
	}
	return snap
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
// binary does, on a clock stopped at now, reading the alerts of thanos,
// until the spec's container ends.
func startController(env *testenv.Env, now time.Time, thanos *fakeThanos) {
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
		Alerts:   &controller.Alerts{Client: thanos.client(), URL: "https://" + thanos.host},
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

// fakeThanos is the Thanos querier's alerts API: it serves the snapshot's
// alerts file (no alert without one) to requests with the user's bearer
// token, as the querier in openshift-monitoring authenticates them.
type fakeThanos struct {
	srv    *httptest.Server
	host   string // host:port, as a Route's ingress names it
	caPEM  []byte // the certificate a client must trust
	token  string
	served atomic.Int32 // answered reads
}

func startThanos(loaded *snapshot.Loaded, token string) *fakeThanos {
	GinkgoHelper()
	body := []byte(`{"status":"success","data":{"alerts":[]}}`)
	if data, err := os.ReadFile(loaded.Files.Alerts); err == nil {
		body = data
	}
	t := &fakeThanos{token: token}
	t.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/api/v1/alerts":
			http.NotFound(w, r)
		case r.Header.Get("Authorization") != "Bearer "+t.token:
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		default:
			t.served.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}
	}))
	DeferCleanup(t.srv.Close)
	t.host = strings.TrimPrefix(t.srv.URL, "https://")
	t.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: t.srv.Certificate().Raw})
	return t
}

// client is the controller's alerts client of t, with the same token.
func (t *fakeThanos) client() alerts.Client {
	GinkgoHelper()
	inner := t.srv.Client().Transport
	c, err := alerts.New(alerts.Config{URL: t.srv.URL, Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+t.token)
		return inner.RoundTrip(r)
	})})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// createThanosRoute serves Routes (a CRD standing in for OpenShift's
// route API) and creates the Thanos querier's, admitted under host.
func createThanosRoute(ctx context.Context, env *testenv.Env, host string) {
	GinkgoHelper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "routes.route.openshift.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "route.openshift.io", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "routes", Singular: "route", Kind: "Route", ListKind: "RouteList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}},
			}},
		},
	}
	Expect(env.Client.Create(ctx, crd)).To(Succeed())
	Expect(env.CreateNamespace(ctx, thanosRoute.Namespace)).To(Succeed())
	route := &unstructured.Unstructured{}
	route.SetGroupVersionKind(routeGVK)
	route.SetNamespace(thanosRoute.Namespace)
	route.SetName(thanosRoute.Name)
	// Created once the new resource is served.
	Eventually(func(ctx context.Context) error { return env.Client.Create(ctx, route) }).
		WithContext(ctx).WithTimeout(20 * time.Second).Should(Succeed())
	Expect(unstructured.SetNestedSlice(route.Object, []any{map[string]any{"host": host}}, "status", "ingress")).To(Succeed())
	Expect(env.Client.Status().Update(ctx, route)).To(Succeed())
}

// clientSideReader is the config of a ServiceAccount with the permissions
// the client-side source needs (as the operator guide lists them) and none
// on Upshift's own status.
func clientSideReader(ctx context.Context, env *testenv.Env) *rest.Config {
	GinkgoHelper()
	const ns, name = "users", "reader"
	Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))).To(Succeed())
	read := []string{"get", "list"}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "client-side-status-reader"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"config.openshift.io"}, Resources: []string{"clusterversions", "clusteroperators"}, Verbs: read},
		{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfigpools", "machineconfigs"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: read},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}},
		{APIGroups: []string{"route.openshift.io"}, Resources: []string{"routes"}, Verbs: []string{"get"}},
		{APIGroups: []string{"nodegate.upshift.io"}, Resources: []string{"mutexrunconfigs"}, Verbs: read},
	}}
	Expect(env.Client.Create(ctx, role)).To(Succeed())
	Expect(env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	})).To(Succeed())
	cfg, err := env.ServiceAccountConfig(ctx, ns, name)
	Expect(err).NotTo(HaveOccurred())
	return cfg
}
