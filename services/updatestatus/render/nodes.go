package render

import (
	"cmp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// maxNodeRows is how many node rows a table shows without --details=nodes;
// problem rows are shown beyond it.
const maxNodeRows = 10

const (
	assessDegraded    = "Degraded"
	assessUnavailable = "Unavailable"
	assessProgressing = "Progressing"
	assessExcluded    = "Excluded"
	assessOutdated    = "Outdated"
	assessCompleted   = "Completed"

	phaseUpdated = "Updated"
)

// Sort ranks: problems first, then work in progress, then what is done.
var (
	assessmentRank = map[string]int{assessDegraded: 0, assessUnavailable: 1, assessProgressing: 2, assessExcluded: 3, assessOutdated: 4, assessCompleted: 5}
	phaseRank      = map[string]int{"Draining": 0, "Updating": 1, "Rebooting": 2, "Paused": 3, "Gated": 4, "Pending": 5, phaseUpdated: 6}
)

// nodeRow is one node as displayed.
type nodeRow struct {
	name, assessment, phase, version, est, message string
	// available: the node counts as Available in the omitted-nodes line.
	available bool
}

// nodeRows turns node insights into rows, sorted as oc sorts them.
func nodeRows(nodes []*updatev1alpha1.NodeStatusInsight) []nodeRow {
	keys := make([]nodeKey, len(nodes))
	for i, n := range nodes {
		keys[i] = keyOf(classify(n), i)
	}
	// The key is total (names are unique), so any sort gives oc's order;
	// sorting keys avoids moving the rows, which dominated at 5,000 nodes.
	slices.SortFunc(keys, compareKeys)
	sorted := make([]nodeRow, len(keys))
	for i, k := range keys {
		sorted[i] = toRow(nodes[k.index])
	}
	return sorted
}

// classify is a node's row without what only its display needs (version,
// estimate, message): enough to sort it, to decide whether a table shows
// it, and to count it among the omitted.
func classify(n *updatev1alpha1.NodeStatusInsight) nodeRow {
	r := nodeRow{name: n.Name, available: true}
	phase := updatev1alpha1.ReasonNodePending
	if c := findCondition(n.Conditions, updatev1alpha1.ConditionUpdating); c != nil {
		phase = c.Reason
	}
	switch phase {
	case updatev1alpha1.ReasonNodeCompleted:
		r.phase, r.assessment = phaseUpdated, assessCompleted
	case updatev1alpha1.ReasonNodePaused:
		r.phase, r.assessment = phase, assessExcluded
	case updatev1alpha1.ReasonNodeDraining, updatev1alpha1.ReasonNodeUpdating, updatev1alpha1.ReasonNodeRebooting:
		r.phase, r.assessment = phase, assessProgressing
	default:
		r.phase, r.assessment = phase, assessOutdated
	}
	if c := findCondition(n.Conditions, updatev1alpha1.ConditionAvailable); c != nil && c.Status == metav1.ConditionFalse {
		r.assessment, r.available = assessUnavailable, false
	}
	// An updating node is never available to oc's count: its MCD works on
	// it (and usually it is cordoned), although its Available condition
	// only reports unavailability that is not part of the update. One case
	// of oc's cannot be told from the insight: a node updating while its MCD
	// still says Done, without a drain, shows as Updated (Updating=False);
	// oc counts it neither Available nor updated.
	if c := findCondition(n.Conditions, updatev1alpha1.ConditionUpdating); c != nil && c.Status == metav1.ConditionTrue {
		r.available = false
	}
	if c := findCondition(n.Conditions, updatev1alpha1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
		r.assessment = assessDegraded
	}
	return r
}

// toRow is the node's whole row, as displayed.
func toRow(n *updatev1alpha1.NodeStatusInsight) nodeRow {
	r := classify(n)
	r.version, r.est = n.Version, "?"
	if r.version == "" {
		r.version = "?"
	}
	if e := n.EstimatedToComplete; e != nil {
		if e.Duration == 0 {
			r.est = "-"
		} else {
			r.est = "+" + ShortDuration(e.Duration)
		}
	}
	r.message = n.Message
	// Long node names make messages unreadable; refer to the node itself.
	if len(n.Name) >= 8 {
		r.message = strings.ReplaceAll(r.message, n.Name, "<node>")
	}
	return r
}

// nodeKey is what oc sorts node rows by: problems first, then work in
// progress, then what is done; by name within each.
type nodeKey struct {
	assessment, phase int
	name              string
	// index is the node's in the insights the row was made from.
	index int
	// problem rows are shown whatever their place (rowShown).
	problem bool
}

func keyOf(nr nodeRow, index int) nodeKey {
	return nodeKey{assessmentRank[nr.assessment], phaseRank[nr.phase], nr.name, index, isProblem(nr)}
}

func compareKeys(a, b nodeKey) int {
	if c := cmp.Compare(a.assessment, b.assessment); c != 0 {
		return c
	}
	if c := cmp.Compare(a.phase, b.phase); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

// nodeTable prints the rows; without --details=nodes only the first ten and
// any problem rows, summarizing what it left out. omitted counts the nodes
// left out before the rows came (those a published table does not list).
func (r *renderer) nodeTable(rows []nodeRow, omitted omittedCounts) {
	all := r.opts.Details.EveryNode()
	tw := r.table()
	row(tw, "NAME", "ASSESSMENT", "PHASE", "VERSION", "EST", "MESSAGE")
	for i, nr := range rows {
		if !all && !rowShown(i, nr) {
			omitted.add(nr)
			continue
		}
		row(tw, nr.name, nr.assessment, nr.phase, nr.version, nr.est, nr.message)
	}
	r.flush(tw)
	if omitted.total > 0 {
		r.printf("...\nOmitted additional %d Total, %d Completed, %d Available, %d Progressing, %d Outdated, %d Draining, %d Excluded, and 0 Degraded nodes.\n",
			omitted.total, omitted.completed, omitted.available, omitted.progressing, omitted.outdated, omitted.draining, omitted.excluded)
		r.printf("Pass along --details=nodes to see all information.\n")
	}
}

// rowShown says whether a table without --details=nodes shows the row at
// index i of the sorted rows: the first ten, and every problem row.
func rowShown(i int, nr nodeRow) bool {
	return i < maxNodeRows || isProblem(nr)
}

// isProblem: a degraded or unavailable node. These rank first.
func isProblem(nr nodeRow) bool {
	return nr.assessment == assessDegraded || nr.assessment == assessUnavailable
}

// poolNodes groups the nodes not of the control plane by pool name, in
// their order in nodes: a worker pool's node table lists its group. The
// groups point into nodes.
func poolNodes(nodes []updatev1alpha1.NodeStatusInsight) map[string][]*updatev1alpha1.NodeStatusInsight {
	// Sized first: the controller groups every node on every recomputation,
	// and growing the groups by appends allocated and copied about twice
	// what they hold.
	sizes := map[string]int{}
	for i := range nodes {
		if nodes[i].ScopeType != updatev1alpha1.ScopeTypeControlPlane {
			sizes[nodes[i].PoolResource.Name]++
		}
	}
	byPool := make(map[string][]*updatev1alpha1.NodeStatusInsight, len(sizes))
	for pool, n := range sizes {
		byPool[pool] = make([]*updatev1alpha1.NodeStatusInsight, 0, n)
	}
	for i := range nodes {
		if n := &nodes[i]; n.ScopeType != updatev1alpha1.ScopeTypeControlPlane {
			byPool[n.PoolResource.Name] = append(byPool[n.PoolResource.Name], n)
		}
	}
	return byPool
}

type omittedCounts struct {
	total, completed, available, progressing, outdated, draining, excluded int
}

func (o *omittedCounts) add(nr nodeRow) {
	o.total++
	if nr.assessment == assessCompleted {
		o.completed++
	}
	if nr.available {
		o.available++
	}
	if nr.assessment == assessProgressing {
		o.progressing++
	}
	if nr.phase != phaseUpdated {
		o.outdated++
	}
	if nr.phase == "Draining" {
		o.draining++
	}
	if nr.assessment == assessExcluded {
		o.excluded++
	}
}
