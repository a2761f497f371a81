package render

import (
	"slices"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// Reported are the node tables that a report of status and nodes without
// --details=nodes prints: for the control plane and each worker pool, the
// nodes the table lists, in its order, and counts of the nodes it leaves
// out. The controller publishes them with the status
// (UpgradeStatusStatus.ReportedNodes), so that such a report is one read at
// any cluster size; Input.FromReported renders from them. They are nil when
// there is no node to list, or when the listed nodes exceed the API's bounds
// (many problem nodes, or many pools): the report then reads the insights.
func Reported(status updatev1alpha1.UpgradeStatusStatus, nodes []updatev1alpha1.NodeStatusInsight) *updatev1alpha1.ReportedNodes {
	b := reportBudget{nodes: updatev1alpha1.MaxReportedNodes, messageBytes: updatev1alpha1.MaxReportedMessageBytes}
	out := &updatev1alpha1.ReportedNodes{}
	var ok bool
	if out.ControlPlane, ok = b.table(controlPlaneNodes(nodes)); !ok {
		return nil
	}
	// The pools a report prints tables for: those of the status with nodes.
	byPool := poolNodes(nodes)
	for _, p := range status.WorkerPools {
		group := byPool[p.Name]
		if len(group) == 0 {
			continue
		}
		t, ok := b.table(group)
		if !ok {
			return nil
		}
		out.WorkerPools = append(out.WorkerPools, updatev1alpha1.PoolNodeTable{Name: p.Name, NodeTable: t})
	}
	if len(out.ControlPlane.Nodes) == 0 && len(out.WorkerPools) == 0 {
		// Nothing to list; an empty object would be published as null,
		// which the API refuses.
		return nil
	}
	return out
}

// reportBudget is what is left of ReportedNodes' bounds.
type reportBudget struct {
	nodes, messageBytes int
}

// table is the published table of nodes, charged to b; false when b runs
// out.
func (b *reportBudget) table(nodes []*updatev1alpha1.NodeStatusInsight) (updatev1alpha1.NodeTable, bool) {
	var t updatev1alpha1.NodeTable
	shown, omitted := shownRows(nodes)
	for _, i := range shown {
		n := nodes[i]
		b.nodes--
		b.messageBytes -= len(n.Message)
		if b.nodes < 0 || b.messageBytes < 0 {
			return t, false
		}
		t.Nodes = append(t.Nodes, listed(n))
	}
	t.Omitted = omitted.published()
	return t, true
}

// shownRows are the indexes in nodes of the rows a table without
// --details=nodes shows, in oc's order, and the counts of the rows it
// leaves out: what nodeRows and rowShown give, without sorting or
// formatting every row (the controller does this for every node on every
// recomputation). Problem rows sort first and are all shown, so the table
// shows the problems, then the first of the other rows up to ten in all.
func shownRows(nodes []*updatev1alpha1.NodeStatusInsight) ([]int, omittedCounts) {
	var problems []nodeKey
	first := make([]nodeKey, 0, maxNodeRows+1) // the first other rows, sorted
	for i, n := range nodes {
		k := keyOf(classify(n), i)
		if k.problem {
			problems = append(problems, k)
			continue
		}
		if at, _ := slices.BinarySearchFunc(first, k, compareKeys); at < maxNodeRows {
			first = slices.Insert(first, at, k)
			if len(first) > maxNodeRows {
				first = first[:maxNodeRows]
			}
		}
	}
	slices.SortFunc(problems, compareKeys)
	shown := make([]int, 0, max(len(problems), maxNodeRows))
	isShown := make([]bool, len(nodes))
	for _, k := range append(problems, first[:min(len(first), max(0, maxNodeRows-len(problems)))]...) {
		shown = append(shown, k.index)
		isShown[k.index] = true
	}
	var omitted omittedCounts
	for i, n := range nodes {
		if !isShown[i] {
			omitted.add(classify(n))
		}
	}
	return shown, omitted
}

// listed is n as a published table lists it: the report reads its
// conditions' types, statuses and reasons only, so their messages (up to
// 32 KiB each) are left out.
func listed(n *updatev1alpha1.NodeStatusInsight) updatev1alpha1.NodeStatusInsight {
	out := *n.DeepCopy()
	for i := range out.Conditions {
		out.Conditions[i].Message = ""
	}
	return out
}

// controlPlaneNodes are the nodes of the control-plane table, in their order
// in nodes.
func controlPlaneNodes(nodes []updatev1alpha1.NodeStatusInsight) []*updatev1alpha1.NodeStatusInsight {
	var out []*updatev1alpha1.NodeStatusInsight
	for i := range nodes {
		if nodes[i].ScopeType == updatev1alpha1.ScopeTypeControlPlane {
			out = append(out, &nodes[i])
		}
	}
	return out
}

// tableSource is what a node table is printed from: nodes, and counts of
// nodes already left out (a published table's).
type tableSource struct {
	nodes   []*updatev1alpha1.NodeStatusInsight
	omitted omittedCounts
}

// fromTable is the source of a published table.
func fromTable(t updatev1alpha1.NodeTable) tableSource {
	nodes := make([]*updatev1alpha1.NodeStatusInsight, len(t.Nodes))
	for i := range t.Nodes {
		nodes[i] = &t.Nodes[i]
	}
	return tableSource{nodes, omittedFrom(t.Omitted)}
}

func (r *renderer) controlPlaneTable() tableSource {
	if r.in.FromReported {
		return fromTable(r.in.Status.ReportedNodes.ControlPlane)
	}
	return tableSource{nodes: controlPlaneNodes(r.in.Nodes)}
}

// poolTables are the worker pools' node tables by pool name.
func (r *renderer) poolTables() map[string]tableSource {
	out := map[string]tableSource{}
	if r.in.FromReported {
		for _, t := range r.in.Status.ReportedNodes.WorkerPools {
			out[t.Name] = fromTable(t.NodeTable)
		}
		return out
	}
	for name, nodes := range poolNodes(r.in.Nodes) {
		out[name] = tableSource{nodes: nodes}
	}
	return out
}

func (o omittedCounts) published() updatev1alpha1.OmittedNodes {
	return updatev1alpha1.OmittedNodes{
		Total: int32(o.total), Completed: int32(o.completed), Available: int32(o.available),
		Progressing: int32(o.progressing), Outdated: int32(o.outdated), Draining: int32(o.draining), Excluded: int32(o.excluded),
	}
}

func omittedFrom(o updatev1alpha1.OmittedNodes) omittedCounts {
	return omittedCounts{
		total: int(o.Total), completed: int(o.Completed), available: int(o.Available),
		progressing: int(o.Progressing), outdated: int(o.Outdated), draining: int(o.Draining), excluded: int(o.Excluded),
	}
}
