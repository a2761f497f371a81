package overview

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// The step and summary condition names the upgrade-scheduler writes (its
// plan package), repeated here rather than imported: the CLI must not link
// a controller.
const (
	stepClusterHealthyBefore = "ClusterHealthyBeforeUpgrade"
	stepClusterHealthyAfter  = "ClusterHealthyAfterUpgrade"
	stepFailedUpgrade        = "FailedUpgrade"
)

// maxSteps is how many of the latest steps are listed; the earlier ones are
// done and only counted.
const maxSteps = 6

// schedulerSection is the upgrade-scheduler's UpgradeConfigs: the one that
// matters most in full, the others in one line each.
func schedulerSection(in Input) Section {
	s := Section{Component: UpgradeScheduler}
	if unreadable(&s, in.UpgradeConfigs.Outcome, in.UpgradeConfigs.Err, "UpgradeConfig") {
		return s
	}
	ucs := sortedConfigs(in.UpgradeConfigs.Object)
	if len(ucs) == 0 {
		s.State, s.Waiting = StateIdle, "nothing scheduled (no UpgradeConfig)"
		return s
	}
	main := mainConfig(ucs)
	s.State, s.Waiting, s.Updating = schedulerWait(main, in.Now)
	if len(ucs) > 1 {
		s.Waiting = main.Namespace + "/" + main.Name + ": " + s.Waiting
	}
	s.Lines = configLines(main, in.Now)
	var others []string
	for _, uc := range ucs {
		if uc != main {
			others = append(others, configHeader(uc, in.Now))
		}
	}
	s.Lines = append(s.Lines, capped(others, 3, "")...)
	return s
}

func sortedConfigs(items []upgradev1alpha1.UpgradeConfig) []*upgradev1alpha1.UpgradeConfig {
	out := make([]*upgradev1alpha1.UpgradeConfig, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	slices.SortFunc(out, byNamespaceName)
	return out
}

// mainConfig is the UpgradeConfig whose upgrade has not ended, or else the
// first: MUO and the scheduler run one per cluster, more is a mistake the
// other lines show.
func mainConfig(ucs []*upgradev1alpha1.UpgradeConfig) *upgradev1alpha1.UpgradeConfig {
	for _, uc := range ucs {
		if !ended(phaseOf(uc)) {
			return uc
		}
	}
	return ucs[0]
}

func latest(uc *upgradev1alpha1.UpgradeConfig) *upgradev1alpha1.UpgradeHistory {
	if len(uc.Status.History) == 0 {
		return nil
	}
	return &uc.Status.History[0]
}

func phaseOf(uc *upgradev1alpha1.UpgradeConfig) upgradev1alpha1.UpgradePhase {
	if h := latest(uc); h != nil && h.Version == target(uc) {
		return h.Phase
	}
	// A history entry of another version is an earlier upgrade: the
	// scheduler has not taken up this spec yet.
	return upgradev1alpha1.UpgradePhaseNew
}

func ended(p upgradev1alpha1.UpgradePhase) bool {
	return p == upgradev1alpha1.UpgradePhaseUpgraded || p == upgradev1alpha1.UpgradePhaseFailed || p == upgradev1alpha1.UpgradePhaseCancelled
}

func target(uc *upgradev1alpha1.UpgradeConfig) string {
	if v := uc.Spec.Desired.Version; v != "" {
		return v
	}
	return uc.Spec.Desired.Image
}

func findStep(h *upgradev1alpha1.UpgradeHistory, t string) *upgradev1alpha1.UpgradeCondition {
	if h == nil {
		return nil
	}
	for i := range h.Conditions {
		if string(h.Conditions[i].Type) == t {
			return &h.Conditions[i]
		}
	}
	return nil
}

// schedulerWait reads the scheduler's own conditions: the reasons it writes
// while waiting (WaitingForStart, WaitingForMaintenanceWindow), the step it
// is at and its last error, and what it reports blocked.
func schedulerWait(uc *upgradev1alpha1.UpgradeConfig, now time.Time) (State, string, bool) {
	conds := uc.Status.Conditions
	h := latest(uc)
	phase := phaseOf(uc)
	upgrading := phase == upgradev1alpha1.UpgradePhaseUpgrading
	if phase == upgradev1alpha1.UpgradePhaseNew {
		h = nil
	}
	to := target(uc)
	if c := cond(conds, "Paused"); c != nil && c.Status == metav1.ConditionTrue && c.Reason == "DeadlinePause" {
		return StateBlocked, "paused by a passed deadline (change the spec to resume): " + oneLine(c.Message, 200), upgrading
	}
	if c := cond(conds, "DeadlineExceeded"); c != nil && c.Status == metav1.ConditionTrue && !ended(phase) {
		return StateBlocked, oneLine(c.Message, 200), upgrading
	}
	switch phase {
	case upgradev1alpha1.UpgradePhaseFailed:
		why := ""
		if c := findStep(h, stepFailedUpgrade); c != nil {
			why = ": " + oneLine(c.Message, 200)
		}
		return StateBlocked, "the upgrade to " + to + " failed" + why, false
	case upgradev1alpha1.UpgradePhaseUpgraded:
		at := ""
		if h.CompleteTime != nil {
			at = " at " + clock(h.CompleteTime.Time, now)
		}
		return StateDone, "upgraded to " + to + at, false
	case upgradev1alpha1.UpgradePhaseCancelled:
		return StateIdle, "the upgrade to " + to + " was cancelled", false
	}
	if c := cond(conds, "ConfigValid"); c != nil && c.Status == metav1.ConditionFalse && c.Reason == "InvalidConfig" {
		return StateBlocked, "its configuration is invalid: " + oneLine(c.Message, 200), upgrading
	}
	if c := cond(conds, "Validated"); c != nil && c.Status == metav1.ConditionFalse {
		return StateBlocked, "the UpgradeConfig does not validate: " + oneLine(c.Message, 200), upgrading
	}
	if upgrading {
		step := uc.Status.CurrentStep
		c := findStep(h, step)
		switch {
		case c != nil && c.Status != corev1.ConditionTrue && c.LastError != "":
			return StateBlocked, fmt.Sprintf("step %s failing (attempt %d): %s", step, c.Attempts, oneLine(c.LastError, 200)), true
		case (step == stepClusterHealthyBefore || step == stepClusterHealthyAfter) && isFalse(conds, "HealthChecksPassing"):
			return StateBlocked, "step " + step + ": health checks " + oneLine(cond(conds, "HealthChecksPassing").Message, 200), true
		case uc.Spec.Paused:
			return StateWaiting, "paused by spec.paused at step " + orElse(step, "(none)"), true
		case step == "":
			return StateProgressing, "upgrading to " + to, true
		}
		msg := "at step " + step
		if c != nil && c.Message != "" {
			msg += ": " + oneLine(c.Message, 200)
		}
		if c != nil && c.StartTime != nil {
			msg += " (since " + clock(c.StartTime.Time, now) + ")"
		}
		return StateProgressing, msg, true
	}
	// Not started yet.
	if uc.Spec.Paused {
		return StateWaiting, "paused by spec.paused before the upgrade to " + to + " started", false
	}
	if c := cond(conds, "Progressing"); c != nil && c.Status == metav1.ConditionFalse {
		switch c.Reason {
		case "WaitingForStart":
			return StateScheduled, waitingUntil("the start of the upgrade to "+to, c.Message, now), false
		case "WaitingForMaintenanceWindow":
			return StateScheduled, waitingUntil("the maintenance window for the upgrade to "+to, c.Message, now), false
		}
	}
	if len(uc.Status.History) == 0 && uc.Status.ObservedGeneration == 0 {
		return StateScheduled, "the upgrade to " + to + " is not yet taken up by the scheduler (is it running?)", false
	}
	return StateScheduled, "the upgrade to " + to + " is pending", false
}

// waitingUntil says what is waited for and when it comes: the scheduler's
// message ends with the time, in RFC 3339.
func waitingUntil(what, message string, now time.Time) string {
	fields := strings.Fields(message)
	if len(fields) > 0 {
		if t, err := time.Parse(time.RFC3339, fields[len(fields)-1]); err == nil {
			return fmt.Sprintf("waiting for %s at %s (%s)", what, clock(t, now), relative(t, now))
		}
	}
	return joinNonEmpty(": ", "waiting for "+what, oneLine(message, 160))
}

// configHeader is one UpgradeConfig in one line.
func configHeader(uc *upgradev1alpha1.UpgradeConfig, now time.Time) string {
	at := uc.Spec.UpgradeAt
	if t, err := time.Parse(time.RFC3339, at); err == nil {
		at = clock(t, now)
	}
	flags := ""
	if uc.Spec.Paused {
		flags += ", paused"
	}
	if uc.Spec.Cancel {
		flags += ", cancel requested"
	}
	return fmt.Sprintf("%s/%s: %s (%s) at %s, phase %s%s", uc.Namespace, uc.Name, target(uc), uc.Spec.Type, at, phaseOf(uc), flags)
}

// configLines are the details of the UpgradeConfig that matters.
func configLines(uc *upgradev1alpha1.UpgradeConfig, now time.Time) []string {
	lines := []string{configHeader(uc, now)}
	if ws := uc.Spec.MaintenanceWindows; len(ws) > 0 {
		var parts []string
		for _, w := range ws {
			parts = append(parts, window(w))
		}
		lines = append(lines, "  maintenance windows: "+strings.Join(parts, "; "))
	}
	if d := deadlines(uc.Spec.Deadlines, latestOf(uc), now); d != "" {
		lines = append(lines, "  deadlines: "+d)
	}
	for _, t := range []string{"ConfigValid", "Validated", "Paused", "Cancelled", "Delayed", "DeadlineExceeded", upgradev1alpha1.WorkersUpgradedCondition} {
		if c := cond(uc.Status.Conditions, t); c != nil && noteworthy(c) {
			lines = append(lines, "  "+condLine(c))
		}
	}
	lines = append(lines, healthLines(uc.Status)...)
	if r := uc.Status.Report; r != nil {
		if r.Findings != "" {
			lines = append(lines, "  findings: "+oneLine(r.Findings, 200))
		}
		if r.ExpectedWorkerDuration != nil {
			lines = append(lines, "  workers expected to take "+shortDuration(r.ExpectedWorkerDuration.Duration))
		}
	}
	if phaseOf(uc) != upgradev1alpha1.UpgradePhaseNew {
		lines = append(lines, stepLines(latest(uc), now)...)
	}
	return lines
}

// noteworthy: a summary condition that is not in its usual state.
func noteworthy(c *metav1.Condition) bool {
	switch c.Type {
	case "ConfigValid":
		return c.Status == metav1.ConditionFalse || c.Reason == "ValidWithWarnings"
	case "Validated", upgradev1alpha1.WorkersUpgradedCondition:
		return c.Status == metav1.ConditionFalse
	case "Cancelled":
		return c.Status == metav1.ConditionTrue || c.Reason == "AlreadyCommenced"
	}
	return c.Status == metav1.ConditionTrue
}

func window(w commonv1alpha1.MaintenanceWindow) string {
	days := "daily"
	if len(w.Days) > 0 {
		var ds []string
		for _, d := range w.Days {
			ds = append(ds, string(d)[:3])
		}
		days = strings.Join(ds, ",")
	}
	return fmt.Sprintf("%s %s-%s %s", days, w.Start, w.End, orElse(w.TimeZone, "UTC"))
}

// latestOf is the attempt at the spec's target, nil before it started.
func latestOf(uc *upgradev1alpha1.UpgradeConfig) *upgradev1alpha1.UpgradeHistory {
	if phaseOf(uc) == upgradev1alpha1.UpgradePhaseNew {
		return nil
	}
	return latest(uc)
}

// deadlines are the ones the spec sets, each with when it falls once the
// step it runs from completed (the scheduler's anchors); the rest come from
// the scheduler's configuration, which the view does not read. The workers'
// deadline is deferred while node-gate holds the workers, which only the
// scheduler works out: it says "from", not "due".
func deadlines(d *upgradev1alpha1.Deadlines, h *upgradev1alpha1.UpgradeHistory, now time.Time) string {
	if d == nil {
		return ""
	}
	var parts []string
	for _, x := range []struct {
		name   string
		d      *upgradev1alpha1.Deadline
		anchor string
	}{{"start", d.Start, ""}, {"controlPlane", d.ControlPlane, "UpgradeCommenced"}, {"workers", d.Workers, "ControlPlaneUpgraded"}, {"postCheck", d.PostCheck, "WorkerNodesUpgraded"}} {
		if x.d == nil {
			continue
		}
		p := x.name
		if x.d.Minutes != nil {
			p += fmt.Sprintf(" %dm", *x.d.Minutes)
			if c := findStep(h, x.anchor); x.anchor != "" && *x.d.Minutes > 0 && c != nil && c.CompleteTime != nil {
				due := c.CompleteTime.Add(time.Duration(*x.d.Minutes) * time.Minute)
				if x.name == "workers" {
					p += " from " + clock(c.CompleteTime.Time, now)
				} else {
					p += " due " + clock(due, now)
				}
			}
		}
		if x.d.Policy != "" {
			p += " (" + string(x.d.Policy) + ")"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", ") + "; others from the scheduler's configuration"
}

// healthLines are the preflight and health-check findings: a count, and
// the failing checks by name.
func healthLines(st upgradev1alpha1.UpgradeConfigStatus) []string {
	if len(st.Preflight) == 0 {
		return nil
	}
	passed := 0
	var failing, advisory []string
	for _, c := range st.Preflight {
		switch {
		case c.Passed:
			passed++
		case c.Advisory:
			advisory = append(advisory, "    advisory "+joinNonEmpty(": ", c.Check, oneLine(c.Details, 160)))
		default:
			failing = append(failing, "    failing "+joinNonEmpty(": ", c.Check, oneLine(c.Details, 160)))
		}
	}
	summary := fmt.Sprintf("  health checks: %d passed", passed)
	if len(failing) > 0 {
		summary += fmt.Sprintf(", %d failing", len(failing))
	}
	if len(advisory) > 0 {
		summary += fmt.Sprintf(", %d advisory", len(advisory))
	}
	out := []string{summary}
	out = append(out, capped(failing, 3, "    ")...)
	return append(out, capped(advisory, 2, "    ")...)
}

// stepLines are the latest steps in the order they ran: done ones with
// their times, the running one with its message, a failing one with its
// error.
func stepLines(h *upgradev1alpha1.UpgradeHistory, now time.Time) []string {
	if h == nil || len(h.Conditions) == 0 {
		return nil
	}
	header := "  steps"
	if h.StartTime != nil {
		header += " (started " + clock(h.StartTime.Time, now) + ")"
	}
	// Newest first in the API; oldest first on screen.
	steps := slices.Clone(h.Conditions)
	slices.Reverse(steps)
	var out []string
	if skipped := len(steps) - maxSteps; skipped > 0 {
		out = append(out, fmt.Sprintf("    (%d earlier steps done)", skipped))
		steps = steps[skipped:]
	}
	for _, c := range steps {
		out = append(out, "    "+stepLine(c, now))
	}
	return append([]string{header + ":"}, out...)
}

func stepLine(c upgradev1alpha1.UpgradeCondition, now time.Time) string {
	times := ""
	if c.StartTime != nil {
		times = clock(c.StartTime.Time, now)
	}
	switch {
	case c.Status == corev1.ConditionTrue:
		if c.CompleteTime != nil {
			times += " → " + strings.TrimSuffix(clock(c.CompleteTime.Time, now), " UTC")
		}
		return fmt.Sprintf("done     %-38s %s", c.Type, times)
	case c.LastError != "":
		return fmt.Sprintf("FAILING  %-38s since %s, attempt %d: %s", c.Type, times, c.Attempts, oneLine(c.LastError, 120))
	}
	return fmt.Sprintf("running  %-38s since %s%s", c.Type, times, prefixed(": ", oneLine(c.Message, 120)))
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
