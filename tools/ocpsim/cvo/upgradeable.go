package cvo

import (
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UpgradeableCheck is one of the CVO's upgradeable checks that fails: the
// condition type it reports (Upgradeable<Check>), reason and message.
type UpgradeableCheck struct {
	Type            configv1.ClusterStatusConditionType
	Reason, Message string
}

// Condition types of the CVO's upgradeable checks that the simulator runs.
const (
	UpgradeableClusterOperators configv1.ClusterStatusConditionType = "UpgradeableClusterOperators"
	UpgradeableAdminAckRequired configv1.ClusterStatusConditionType = "UpgradeableAdminAckRequired"
	UpgradeableOverrides        configv1.ClusterStatusConditionType = "UpgradeableClusterVersionOverrides"
)

// OverridesSet is the reason of the CVO's overrides check.
const OverridesSet = "ClusterVersionOverridesSet"

// Messages of the overrides check. The CVO of 4.22 and later lets
// z-stream updates through despite overrides and says so; earlier ones
// (4.16 to 4.21) refuse every update while an override is set.
const (
	overridesMessage      = "Disabling ownership via cluster version overrides prevents upgrades. Please remove overrides before continuing."
	overridesMinorMessage = "Disabling ownership via cluster version overrides prevents upgrades between minor or major versions. Please remove overrides before requesting a minor or major version update."
)

// overridesAllowPatch reports whether the CVO of release version lets a
// z-stream update through an unmanaged override (OTA-1860, 4.22).
func overridesAllowPatch(version string) bool {
	v, ok := parseVersion(version)
	return ok && (v[0] > 4 || (v[0] == 4 && v[1] >= 22))
}

// HasUnmanagedOverride reports whether any spec.overrides entry is unmanaged.
func HasUnmanagedOverride(overrides []configv1.ComponentOverride) bool {
	for _, o := range overrides {
		if o.Unmanaged {
			return true
		}
	}
	return false
}

// OverridesUpgradeable is the CVO's overrides check: an unmanaged entry in
// spec.overrides means the CVO no longer owns a part of the payload, so it
// refuses to move the cluster to another release that part may need. cvo
// is the release the CVO runs (status.desired.version), whose wording it
// uses. It returns nil when no override is unmanaged.
func OverridesUpgradeable(overrides []configv1.ComponentOverride, cvo string) *UpgradeableCheck {
	if !HasUnmanagedOverride(overrides) {
		return nil
	}
	msg := overridesMessage
	if overridesAllowPatch(cvo) {
		msg = overridesMinorMessage
	}
	return &UpgradeableCheck{Type: UpgradeableOverrides, Reason: OverridesSet, Message: msg}
}

// OperatorsUpgradeable is the CVO's ClusterOperators check: every operator
// reporting Upgradeable=False blocks minor updates. One operator gives its
// own reason; several give ClusterOperatorsNotUpgradeable and a bulleted
// message. It returns nil when no operator objects.
func OperatorsUpgradeable(cos []configv1.ClusterOperator) *UpgradeableCheck {
	type notUp struct {
		name string
		c    *configv1.ClusterOperatorStatusCondition
	}
	var bad []notUp
	for i := range cos {
		if c := FindCondition(cos[i].Status.Conditions, configv1.OperatorUpgradeable); c != nil && c.Status == configv1.ConditionFalse {
			bad = append(bad, notUp{cos[i].Name, c})
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].name < bad[j].name })
	if len(bad) == 1 {
		return &UpgradeableCheck{Type: UpgradeableClusterOperators, Reason: bad[0].c.Reason,
			Message: fmt.Sprintf("Cluster operator %s should not be upgraded between minor versions: %s", bad[0].name, bad[0].c.Message)}
	}
	var msgs []string
	for _, b := range bad {
		msgs = append(msgs, fmt.Sprintf("Cluster operator %s should not be upgraded between minor versions: %s: %s", b.name, b.c.Reason, b.c.Message))
	}
	return &UpgradeableCheck{Type: UpgradeableClusterOperators, Reason: "ClusterOperatorsNotUpgradeable",
		Message: "Multiple cluster operators should not be upgraded between minor versions:\n* " + strings.Join(msgs, "\n* ")}
}

// AdminAckRequired is the CVO's admin-ack check for a gate of the current
// minor that the administrator has not acknowledged yet: reason
// AdminAckRequired, the gate's description as message.
func AdminAckRequired(current string) *UpgradeableCheck {
	v, _ := parseVersion(current)
	return &UpgradeableCheck{Type: UpgradeableAdminAckRequired, Reason: "AdminAckRequired",
		Message: fmt.Sprintf("Kubernetes 1.%d and therefore OpenShift %d.%d remove several APIs which require admin consideration. Please see the knowledge article https://access.redhat.com/articles/6955381 for details and instructions.", v[1]+14, v[0], v[1]+1)}
}

// UpgradeableConditions aggregates the failing checks as the CVO does: none
// → no Upgradeable condition at all; one → Upgradeable=False with its reason
// and message; several → each check's own condition plus Upgradeable=False,
// MultipleReasons. The caller replaces every Upgradeable* condition with these.
func UpgradeableConditions(checks []*UpgradeableCheck, now metav1.Time) []configv1.ClusterOperatorStatusCondition {
	var failing []*UpgradeableCheck
	for _, c := range checks {
		if c != nil {
			failing = append(failing, c)
		}
	}
	switch len(failing) {
	case 0:
		return nil
	case 1:
		return []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionFalse, Reason: failing[0].Reason, Message: failing[0].Message, LastTransitionTime: now}}
	}
	var out []configv1.ClusterOperatorStatusCondition
	var reasons, msgs []string
	for _, c := range failing {
		out = append(out, configv1.ClusterOperatorStatusCondition{Type: c.Type, Status: configv1.ConditionFalse, Reason: c.Reason, Message: c.Message, LastTransitionTime: now})
		reasons = append(reasons, c.Reason)
		msgs = append(msgs, c.Message)
	}
	return append(out, configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionFalse, Reason: "MultipleReasons",
		Message: fmt.Sprintf("Cluster should not be upgraded between minor versions for multiple reasons: %s\n* %s", strings.Join(reasons, ","), strings.Join(msgs, "\n* ")), LastTransitionTime: now})
}

// SetUpgradeable replaces the Upgradeable* conditions with want, keeping
// transition times of conditions whose status did not change.
func SetUpgradeable(conds *[]configv1.ClusterOperatorStatusCondition, want []configv1.ClusterOperatorStatusCondition, now metav1.Time) {
	keep := map[configv1.ClusterStatusConditionType]bool{}
	for _, w := range want {
		keep[w.Type] = true
		SetCondition(conds, w.Type, w.Status, w.Reason, w.Message, now)
	}
	out := (*conds)[:0]
	for _, c := range *conds {
		if strings.HasPrefix(string(c.Type), string(configv1.OperatorUpgradeable)) && !keep[c.Type] {
			continue
		}
		out = append(out, c)
	}
	*conds = out
}

// PreconditionError is a failed precondition check of the CVO.
type PreconditionError struct {
	Name, Reason, Message string
	// Warning: the check does not block the update (only reported).
	Warning bool
}

// Preconditions runs the CVO's precondition checks for an update of cv to
// version target: ClusterVersionUpgradeable (Upgradeable=False blocks an
// update to another minor; with an unmanaged override it also blocks a
// z-stream, or, from 4.22 on, only warns about it) and
// ClusterVersionRecommendedUpdate (a target that is not recommended is only
// a warning).
func Preconditions(cv *configv1.ClusterVersion, target string) []PreconditionError {
	const name = "ClusterVersionUpgradeable"
	st := &cv.Status
	var errs []PreconditionError
	if up := FindCondition(st.Conditions, configv1.OperatorUpgradeable); up != nil && up.Status == configv1.ConditionFalse && len(st.History) > 0 {
		cur := CurrentVersion(st.History)
		switch {
		case minor(cur) != minor(target):
			errs = append(errs, PreconditionError{Name: name, Reason: up.Reason, Message: up.Message})
		case HasUnmanagedOverride(cv.Spec.Overrides):
			// The overrides check's own reason and message, whatever else
			// makes the cluster not upgradeable.
			o := OverridesUpgradeable(cv.Spec.Overrides, st.Desired.Version)
			if !overridesAllowPatch(st.Desired.Version) {
				errs = append(errs, PreconditionError{Name: name, Reason: o.Reason, Message: o.Message})
				break
			}
			errs = append(errs, PreconditionError{Name: name, Reason: o.Reason, Warning: true,
				Message: fmt.Sprintf("Retarget from %s to %s is not blocked by %s. But the cluster-version operator is not managing these resources; they are currently the responsibility of the agent that set the overrides: %s", st.Desired.Version, target, o.Reason, o.Message)})
		}
	}
	channel := cv.Spec.Channel
	if e := recommendedUpdate(st, channel, target); e != nil {
		errs = append(errs, *e)
	}
	return errs
}

func recommendedUpdate(st *configv1.ClusterVersionStatus, channel, target string) *PreconditionError {
	const name = "ClusterVersionRecommendedUpdate"
	from := st.Desired.Version
	if channel == "" {
		return &PreconditionError{Name: name, Reason: "NoChannel", Warning: true,
			Message: fmt.Sprintf("Configured channel is unset, so the recommended status of updating from %s to %s is unknown.", from, target)}
	}
	for _, r := range st.AvailableUpdates {
		if r.Version == target {
			return nil
		}
	}
	for _, cu := range st.ConditionalUpdates {
		if cu.Release.Version != target {
			continue
		}
		for _, c := range cu.Conditions {
			if c.Type != Recommended {
				continue
			}
			switch c.Status {
			case metav1.ConditionTrue:
				return nil
			case metav1.ConditionFalse:
				return &PreconditionError{Name: name, Reason: c.Reason, Warning: true,
					Message: fmt.Sprintf("Update from %s to %s is not recommended:\n\n%s", from, target, c.Message)}
			default:
				return &PreconditionError{Name: name, Reason: c.Reason, Warning: true,
					Message: fmt.Sprintf("Update from %s to %s is %s=%s: %s: %s", from, target, c.Type, c.Status, c.Reason, c.Message)}
			}
		}
		return &PreconditionError{Name: name, Reason: "UnknownConditionType", Warning: true,
			Message: fmt.Sprintf("Conditional update to %s has no Recommended condition.", target)}
	}
	return &PreconditionError{Name: name, Reason: "UnknownUpdate", Warning: true,
		Message: fmt.Sprintf("%s is not one of the recommended updates, but it is also not a conditional update, so the recommended status of updating from %s to %s is unknown.", target, from, target)}
}

// SummarizePreconditions is the CVO's summary of failed checks: whether they
// block the update, and the message. force turns blocking failures into
// "Forced through blocking failures: ...".
func SummarizePreconditions(errs []PreconditionError, force bool) (block bool, msg string) {
	if len(errs) == 0 {
		return false, ""
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, fmt.Sprintf("Precondition %q failed because of %q: %s", e.Name, e.Reason, e.Message))
		if !e.Warning {
			block = true
		}
	}
	msg = msgs[0]
	if len(msgs) > 1 {
		msg = "Multiple precondition checks failed:\n* " + strings.Join(msgs, "\n* ")
	}
	if force {
		return false, "Forced through blocking failures: " + msg
	}
	return block, msg
}

// PreconditionsFailed is the ReleaseAccepted message of an update blocked by
// preconditions.
func PreconditionsFailed(version, image, summary string) string {
	return fmt.Sprintf("Preconditions failed for payload loaded version=%q image=%q: %s", version, image, summary)
}

// CurrentVersion is the version of the newest Completed history entry (the
// version the cluster runs), or the oldest entry's when none completed.
func CurrentVersion(h []configv1.UpdateHistory) string {
	for _, e := range h {
		if e.State == configv1.CompletedUpdate {
			return e.Version
		}
	}
	if len(h) > 0 {
		return h[len(h)-1].Version
	}
	return ""
}

// minor is "x.y" of a version.
func minor(v string) string {
	p, ok := parseVersion(v)
	if !ok {
		return v
	}
	return fmt.Sprintf("%d.%d", p[0], p[1])
}
