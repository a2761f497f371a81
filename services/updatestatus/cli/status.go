// Package cli is the logic of `kubectl upshift status`: it prints the update
// status the way `oc adm upgrade status` does, from one of three sources:
//
//   - the controller source reads what the update-status-controller
//     published (the UpgradeStatus singleton and the NodeProgressInsights)
//     and renders it;
//   - the client-side source reads the cluster's own OpenShift objects
//     (clientside.go) and assesses them here, with the controller's own
//     assessment code, as oc does: for a cluster without Upshift;
//   - mock mode (--mock-clusterversion) loads a snapshot from files and
//     assesses it the same way, offline.
//
// A cluster's report comes from the source --source names (source.go); by
// default (auto) from the controller when it has published a status, and
// otherwise from the client side. A line on stderr says which one was used.
// Mock mode and the client side share everything after reading
// (printAssessed), so a snapshot of a cluster prints what the cluster does.
//
// With the controller's status, --watch prints again on every change (told
// by watches of both kinds, never by polling), and a warning says when the
// controller's heartbeat is older than expected while the cluster updates.
// The client side refuses --watch: it would have to poll the alerts.
// -o json|yaml prints the objects instead of the report; assessed here, the
// objects the controller would publish.
//
// The command wiring (flags, kubeconfig) lives in cmd/kubectl-upshift; this
// package gets plain values so that it can be tested without a command line.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/optionalkind"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/render"
	"github.com/upshift-io/upshift/services/updatestatus/snapshot"
)

// chartName is the Helm chart that installs the CRDs and the controller.
const chartName = "update-status-controller"

// defaultRequestTimeout bounds every API request when the user gave no
// --request-timeout: a status command that hangs on an unreachable server
// helps nobody.
const defaultRequestTimeout = 30 * time.Second

// StatusOptions are the inputs of the status command.
type StatusOptions struct {
	// Details is the raw --details value; empty means none.
	Details string
	// MockClusterVersion is the --mock-clusterversion path; when set, the
	// cluster is not contacted at all.
	MockClusterVersion string
	// Source is the --source value: auto (also ""), controller or client.
	Source string
	// RESTConfig returns the cluster's client config. It is called only in
	// cluster mode, so mock mode works without any kubeconfig.
	RESTConfig func() (*rest.Config, error)
	// Now is the wall clock used in cluster mode; nil means time.Now.
	Now func() time.Time
	// Output is "" for the report, or "json" / "yaml" for the objects.
	Output string
	// Watch keeps printing, on every change of what the controller
	// published, until the context ends (cluster mode only).
	Watch bool
	// ClearScreen starts every watched report on a cleared terminal screen;
	// without it reports follow each other.
	ClearScreen bool

	// Out receives the report, ErrOut notes that are not part of it.
	Out, ErrOut io.Writer
	// Notices receives what oc prints on its standard output outside its
	// report (the offline mode's alerts notice); nil means Out.
	Notices io.Writer
}

// RunStatus prints the update status.
func RunStatus(ctx context.Context, o StatusOptions) error {
	details, err := render.ParseDetails(orDefault(o.Details, string(render.DetailsNone)))
	if err != nil {
		return err
	}
	switch o.Output {
	case "", outputJSON, outputYAML:
	default:
		return fmt.Errorf("invalid --output value %q: must be one of json, yaml", o.Output)
	}
	source, err := parseSource(o.Source)
	if err != nil {
		return err
	}
	if o.MockClusterVersion != "" {
		if o.Watch {
			return errors.New("--watch needs a cluster: a --mock-clusterversion snapshot never changes")
		}
		if o.Source != "" && source != SourceAuto {
			return fmt.Errorf("--source=%s reads a cluster: --mock-clusterversion reads files instead", source)
		}
		return runMock(o, details)
	}
	if o.Watch && source == SourceClient {
		return errWatchClientSide("")
	}
	return runCluster(ctx, o, details, source)
}

// runMock assesses a snapshot from files. The snapshot's own "now" makes the
// output reproducible; the real clock tells, as in oc, how long a node has
// been unavailable.
func runMock(o StatusOptions, details render.Details) error {
	loaded, err := snapshot.Load(o.MockClusterVersion)
	if err != nil {
		return err
	}
	snap := loaded.Snapshot
	snap.WallClock = time.Now()
	if o.Now != nil {
		snap.WallClock = o.Now()
	}
	return printAssessed(o, details, assessed{snap: snap, alertsNotice: loaded.AlertsNotice,
		what: "snapshot " + o.MockClusterVersion})
}

// assessed is an input to assess here: a snapshot of files or of a live
// cluster.
type assessed struct {
	snap assess.Snapshot
	// alertsNotice is oc's notice that the alerts could not be read; "" when
	// they were.
	alertsNotice string
	// what names the input in an error.
	what string
}

// printAssessed assesses a and prints the report, or with -o the objects the
// controller would publish for it: the one path of mock mode and of the
// client-side source after reading. With a nil Previous the assessment is
// exactly oc's.
func printAssessed(o StatusOptions, details render.Details, a assessed) error {
	result, err := assess.AssessForDisplay(a.snap)
	if err != nil {
		return fmt.Errorf("cannot assess %s: %w", a.what, err)
	}
	// oc reads the alerts only once it knows the cluster is updating, so its
	// notice about them never precedes "The cluster is not updating.". It
	// prints the notice on its standard output, before the report.
	if a.alertsNotice != "" && render.IsUpdating(result.Status) {
		notices := o.Notices
		switch {
		case o.Output != "":
			notices = o.ErrOut // keep the JSON or YAML on stdout parseable
		case notices == nil:
			notices = o.Out
		}
		if notices != nil {
			fmt.Fprint(notices, a.alertsNotice)
		}
	}
	if o.Output != "" {
		return writeObjects(o.Out, o.Output, objectsOf(result))
	}
	return render.Render(o.Out, render.Input{Status: result.Status, Nodes: result.Nodes},
		render.Options{Details: details, Now: a.snap.Now})
}

// clusterClients are the clients of one run against a cluster.
type clusterClients struct {
	// cfg is the user's configuration with the request timeout.
	cfg *rest.Config
	// watchCfg is cfg without the timeout: a watch is a long request.
	watchCfg *rest.Config
	hc       *http.Client
	c        client.Client
	// kube reads Nodes and the MCO Deployment in protobuf.
	kube   kubernetes.Interface
	mapper meta.RESTMapper
}

// newClusterClients creates the clients. That contacts nobody (the REST
// mapper knows the kinds), so every connection problem surfaces (and is
// explained) at the first read.
func newClusterClients(o StatusOptions) (clusterClients, error) {
	var cl clusterClients
	if o.RESTConfig == nil {
		return cl, errors.New("no cluster configuration: pass --kubeconfig or --mock-clusterversion")
	}
	cfg, err := o.RESTConfig()
	if err != nil {
		return cl, fmt.Errorf("cannot load the cluster configuration: %w", err)
	}
	cl.cfg = rest.CopyConfig(cfg)
	cl.watchCfg = rest.CopyConfig(cfg)
	if cl.cfg.Timeout == 0 {
		cl.cfg.Timeout = defaultRequestTimeout
	}
	if cl.hc, err = rest.HTTPClientFor(cl.cfg); err != nil {
		return cl, fmt.Errorf("cannot create a client for %s: %w", cl.cfg.Host, err)
	}
	cl.mapper = kindsMapper()
	if cl.c, err = client.New(cl.cfg, client.Options{Scheme: scheme.Scheme, HTTPClient: cl.hc, Mapper: cl.mapper}); err != nil {
		return cl, fmt.Errorf("cannot create a client for %s: %w", cl.cfg.Host, err)
	}
	if cl.kube, err = newKubeClient(cl.cfg, cl.hc); err != nil {
		return cl, fmt.Errorf("cannot create a client for %s: %w", cl.cfg.Host, err)
	}
	return cl, nil
}

// runCluster prints the report of a cluster from the chosen source: what
// the controller published, once or, with Watch, on every change until ctx
// ends; or the assessment made here.
func runCluster(ctx context.Context, o StatusOptions, details render.Details, source Source) error {
	cl, err := newClusterClients(o)
	if err != nil {
		return err
	}
	if source == SourceClient {
		return runClientSide(ctx, o, details, cl, "")
	}
	// A one-time report reads the UpgradeStatus, and the insights' table
	// when the status's node tables cannot carry it (readReport); -o and
	// --watch need the objects.
	readState := read
	if !o.Watch && o.Output == "" {
		table, err := newInsightTable(cl.cfg, cl.hc)
		if err != nil {
			return fmt.Errorf("cannot create a client for %s: %w", cl.cfg.Host, err)
		}
		readState = func(ctx context.Context, c client.Reader, server string) (clusterState, error) {
			return readReport(ctx, c, table, server, details)
		}
	}
	st, err := readState(ctx, cl.c, cl.cfg.Host)
	if why, ok := fallBack(err); ok && source == SourceAuto {
		if o.Watch {
			return errWatchClientSide(why)
		}
		return runClientSide(ctx, o, details, cl, why)
	}
	if err != nil {
		return err
	}
	p := printer{o: o, details: details}
	printSource(o.ErrOut, controllerSourceLine(st.status, p.now()))
	if !o.Watch {
		return p.print(st)
	}
	wc, err := client.NewWithWatch(cl.watchCfg, client.Options{Scheme: scheme.Scheme, Mapper: cl.mapper})
	if err != nil {
		return fmt.Errorf("cannot create a client for %s: %w", cl.cfg.Host, err)
	}
	return watchStatus(ctx, cl.c, wc, cl.cfg.Host, st, p)
}

// runClientSide reads the cluster's objects, assesses them here and prints
// the result; why is auto's reason to ("" when asked for).
func runClientSide(ctx context.Context, o StatusOptions, details render.Details, cl clusterClients, why string) error {
	printSource(o.ErrOut, clientSourceLine(why))
	now := time.Now()
	if o.Now != nil {
		now = o.Now()
	}
	live, err := readLive(ctx, cl, now)
	if err != nil {
		return err
	}
	return printAssessed(o, details, assessed{snap: live.snap, alertsNotice: live.alertsNotice, what: "the cluster at " + cl.cfg.Host})
}

// clusterState is what the controller published.
type clusterState struct {
	status *updatev1alpha1.UpgradeStatus
	nodes  map[string]*updatev1alpha1.NodeProgressInsight
	// nodesVersion is the resourceVersion of the node insight list, where a
	// watch of them starts.
	nodesVersion string
	// reported: the report renders the status' published node tables; no
	// insight was read.
	reported bool
}

func (s clusterState) input() render.Input {
	in := render.Input{Status: s.status.Status, Nodes: make([]updatev1alpha1.NodeStatusInsight, 0, len(s.nodes)), FromReported: s.reported}
	for _, n := range s.sortedNodes() {
		in.Nodes = append(in.Nodes, n.Status)
	}
	return in
}

func (s clusterState) sortedNodes() []*updatev1alpha1.NodeProgressInsight {
	out := make([]*updatev1alpha1.NodeProgressInsight, 0, len(s.nodes))
	for _, n := range s.nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// read fetches the UpgradeStatus singleton and every NodeProgressInsight.
func read(ctx context.Context, c client.Reader, server string) (clusterState, error) {
	st, err := readStatus(ctx, c, server)
	if err != nil {
		return st, err
	}
	return readNodes(ctx, c, server, st)
}

// readStatus fetches the UpgradeStatus singleton.
func readStatus(ctx context.Context, c client.Reader, server string) (clusterState, error) {
	var st clusterState
	status := &updatev1alpha1.UpgradeStatus{}
	if err := c.Get(ctx, client.ObjectKey{Name: updatev1alpha1.UpgradeStatusName}, status); err != nil {
		switch {
		case meta.IsNoMatchError(err), optionalkind.NotServed(err):
			return st, &noControllerStatus{why: "the UpgradeStatus CRD is not installed", err: explain(err, "UpgradeStatus", server)}
		case apierrors.IsNotFound(err):
			return st, &noControllerStatus{why: fmt.Sprintf("no UpgradeStatus %q", updatev1alpha1.UpgradeStatusName),
				err: fmt.Errorf("UpgradeStatus %q not found on %s: the update-status-controller is not running or has not computed the update status yet",
					updatev1alpha1.UpgradeStatusName, server)}
		case apierrors.IsForbidden(err):
			return st, &noControllerStatus{why: "not allowed to read UpgradeStatuses", err: explain(err, "UpgradeStatus", server)}
		}
		return st, explain(err, "UpgradeStatus", server)
	}
	if err := hasControlPlane(status, server); err != nil {
		return st, &noControllerStatus{why: fmt.Sprintf("UpgradeStatus %q has no control plane status yet", updatev1alpha1.UpgradeStatusName), err: err}
	}
	st.status = status
	return st, nil
}

// readNodes fetches every NodeProgressInsight into st.
//
// They come in one list, not in pages: a current apiserver (consistent reads
// from its cache, Kubernetes 1.31 and later) serves a list without a limit
// from its watch cache, while each page of a paged list is read from etcd; at
// 5,000 insights on a loaded apiserver the pages took about a third longer.
// Even the largest clusters have a few thousand nodes, so the one response
// stays a few megabytes.
func readNodes(ctx context.Context, c client.Reader, server string, st clusterState) (clusterState, error) {
	var list updatev1alpha1.NodeProgressInsightList
	if err := c.List(ctx, &list); err != nil {
		return st, explain(err, "NodeProgressInsight", server)
	}
	st.nodes = make(map[string]*updatev1alpha1.NodeProgressInsight, len(list.Items))
	for i := range list.Items {
		st.nodes[list.Items[i].Name] = &list.Items[i]
	}
	st.nodesVersion = list.ResourceVersion
	return st, nil
}

func hasControlPlane(status *updatev1alpha1.UpgradeStatus, server string) error {
	if cp := status.Status.ControlPlane; cp == nil || cp.ClusterVersion == nil {
		return fmt.Errorf("UpgradeStatus %q on %s has no control plane status yet: the update-status-controller has not computed it%s",
			updatev1alpha1.UpgradeStatusName, server, controllerConditions(status.Status.Conditions))
	}
	return nil
}

// kindsMapper maps the kinds the CLI reads to their resources without
// asking the server. The client's default mapper reads the API discovery
// first: a round trip per run before the one read a report needs (and on an
// OpenShift cluster a large response). A CRD that is not installed shows
// instead in the read's NotFound (optionalkind.NotServed).
func kindsMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{
		updatev1alpha1.GroupVersion.WithKind("UpgradeStatus"),
		updatev1alpha1.GroupVersion.WithKind("NodeProgressInsight"),
		configv1.GroupVersion.WithKind("ClusterVersion"),
		configv1.GroupVersion.WithKind("ClusterOperator"),
		mcfgv1.GroupVersion.WithKind("MachineConfigPool"),
		mcfgv1.GroupVersion.WithKind("MachineConfig"),
	} {
		m.Add(gvk, meta.RESTScopeRoot)
	}
	m.Add(nodegatev1alpha1.GroupVersion.WithKind("MutexRunConfig"), meta.RESTScopeNamespace)
	m.Add(routeGVK, meta.RESTScopeNamespace)
	return m
}

// explain turns a failed read of kind into an error that says what to do.
func explain(err error, kind, server string) error {
	var urlErr *url.Error
	var netErr net.Error
	switch {
	case meta.IsNoMatchError(err), optionalkind.NotServed(err):
		return fmt.Errorf("the %s CRD (%s) is not installed on %s: install the %s Helm chart, which installs it",
			kind, updatev1alpha1.GroupVersion.String(), server, chartName)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("not authorized by %s: check your credentials (%w)", server, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("not allowed to read %ss on %s: %w", kind, server, err)
	case errors.As(err, &urlErr), errors.As(err, &netErr):
		return fmt.Errorf("cannot reach the cluster at %s: %w", server, err)
	}
	return fmt.Errorf("cannot read %ss from %s: %w", kind, server, err)
}

// controllerConditions summarizes the controller's own conditions, which say
// why it could not compute the status.
func controllerConditions(conds []metav1.Condition) string {
	var parts []string
	for _, c := range conds {
		part := fmt.Sprintf("%s=%s", c.Type, c.Status)
		if c.Reason != "" {
			part += " (" + c.Reason + ")"
		}
		if c.Message != "" {
			part += ": " + c.Message
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	return "; controller conditions: " + strings.Join(parts, "; ")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
