// Package render prints update status insights exactly the way
// `oc adm upgrade status` prints its assessment. It reads only
// the insight set, never the cluster, so the CLI can render what the
// controller published as well as what it assessed itself from files.
package render

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// Details selects the detailed views, as oc's --details flag.
type Details string

const (
	DetailsNone      Details = "none"
	DetailsAll       Details = "all"
	DetailsNodes     Details = "nodes"
	DetailsHealth    Details = "health"
	DetailsOperators Details = "operators"
)

// ParseDetails validates a --details value.
func ParseDetails(s string) (Details, error) {
	switch d := Details(s); d {
	case DetailsNone, DetailsAll, DetailsNodes, DetailsHealth, DetailsOperators:
		return d, nil
	}
	return "", fmt.Errorf("invalid --details value %q: must be one of none, all, nodes, health, operators", s)
}

// Options of a rendering.
type Options struct {
	Details Details
	// Now is the time durations are measured to (the assessment's now in
	// offline mode, the wall clock otherwise).
	Now time.Time
}

func (o Options) show(d Details) bool { return o.Details == DetailsAll || o.Details == d }

// EveryNode says whether a report of these details lists every node
// (--details=nodes or all), which the published node tables cannot render.
func (d Details) EveryNode() bool { return d == DetailsAll || d == DetailsNodes }

// Input is the insight set to render.
type Input struct {
	Status updatev1alpha1.UpgradeStatusStatus
	Nodes  []updatev1alpha1.NodeStatusInsight
	// FromReported renders the node tables from Status.ReportedNodes (see
	// Reported) instead of Nodes; only a report without --details=nodes can.
	FromReported bool
}

// Render writes the status report to w.
func Render(w io.Writer, in Input, opts Options) error {
	cp := in.Status.ControlPlane
	if cp == nil || cp.ClusterVersion == nil {
		return fmt.Errorf("the update status has no control plane information")
	}
	if opts.Details == "" {
		opts.Details = DetailsNone
	}
	if in.FromReported && (in.Status.ReportedNodes == nil || opts.Details.EveryNode()) {
		return fmt.Errorf("the published node tables cannot render this report: it needs every node insight")
	}
	if !IsUpdating(in.Status) {
		_, err := fmt.Fprintln(w, "The cluster is not updating.")
		return err
	}
	r := &renderer{w: w, opts: opts, in: in}
	r.controlPlane()
	r.controlPlaneNodes()
	r.workers()
	r.health()
	return r.err
}

// IsUpdating: the control plane is updating, or some worker pool with nodes
// still has outdated ones. The master pool does not count, as in oc.
func IsUpdating(s updatev1alpha1.UpgradeStatusStatus) bool {
	if s.ControlPlane == nil {
		return false
	}
	if c := findCondition(s.ControlPlane.Conditions, updatev1alpha1.ConditionUpdating); c != nil && c.Status == metav1.ConditionTrue {
		return true
	}
	for _, p := range s.WorkerPools {
		if p.Pool.Summary(updatev1alpha1.NodesTotal) > 0 && p.Pool.Summary(updatev1alpha1.NodesOutdated) > 0 {
			return true
		}
	}
	return false
}

type renderer struct {
	w    io.Writer
	opts Options
	in   Input
	err  error
}

func (r *renderer) printf(format string, args ...any) {
	if r.err == nil {
		_, r.err = fmt.Fprintf(r.w, format, args...)
	}
}

// table returns a tabwriter configured as oc's: padding 3, spaces.
func (r *renderer) table() *tabwriter.Writer {
	return tabwriter.NewWriter(r.w, 0, 0, 3, ' ', 0)
}

func (r *renderer) flush(tw *tabwriter.Writer) {
	if err := tw.Flush(); err != nil && r.err == nil {
		r.err = err
	}
}

// row writes one table row whose last cell is written verbatim, as oc writes
// its node and health tables: every other cell is tab-terminated (so even an
// empty last cell gets oc's trailing padding), and a newline inside the last
// cell starts an unaligned line at column 0, which also ends the column block
// for text/tabwriter.
func row(tw io.Writer, cells ...string) {
	fmt.Fprint(tw, strings.Join(cells[:len(cells)-1], "\t")+"\t"+cells[len(cells)-1]+"\n")
}

// rowIndented writes one table row whose multi-line last cell continues on
// further rows with the other cells empty, as oc's operator table does.
func rowIndented(tw io.Writer, cells ...string) {
	last := strings.Split(cells[len(cells)-1], "\n")
	fmt.Fprint(tw, strings.Join(cells[:len(cells)-1], "\t")+"\t"+last[0]+"\n")
	for _, line := range last[1:] {
		fmt.Fprint(tw, strings.Repeat("\t", len(cells)-1)+line+"\n")
	}
}

// updatingFor is how long the control plane update ran: to its completion, or to now.
func (r *renderer) updatingFor() time.Duration {
	cv := r.in.Status.ControlPlane.ClusterVersion
	end := r.opts.Now
	if cv.CompletedAt != nil {
		end = cv.CompletedAt.Time
	}
	return end.Sub(cv.StartedAt.Time).Round(time.Second)
}

func (r *renderer) controlPlane() {
	cp := r.in.Status.ControlPlane
	cv := cp.ClusterVersion
	target := cv.Versions.Target
	updatingFor := r.updatingFor()

	r.printf("= Control Plane =\n")
	if cv.Assessment == updatev1alpha1.ControlPlaneAssessmentCompleted {
		at := r.opts.Now
		if cv.CompletedAt != nil {
			at = cv.CompletedAt.Time
		}
		r.printf("Update to %s successfully completed at %s (duration: %s)\n",
			target.Version, at.UTC().Format(time.RFC3339), ShortDuration(roundForDisplay(updatingFor)))
		return
	}

	var updated, updating, waiting, unavailable, degraded int
	var updatingNames []string
	for _, co := range cp.ClusterOperators {
		if c := findCondition(co.Conditions, updatev1alpha1.ConditionUpdating); c != nil {
			switch {
			case c.Status == metav1.ConditionTrue:
				updating++
				updatingNames = append(updatingNames, co.Name)
			case c.Reason == updatev1alpha1.ReasonUpdated:
				updated++
			case c.Reason == updatev1alpha1.ReasonPending:
				waiting++
			}
		}
		if c := findCondition(co.Conditions, updatev1alpha1.ConditionHealthy); c != nil && c.Status == metav1.ConditionFalse {
			switch c.Reason {
			case updatev1alpha1.ReasonUnavailable:
				unavailable++
			case updatev1alpha1.ReasonDegraded:
				degraded++
			}
		}
	}

	r.printf("%-17s%s\n", "Assessment:", cv.Assessment)
	r.printf("%-17s%s\n", "Target Version:", targetVersion(cv.Versions))
	if len(updatingNames) > 0 {
		r.printf("%-17s%s\n", "Updating:", strings.Join(updatingNames, ", "))
	}
	r.printf("%-17s%d%% (%d operators updated, %d updating, %d waiting)\n", "Completion:", cv.Completion, updated, updating, waiting)
	r.printf("%-17s%s%s\n", "Duration:", ShortDuration(roundForDisplay(updatingFor)), r.estimateSuffix(cv, updatingFor))
	health := fmt.Sprintf("%d Healthy", len(cp.ClusterOperators)-unavailable-degraded)
	if unavailable > 0 {
		health += fmt.Sprintf(", %d Unavailable", unavailable)
	}
	if degraded > 0 {
		health += fmt.Sprintf(", %d Available but degraded", degraded)
	}
	r.printf("%-17s%s\n", "Operator Health:", health)

	if r.opts.show(DetailsOperators) && len(updatingNames) > 0 {
		r.printf("\nUpdating Cluster Operators\n")
		tw := r.table()
		row(tw, "NAME", "SINCE", "REASON", "MESSAGE")
		for _, co := range cp.ClusterOperators {
			c := findCondition(co.Conditions, updatev1alpha1.ConditionUpdating)
			if c == nil || c.Status != metav1.ConditionTrue {
				continue
			}
			reason := co.ProgressingReason
			if reason == "" {
				reason = "-"
			} else if len(reason) > 20 {
				reason = reason[:17] + "..."
			}
			rowIndented(tw, co.Name, untruncatedShortDuration(r.opts.Now.Sub(c.LastTransitionTime.Time)), reason, c.Message)
		}
		r.flush(tw)
	}
}

func targetVersion(v updatev1alpha1.ControlPlaneUpdateVersions) string {
	t := v.Target
	switch {
	case v.Previous == nil || t.HasMetadata(updatev1alpha1.InstallationMetadata):
		return t.Version + " (a new install)"
	case v.Previous.HasMetadata(updatev1alpha1.PartialMetadata):
		return fmt.Sprintf("%s (from incomplete %s)", t.Version, v.Previous.Version)
	case t.HasMetadata(updatev1alpha1.ArchitectureMetadata):
		return t.Version + " to Multi-Architecture"
	}
	return fmt.Sprintf("%s (from %s)", t.Version, v.Previous.Version)
}

// estimateSuffix is " (Est. Time Remaining: ...)", empty without an estimate.
func (r *renderer) estimateSuffix(cv *updatev1alpha1.ClusterVersionStatusInsight, updatingFor time.Duration) string {
	if cv.EstimatedCompletedAt == nil {
		return ""
	}
	est := roundForDisplay(cv.EstimatedCompletedAt.Sub(r.opts.Now))
	var text string
	switch {
	case cv.Versions.Target.HasMetadata(updatev1alpha1.ArchitectureMetadata):
		text = "N/A for Multi-Architecture Migration"
	case est < -10*time.Minute:
		text = "N/A; estimate duration was " + ShortDuration((updatingFor + est).Truncate(time.Minute))
	case est < 10*time.Minute:
		text = "<10m"
	default:
		text = ShortDuration(est)
	}
	return " (Est. Time Remaining: " + text + ")"
}

func (r *renderer) controlPlaneNodes() {
	t := r.controlPlaneTable()
	if len(t.nodes) == 0 {
		return
	}
	rows := nodeRows(t.nodes)
	allUpdated := t.omitted.outdated == 0
	for _, nr := range rows {
		if nr.phase != phaseUpdated {
			allUpdated = false
		}
	}
	if allUpdated {
		r.printf("\nAll control plane nodes successfully updated to %s\n", rows[0].version)
		return
	}
	r.printf("\nControl Plane Nodes\n")
	r.nodeTable(rows, t.omitted)
}

func (r *renderer) workers() {
	pools := append([]updatev1alpha1.Pool(nil), r.in.Status.WorkerPools...)
	// worker first, then the custom pools by name
	sort.SliceStable(pools, func(i, j int) bool {
		if (pools[i].Name == "worker") != (pools[j].Name == "worker") {
			return pools[i].Name == "worker"
		}
		return pools[i].Name < pools[j].Name
	})
	withNodes := false
	for _, p := range pools {
		if p.Pool.Summary(updatev1alpha1.NodesTotal) > 0 {
			withNodes = true
		}
	}
	if !withNodes {
		return
	}

	r.printf("\n= Worker Upgrade =\n\n")
	tw := r.table()
	row(tw, "WORKER POOL", "ASSESSMENT", "COMPLETION", "STATUS")
	for _, p := range pools {
		in := p.Pool
		total := in.Summary(updatev1alpha1.NodesTotal)
		if total == 0 {
			row(tw, p.Name, "Empty", "", fmt.Sprintf("%d Total", total))
			continue
		}
		status := fmt.Sprintf("%d Available, %d Progressing, %d Draining",
			in.Summary(updatev1alpha1.NodesAvailable), in.Summary(updatev1alpha1.NodesProgressing), in.Summary(updatev1alpha1.NodesDraining))
		if e := in.Summary(updatev1alpha1.NodesExcluded); e > 0 {
			status += fmt.Sprintf(", %d Excluded", e)
		}
		if d := in.Summary(updatev1alpha1.NodesDegraded); d > 0 {
			status += fmt.Sprintf(", %d Degraded", d)
		}
		completion := fmt.Sprintf("%d%% (%d/%d)", in.Completion, total-in.Summary(updatev1alpha1.NodesOutdated), total)
		row(tw, p.Name, string(in.Assessment), completion, status)
	}
	r.flush(tw)

	tables := r.poolTables()
	for _, p := range pools {
		t := tables[p.Name]
		if len(t.nodes) == 0 {
			continue
		}
		r.printf("\nWorker Pool Nodes: %s\n", p.Name)
		r.nodeTable(nodeRows(t.nodes), t.omitted)
	}
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// roundForDisplay rounds to the minute above 10 minutes, else to the second.
func roundForDisplay(d time.Duration) time.Duration {
	if d > 10*time.Minute {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}

// ShortDuration formats a duration as oc does: whole seconds, no zero
// trailing units ("1h", "14m", "1h59m", "1m29s"), and "now" for zero.
func ShortDuration(d time.Duration) string {
	s := d.Truncate(time.Second).String()
	switch {
	case s == "0s":
		return "now"
	case strings.HasSuffix(s, "h0m0s"):
		return strings.TrimSuffix(s, "0m0s")
	case strings.HasSuffix(s, "m0s"):
		return strings.TrimSuffix(s, "0s")
	}
	return s
}

// untruncatedShortDuration is oc's short duration applied to a raw duration,
// as oc formats the operator table's SINCE column (every other duration it
// prints is whole seconds first). A fraction is cut at its decimal point
// and the digits before it read as seconds, whatever their unit was, so
// 368.975µs prints as 6m8s and 1.5ms as 1s, while 500ms stays 500ms.
func untruncatedShortDuration(d time.Duration) string {
	s := d.String()
	switch {
	case s == "0s":
		return "now"
	case strings.HasSuffix(s, "h0m0s"):
		return s[:len(s)-4]
	case strings.HasSuffix(s, "m0s"):
		return s[:len(s)-2]
	}
	if whole, _, ok := strings.Cut(s, "."); ok {
		if p, err := time.ParseDuration(whole + "s"); err == nil {
			return untruncatedShortDuration(p)
		}
	}
	return s
}
