package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	truncatelib "github.com/upshift-io/upshift/libs/truncate"
	"github.com/upshift-io/upshift/libs/window"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/silence"
)

type planner struct {
	in     Input
	uc     *upgradev1alpha1.UpgradeConfig
	spec   upgradev1alpha1.UpgradeConfigSpec
	st     upgradev1alpha1.UpgradeConfigStatus
	now    time.Time
	nowT   metav1.Time
	cfg    *config.Config
	dl     config.Deadlines
	target string

	action *Action
	events []Event
	wakeAt time.Time
	// deadlineHit is the deadline found exceeded in this plan, if any.
	deadlineHit string
	// needsAlerts: a health check ran on a snapshot with AlertsUnread.
	needsAlerts bool
	// needsExternalChecks: the external dependency step needs a fresh run.
	needsExternalChecks bool
	// drainOut are the drains' forced steps and Events (drains.go);
	// needsDrainPods the nodes whose pods must be read first.
	drainOut       Drains
	needsDrainPods []string
	// needsPDBNodes: the budgets whose pods' nodes the report needs.
	needsPDBNodes []string
	// sortedNodes and gateFindings are computed once per plan from the
	// snapshot (nodesByName, muoFindings).
	sortedNodes  []*corev1.Node
	gateFindings *muoFindings
}

// nodesByName are the snapshot's nodes in name order (a copy, made once).
func (p *planner) nodesByName() []*corev1.Node {
	if p.sortedNodes == nil {
		// Pointers: sorting the Nodes themselves moved every one of them
		// (a kilobyte each) on every swap.
		nodes := p.in.Snapshot.Nodes
		p.sortedNodes = make([]*corev1.Node, len(nodes))
		for i := range nodes {
			p.sortedNodes[i] = &nodes[i]
		}
		slices.SortFunc(p.sortedNodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	}
	return p.sortedNodes
}

func newPlanner(in Input) *planner {
	p := &planner{
		in:   in,
		uc:   in.UpgradeConfig,
		spec: in.UpgradeConfig.Spec,
		st:   *in.UpgradeConfig.Status.DeepCopy(),
		now:  in.Now,
		nowT: metav1.NewTime(in.Now),
		cfg:  in.Config,
	}
	p.target = p.spec.Desired.Version
	if p.target == "" {
		// Image mode without a version: the history is keyed by the image.
		p.target = p.spec.Desired.Image
	}
	return p
}

func (p *planner) output() Output {
	out := Output{Status: p.st, Action: p.action, Events: p.events, Silences: p.silences(), NeedsAlerts: p.needsAlerts,
		NeedsExternalChecks: p.needsExternalChecks, Drains: p.drainOut, NeedsDrainPods: p.needsDrainPods,
		NeedsPDBNodes: p.needsPDBNodes}
	if !p.wakeAt.IsZero() && p.action == nil {
		out.RequeueAfter = p.wakeAt.Sub(p.now)
		if out.RequeueAfter <= 0 {
			out.RequeueAfter = time.Second
		}
	}
	p.leaseStep(&out)
	return out
}

// leaseStep decides the lease step from out.Silences and the listing, and
// how soon to renew a wanted lease.
func (p *planner) leaseStep(out *Output) {
	if !out.Silences.Manage {
		return
	}
	if len(out.Silences.Wanted) > 0 {
		// Renewal is due when less than half the TTL is left: looking
		// every quarter keeps a lease from lapsing while it is wanted.
		renew := cmp.Or(p.in.SilenceTTL, silence.DefaultTTL) / 4
		if out.RequeueAfter == 0 || renew < out.RequeueAfter {
			out.RequeueAfter = renew
		}
	}
	switch s := p.in.Snapshot; {
	case s.LeasesUnread:
		out.NeedsLeases = true
	case s.Leases != nil && s.Leases.Err == "":
		in := silence.Input{
			Owner:     silence.Owner{Namespace: p.uc.Namespace, Name: p.uc.Name, UID: string(p.uc.UID)},
			Version:   out.Silences.Version,
			CreatedBy: CreatedBy,
			Criticals: p.cfg.ControlPlaneCriticals,
			Wanted:    out.Silences.Wanted,
			Recorded:  RecordedSilences(p.st),
			Existing:  s.Leases.Existing,
			Now:       p.now,
			TTL:       p.in.SilenceTTL,
		}
		out.Leases = &LeaseStep{Plan: silence.Decide(in), Existing: s.Leases.Existing}
	}
}

func (p *planner) event(warning bool, reason, format string, args ...any) {
	p.events = append(p.events, Event{Warning: warning, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// wake asks to be called again at t (the earliest of all such times wins).
func (p *planner) wake(t time.Time) {
	if t.IsZero() || !t.After(p.now) {
		return
	}
	if p.wakeAt.IsZero() || t.Before(p.wakeAt) {
		p.wakeAt = t
	}
}

func (p *planner) run() {
	p.observeGeneration()
	p.configCondition()
	if p.cfg == nil {
		// Nothing can be decided without any good configuration.
		p.setCondition("Progressing", metav1.ConditionFalse, "NoConfiguration", "waiting for a valid configuration")
		return
	}
	p.dl = p.cfg.DeadlinesFor(p.spec)

	if p.uc.DeletionTimestamp != nil {
		p.cleanupOnDelete()
		return
	}
	h := p.ensureHistory()
	defer p.summarise()
	// Whatever the phase decided, the report reflects it.
	defer p.report()

	// Pause holds every side effect, cleanup included.
	if p.spec.Paused {
		p.setCondition("Paused", metav1.ConditionTrue, "SpecPaused", "spec.paused is true: no side effects until it is false")
		return
	}
	if pd := p.st.PausedByDeadline; pd != nil && pd.Generation == p.uc.Generation {
		p.setCondition("Paused", metav1.ConditionTrue, "DeadlinePause",
			fmt.Sprintf("the %s deadline passed with policy pause; change the spec (for example spec.deadlines.%s) to resume", pd.Deadline, pd.Deadline))
		return
	}
	p.st.PausedByDeadline = nil
	p.setCondition("Paused", metav1.ConditionFalse, "NotPaused", "")

	if p.reopen(h) {
		h = p.history()
	}
	if terminal(h.Phase) {
		p.st.Drains = nil
		// The temporary capacity goes first: a failed notice that cannot
		// be delivered (OCM down) must not keep extra machines running.
		p.cleanupTerminal()
		if p.action == nil {
			p.failedNotice()
		}
		return
	}
	if p.spec.Cancel {
		if p.commenced() {
			p.setCondition("Cancelled", metav1.ConditionFalse, "AlreadyCommenced",
				"spec.cancel is ignored: ClusterVersion already points at the target and the control-plane upgrade cannot be stopped")
		} else {
			p.endAttempt(upgradev1alpha1.UpgradePhaseCancelled, ConditionUpgradeCancelled, "Upgrade cancelled", "spec.cancel is true: cancelled before commencement")
			p.setCondition("Cancelled", metav1.ConditionTrue, "SpecCancel", "cancelled through spec.cancel before commencement")
			p.event(false, "UpgradeCancelled", "upgrade to %s cancelled before commencement", p.target)
			p.cleanupTerminal()
			return
		}
	}

	if h.Phase == upgradev1alpha1.UpgradePhaseNew {
		p.setPhase(upgradev1alpha1.UpgradePhasePending)
	}
	if p.history().Phase == upgradev1alpha1.UpgradePhaseUpgrading && !p.commenced() && p.rescheduledLater() {
		p.backToPending()
	}
	// ClusterVersion already points at the target although the status says
	// the attempt has not started (someone else set it, or the status write
	// after our own patch was lost): the upgrade is under way, and validating
	// it now would compare the target with itself.
	if p.history().Phase == upgradev1alpha1.UpgradePhasePending && p.commenced() {
		p.setPhase(upgradev1alpha1.UpgradePhaseUpgrading)
	}
	if p.history().Phase == upgradev1alpha1.UpgradePhasePending {
		if !p.pending() {
			return
		}
	}
	if p.history().Phase == upgradev1alpha1.UpgradePhaseUpgrading {
		p.upgrading()
	}
	p.decideDrains()
	// An attempt that ends in this plan is cleaned up in the next one: the
	// status that says it ended is written first, so that no cleanup runs
	// on a decision that a lost write could undo.
}

func terminal(ph upgradev1alpha1.UpgradePhase) bool {
	return ph == upgradev1alpha1.UpgradePhaseUpgraded || ph == upgradev1alpha1.UpgradePhaseFailed || ph == upgradev1alpha1.UpgradePhaseCancelled
}

func (p *planner) history() *upgradev1alpha1.UpgradeHistory { return &p.st.History[0] }

// observeGeneration records when this spec generation was first seen; an
// upgradeAt already past then is measured from that time.
func (p *planner) observeGeneration() {
	if p.st.ObservedGeneration != p.uc.Generation || p.st.GenerationObservedTime == nil {
		p.st.ObservedGeneration = p.uc.Generation
		t := p.nowT
		p.st.GenerationObservedTime = &t
	}
}

func (p *planner) configCondition() {
	if p.in.ConfigError != nil && p.isNew("ConfigValid", metav1.ConditionFalse) {
		p.event(true, "InvalidConfig", "configuration ConfigMap %s: %v", config.ConfigMapName, p.in.ConfigError)
	}
	switch {
	case p.in.ConfigError != nil && p.cfg == nil:
		p.setCondition("ConfigValid", metav1.ConditionFalse, "InvalidConfig", p.in.ConfigError.Error())
	case p.in.ConfigError != nil:
		p.setCondition("ConfigValid", metav1.ConditionFalse, "InvalidConfigKeptLastGood", "using the last valid configuration: "+p.in.ConfigError.Error())
	case len(p.cfg.Warnings) > 0:
		// Accepted, as MUO accepts keys it does not know (a newer MUO's keys
		// must not stop the scheduler), but a misspelt key silently taking
		// its default is what a person must hear about.
		msg := "keys ignored: " + strings.Join(p.cfg.Warnings, "; ")
		if c := meta.FindStatusCondition(p.uc.Status.Conditions, "ConfigValid"); c == nil || c.Reason != "ValidWithWarnings" || c.Message != msg {
			p.event(true, "ConfigKeysIgnored", "configuration ConfigMap %s: %s", config.ConfigMapName, msg)
		}
		p.setCondition("ConfigValid", metav1.ConditionTrue, "ValidWithWarnings", msg)
	default:
		p.setCondition("ConfigValid", metav1.ConditionTrue, "Valid", "")
	}
}

// ensureHistory makes history[0] the entry of the current target, creating
// it as MUO does (Upgrading straight away when ClusterVersion already points
// at the target, else New). An older attempt still in progress is superseded:
// it ends Cancelled.
func (p *planner) ensureHistory() *upgradev1alpha1.UpgradeHistory {
	idx := -1
	for i := range p.st.History {
		if p.st.History[i].Version == p.target {
			idx = i
			break
		}
	}
	if idx == 0 {
		return p.history()
	}
	var entry upgradev1alpha1.UpgradeHistory
	if idx > 0 {
		entry = p.st.History[idx]
		p.st.History = append(p.st.History[:idx:idx], p.st.History[idx+1:]...)
	} else {
		entry = upgradev1alpha1.UpgradeHistory{Version: p.target, Phase: upgradev1alpha1.UpgradePhaseNew, PrecedingVersion: precedingVersion(p.in.Snapshot.ClusterVersion, p.target)}
		if p.commenced() {
			t := p.nowT
			entry.Phase, entry.StartTime = upgradev1alpha1.UpgradePhaseUpgrading, &t
		}
	}
	if len(p.st.History) > 0 && !terminal(p.st.History[0].Phase) {
		old := &p.st.History[0]
		old.Phase = upgradev1alpha1.UpgradePhaseCancelled
		setStepCondition(&old.Conditions, ConditionUpgradeCancelled, corev1.ConditionTrue, "Upgrade cancelled", "superseded by a new target "+p.target, p.now)
		p.event(false, "UpgradeSuperseded", "upgrade to %s superseded by a new target %s", old.Version, p.target)
	}
	// A new attempt reserves its own capacity, unless the superseded one's
	// temporary MachineSets are still there (they are reused, then removed).
	if len(p.surgeMachineSets()) == 0 {
		p.st.CapacityReservation = nil
	}
	p.st.History = append([]upgradev1alpha1.UpgradeHistory{entry}, p.st.History...)
	// The report was about the old target.
	p.st.Report = nil
	p.event(false, "UpgradeScheduled", "upgrade to %s recorded in phase %s", p.target, entry.Phase)
	return p.history()
}

func (p *planner) setPhase(ph upgradev1alpha1.UpgradePhase) {
	h := p.history()
	if h.Phase == ph {
		return
	}
	p.event(ph == upgradev1alpha1.UpgradePhaseFailed, "Phase"+string(ph), "upgrade to %s: phase %s -> %s", p.target, h.Phase, ph)
	h.Phase = ph
	switch ph {
	case upgradev1alpha1.UpgradePhaseUpgrading:
		t := p.nowT
		h.StartTime = &t
	case upgradev1alpha1.UpgradePhaseUpgraded:
		t := p.nowT
		h.CompleteTime = &t
	}
}

// endAttempt ends the attempt in a terminal phase with a condition that says why.
func (p *planner) endAttempt(ph upgradev1alpha1.UpgradePhase, cond upgradev1alpha1.UpgradeConditionType, reason, message string) {
	setStepCondition(&p.history().Conditions, cond, corev1.ConditionTrue, reason, message, p.now)
	p.setPhase(ph)
	p.st.CurrentStep = ""
}

// pending validates and waits for the scheduled start; true when the
// attempt moved on to Upgrading.
func (p *planner) pending() bool {
	if msg, reason, ok := p.validate(); !ok {
		p.setCondition("Validated", metav1.ConditionFalse, reason, msg)
		if p.isNewFailure("Validated") {
			p.event(true, "ValidationFailed", "%s", msg)
		}
		// MUO keeps an UpgradeConfig that does not validate Pending, past
		// its window too: the passed start deadline is reported, never
		// applied. Once it validates, the window is judged as usual.
		p.noteDeadline(DeadlineStart, "validation: "+msg)
		return false
	} else {
		p.setCondition("Validated", metav1.ConditionTrue, reason, msg)
	}
	start, sched, err := p.scheduledStart()
	if err != nil {
		// Validation covers the same ground; this is a safety net.
		p.setCondition("Validated", metav1.ConditionFalse, "InvalidSchedule", err.Error())
		return false
	}
	if p.now.Before(start) {
		p.wake(start)
		// Pre-flight checks ahead of time are advisory: they block nothing yet.
		all, _ := p.runHealthChecks()
		p.preHealthNotice(start, all)
		p.setCondition("Progressing", metav1.ConditionFalse, "WaitingForStart",
			withNote("the upgrade starts at "+start.UTC().Format(time.RFC3339), p.capacityAhead(start)))
		return false
	}
	if !sched.Open(p.now) {
		// Waiting for a window, the findings are kept up to date as well.
		p.runHealthChecks()
		next, _ := sched.NextOpen(p.now)
		p.wake(next)
		p.checkDeadline(DeadlineStart, "no maintenance window open")
		note := ""
		if p.history().Phase == upgradev1alpha1.UpgradePhasePending && p.st.PausedByDeadline == nil {
			// Not for an attempt the start deadline just ended or paused.
			note = p.capacityAhead(next)
		}
		p.setCondition("Progressing", metav1.ConditionFalse, "WaitingForMaintenanceWindow",
			withNote("no maintenance window is open; the next opens at "+next.UTC().Format(time.RFC3339), note))
		return false
	}
	p.setPhase(upgradev1alpha1.UpgradePhaseUpgrading)
	return true
}

// withNote appends a note to a message, if there is one.
func withNote(msg, note string) string {
	if note == "" {
		return msg
	}
	return msg + "; " + note
}

// scheduledStart is when the upgrade may start: upgradeAt, or when this spec
// generation was first observed if that is later (an upgradeAt already past
// means now), moved to the first maintenance window opening at or after it.
func (p *planner) scheduledStart() (time.Time, window.Schedule, error) {
	at, err := time.Parse(time.RFC3339, p.spec.UpgradeAt)
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("spec.upgradeAt: %q is not an RFC 3339 time", p.spec.UpgradeAt)
	}
	if seen := p.st.GenerationObservedTime.Time; seen.After(at) {
		at = seen
	}
	sched, err := window.FromAPI(p.spec.MaintenanceWindows)
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("spec.%w", err)
	}
	open, ok := sched.NextOpen(at)
	if !ok {
		return time.Time{}, nil, fmt.Errorf("spec.maintenanceWindows: no window ever opens")
	}
	return open, sched, nil
}

// upgrading runs the step list from the first step not done.
func (p *planner) upgrading() {
	steps := stepsFor(p.spec.Type)
	commenced := p.commenced()
	delayed := false
	if !commenced {
		delayed = p.watchDelay()
	}
	for _, s := range steps {
		if c := findStepCondition(p.history().Conditions, s.name); c != nil && c.Status == corev1.ConditionTrue {
			continue
		}
		p.st.CurrentStep = string(s.name)
		if !commenced && s.deadline == DeadlineStart && p.startDeadlineStops(s.name) {
			// Past the start deadline nothing more happens before
			// commencement, whatever the step would do: a re-plan from a
			// status that lost its last write (a crash, a conflict) must
			// reach the same end, not find the step done and commence.
			return
		}
		var r result
		switch {
		case s.preCommence && commenced:
			r = result{done: true, message: "the upgrade has already commenced"}
		case delayed && !commenced && p.in.Integrations.Notifications && !p.recorded(EventStarted):
			// The delayed notice follows the started one (MUO's allowed
			// transitions): the step sends started first. Started sent
			// under an earlier generation of the spec counts: the started
			// step is done and will not send it again.
			r = s.run(p)
		case delayed && !commenced && p.spec.Type != upgradev1alpha1.ARO && p.due(EventDelayed):
			// MUO's delayed check (OSD only): reported once, ahead of
			// whatever the current step would do.
			r = result{message: "sending the " + EventDelayed + " notification", action: p.notifyAction(EventDelayed)}
		default:
			r = s.run(p)
		}
		if p.talksToOCM(s.name, r.action) && p.holdNotifyRetry(s.name) {
			// An earlier attempt failed: wait out the backoff, the status
			// as it is (the deadline still counts).
			p.checkDeadline(s.deadline, string(s.name)+": "+findStepCondition(p.history().Conditions, s.name).LastError)
			return
		}
		p.events = append(p.events, r.events...)
		if r.done {
			msg := string(s.name) + " is completed"
			if r.message != "" {
				msg += ": " + r.message
			}
			c := setStepCondition(&p.history().Conditions, s.name, corev1.ConditionTrue, string(s.name)+" done", msg, p.now)
			if r.failure != "" {
				c.LastError = truncate(r.failure)
			}
			p.event(false, string(s.name), "%s", msg)
			if s.name == StepUpgradeCommenced {
				commenced = true
			}
			continue
		}
		msg := string(s.name) + " still in progress"
		if r.message != "" {
			msg += ": " + r.message
		}
		c := setStepCondition(&p.history().Conditions, s.name, corev1.ConditionFalse, string(s.name)+" not done", msg, p.now)
		if r.action != nil {
			c.Attempts++
			r.action.Step = s.name
			p.action = r.action
		}
		if r.failure != "" {
			if c.LastError != r.failure {
				p.event(true, string(s.name)+"Blocked", "%s", r.failure)
			}
			c.LastError = truncate(r.failure)
		}
		p.wake(r.wakeAt)
		// A side effect is progress, not waiting; a side effect retried after
		// a failure counts against the deadline, so that a patch that keeps
		// failing cannot wait forever.
		if r.action != nil && c.LastError == "" {
			return
		}
		why := r.failure
		if why == "" {
			why = r.message
		}
		if p.checkDeadline(s.deadline, string(s.name)+": "+why) {
			// The deadline ended or paused the attempt: no side effect now.
			if p.history().Phase != upgradev1alpha1.UpgradePhaseUpgrading || p.st.PausedByDeadline != nil {
				p.action = nil
			}
		}
		return
	}
	p.st.CurrentStep = ""
	p.setPhase(upgradev1alpha1.UpgradePhaseUpgraded)
}

// talksToOCM: action a of step calls OCM: a notification, or (with OCM
// notifications on) the commencement, which checks the policy first. Their
// retries after a failure back off (holdNotifyRetry).
func (p *planner) talksToOCM(step upgradev1alpha1.UpgradeConditionType, a *Action) bool {
	if a == nil {
		return false
	}
	return a.Kind == Notify || (a.Kind == PatchClusterVersion && step == StepUpgradeCommenced && p.in.Integrations.Notifications)
}

// watchDelay is MUO's UpgradeDelayedCheck: before commencement, an upgrade
// not commenced delayTrigger after its start is reported as delayed (once).
// MUO re-runs the check on every reconcile under the notification's
// condition; here it updates its own condition.
func (p *planner) watchDelay() bool {
	h := p.history()
	if p.cfg.DelayTrigger <= 0 || h.StartTime == nil {
		return false
	}
	due := h.StartTime.Add(p.cfg.DelayTrigger)
	if p.now.Before(due) {
		p.wake(due)
		return false
	}
	at := p.st.CurrentStep
	if at == "" {
		at = string(StepStartedNotificationSent)
	}
	msg := fmt.Sprintf("the upgrade has not commenced %s after it started (at step %s)", p.cfg.DelayTrigger, at)
	if p.isNew("Delayed", metav1.ConditionTrue) {
		p.event(true, "UpgradeDelayed", "%s", msg)
	}
	p.setCondition("Delayed", metav1.ConditionTrue, "NotCommencedInTime", msg)
	if c := findStepCondition(h.Conditions, StepUpgradeDelayedCheckCompleted); c != nil && c.LastError == "" {
		c.LastError = truncate(msg)
	}
	return true
}

func (p *planner) delayedCheck() result {
	// The watch above does the work on every plan; the step itself only
	// marks the place in the list.
	return result{done: true}
}

// maxErrorLength is the API's limit on lastError.
const maxErrorLength = 4096

func truncate(s string) string { return truncatelib.String(s, maxErrorLength) }

// failedNotice sends the failed notification of an attempt that failed
// before commencement (MUO's OSD failure: its window passed), once, after
// the cleanup's side effects; true when that is this plan's action (or it
// waits out the retry backoff). After commencement MUO
// never fails an upgrade, and OCM has no state for a scheduler that stopped
// managing one; cancelled attempts are not reported either (MUO never writes
// cancelled).
func (p *planner) failedNotice() bool {
	h := p.history()
	if h.Phase != upgradev1alpha1.UpgradePhaseFailed || p.commenced() || !p.in.Integrations.Notifications {
		return false
	}
	if !p.due(EventFailed) {
		if c := findStepCondition(h.Conditions, ConditionFailedNotificationSent); c != nil && c.Status != corev1.ConditionTrue {
			setStepCondition(&h.Conditions, ConditionFailedNotificationSent, corev1.ConditionTrue,
				string(ConditionFailedNotificationSent)+" done", string(ConditionFailedNotificationSent)+" is completed", p.now)
		}
		return false
	}
	if p.holdNotifyRetry(ConditionFailedNotificationSent) {
		return true
	}
	c := setStepCondition(&h.Conditions, ConditionFailedNotificationSent, corev1.ConditionFalse,
		string(ConditionFailedNotificationSent)+" not done", "sending the "+EventFailed+" notification", p.now)
	c.Attempts++
	p.action = p.notifyAction(EventFailed)
	p.action.Step = ConditionFailedNotificationSent
	return true
}

// rescheduledLater: spec.upgradeAt is in the future. An attempt reaches
// Upgrading only once upgradeAt has passed, so for an attempt that is
// Upgrading this means the spec was rescheduled (an OCM policy moved to a
// later run) after the attempt started.
func (p *planner) rescheduledLater() bool {
	at, err := time.Parse(time.RFC3339, p.spec.UpgradeAt)
	return err == nil && p.now.Before(at)
}

// backToPending returns an attempt that started but has not commenced to
// Pending, because it was rescheduled: it starts again at the new time,
// every step from the first (the pre-upgrade checks are run again then).
// The history entry is kept. After commencement a new time means nothing
// (the control plane is already moving) and this is never called.
func (p *planner) backToPending() {
	h := p.history()
	p.event(false, "UpgradeRescheduled", "upgrade to %s rescheduled for %s before it commenced: back to Pending", p.target, p.spec.UpgradeAt)
	h.Phase, h.StartTime, h.Conditions = upgradev1alpha1.UpgradePhasePending, nil, nil
	p.st.CurrentStep = ""
}

// reopen starts the attempt again when it was cancelled through spec.cancel
// and a later spec generation withdrew the cancellation (an OCM policy
// removed and scheduled again for the same release; a person who changed
// their mind). The history entry is replaced, as MUO replaces the entry of
// a version it sees again; true when it was.
func (p *planner) reopen(h *upgradev1alpha1.UpgradeHistory) bool {
	if p.spec.Cancel {
		return false
	}
	why := "spec.cancel was withdrawn"
	wasCancelled := h.Phase == upgradev1alpha1.UpgradePhaseCancelled
	switch h.Phase {
	case upgradev1alpha1.UpgradePhaseCancelled:
		c := meta.FindStatusCondition(p.st.Conditions, "Cancelled")
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "SpecCancel" || c.ObservedGeneration >= p.uc.Generation {
			return false
		}
	case upgradev1alpha1.UpgradePhaseFailed:
		// A failure before commencement (a passed start deadline) ends the
		// attempt "to be rescheduled": rescheduled, for the same release,
		// is a spec whose upgradeAt is later than the failure.
		if p.commenced() || !p.rescheduledAfterFailure(h) {
			return false
		}
		why = "it was rescheduled for " + p.spec.UpgradeAt + " after it failed"
	default:
		return false
	}
	if len(p.surgeMachineSets()) > 0 {
		// The cancellation's cleanup is not finished; it finishes first.
		return false
	}
	*h = upgradev1alpha1.UpgradeHistory{Version: p.target, Phase: upgradev1alpha1.UpgradePhaseNew,
		PrecedingVersion: precedingVersion(p.in.Snapshot.ClusterVersion, p.target)}
	p.st.CapacityReservation = nil
	p.st.CurrentStep = ""
	if wasCancelled {
		p.setCondition("Cancelled", metav1.ConditionFalse, "CancelWithdrawn", "spec.cancel was withdrawn: the upgrade is scheduled again")
	}
	p.event(false, "UpgradeRescheduled", "upgrade to %s scheduled again: %s", p.target, why)
	return true
}

// rescheduledAfterFailure: the failed attempt h's spec.upgradeAt is later
// than the time it failed, so the spec was rescheduled after the failure.
func (p *planner) rescheduledAfterFailure(h *upgradev1alpha1.UpgradeHistory) bool {
	c := findStepCondition(h.Conditions, ConditionFailedUpgrade)
	if c == nil || c.CompleteTime == nil {
		return false
	}
	at, err := time.Parse(time.RFC3339, p.spec.UpgradeAt)
	return err == nil && at.After(c.CompleteTime.Time)
}
