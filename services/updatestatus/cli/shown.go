package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/render"
)

// A one-time report shows at most ten rows per node table (and the problem
// rows); the other nodes only count in its omitted-nodes lines, and what
// those count (a node's pool, phase, Degraded and Available) is in the
// insights' printer columns. So the report lists the insights as the API
// server's table of those columns, without the objects, chooses the rows it
// shows, and reads only those insights in full. At 5,000 nodes the table is
// 0.6 MB; the metadata-only list this replaced was 6.4 MB (managedFields,
// which no request can leave out) and took three to four times as long.

// maxShownReads bounds the insights read one by one; a report that shows more
// (many problem rows, or --details=nodes) lists them all at once instead.
var maxShownReads = 64

// shownReaders is how many of those reads run at once.
const shownReaders = 8

// errReadAll: the report reads every insight in one list instead (too many
// to read one by one, or no table that tells which).
var errReadAll = errors.New("reading every insight")

// insightTable lists the node insights as the API server's table of their
// printer columns.
type insightTable func(ctx context.Context) (*metav1.Table, error)

// newInsightTable is the insightTable of the cluster cfg points at, over hc.
func newInsightTable(cfg *rest.Config, hc *http.Client) (insightTable, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion = &updatev1alpha1.GroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme.Scheme).WithoutConversion()
	rc, err := rest.RESTClientForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (*metav1.Table, error) {
		body, err := rc.Get().Resource("nodeprogressinsights").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
			Param("includeObject", string(metav1.IncludeNone)).
			DoRaw(ctx)
		if err != nil {
			return nil, err
		}
		t := &metav1.Table{}
		if err := json.Unmarshal(body, t); err != nil {
			return nil, fmt.Errorf("cannot decode the table of NodeProgressInsights: %w", err)
		}
		if t.Kind != "Table" {
			// A server that cannot print tables answers with the list.
			return nil, fmt.Errorf("%w: a %s came instead of a Table", errReadAll, t.Kind)
		}
		return t, nil
	}, nil
}

// readShown reads what the report shows: the UpgradeStatus, and each node
// insight in full if the report shows its row, else as its table row tells
// it. It reads every insight in one list instead when more than
// maxShownReads would be read one by one, or when the table lacks a column
// (an older CRD).
func readShown(ctx context.Context, c client.Reader, table insightTable, server string, details render.Details) (clusterState, error) {
	st, err := readStatus(ctx, c, server)
	if err != nil {
		return st, err
	}
	nodes, version, err := readShownNodes(ctx, c, table, st.status.Status, details)
	switch {
	case errors.Is(err, errReadAll), apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		// Too many, no usable table, or the table's version compacted away
		// meanwhile.
		return readNodes(ctx, c, server, st)
	case err != nil:
		return st, explain(err, "NodeProgressInsight", server)
	}
	st.nodes, st.nodesVersion = nodes, version
	return st, nil
}

// readShownNodes lists the insights' table, chooses the rows the report
// of status shows, and reads those insights in full as they were at the
// table's resourceVersion: the report is then the one a full list would give,
// however the nodes move meanwhile (during an update the rows shown are the
// nodes changing phase every few seconds). A list by name at an exact
// resourceVersion is one key read from etcd at that revision.
func readShownNodes(ctx context.Context, c client.Reader, table insightTable, status updatev1alpha1.UpgradeStatusStatus, details render.Details) (map[string]*updatev1alpha1.NodeProgressInsight, string, error) {
	t, err := table(ctx)
	if err != nil {
		return nil, "", err
	}
	rows, err := tableRows(t)
	if err != nil {
		return nil, "", err
	}
	summaries, full := splitShown(status, rows, details)
	if len(full) > maxShownReads {
		return nil, "", errReadAll
	}
	nodes := make(map[string]*updatev1alpha1.NodeProgressInsight, len(rows))
	for _, n := range summaries {
		nodes[n.Name] = &updatev1alpha1.NodeProgressInsight{ObjectMeta: metav1.ObjectMeta{Name: n.Name}, Status: n}
	}
	got := make([]*updatev1alpha1.NodeProgressInsight, len(full))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(shownReaders)
	for i, name := range full {
		g.Go(func() error {
			var one updatev1alpha1.NodeProgressInsightList
			if err := c.List(gctx, &one, client.MatchingFields{"metadata.name": name}, &client.ListOptions{Raw: &metav1.ListOptions{
				ResourceVersion: t.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact,
			}}); err != nil {
				return err
			}
			if len(one.Items) != 1 {
				return fmt.Errorf("NodeProgressInsight %s at resourceVersion %s: %d found", name, t.ResourceVersion, len(one.Items))
			}
			got[i] = &one.Items[0]
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, "", err
	}
	for _, n := range got {
		nodes[n.Name] = n
	}
	return nodes, t.ResourceVersion, nil
}

// tableColumns are the printer columns a table row is read from, in the
// order of tableRow's cells.
var tableColumns = [...]string{"Name", "Pool", "Phase", "Degraded", "Available"}

// tableRow is one node insight's cells of tableColumns; a condition the
// insight lacks is "".
type tableRow [len(tableColumns)]string

// tableRows are t's rows as tableRows. A column missing (an older CRD) or a
// cell that is not a string is errReadAll.
func tableRows(t *metav1.Table) ([]tableRow, error) {
	at := map[string]int{}
	for i, c := range t.ColumnDefinitions {
		at[c.Name] = i
	}
	var index [len(tableColumns)]int
	for i, name := range tableColumns {
		j, ok := at[name]
		if !ok {
			return nil, fmt.Errorf("%w: the NodeProgressInsight table has no %s column (an older CRD)", errReadAll, name)
		}
		index[i] = j
	}
	rows := make([]tableRow, len(t.Rows))
	for r, row := range t.Rows {
		for i, j := range index {
			if j >= len(row.Cells) {
				return nil, fmt.Errorf("%w: a NodeProgressInsight table row has %d cells", errReadAll, len(row.Cells))
			}
			switch v := row.Cells[j].(type) {
			case nil:
			case string:
				rows[r][i] = v
			default:
				return nil, fmt.Errorf("%w: the NodeProgressInsight table's %s cell holds a %T", errReadAll, tableColumns[i], v)
			}
		}
	}
	return rows, nil
}

// splitShown chooses, from the insights' table rows, those the report of
// status needs in full; the others it returns as summarized, for the
// omitted-nodes counts. Needed in full: every row the report shows, the
// control plane's nodes (all shown), and nodes of no worker pool the status
// lists.
func splitShown(status updatev1alpha1.UpgradeStatusStatus, rows []tableRow, details render.Details) (summaries []updatev1alpha1.NodeStatusInsight, full []string) {
	workerPools := map[string]bool{}
	for _, p := range status.WorkerPools {
		workerPools[p.Name] = true
	}
	for _, r := range rows {
		if s := summarized(r); workerPools[s.PoolResource.Name] {
			summaries = append(summaries, s)
		} else {
			full = append(full, r[0])
		}
	}
	shown := render.ShownNodes(render.Input{Status: status, Nodes: summaries}, render.Options{Details: details})
	kept := summaries[:0]
	for _, s := range summaries {
		if shown[s.Name] {
			full = append(full, s.Name)
		} else {
			kept = append(kept, s)
		}
	}
	return kept, full
}

// summarized is a node insight as far as its table row tells: its pool and
// its Updating, Degraded and Available conditions' statuses (and Updating's
// reason, the phase, whose status follows from it; a condition the row lacks
// the insight lacks). That is all the report uses of a node it does not show.
func summarized(r tableRow) updatev1alpha1.NodeStatusInsight {
	name, pool, phase, degraded, available := r[0], r[1], r[2], r[3], r[4]
	s := updatev1alpha1.NodeStatusInsight{
		Name:         name,
		PoolResource: updatev1alpha1.PoolResourceRef{ResourceRef: updatev1alpha1.ResourceRef{Name: pool}},
		ScopeType:    updatev1alpha1.ScopeTypeWorkerPool,
	}
	if phase != "" {
		updating := metav1.ConditionFalse
		if assess.Phase(phase).Updating() {
			updating = metav1.ConditionTrue
		}
		s.Conditions = append(s.Conditions, metav1.Condition{Type: updatev1alpha1.ConditionUpdating, Status: updating, Reason: phase})
	}
	if degraded != "" {
		s.Conditions = append(s.Conditions, metav1.Condition{Type: updatev1alpha1.ConditionDegraded, Status: metav1.ConditionStatus(degraded)})
	}
	if available != "" {
		s.Conditions = append(s.Conditions, metav1.Condition{Type: updatev1alpha1.ConditionAvailable, Status: metav1.ConditionStatus(available)})
	}
	return s
}
