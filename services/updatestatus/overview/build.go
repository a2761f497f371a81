package overview

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Component names, as the binaries are named.
const (
	UpgradeScheduler = "upgrade-scheduler"
	ClusterUpdate    = "cluster-update"
	MCPTracker       = "mcp-tracker"
	NodeGate         = "node-gate"
	CPMSController   = "cpms-controller"
	AROMonitor       = "aro-monitor"
)

// Build builds the view from what was read.
func Build(in Input) Model {
	m := Model{Sections: []Section{
		schedulerSection(in),
		clusterUpdateSection(in),
		trackerSection(in),
		nodeGateSection(in),
		cpmsSection(in),
		aroMonitorSection(in),
	}}
	m.Verdict = verdict(in, m.Sections)
	m.Headline = headline(in, m)
	return m
}

// verdict: blocked wins over everything, since a script must learn of it
// even when other reads failed; without the ClusterVersion nothing can be
// said about updating.
func verdict(in Input, sections []Section) Verdict {
	updating := false
	for _, s := range sections {
		if s.State == StateBlocked {
			return VerdictBlocked
		}
		updating = updating || s.Updating
	}
	switch {
	case !in.ClusterVersion.Ok():
		return VerdictUnknown
	case updating:
		return VerdictUpdating
	}
	return VerdictNotUpdating
}

func headline(in Input, m Model) string {
	current, desired := "", ""
	if cv := in.ClusterVersion.Object; in.ClusterVersion.Ok() {
		current, desired = currentVersion(cv), cv.Status.Desired.Version
	}
	switch m.Verdict {
	case VerdictBlocked:
		for _, s := range m.Sections {
			if s.State == StateBlocked {
				return "Blocked: " + s.Component + ": " + s.Waiting
			}
		}
	case VerdictUnknown:
		return "Unknown: cannot read the ClusterVersion (" + readProblem(in.ClusterVersion.Outcome, in.ClusterVersion.Err) + ")"
	case VerdictUpdating:
		switch {
		case desired != "" && desired != current && current != "":
			return fmt.Sprintf("Updating: %s → %s", current, desired)
		case desired != "" && desired == current:
			// ClusterVersion is done; the workers (gated, tracked) are not.
			return "Updating: the control plane is at " + desired + ", the workers are not yet"
		}
		return "Updating: " + orElse(desired, "the cluster")
	}
	h := "Not updating: at " + orElse(current, orElse(desired, "an unknown version"))
	if s := m.Sections[0]; s.State == StateScheduled {
		h += "; " + s.Waiting
	}
	return h
}

// unreadable fills s when the component's objects could not be read (or its
// CRD is not installed) and says whether it did.
func unreadable(s *Section, outcome Outcome, err, kinds string) bool {
	switch outcome {
	case NotInstalled:
		s.State, s.Waiting = StateNotInstalled, "not installed (the "+kinds+" CRD is not served)"
	case Forbidden, Failed:
		s.State, s.Waiting = StateUnknown, "cannot read "+kinds+": "+readProblem(outcome, err)
	default:
		return false
	}
	return true
}

func readProblem(o Outcome, err string) string {
	switch o {
	case Forbidden:
		return "forbidden by RBAC"
	case NotInstalled:
		return "its CRD is not installed"
	case Absent:
		return "not found"
	}
	return oneLine(err, 160)
}

// severity orders states from the most to the least pressing, to sum up
// several objects (runs, UpgradeConfigs) of one component.
var severity = []State{StateBlocked, StateProgressing, StateWaiting, StateScheduled, StateAttention, StateDone, StateIdle, StateUnknown, StateNotInstalled}

func worse(a, b State) bool { return slices.Index(severity, a) < slices.Index(severity, b) }

func cond(conds []metav1.Condition, t string) *metav1.Condition {
	return meta.FindStatusCondition(conds, t)
}

func isTrue(conds []metav1.Condition, t string) bool {
	c := cond(conds, t)
	return c != nil && c.Status == metav1.ConditionTrue
}

func isFalse(conds []metav1.Condition, t string) bool {
	c := cond(conds, t)
	return c != nil && c.Status == metav1.ConditionFalse
}

// condLine is "Type: Reason: message", the message on one line.
func condLine(c *metav1.Condition) string {
	return joinNonEmpty(": ", c.Type+"="+string(c.Status), c.Reason, oneLine(c.Message, 200))
}

// clock is a time for a person: UTC, the date only when not today.
func clock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04 UTC")
	}
	return t.Format("2006-01-02 15:04 UTC")
}

// relative is "in 3h5m" or "20m ago", to the minute.
func relative(t, now time.Time) string {
	d := t.Sub(now).Round(time.Minute)
	switch {
	case d > 0:
		return "in " + shortDuration(d)
	case d < 0:
		return shortDuration(-d) + " ago"
	}
	return "now"
}

func shortDuration(d time.Duration) string {
	s := d.Round(time.Minute).String()
	s = strings.TrimSuffix(s, "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return orElse(s, "0m")
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

func orElse(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// capped keeps the first n lines and says how many more there are.
func capped(lines []string, n int, indent string) []string {
	if len(lines) <= n {
		return lines
	}
	return append(lines[:n:n], fmt.Sprintf("%sand %d more", indent, len(lines)-n))
}

// counts is "3 Completed, 1 PreHooks" in the order of keys, zero counts left out.
func counts[K ~string](order []K, n map[K]int) string {
	var parts []string
	for _, k := range order {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

func byNamespaceName[T interface {
	GetNamespace() string
	GetName() string
}](a, b T) int {
	return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
}
