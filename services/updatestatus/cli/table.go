package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/render"
)

// A one-time report without every node renders the node tables the
// controller published with the UpgradeStatus (ReportedNodes): one read. When
// there are none (an older controller, more problem nodes than the status
// holds) or the report lists every node, it needs, of each node, only what
// its printer columns show:
// the renderer reads a node's name, pool, scope, phase, version, estimate,
// message and the statuses of its Degraded and Available conditions, and the
// NodeProgressInsight has a printer column for each. So the report lists the
// insights as the API server's table of those columns, without the objects,
// and renders from the rows. That is one request more, sent alongside the
// one for the UpgradeStatus when the report lists every node. At 5,000 nodes the table is about 0.6 MB; the objects
// are 9.9 MB, and their metadata alone (managedFields, which no request can
// leave out) 6.4 MB.

// errReadAll: the report reads every insight in one list instead (the table
// cannot carry the report: a column missing, a cell it cannot read).
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

// readReport reads what a one-time report of these details shows. Without
// every node, that is the UpgradeStatus alone, which carries the report's
// node tables (ReportedNodes). Otherwise, or when it carries none (an older
// controller, or more problem nodes than it holds), the report also needs
// the insights' table, read alongside the UpgradeStatus when it is known to
// be needed. When the table cannot carry the report (a CRD of an older chart
// lacks a column), it reads every insight in one list instead.
func readReport(ctx context.Context, c client.Reader, table insightTable, server string, details render.Details) (clusterState, error) {
	if !details.EveryNode() {
		st, err := readStatus(ctx, c, server)
		if err != nil || st.status.Status.ReportedNodes != nil {
			st.reported = err == nil
			return st, err
		}
		t, err := table(ctx)
		return withTable(ctx, c, server, st, t, err)
	}
	var st clusterState
	var t *metav1.Table
	var tableErr error
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var err error
		st, err = readStatus(gctx, c, server)
		return err
	})
	g.Go(func() error {
		// Kept apart: a failed table falls back to the list, it does not
		// end the status read.
		t, tableErr = table(gctx)
		return nil
	})
	if err := g.Wait(); err != nil {
		return st, err
	}
	return withTable(ctx, c, server, st, t, tableErr)
}

// withTable is st with the node insights of table t, the outcome of its read
// being tableErr.
func withTable(ctx context.Context, c client.Reader, server string, st clusterState, t *metav1.Table, tableErr error) (clusterState, error) {
	var nodes []updatev1alpha1.NodeStatusInsight
	if tableErr == nil {
		nodes, tableErr = tableInsights(t)
	}
	switch {
	case errors.Is(tableErr, errReadAll):
		return readNodes(ctx, c, server, st)
	case tableErr != nil:
		return st, explain(tableErr, "NodeProgressInsight", server)
	}
	st.nodes = make(map[string]*updatev1alpha1.NodeProgressInsight, len(nodes))
	for i := range nodes {
		st.nodes[nodes[i].Name] = &updatev1alpha1.NodeProgressInsight{ObjectMeta: metav1.ObjectMeta{Name: nodes[i].Name}, Status: nodes[i]}
	}
	st.nodesVersion = t.ResourceVersion
	return st, nil
}

// The printer columns a node is read from, by name, and the order of a
// tableRow's cells. The names are the CRD's (kubebuilder markers on the API
// type, which cannot refer to Go constants); the cluster-mode specs read
// the real CRD's table, so a rename on either side fails them.
const (
	colName = iota
	colPool
	colScope
	colPhase
	colVersion
	colEst
	colMessage
	colDegraded
	colAvailable
	columnCount
)

var tableColumns = [columnCount]string{
	colName: "Name", colPool: "Pool", colScope: "Scope", colPhase: "Phase", colVersion: "Version",
	colEst: "Est", colMessage: "Message", colDegraded: "Degraded", colAvailable: "Available",
}

// tableRow is one node insight's cells of tableColumns; a field the insight
// lacks is "".
type tableRow [columnCount]string

// tableRows are t's rows as tableRows. A column missing (an older CRD) or a
// cell that is not a string is errReadAll.
func tableRows(t *metav1.Table) ([]tableRow, error) {
	at := map[string]int{}
	for i, c := range t.ColumnDefinitions {
		at[c.Name] = i
	}
	var index [columnCount]int
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

// tableInsights are the node insights of t's rows, as far as the report
// reads them.
func tableInsights(t *metav1.Table) ([]updatev1alpha1.NodeStatusInsight, error) {
	rows, err := tableRows(t)
	if err != nil {
		return nil, err
	}
	out := make([]updatev1alpha1.NodeStatusInsight, len(rows))
	for i, r := range rows {
		if out[i], err = insightOf(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// insightOf is a node insight as far as its table row tells, which is all the
// report reads of it. Of its conditions the row has the statuses of Degraded
// and Available and the reason of Updating (the phase), whose status follows
// from the phase; a condition the row lacks, the insight lacks.
func insightOf(r tableRow) (updatev1alpha1.NodeStatusInsight, error) {
	s := updatev1alpha1.NodeStatusInsight{
		Name:         r[colName],
		PoolResource: updatev1alpha1.PoolResourceRef{ResourceRef: updatev1alpha1.ResourceRef{Name: r[colPool]}},
		ScopeType:    updatev1alpha1.ScopeType(r[colScope]),
		Version:      r[colVersion],
		Message:      r[colMessage],
	}
	if est := r[colEst]; est != "" {
		// A metav1.Duration is serialized as time.Duration's String, and a
		// string column prints it as is.
		d, err := time.ParseDuration(est)
		if err != nil {
			return s, fmt.Errorf("%w: node %s: the Est cell %q is not a duration", errReadAll, s.Name, est)
		}
		s.EstimatedToComplete = &metav1.Duration{Duration: d}
	}
	if phase := r[colPhase]; phase != "" {
		updating := metav1.ConditionFalse
		if assess.Phase(phase).Updating() {
			updating = metav1.ConditionTrue
		}
		s.Conditions = append(s.Conditions, metav1.Condition{Type: updatev1alpha1.ConditionUpdating, Status: updating, Reason: phase})
	}
	if degraded := r[colDegraded]; degraded != "" {
		s.Conditions = append(s.Conditions, metav1.Condition{Type: updatev1alpha1.ConditionDegraded, Status: metav1.ConditionStatus(degraded)})
	}
	if available := r[colAvailable]; available != "" {
		s.Conditions = append(s.Conditions, metav1.Condition{Type: updatev1alpha1.ConditionAvailable, Status: metav1.ConditionStatus(available)})
	}
	return s, nil
}
