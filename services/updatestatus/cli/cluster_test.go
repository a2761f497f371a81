package cli

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/render"
	"github.com/upshift-io/upshift/services/updatestatus/snapshot"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

// The cluster-mode specs run against a real kube-apiserver (libs/testenv);
// set UPSHIFT_TESTBIN to the test control plane (`make testbin`).
func TestClusterMode(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kubectl upshift status: cluster mode")
}

// status runs the command against cfg with the controller's status as its
// source and returns its output.
func status(ctx context.Context, cfg *rest.Config, details string, now time.Time) (string, error) {
	var out bytes.Buffer
	err := RunStatus(ctx, StatusOptions{
		Details:    details,
		Source:     string(SourceController),
		RESTConfig: func() (*rest.Config, error) { return cfg, nil },
		Now:        func() time.Time { return now },
		Out:        &out,
		ErrOut:     GinkgoWriter,
	})
	return out.String(), err
}

var _ = Describe("cluster mode with the Upshift CRDs installed", Ordered, func() {
	var env *testenv.Env

	BeforeAll(func(ctx SpecContext) {
		var err error
		cluster, err := simcluster.Start(ctx, simcluster.Options{ControlPlane: testenv.Options{}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cluster.Stop)
		env = cluster.Env
	})

	It("says the controller has not computed the status while there is no UpgradeStatus", func(ctx SpecContext) {
		_, err := status(ctx, env.Config, "none", time.Now())
		Expect(err).To(MatchError(And(
			ContainSubstring(`UpgradeStatus "cluster" not found on `+env.Config.Host),
			ContainSubstring("update-status-controller is not running or has not computed"))))

		By("assessing here instead in auto, which needs a ClusterVersion this control plane lacks")
		r, err := runSource(ctx, env.Config, SourceAuto, "none", time.Now())
		Expect(err).To(MatchError(ContainSubstring("no cluster version information available")))
		Expect(r.errOut).To(Equal(clientSourceLine(`no UpgradeStatus "cluster"`) + "\n"))
	})

	It("says so while the UpgradeStatus has no control plane status, quoting the controller's conditions", func(ctx SpecContext) {
		us := &updatev1alpha1.UpgradeStatus{ObjectMeta: metav1.ObjectMeta{Name: updatev1alpha1.UpgradeStatusName}}
		Expect(env.Client.Create(ctx, us)).To(Succeed())
		us.Status.Conditions = []metav1.Condition{{Type: "Available", Status: metav1.ConditionFalse, Reason: "NoClusterVersion",
			Message: "no ClusterVersion yet", LastTransitionTime: metav1.Now()}}
		Expect(env.Client.Status().Update(ctx, us)).To(Succeed())

		Eventually(func(ctx context.Context) error {
			_, err := status(ctx, env.Config, "none", time.Now())
			return err
		}).WithContext(ctx).WithTimeout(10 * time.Second).Should(MatchError(And(
			ContainSubstring("has no control plane status yet"),
			ContainSubstring("Available=False (NoClusterVersion): no ClusterVersion yet"))))

		By("assessing here instead in auto")
		r, err := runSource(ctx, env.Config, SourceAuto, "none", time.Now())
		Expect(err).To(MatchError(ContainSubstring("no cluster version information available")))
		Expect(r.errOut).To(Equal(clientSourceLine(`UpgradeStatus "cluster" has no control plane status yet`) + "\n"))
	})

	// The published insights of a fixture snapshot must render exactly as mock
	// mode renders the snapshot itself: both modes share the renderer, and the
	// API must carry everything it needs.
	for _, name := range []string{"pdb-drain", "stalled"} {
		It("renders the published UpgradeStatus of "+name+" as mock mode renders it", func(ctx SpecContext) {
			loaded, result := assessFixture(name)
			// Without node insights, so that this spec does not depend on the
			// NodeProgressInsight schema (see the next spec).
			result.Nodes = nil
			publish(ctx, env, result)
			for _, details := range []string{"none", "all"} {
				want := renderLocally(result, details, loaded.Snapshot.Now)
				Eventually(func(ctx context.Context) (string, error) {
					return status(ctx, env.Config, details, loaded.Snapshot.Now)
				}).WithContext(ctx).WithTimeout(10*time.Second).Should(Equal(want), "--details=%s", details)
			}
		})
	}

	// And what cluster mode prints is oc's own output for oc's examples (see
	// testdata/oc): one with more nodes than a table lists, one with a
	// degraded operator. Not the one with alerts: the API keeps an insight's
	// times to the second, and oc reads an alert's start to the nanosecond,
	// so an alert's "Since" can round to the next second there.
	for _, name := range []string{"4.16.0-ec2-control-plane-updated-pdb-prohibits-draining", "4.14.1-degraded"} {
		example := filepath.Join("oc", name)
		It("renders the published insights of oc's example "+name+" byte for byte as oc does", func(ctx SpecContext) {
			loaded, result := assessFixture(example)
			publish(ctx, env, result)
			for details, golden := range map[string]string{"none": example + ".output", "all": example + ".detailed-output"} {
				want, err := os.ReadFile(filepath.Join("testdata", golden))
				Expect(err).NotTo(HaveOccurred())
				Eventually(func(ctx context.Context) (string, error) {
					return status(ctx, env.Config, details, loaded.Snapshot.Now)
				}).WithContext(ctx).WithTimeout(10*time.Second).Should(Equal(string(want)), "--details=%s", details)
			}
		})
	}
})

func assessFixture(name string) (*snapshot.Loaded, assess.Result) {
	GinkgoHelper()
	return loadAssessed(GinkgoT(), name)
}

func renderLocally(result assess.Result, details string, now time.Time) string {
	GinkgoHelper()
	return renderInput(render.Input{Status: result.Status, Nodes: result.Nodes}, details, now)
}

// renderInput is the report of in, as the CLI prints it.
func renderInput(in render.Input, details string, now time.Time) string {
	GinkgoHelper()
	var out bytes.Buffer
	Expect(render.Render(&out, in, render.Options{Details: render.Details(details), Now: now})).To(Succeed())
	return out.String()
}

// publish writes result as the controller would: the UpgradeStatus status
// with the report's node tables and one labelled NodeProgressInsight per
// node; insights of nodes no longer in the result are deleted.
func publish(ctx context.Context, env *testenv.Env, result assess.Result) {
	GinkgoHelper()
	result.Status.ReportedNodes = render.Reported(result.Status, result.Nodes)
	publishAsOlderController(ctx, env, result)
}

// publishAsOlderController is publish without the report's node tables, as
// a controller before them published.
func publishAsOlderController(ctx context.Context, env *testenv.Env, result assess.Result) {
	GinkgoHelper()
	us := &updatev1alpha1.UpgradeStatus{}
	Expect(env.Client.Get(ctx, keyOf(updatev1alpha1.UpgradeStatusName), us)).To(Succeed())
	us.Status = result.Status
	Expect(env.Client.Status().Update(ctx, us)).To(Succeed())

	Expect(env.Client.DeleteAllOf(ctx, &updatev1alpha1.NodeProgressInsight{})).To(Succeed())
	Eventually(func(g Gomega, ctx context.Context) {
		var list updatev1alpha1.NodeProgressInsightList
		g.Expect(env.Client.List(ctx, &list)).To(Succeed())
		g.Expect(list.Items).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
	for _, n := range result.Nodes {
		npi := &updatev1alpha1.NodeProgressInsight{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: updatev1alpha1.NodeInsightLabels(&n)}, Status: n}
		Expect(env.Client.Create(ctx, npi)).To(Succeed())
	}
}

var _ = Describe("cluster mode: reading, watching, objects and staleness", Ordered, func() {
	var env *testenv.Env

	BeforeAll(func(ctx SpecContext) {
		var err error
		cluster, err := simcluster.Start(ctx, simcluster.Options{ControlPlane: testenv.Options{}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cluster.Stop)
		env = cluster.Env
		us := &updatev1alpha1.UpgradeStatus{ObjectMeta: metav1.ObjectMeta{Name: updatev1alpha1.UpgradeStatusName}}
		Expect(env.Client.Create(ctx, us)).To(Succeed())
	})

	It("lists the node insights in one request", func(ctx SpecContext) {
		_, result := assessFixture("many-nodes")
		publish(ctx, env, result)
		lists := &countingReader{Reader: env.Client}
		Eventually(func(g Gomega, ctx context.Context) {
			lists.n = 0
			st, err := read(ctx, lists, env.Config.Host)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.nodes).To(HaveLen(len(result.Nodes)))
			g.Expect(lists.n).To(Equal(1))
		}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("renders a report from the UpgradeStatus alone when it carries the node tables", func(ctx SpecContext) {
		loaded, result := assessFixture("many-nodes")
		// What mock mode prints for the same snapshot: the two modes must
		// agree (TestMockGolden holds mock mode to oc's own outputs).
		want := renderLocally(result, "none", loaded.Snapshot.Now)
		publish(ctx, env, result)
		expectReadReport(ctx, env, render.DetailsNone, loaded.Snapshot.Now, want, true, 1, 0, 0)

		By("sending one HTTP request in all: no discovery before it")
		var (
			mu    sync.Mutex
			paths []string
		)
		cfg := rest.CopyConfig(env.Config)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				mu.Lock()
				paths = append(paths, r.Method+" "+r.URL.Path)
				mu.Unlock()
				return rt.RoundTrip(r)
			})
		})
		out, err := status(ctx, cfg, "none", loaded.Snapshot.Now)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(want))
		mu.Lock()
		defer mu.Unlock()
		Expect(paths).To(Equal([]string{"GET /apis/update.upshift.io/v1alpha1/upgradestatuses/cluster"}))

		By("reading the table as well for --details=nodes, which lists every node")
		wantAll := renderLocally(result, "all", loaded.Snapshot.Now)
		expectReadReport(ctx, env, render.DetailsAll, loaded.Snapshot.Now, wantAll, false, 1, 1, 0)
	})

	It("renders a report from the insights' table without node tables in the status, and lists them all when the CRD lacks a column", func(ctx SpecContext) {
		loaded, result := assessFixture("many-nodes")
		// What mock mode prints for the same snapshot: the two modes must
		// agree (TestMockGolden holds mock mode to oc's own outputs).
		want := renderLocally(result, "none", loaded.Snapshot.Now)
		publishAsOlderController(ctx, env, result)
		// Each way, one get (the UpgradeStatus) and one table.
		expectReads := func(lists int) {
			GinkgoHelper()
			expectReadReport(ctx, env, render.DetailsNone, loaded.Snapshot.Now, want, false, 1, 1, lists)
		}
		By("reading the table only")
		expectReads(0)

		By("listing every insight when the CRD has no Scope column (an older chart's)")
		crdKey := keyOf("nodeprogressinsights." + updatev1alpha1.GroupVersion.Group)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(env.Client.Get(ctx, crdKey, crd)).To(Succeed())
		columns := crd.Spec.Versions[0].AdditionalPrinterColumns
		// Every column the report reads, under the name it reads it by.
		for _, name := range tableColumns[colPool:] {
			Expect(columns).To(ContainElement(HaveField("Name", name)))
		}
		setColumns := func(ctx context.Context, cols []apiextensionsv1.CustomResourceColumnDefinition) {
			GinkgoHelper()
			Eventually(func(ctx context.Context) error {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := env.Client.Get(ctx, crdKey, crd); err != nil {
					return err
				}
				crd.Spec.Versions[0].AdditionalPrinterColumns = cols
				return env.Client.Update(ctx, crd)
			}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
			// The API server serves the new columns once it has rebuilt
			// the resource's handler.
			table := insightTableOf(env.Config)
			Eventually(func(g Gomega, ctx context.Context) {
				t, err := table(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(t.ColumnDefinitions).To(HaveLen(1 + len(cols)))
			}).WithContext(ctx).WithTimeout(20 * time.Second).Should(Succeed())
		}
		var older []apiextensionsv1.CustomResourceColumnDefinition
		for _, c := range columns {
			if c.Name != "Scope" {
				older = append(older, c)
			}
		}
		setColumns(ctx, older)
		DeferCleanup(setColumns, columns)
		expectReads(1)
	})

	It("prints the published objects with -o yaml", func(ctx SpecContext) {
		_, result := assessFixture("pdb-drain")
		publish(ctx, env, result)
		Eventually(func(g Gomega, ctx context.Context) {
			var out bytes.Buffer
			g.Expect(RunStatus(ctx, StatusOptions{Output: "yaml", Out: &out, ErrOut: GinkgoWriter,
				RESTConfig: func() (*rest.Config, error) { return env.Config, nil }})).To(Succeed())
			text := out.String()
			g.Expect(text).To(HavePrefix("apiVersion: v1\nitems:\n- apiVersion: update.upshift.io/v1alpha1\n  kind: UpgradeStatus\n"))
			g.Expect(strings.Count(text, "kind: NodeProgressInsight\n")).To(Equal(len(result.Nodes)))
			g.Expect(text).NotTo(ContainSubstring("managedFields"))
		}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("warns when the controller has not refreshed the status for over three minutes", func(ctx SpecContext) {
		loaded, result := assessFixture("stalled") // an updating cluster
		result.Status.Conditions = []metav1.Condition{{Type: updatev1alpha1.ConditionHeartbeat, Status: metav1.ConditionTrue, Reason: "Updating",
			LastTransitionTime: metav1.NewTime(loaded.Snapshot.Now.Add(-10 * time.Minute).Truncate(time.Second))}}
		publish(ctx, env, result)
		for ago, want := range map[time.Duration]string{
			-9 * time.Minute: "", // refreshed a minute before "now"
			0:                "Warning: the update status was last refreshed 10m ago",
		} {
			Eventually(func(g Gomega, ctx context.Context) {
				var out, errOut bytes.Buffer
				g.Expect(RunStatus(ctx, StatusOptions{Out: &out, ErrOut: &errOut, Now: func() time.Time { return loaded.Snapshot.Now.Add(ago) },
					RESTConfig: func() (*rest.Config, error) { return env.Config, nil }})).To(Succeed())
				// First the source line, then the warning if any.
				source, warning, _ := strings.Cut(errOut.String(), "\n")
				g.Expect(source).To(HavePrefix("Source: update-status-controller"))
				if want == "" {
					g.Expect(warning).To(BeEmpty())
				} else {
					g.Expect(warning).To(And(HavePrefix(want), ContainSubstring("update-status-controller may not be running"), HaveSuffix("\n")))
					g.Expect(strings.Count(warning, "\n")).To(Equal(1))
				}
			}).WithContext(ctx).WithTimeout(10*time.Second).Should(Succeed(), "now %v after the snapshot", ago)
		}
	})

	It("redraws on every change with --watch and ends cleanly when interrupted", func(ctx SpecContext) {
		stalledSnap, stalled := assessFixture("stalled")
		drainSnap, drain := assessFixture("pdb-drain")
		publish(ctx, env, stalled)
		var nowValue atomic.Value
		nowValue.Store(stalledSnap.Snapshot.Now)
		out := &syncBuffer{}
		watchCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- RunStatus(watchCtx, StatusOptions{Watch: true, Out: out, ErrOut: GinkgoWriter,
				Now:        func() time.Time { return nowValue.Load().(time.Time) },
				RESTConfig: func() (*rest.Config, error) { return env.Config, nil }})
		}()
		first := renderLocally(stalled, "none", stalledSnap.Snapshot.Now)
		Eventually(out.String).WithTimeout(10 * time.Second).Should(HavePrefix(first))

		// A new status and a new set of node insights: the watch redraws
		// the whole report, which ends as the report of the new state.
		nowValue.Store(drainSnap.Snapshot.Now)
		publish(ctx, env, drain)
		second := renderLocally(drain, "none", drainSnap.Snapshot.Now)
		Eventually(out.String).WithTimeout(10 * time.Second).Should(HaveSuffix("\n" + second))

		// One node insight changes: only a watch event can tell.
		var npi updatev1alpha1.NodeProgressInsight
		Expect(env.Client.Get(ctx, keyOf(drain.Nodes[0].Name), &npi)).To(Succeed())
		npi.Status.Version = "9.9.9"
		Expect(env.Client.Update(ctx, &npi)).To(Succeed())
		Eventually(out.String).WithTimeout(10 * time.Second).Should(ContainSubstring("9.9.9"))

		cancel()
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
	})

	It("warns under --watch, without any change, once the heartbeat turns three minutes old", func(ctx SpecContext) {
		_, result := assessFixture("stalled") // an updating cluster
		// On the wall clock, the heartbeat turns stale twelve seconds from
		// now: time for the publishing and the first draw on a loaded machine.
		beat := time.Now().Add(-staleAfter + 12*time.Second).Truncate(time.Second).Add(time.Second)
		result.Status.Conditions = []metav1.Condition{{Type: updatev1alpha1.ConditionHeartbeat, Status: metav1.ConditionTrue, Reason: "Updating",
			LastTransitionTime: metav1.NewTime(beat)}}
		publish(ctx, env, result)
		out, errOut := &syncBuffer{}, &syncBuffer{}
		watchCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- RunStatus(watchCtx, StatusOptions{Watch: true, Out: out, ErrOut: errOut,
				RESTConfig: func() (*rest.Config, error) { return env.Config, nil }})
		}()
		Eventually(out.String).WithTimeout(10 * time.Second).Should(ContainSubstring("= Control Plane ="))
		sourceLine := func() string { line, _, _ := strings.Cut(errOut.String(), "\n"); return line + "\n" }
		Expect(sourceLine()).To(HavePrefix("Source: update-status-controller"))
		Expect(errOut.String()).To(Equal(sourceLine()), "fresh at first")
		Eventually(func() string { return strings.TrimPrefix(errOut.String(), sourceLine()) }).WithTimeout(30 * time.Second).
			Should(HavePrefix("Warning: the update status was last refreshed 3m"))
		Expect(strings.Count(out.String(), "= Control Plane =")).To(Equal(2), "one redraw, at the threshold")
		cancel()
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
	})
})

// countingReader counts List (n) and Get calls, and the table lists of its
// table.
type countingReader struct {
	client.Reader
	mu              sync.Mutex
	n, gets, tables int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.Reader.List(ctx, list, opts...)
}

// table is the insightTable of the cluster cfg points at, counted.
func (c *countingReader) table(cfg *rest.Config) insightTable {
	GinkgoHelper()
	table := insightTableOf(cfg)
	return func(ctx context.Context) (*metav1.Table, error) {
		c.mu.Lock()
		c.tables++
		c.mu.Unlock()
		return table(ctx)
	}
}

// insightTableOf is the insightTable of the cluster cfg points at.
func insightTableOf(cfg *rest.Config) insightTable {
	GinkgoHelper()
	hc, err := rest.HTTPClientFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	table, err := newInsightTable(cfg, hc)
	Expect(err).NotTo(HaveOccurred())
	return table
}

// expectReadReport checks, until it holds, that readReport of details
// renders want, from the published node tables or not, after the given
// numbers of gets, tables and lists.
func expectReadReport(ctx context.Context, env *testenv.Env, details render.Details, now time.Time, want string, reported bool, gets, tables, lists int) {
	GinkgoHelper()
	reads := &countingReader{Reader: env.Client}
	table := reads.table(env.Config)
	Eventually(func(g Gomega, ctx context.Context) {
		reads.n, reads.gets, reads.tables = 0, 0, 0
		st, err := readReport(ctx, reads, table, env.Config.Host, details)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.reported).To(Equal(reported), "rendered from the published tables")
		g.Expect(renderInput(st.input(), string(details), now)).To(Equal(want))
		g.Expect([]int{reads.gets, reads.tables, reads.n}).To(Equal([]int{gets, tables, lists}), "gets, tables and lists")
	}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var _ = Describe("cluster mode without the Upshift CRDs", Ordered, func() {
	var env *testenv.Env

	BeforeAll(func(ctx SpecContext) {
		var err error
		cluster, err := simcluster.Start(ctx, simcluster.Options{ControlPlane: testenv.Options{WithoutUpshiftCRDs: true}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cluster.Stop)
		env = cluster.Env
	})

	It("says the UpgradeStatus CRD is not installed and which chart installs it", func(ctx SpecContext) {
		_, err := status(ctx, env.Config, "none", time.Now())
		Expect(err).To(MatchError(And(
			ContainSubstring("the UpgradeStatus CRD (update.upshift.io/v1alpha1) is not installed on "+env.Config.Host),
			ContainSubstring("update-status-controller Helm chart"))))
	})
})

var _ = Describe("cluster mode with an unreachable server", func() {
	It("says which server it cannot reach", func(ctx SpecContext) {
		// A port that was free a moment ago: nothing listens there.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		addr := l.Addr().String()
		Expect(l.Close()).To(Succeed())

		cfg := &rest.Config{Host: "https://" + addr, Timeout: 5 * time.Second}
		_, err = status(ctx, cfg, "none", time.Now())
		Expect(err).To(MatchError(ContainSubstring("cannot reach the cluster at https://" + addr)))
	})
})

var _ = Describe("flags", func() {
	It("rejects an invalid --details value, listing the choices", func(ctx SpecContext) {
		_, err := status(ctx, nil, "everything", time.Now())
		Expect(err).To(MatchError(ContainSubstring(`invalid --details value "everything": must be one of none, all, nodes, health, operators`)))
	})
})

func keyOf(name string) client.ObjectKey { return client.ObjectKey{Name: name} }
