package cli

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/render"
)

// A one-time report shows at most ten rows per node table (and the problem
// rows); the other nodes only count in its omitted-nodes lines, and what
// those count is told by the labels the controller keeps on every insight.
// So the report reads the insights' metadata (one list), chooses the rows it
// shows, and reads only those insights in full. At 5,000 nodes on a loaded
// apiserver that took about a third of the time of reading every insight
// (the metadata, managedFields included, is what remains).

// maxShownReads bounds the insights read one by one; a report that shows more
// (many problem rows, or --details=nodes) lists them all at once instead.
var maxShownReads = 64

// shownReaders is how many of those reads run at once.
const shownReaders = 8

// errReadAll: more than maxShownReads insights to read one by one.
var errReadAll = errors.New("too many insights to read one by one")

// readShown reads what the report shows: the UpgradeStatus, and each node
// insight in full if the report shows its row or its labels cannot tell
// (an older controller's), else as its labels tell it (labelled). It reads
// every insight in one list instead when more than maxShownReads would be
// read one by one.
func readShown(ctx context.Context, c client.Reader, server string, details render.Details) (clusterState, error) {
	st, err := readStatus(ctx, c, server)
	if err != nil {
		return st, err
	}
	nodes, version, err := readShownNodes(ctx, c, st.status.Status, details)
	switch {
	case errors.Is(err, errReadAll), apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		// Too many, or the list's version compacted away meanwhile.
		return readNodes(ctx, c, server, st)
	case err != nil:
		return st, explain(err, "NodeProgressInsight", server)
	}
	st.nodes, st.nodesVersion = nodes, version
	return st, nil
}

// readShownNodes lists the insights' metadata, chooses the rows the report
// of status shows, and reads those insights in full as they were at the
// list's resourceVersion: the report is then the one a full list would give,
// however the nodes move meanwhile (during an update the rows shown are the
// nodes changing phase every few seconds). A list by name at an exact
// resourceVersion is one key read from etcd at that revision.
func readShownNodes(ctx context.Context, c client.Reader, status updatev1alpha1.UpgradeStatusStatus, details render.Details) (map[string]*updatev1alpha1.NodeProgressInsight, string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(updatev1alpha1.GroupVersion.WithKind("NodeProgressInsightList"))
	if err := c.List(ctx, list); err != nil {
		return nil, "", err
	}
	summaries, full := splitShown(status, list.Items, details)
	if len(full) > maxShownReads {
		return nil, "", errReadAll
	}
	nodes := make(map[string]*updatev1alpha1.NodeProgressInsight, len(list.Items))
	for _, n := range summaries {
		nodes[n.Name] = &updatev1alpha1.NodeProgressInsight{ObjectMeta: metav1.ObjectMeta{Name: n.Name}, Status: n}
	}
	got := make([]*updatev1alpha1.NodeProgressInsight, len(full))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(shownReaders)
	for i, m := range full {
		g.Go(func() error {
			var one updatev1alpha1.NodeProgressInsightList
			if err := c.List(gctx, &one, client.MatchingFields{"metadata.name": m.Name}, &client.ListOptions{Raw: &metav1.ListOptions{
				ResourceVersion: list.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact,
			}}); err != nil {
				return err
			}
			if len(one.Items) != 1 {
				return fmt.Errorf("NodeProgressInsight %s at resourceVersion %s: %d found", m.Name, list.ResourceVersion, len(one.Items))
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
	return nodes, list.ResourceVersion, nil
}

// splitShown chooses, from the insights' metadata, those the report of status
// needs in full; the others it returns as labelled, for the omitted-nodes
// counts. Needed in full: every row the report shows, the control plane's
// nodes (all shown), nodes of no worker pool the status lists, and nodes
// whose labels do not tell enough.
func splitShown(status updatev1alpha1.UpgradeStatusStatus, items []metav1.PartialObjectMetadata, details render.Details) (summaries []updatev1alpha1.NodeStatusInsight, full []*metav1.PartialObjectMetadata) {
	workerPools := map[string]bool{}
	for _, p := range status.WorkerPools {
		workerPools[p.Name] = true
	}
	var summarized []*metav1.PartialObjectMetadata
	for i := range items {
		m := &items[i]
		if s, ok := labelled(m.Name, m.Labels); ok && workerPools[s.PoolResource.Name] {
			summaries = append(summaries, s)
			summarized = append(summarized, m)
		} else {
			full = append(full, m)
		}
	}
	shown := render.ShownNodes(render.Input{Status: status, Nodes: summaries}, render.Options{Details: details})
	kept := summaries[:0]
	for i, s := range summaries {
		if shown[s.Name] {
			full = append(full, summarized[i])
		} else {
			kept = append(kept, s)
		}
	}
	return kept, full
}

// labelled is a node insight as far as its labels tell: its pool and the
// Updating, Degraded and Available conditions' statuses (and Updating's
// reason, the phase). That is all the report uses of a node it does not show.
// ok is false when a label is missing or has a value the controller does not
// write.
func labelled(name string, labels map[string]string) (updatev1alpha1.NodeStatusInsight, bool) {
	pool, okPool := labels[updatev1alpha1.LabelPool]
	phase, okPhase := labels[updatev1alpha1.LabelPhase]
	degraded, okDegraded := boolLabel(labels, updatev1alpha1.LabelDegraded)
	available, okAvailable := boolLabel(labels, updatev1alpha1.LabelAvailable)
	if !okPool || !okPhase || !okDegraded || !okAvailable {
		return updatev1alpha1.NodeStatusInsight{}, false
	}
	status := func(b bool) metav1.ConditionStatus {
		if b {
			return metav1.ConditionTrue
		}
		return metav1.ConditionFalse
	}
	return updatev1alpha1.NodeStatusInsight{
		Name:         name,
		PoolResource: updatev1alpha1.PoolResourceRef{ResourceRef: updatev1alpha1.ResourceRef{Name: pool}},
		ScopeType:    updatev1alpha1.ScopeTypeWorkerPool,
		Conditions: []metav1.Condition{
			{Type: updatev1alpha1.ConditionUpdating, Status: status(assess.Phase(phase).Updating()), Reason: phase},
			{Type: updatev1alpha1.ConditionDegraded, Status: status(degraded)},
			{Type: updatev1alpha1.ConditionAvailable, Status: status(available)},
		},
	}, true
}

func boolLabel(labels map[string]string, key string) (value, ok bool) {
	switch labels[key] {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}
