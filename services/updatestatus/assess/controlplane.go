package assess

import (
	"fmt"
	"math"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

const unknownVersion = "unknown"

// history is what the ClusterVersion history says about the current update.
type history struct {
	entries []configv1.UpdateHistory
	// target is the version of the newest entry ("unknown" without history).
	target string
	// previous is the version of the second entry; empty for a fresh install.
	previous        string
	previousPartial bool
	// installation: a single entry, the cluster was never updated.
	installation bool
	// multiArch: the two newest entries have the same version and different
	// images, i.e. a migration to the multi-architecture payload.
	multiArch bool
	// started is when the newest entry started (fallback: Progressing LTT).
	started time.Time
	// completed is when the newest entry completed, if it did.
	completed *time.Time
}

func newHistory(cv *configv1.ClusterVersion) history {
	h := history{entries: cv.Status.History, target: unknownVersion}
	if len(h.entries) == 0 {
		h.previous = unknownVersion
		if p := findCVCondition(cv, configv1.OperatorProgressing); p != nil {
			h.started = p.LastTransitionTime.Time
		}
		return h
	}
	cur := h.entries[0]
	h.target = cur.Version
	h.started = cur.StartedTime.Time
	if h.started.IsZero() {
		if p := findCVCondition(cv, configv1.OperatorProgressing); p != nil {
			h.started = p.LastTransitionTime.Time
		}
	}
	if cur.State == configv1.CompletedUpdate && cur.CompletionTime != nil {
		t := cur.CompletionTime.Time
		h.completed = &t
	}
	if len(h.entries) == 1 {
		h.installation = true
		return h
	}
	prev := h.entries[1]
	h.previous = prev.Version
	h.previousPartial = prev.State == configv1.PartialUpdate
	h.multiArch = cur.Version == prev.Version && cur.Image != prev.Image
	return h
}

// lastCompleted is the version of the newest completed entry, "unknown" if none.
func (h history) lastCompleted() string {
	for _, e := range h.entries {
		if e.State == configv1.CompletedUpdate {
			return e.Version
		}
	}
	return unknownVersion
}

// versions is the API form of the history's versions.
func (h history) versions() updatev1alpha1.ControlPlaneUpdateVersions {
	v := updatev1alpha1.ControlPlaneUpdateVersions{Target: updatev1alpha1.Version{Version: h.target}}
	if h.installation {
		v.Target.Metadata = append(v.Target.Metadata, updatev1alpha1.VersionMetadata{Key: updatev1alpha1.InstallationMetadata})
		return v
	}
	v.Previous = &updatev1alpha1.Version{Version: h.previous}
	if h.previousPartial {
		v.Previous.Metadata = append(v.Previous.Metadata, updatev1alpha1.VersionMetadata{Key: updatev1alpha1.PartialMetadata})
	}
	if h.multiArch {
		v.Target.Metadata = append(v.Target.Metadata, updatev1alpha1.VersionMetadata{Key: updatev1alpha1.ArchitectureMetadata, Value: "Multi"})
	}
	return v
}

// Platform operators carry one of these annotation prefixes (they come from the
// release payload); others, e.g. installed by OLM, do not count.
var platformAnnotationPrefixes = []string{"exclude.release.openshift.io/", "include.release.openshift.io/"}

func isPlatformOperator(co *configv1.ClusterOperator) bool {
	for k := range co.Annotations {
		for _, p := range platformAnnotationPrefixes {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
	}
	return false
}

// operatorState is the classification of one platform ClusterOperator.
type operatorState struct {
	co          *configv1.ClusterOperator
	updated     bool
	progressing *configv1.ClusterOperatorStatusCondition
	available   *configv1.ClusterOperatorStatusCondition
	degraded    *configv1.ClusterOperatorStatusCondition
}

func (o operatorState) updating() bool {
	return !o.updated && o.progressing != nil && o.progressing.Status == configv1.ConditionTrue
}

func (o operatorState) waiting() bool {
	return !o.updated && o.progressing != nil && o.progressing.Status == configv1.ConditionFalse
}

func (o operatorState) unavailable() bool {
	return o.available == nil || o.available.Status != configv1.ConditionTrue
}

func (o operatorState) isDegraded() bool {
	return !o.unavailable() && o.degraded != nil && o.degraded.Status == configv1.ConditionTrue
}

const machineConfigOperator = "machine-config"

// classifyOperator decides whether a CO is at the target version. The
// machine-config operator additionally reports the image it runs; when that
// differs from the MCO Deployment's image it is not updated yet even with the
// right version (this is how a multi-arch migration is followed). When the
// Deployment's image is unknown (imageKnown false) that check is not made.
func classifyOperator(co *configv1.ClusterOperator, target, mcoImage string, imageKnown bool) operatorState {
	st := operatorState{
		co:          co,
		progressing: findCOCondition(co, configv1.OperatorProgressing),
		available:   findCOCondition(co, configv1.OperatorAvailable),
		degraded:    findCOCondition(co, configv1.OperatorDegraded),
	}
	versionOK, imageOK := false, true
	for _, v := range co.Status.Versions {
		switch v.Name {
		case "operator":
			versionOK = v.Version == target
		case "operator-image":
			if co.Name == machineConfigOperator && imageKnown && v.Version != mcoImage {
				imageOK = false
			}
		}
	}
	st.updated = versionOK && imageOK
	return st
}

type controlPlaneResult struct {
	ops        []operatorState
	estimate   controlPlaneEstimate
	updating   metav1.Condition
	cvInsight  updatev1alpha1.ClusterVersionStatusInsight
	coInsights []updatev1alpha1.ClusterOperatorStatusInsight
	health     []updatev1alpha1.HealthInsight
}

func assessControlPlane(s Snapshot, hist history, progressing *configv1.ClusterOperatorStatusCondition) controlPlaneResult {
	cv := s.ClusterVersion
	target := cv.Status.Desired.Version

	var ops []operatorState
	for i := range s.ClusterOperators {
		co := &s.ClusterOperators[i]
		if isPlatformOperator(co) {
			ops = append(ops, classifyOperator(co, target, s.MCOImage, !s.MCOImageUnknown))
		}
	}
	sortOperators(ops)

	var res controlPlaneResult
	res.ops = ops
	res.updating = controlPlaneUpdating(progressing)
	for _, o := range ops {
		res.coInsights = append(res.coInsights, operatorInsight(o, s.Now))
		res.health = append(res.health, operatorHealth(o, s.Now)...)
	}

	updated := 0
	for _, o := range ops {
		if o.updated {
			updated++
		}
	}
	total := len(ops)

	est := controlPlaneEstimate{
		completed:    updated == total,
		started:      hist.started,
		end:          hist.completed,
		baseline:     baselineDuration(hist.entries),
		lastProgress: lastObservedProgress(ops, hist.started, time.Time{}),
	}
	if total > 0 {
		est.fraction = float64(updated) / float64(total)
	}
	assessment, estimatedAt := est.at(s.Now)
	res.estimate = est

	res.cvInsight = updatev1alpha1.ClusterVersionStatusInsight{
		Conditions:           []metav1.Condition{res.updating},
		Resource:             cvRef(cv.Name),
		Assessment:           assessment,
		Versions:             hist.versions(),
		Completion:           percent(updated, total),
		StartedAt:            metav1.NewTime(hist.started),
		EstimatedCompletedAt: estimatedAt,
	}
	if hist.completed != nil {
		t := metav1.NewTime(*hist.completed)
		res.cvInsight.CompletedAt = &t
	}
	// oc's order: the ClusterVersion's Failing, the operators, then the
	// unfinished previous update.
	failing, previousPartial := cvHealth(cv, hist, assessment, s.Now)
	res.health = append(append(failing, res.health...), previousPartial...)
	return res
}

// percent is part/total as a whole percentage, rounded as Go's %.0f rounds
// (half to even); 0 when total is 0.
func percent(part, total int) int32 {
	if total == 0 {
		return 0
	}
	return int32(math.RoundToEven(float64(part) / float64(total) * 100))
}

func sortOperators(ops []operatorState) {
	for i := 1; i < len(ops); i++ {
		for j := i; j > 0 && ops[j].co.Name < ops[j-1].co.Name; j-- {
			ops[j], ops[j-1] = ops[j-1], ops[j]
		}
	}
}

// controlPlaneUpdating mirrors the ClusterVersion's Progressing condition.
func controlPlaneUpdating(p *configv1.ClusterOperatorStatusCondition) metav1.Condition {
	status, reason := metav1.ConditionUnknown, updatev1alpha1.ReasonCannotDetermineUpdating
	switch p.Status {
	case configv1.ConditionTrue:
		status, reason = metav1.ConditionTrue, updatev1alpha1.ReasonClusterVersionProgressing
	case configv1.ConditionFalse:
		status, reason = metav1.ConditionFalse, updatev1alpha1.ReasonClusterVersionNotProgressing
	}
	msg := fmt.Sprintf("ClusterVersion has Progressing=%s(Reason=%s) | Message='%s'", p.Status, p.Reason, p.Message)
	return condition(updatev1alpha1.ConditionUpdating, status, reason, msg, p.LastTransitionTime.Time)
}

// operatorInsight turns a classified operator into its insight. While the
// operator updates, the Updating condition carries its Progressing condition's
// time and message, and progressingReason its reason: the CLI shows them.
func operatorInsight(o operatorState, now time.Time) updatev1alpha1.ClusterOperatorStatusInsight {
	in := updatev1alpha1.ClusterOperatorStatusInsight{Name: o.co.Name, Resource: coRef(o.co.Name)}

	var updating metav1.Condition
	switch {
	case o.updated:
		updating = condition(updatev1alpha1.ConditionUpdating, metav1.ConditionFalse, updatev1alpha1.ReasonUpdated, "The operator runs the target version", now)
	case o.updating():
		updating = condition(updatev1alpha1.ConditionUpdating, metav1.ConditionTrue, updatev1alpha1.ReasonProgressing, o.progressing.Message, o.progressing.LastTransitionTime.Time)
		in.ProgressingReason = o.progressing.Reason
	case o.waiting():
		updating = condition(updatev1alpha1.ConditionUpdating, metav1.ConditionFalse, updatev1alpha1.ReasonPending, "The operator waits to be updated", o.progressing.LastTransitionTime.Time)
	default:
		updating = condition(updatev1alpha1.ConditionUpdating, metav1.ConditionUnknown, updatev1alpha1.ReasonCannotDetermine, "The operator is not updated and has no Progressing condition", now)
	}

	var healthy metav1.Condition
	switch {
	case o.available == nil:
		healthy = condition(updatev1alpha1.ConditionHealthy, metav1.ConditionFalse, updatev1alpha1.ReasonUnavailable, "The operator has no Available condition", now)
	case o.unavailable():
		healthy = condition(updatev1alpha1.ConditionHealthy, metav1.ConditionFalse, updatev1alpha1.ReasonUnavailable, o.available.Message, o.available.LastTransitionTime.Time)
	case o.isDegraded():
		healthy = condition(updatev1alpha1.ConditionHealthy, metav1.ConditionFalse, updatev1alpha1.ReasonDegraded, o.degraded.Message, o.degraded.LastTransitionTime.Time)
	default:
		healthy = condition(updatev1alpha1.ConditionHealthy, metav1.ConditionTrue, updatev1alpha1.ReasonAsExpected, "", now)
	}
	in.Conditions = []metav1.Condition{updating, healthy}
	return in
}

// baselineDuration is how long an update is expected to take: the duration of
// the newest completed update in history, skipping the current entry and the
// oldest one (the installation); one hour when there is none.
func baselineDuration(entries []configv1.UpdateHistory) time.Duration {
	const fallback = time.Hour
	if len(entries) < 3 {
		return fallback
	}
	for _, e := range entries[1 : len(entries)-1] {
		if e.State == configv1.CompletedUpdate && e.CompletionTime != nil {
			return e.CompletionTime.Sub(e.StartedTime.Time)
		}
	}
	return fallback
}

// controlPlaneEstimate holds what the control plane's assessment and
// estimate are computed from, apart from the time: they depend on the time
// too, so the same inputs at a later time tell when they will change.
type controlPlaneEstimate struct {
	completed bool // every platform operator is at the target version
	started   time.Time
	end       *time.Time // when the update completed, per history
	baseline  time.Duration
	// lastProgress is the last observed progress; zero when none was
	// observed after the start, which oc reads as "now".
	lastProgress time.Time
	fraction     float64 // share of updated platform operators
}

// at is the assessment and the estimated completion time at now.
func (e controlPlaneEstimate) at(now time.Time) (updatev1alpha1.ControlPlaneAssessment, *metav1.Time) {
	if e.completed {
		return updatev1alpha1.ControlPlaneAssessmentCompleted, nil
	}
	// oc measures the update from the history entry's start to its completion,
	// or to now while it runs.
	end := now
	if e.end != nil {
		end = *e.end
	}
	updatingFor := end.Sub(e.started).Round(time.Second)
	lastProgress := e.lastProgress
	if lastProgress.IsZero() {
		lastProgress = now
	}
	assessment := updatev1alpha1.ControlPlaneAssessmentProgressing
	est := estimateTimeToComplete(e.baseline, lastProgress.Sub(e.started), updatingFor, e.fraction)
	switch {
	case est < -10*time.Minute:
		assessment = updatev1alpha1.ControlPlaneAssessmentStalled
	case est < 0:
		assessment = updatev1alpha1.ControlPlaneAssessmentSlow
	}
	// An estimate of exactly zero means "nothing to show" (oc omits it).
	if est == 0 {
		return assessment, nil
	}
	t := metav1.NewTime(now.Add(est))
	return assessment, &t
}

// lastObservedProgress is the last time any platform operator's Progressing
// condition changed. When machine-config is the only operator left and
// progressing, only its own condition counts: daemonset-based operators flip
// Progressing while nodes reboot, which is not progress of the update.
func lastObservedProgress(ops []operatorState, started, now time.Time) time.Time {
	var last time.Time
	var notUpdated []operatorState
	for _, o := range ops {
		if o.progressing != nil && o.progressing.LastTransitionTime.After(last) {
			last = o.progressing.LastTransitionTime.Time
		}
		if !o.updated {
			notUpdated = append(notUpdated, o)
		}
	}
	if len(notUpdated) == 1 && notUpdated[0].co.Name == machineConfigOperator && notUpdated[0].updating() {
		last = notUpdated[0].progressing.LastTransitionTime.Time
	}
	if !last.After(started) {
		return now
	}
	return last
}

// timewiseCompletion maps the fraction of updated operators to the fraction of
// the update's duration that has typically passed at that point. Operators
// finish unevenly (97% of them are done at two thirds of the time), so the
// curve is piecewise polynomial, fitted on a CI cluster by the oc authors.
func timewiseCompletion(x float64) float64 {
	switch {
	case x < 0.25:
		return -0.03078788 + 2.62886*x - 3.823954*x*x
	case x < 0.9:
		return 0.1851215 + 1.64994*x - 4.676898*x*x + 5.451824*x*x*x - 2.125286*x*x*x*x
	default:
		return 25053.32 - 107394.3*x + 172527.2*x*x - 123107*x*x*x + 32921.81*x*x*x*x
	}
}

// estimateTimeToComplete estimates how long the control plane still needs.
// With enough observed progress (more than 5 minutes) it projects the total
// duration from the time it took to reach the current completion; otherwise it
// uses the baseline. The remaining time is over-estimated by 20%, an overrun
// shrunk by the same factor. Negative results mean the update is late.
func estimateTimeToComplete(baseline, toLastObservedProgress, updatingFor time.Duration, completion float64) time.Duration {
	if completion >= 1 {
		return 0
	}
	projected := baseline
	if tw := timewiseCompletion(completion); completion > 0 && tw > 0 && toLastObservedProgress > 5*time.Minute {
		projected = time.Duration(float64(toLastObservedProgress) / tw)
	}
	remaining := projected - updatingFor
	if remaining >= 0 {
		remaining = time.Duration(float64(remaining) * 1.2)
	} else {
		remaining = time.Duration(float64(remaining) / 1.2)
	}
	remaining = remaining.Truncate(time.Second)
	return roundForDisplay(remaining)
}

// roundForDisplay rounds to the minute above 10 minutes, else to the second.
func roundForDisplay(d time.Duration) time.Duration {
	if d > 10*time.Minute {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}
