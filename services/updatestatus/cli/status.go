// Package cli is the logic of `kubectl upshift status`: it prints the update
// status the way `oc adm upgrade status` does, from one of two sources:
//
//   - cluster mode reads what the update-status-controller published (the
//     UpgradeStatus singleton and the NodeProgressInsights) and renders it;
//   - mock mode (--mock-clusterversion) loads a snapshot from files, assesses
//     it here with the controller's own assessment code, and renders it with
//     the same renderer.
//
// In cluster mode, --watch prints again on every change (told by watches of
// both kinds, never by polling), and a warning says when the controller's
// heartbeat is older than expected while the cluster updates. -o json|yaml
// prints the objects instead of the report; offline, the assessed ones.
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
	"net/url"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
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
	if o.MockClusterVersion != "" {
		if o.Watch {
			return errors.New("--watch needs a cluster: a --mock-clusterversion snapshot never changes")
		}
		return runMock(o, details)
	}
	return runCluster(ctx, o, details)
}

// runMock assesses a snapshot from files. With a nil Previous the assessment
// is exactly oc's, and the snapshot's own "now" makes the output reproducible.
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
	result, err := assess.AssessForDisplay(snap)
	if err != nil {
		return fmt.Errorf("cannot assess snapshot %s: %w", o.MockClusterVersion, err)
	}
	// oc reads the alerts only once it knows the cluster is updating, so its
	// notice about them never precedes "The cluster is not updating.". It
	// prints the notice on its standard output, before the report.
	if loaded.AlertsNotice != "" && render.IsUpdating(result.Status) {
		notices := o.Notices
		switch {
		case o.Output != "":
			notices = o.ErrOut // keep the JSON or YAML on stdout parseable
		case notices == nil:
			notices = o.Out
		}
		if notices != nil {
			fmt.Fprint(notices, loaded.AlertsNotice)
		}
	}
	if o.Output != "" {
		return writeObjects(o.Out, o.Output, objectsOf(result))
	}
	return render.Render(o.Out, render.Input{Status: result.Status, Nodes: result.Nodes},
		render.Options{Details: details, Now: loaded.Snapshot.Now})
}

// runCluster renders what the controller published, once or, with Watch,
// on every change until ctx ends.
func runCluster(ctx context.Context, o StatusOptions, details render.Details) error {
	if o.RESTConfig == nil {
		return errors.New("no cluster configuration: pass --kubeconfig or --mock-clusterversion")
	}
	cfg, err := o.RESTConfig()
	if err != nil {
		return fmt.Errorf("cannot load the cluster configuration: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	// A watch is a long request: only reads get the default timeout.
	watchCfg := rest.CopyConfig(cfg)
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultRequestTimeout
	}
	// Creating the client contacts nobody (its REST mapper knows the kinds),
	// so every connection problem surfaces (and is explained) at the first
	// read.
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("cannot create a client for %s: %w", cfg.Host, err)
	}
	mapper := upshiftMapper()
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme, HTTPClient: hc, Mapper: mapper})
	if err != nil {
		return fmt.Errorf("cannot create a client for %s: %w", cfg.Host, err)
	}
	// A one-time report reads the UpgradeStatus, and the insights' table
	// when the status's node tables cannot carry it (readReport); -o and
	// --watch need the objects.
	readState := read
	if !o.Watch && o.Output == "" {
		table, err := newInsightTable(cfg, hc)
		if err != nil {
			return fmt.Errorf("cannot create a client for %s: %w", cfg.Host, err)
		}
		readState = func(ctx context.Context, c client.Reader, server string) (clusterState, error) {
			return readReport(ctx, c, table, server, details)
		}
	}
	st, err := readState(ctx, c, cfg.Host)
	if err != nil {
		return err
	}
	p := printer{o: o, details: details}
	if !o.Watch {
		return p.print(st)
	}
	wc, err := client.NewWithWatch(watchCfg, client.Options{Scheme: scheme.Scheme, Mapper: mapper})
	if err != nil {
		return fmt.Errorf("cannot create a client for %s: %w", cfg.Host, err)
	}
	return watchStatus(ctx, c, wc, cfg.Host, st, p)
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
		if apierrors.IsNotFound(err) && !notServed(err) {
			return st, fmt.Errorf("UpgradeStatus %q not found on %s: the update-status-controller is not running or has not computed the update status yet",
				updatev1alpha1.UpgradeStatusName, server)
		}
		return st, explain(err, "UpgradeStatus", server)
	}
	if err := hasControlPlane(status, server); err != nil {
		return st, err
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

// upshiftMapper maps the kinds the CLI reads to their resources without
// asking the server. The client's default mapper reads the API discovery
// first: a round trip per run before the one read a report needs (and on an
// OpenShift cluster a large response). A CRD that is not installed shows
// instead in the read's NotFound (notServed).
func upshiftMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{updatev1alpha1.GroupVersion})
	for _, kind := range []string{"UpgradeStatus", "NodeProgressInsight"} {
		m.Add(updatev1alpha1.GroupVersion.WithKind(kind), meta.RESTScopeRoot)
	}
	return m
}

// notServed says whether err is the NotFound of a resource the server does
// not serve (its CRD is not installed) rather than of an object. A path no
// API serves gets a plain-text 404, which the client reports as an
// unexpected response; a resource unknown in a served group gets a Status
// that names no object.
func notServed(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	if d == nil || d.Name == "" {
		return true
	}
	for _, c := range d.Causes {
		if c.Type == metav1.CauseTypeUnexpectedServerResponse {
			return true
		}
	}
	return false
}

// explain turns a failed read of kind into an error that says what to do.
func explain(err error, kind, server string) error {
	var urlErr *url.Error
	var netErr net.Error
	switch {
	case meta.IsNoMatchError(err), notServed(err):
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
