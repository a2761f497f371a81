package overview

import (
	"fmt"
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// clusterUpdateSection is the update itself: ClusterVersion, and the
// update-status-controller's assessment of it when that controller runs.
func clusterUpdateSection(in Input) Section {
	s := Section{Component: ClusterUpdate}
	cvRead := in.ClusterVersion
	if !cvRead.Ok() {
		s.State, s.Waiting = StateUnknown, "cannot read the ClusterVersion: "+readProblem(cvRead.Outcome, cvRead.Err)
		return s
	}
	cv := cvRead.Object
	current, desired := currentVersion(cv), cv.Status.Desired.Version
	line := "ClusterVersion: desired " + orElse(desired, "(none)") + ", current " + orElse(current, "(none completed)")
	if ch := cv.Spec.Channel; ch != "" {
		line += ", channel " + ch
	}
	s.Lines = append(s.Lines, line)
	progressing := cvCondTrue(cv, configv1.OperatorProgressing)
	failing := cvCond(cv, "Failing")
	if c := cvCond(cv, configv1.OperatorProgressing); c != nil && progressing {
		s.Lines = append(s.Lines, "  Progressing: "+oneLine(c.Message, 200))
	}
	if failing != nil && failing.Status == configv1.ConditionTrue {
		s.Lines = append(s.Lines, "  Failing: "+joinNonEmpty(": ", failing.Reason, oneLine(failing.Message, 200)))
	}

	us := assessment(in)
	if us == nil {
		s.Lines = append(s.Lines, "update-status-controller: "+assessmentMissing(in)+"; summary from ClusterVersion")
	} else {
		s.Lines = append(s.Lines, assessmentLines(us, in)...)
	}

	switch {
	case failing != nil && failing.Status == configv1.ConditionTrue:
		s.State, s.Waiting = StateBlocked, "ClusterVersion is failing: "+joinNonEmpty(": ", failing.Reason, oneLine(failing.Message, 200))
	case us != nil && stalled(us) != "":
		s.State, s.Waiting = StateBlocked, stalled(us)
	case progressing:
		s.State, s.Waiting = StateProgressing, "the control plane updates to "+desired
		if cp := us.controlPlane(); cp != nil {
			s.Waiting += fmt.Sprintf(": %d%% (%s)", cp.Completion, cp.Assessment)
			if cp.EstimatedCompletedAt != nil {
				s.Waiting += ", estimated to finish at " + clock(cp.EstimatedCompletedAt.Time, in.Now)
			}
		} else if c := cvCond(cv, configv1.OperatorProgressing); c.Message != "" {
			s.Waiting += ": " + oneLine(c.Message, 160)
		}
	case us != nil && len(us.updatingPools()) > 0:
		s.State, s.Waiting = StateProgressing, "the worker pools update: "+strings.Join(us.updatingPools(), ", ")
	default:
		s.State, s.Waiting = StateIdle, "not updating: at "+orElse(current, desired)
	}
	s.Updating = s.State == StateProgressing || (s.State == StateBlocked && (progressing || (us != nil && len(us.updatingPools()) > 0)))
	return s
}

// currentVersion is the version ClusterVersion last completed an update
// to, as oc says it: the newest Completed history entry.
func currentVersion(cv *configv1.ClusterVersion) string {
	for _, h := range cv.Status.History {
		if h.State == configv1.CompletedUpdate {
			return h.Version
		}
	}
	return ""
}

func cvCond(cv *configv1.ClusterVersion, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
	for i := range cv.Status.Conditions {
		if cv.Status.Conditions[i].Type == t {
			return &cv.Status.Conditions[i]
		}
	}
	return nil
}

func cvCondTrue(cv *configv1.ClusterVersion, t configv1.ClusterStatusConditionType) bool {
	c := cvCond(cv, t)
	return c != nil && c.Status == configv1.ConditionTrue
}

// upgradeStatus wraps the update-status-controller's status; nil methods
// are safe, so callers need not check for it twice.
type upgradeStatus struct {
	st *updatev1alpha1.UpgradeStatusStatus
}

// assessment is the controller's UpgradeStatus when it holds an assessment
// of the control plane (before its first pass it holds none).
func assessment(in Input) *upgradeStatus {
	r := in.UpgradeStatus
	if !r.Ok() || r.Object == nil {
		return nil
	}
	if cp := r.Object.Status.ControlPlane; cp == nil || cp.ClusterVersion == nil {
		return nil
	}
	return &upgradeStatus{st: &r.Object.Status}
}

func assessmentMissing(in Input) string {
	r := in.UpgradeStatus
	switch r.Outcome {
	case Found:
		return "has not assessed the control plane yet"
	case Absent:
		return "no UpgradeStatus (not running, or not yet computed)"
	}
	return readProblem(r.Outcome, r.Err)
}

func (u *upgradeStatus) controlPlane() *updatev1alpha1.ClusterVersionStatusInsight {
	if u == nil {
		return nil
	}
	return u.st.ControlPlane.ClusterVersion
}

// updatingPools are the worker pools with nodes still to update.
func (u *upgradeStatus) updatingPools() []string {
	if u == nil {
		return nil
	}
	var out []string
	for _, p := range u.st.WorkerPools {
		switch p.Pool.Assessment {
		case updatev1alpha1.PoolProgressing, updatev1alpha1.PoolDegraded:
			out = append(out, fmt.Sprintf("%s %d%%", p.Name, p.Pool.Completion))
		}
	}
	return out
}

// stalled is what the controller reports as stalling the update: an
// "Update Stalled" health insight, or a control plane or pool assessed
// Stalled or Degraded.
func stalled(u *upgradeStatus) string {
	for _, h := range u.st.Health {
		if h.Impact.Type == updatev1alpha1.UpdateStalledImpactType {
			return "update stalled: " + oneLine(h.Impact.Summary, 200)
		}
	}
	if cp := u.controlPlane(); cp.Assessment == updatev1alpha1.ControlPlaneAssessmentStalled || cp.Assessment == updatev1alpha1.ControlPlaneAssessmentDegraded {
		return "control plane update " + string(cp.Assessment)
	}
	for _, p := range u.st.WorkerPools {
		if p.Pool.Assessment == updatev1alpha1.PoolDegraded {
			return "worker pool " + p.Name + " is degraded"
		}
	}
	return ""
}

// assessmentLines: the control plane, each worker pool, the health insights.
func assessmentLines(u *upgradeStatus, in Input) []string {
	cp := u.controlPlane()
	line := fmt.Sprintf("control plane: %s, %d%%", cp.Assessment, cp.Completion)
	if prev := cp.Versions.Previous; prev != nil {
		line += " (" + prev.Version + " → " + cp.Versions.Target.Version + ")"
	}
	if !cp.StartedAt.IsZero() {
		line += ", started " + clock(cp.StartedAt.Time, in.Now)
	}
	if cp.CompletedAt != nil {
		line += ", completed " + clock(cp.CompletedAt.Time, in.Now)
	} else if cp.EstimatedCompletedAt != nil {
		line += ", estimated " + clock(cp.EstimatedCompletedAt.Time, in.Now)
	}
	out := []string{line}
	for _, p := range u.st.WorkerPools {
		pool := p.Pool
		n := map[updatev1alpha1.NodeSummaryType]int{}
		for _, t := range poolSummaries {
			n[t] = int(pool.Summary(t))
		}
		out = append(out, fmt.Sprintf("  pool %s: %s, %d%%, %d nodes%s", p.Name, pool.Assessment, pool.Completion,
			pool.Summary(updatev1alpha1.NodesTotal), prefixed(": ", counts(poolSummaries, n))))
	}
	if len(u.st.Health) > 0 {
		n := map[updatev1alpha1.InsightImpactLevel]int{}
		var list []string
		for _, h := range u.st.Health {
			n[h.Impact.Level]++
			list = append(list, fmt.Sprintf("    %s %s: %s", h.Impact.Level, h.Impact.Type, oneLine(h.Impact.Summary, 160)))
		}
		// The most severe first: the cap must not hide an error behind infos.
		slices.SortStableFunc(list, func(a, b string) int { return levelRank(a) - levelRank(b) })
		out = append(out, "  health insights: "+counts(insightLevels, n))
		out = append(out, capped(list, 3, "    ")...)
	}
	return out
}

var poolSummaries = []updatev1alpha1.NodeSummaryType{updatev1alpha1.NodesOutdated, updatev1alpha1.NodesProgressing,
	updatev1alpha1.NodesDraining, updatev1alpha1.NodesDegraded, updatev1alpha1.NodesExcluded}

var insightLevels = []updatev1alpha1.InsightImpactLevel{updatev1alpha1.CriticalImpactLevel, updatev1alpha1.ErrorImpactLevel,
	updatev1alpha1.WarningImpactLevel, updatev1alpha1.InfoImpactLevel, updatev1alpha1.UnknownImpactLevel}

// levelRank orders a rendered insight line by its level.
func levelRank(line string) int {
	for i, l := range insightLevels {
		if strings.HasPrefix(strings.TrimSpace(line), string(l)+" ") {
			return i
		}
	}
	return len(insightLevels)
}
