package assess

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/truncate"
)

// Where health insights send the reader.
const (
	refOmittedHealth = "https://github.com/upshift-io/upshift/blob/main/README.md#components"
	refCODegraded    = "https://github.com/openshift/runbooks/blob/master/alerts/cluster-monitoring-operator/ClusterOperatorDegraded.md"
	refCODown        = "https://github.com/openshift/runbooks/blob/master/alerts/cluster-monitoring-operator/ClusterOperatorDown.md"
	refMCO           = "https://docs.openshift.com/container-platform/latest/post_installation_configuration/machine-configuration-tasks.html#understanding-the-machine-config-operator"
	refPausedPool    = "https://docs.openshift.com/container-platform/latest/support/troubleshooting/troubleshooting-operator-issues.html#troubleshooting-disabling-autoreboot-mco_troubleshooting-operator-issues"
	refCVHistory     = "https://docs.openshift.com/container-platform/latest/updating/troubleshooting_updates/gathering-data-cluster-update.html#gathering-clusterversion-history-cli_troubleshooting_updates"
	refAlertNoRunbok = "<alert does not have a runbook_url annotation>"
)

// Thresholds after which an operator condition becomes an insight (and an error).
const (
	coUnavailableWarnAfter  = 5 * time.Minute
	coUnavailableErrorAfter = 20 * time.Minute
	coDegradedWarnAfter     = 5 * time.Minute
	coDegradedErrorAfter    = 40 * time.Minute

	nodeNotReadySeriousAfter     = 5 * time.Minute
	nodeDiskPressureSeriousAfter = time.Minute
	nodeNetworkSeriousAfter      = time.Minute
)

// Alerts that matter for an update even when they started before it.
var alertsAffectingUpdates = map[string]bool{
	"PodDisruptionBudgetLimit":   true,
	"PodDisruptionBudgetAtLimit": true,
}

func newHealth(uid string, started time.Time, scope updatev1alpha1.ScopeType, resources []updatev1alpha1.ResourceRef,
	level updatev1alpha1.InsightImpactLevel, impact updatev1alpha1.InsightImpactType, summary, description, reference string) updatev1alpha1.HealthInsight {
	h := updatev1alpha1.HealthInsight{
		UID:         uid,
		Scope:       updatev1alpha1.InsightScope{Type: scope, Resources: resources},
		Impact:      updatev1alpha1.InsightImpact{Level: level, Type: impact, Summary: summary, Description: description},
		Remediation: updatev1alpha1.InsightRemediation{Reference: reference},
	}
	if !started.IsZero() {
		t := metav1.NewTime(started)
		h.StartedAt = &t
	}
	return h
}

// cvHealth: the CVO's Failing condition (out), and an update started on top
// of an unfinished one (previousPartial).
func cvHealth(cv *configv1.ClusterVersion, hist history, assessment updatev1alpha1.ControlPlaneAssessment, now time.Time) (out, previousPartial []updatev1alpha1.HealthInsight) {
	res := []updatev1alpha1.ResourceRef{cvRef(cv.Name)}
	failing := findCVCondition(cv, cvFailing)
	switch {
	case failing == nil:
		out = append(out, newHealth(makeUID("cv", cv.Name, "no-failing"), now, updatev1alpha1.ScopeTypeControlPlane, res,
			updatev1alpha1.WarningImpactLevel, updatev1alpha1.UpdateStalledImpactType,
			fmt.Sprintf("Cluster Version %s has no Failing condition", cv.Name),
			"The ClusterVersion has no Failing condition, so whether the cluster-version operator reconciles successfully is unclear. "+
				"Read the cluster-version operator's logs to find out.",
			refCODegraded))
	case failing.Status == configv1.ConditionTrue:
		out = append(out, newHealth(makeUID("cv", cv.Name, "failing"), failing.LastTransitionTime.Time, updatev1alpha1.ScopeTypeControlPlane, res,
			updatev1alpha1.WarningImpactLevel, updatev1alpha1.UpdateStalledImpactType,
			fmt.Sprintf("Cluster Version %s is failing to proceed with the update (%s)", cv.Name, failing.Reason),
			failing.Message, refCODegraded))
	case failing.Status == configv1.ConditionUnknown:
		// The CVO says Unknown (reason SlowClusterOperator) when operators take long.
		out = append(out, newHealth(makeUID("cv", cv.Name, "failing"), failing.LastTransitionTime.Time, updatev1alpha1.ScopeTypeControlPlane, res,
			updatev1alpha1.WarningImpactLevel, updatev1alpha1.UpdateStalledImpactType,
			fmt.Sprintf("Cluster Version %s may be failing to proceed with the update (%s)", cv.Name, failing.Reason),
			failing.Message, refCODegraded))
	}
	if hist.previousPartial && assessment != updatev1alpha1.ControlPlaneAssessmentCompleted {
		previousPartial = append(previousPartial, newHealth(makeUID("cv", cv.Name, "previous-partial"), hist.started, updatev1alpha1.ScopeTypeControlPlane, res,
			updatev1alpha1.WarningImpactLevel, updatev1alpha1.NoneImpactType,
			fmt.Sprintf("Previous update to %s never completed, last complete update was %s", hist.previous, hist.lastCompleted()),
			fmt.Sprintf("Current update to %s was initiated while the previous update to version %s was still in progress", hist.target, hist.previous),
			refCVHistory))
	}
	return out, previousPartial
}

// operatorHealth: an operator unavailable or degraded for a while.
func operatorHealth(o operatorState, now time.Time) []updatev1alpha1.HealthInsight {
	var out []updatev1alpha1.HealthInsight
	name := o.co.Name
	res := []updatev1alpha1.ResourceRef{coRef(name)}
	orNoMessage := func(m string) string {
		if m == "" {
			return "<no message>"
		}
		return m
	}
	if a := o.available; a != nil && a.Status == configv1.ConditionFalse {
		if since := now.Sub(a.LastTransitionTime.Time); since > coUnavailableWarnAfter {
			level := updatev1alpha1.WarningImpactLevel
			if since > coUnavailableErrorAfter {
				level = updatev1alpha1.ErrorImpactLevel
			}
			out = append(out, newHealth(makeUID("co", name, "unavailable"), a.LastTransitionTime.Time, updatev1alpha1.ScopeTypeControlPlane, res,
				level, updatev1alpha1.APIAvailabilityImpactType,
				fmt.Sprintf("Cluster Operator %s is unavailable (%s)", name, a.Reason), orNoMessage(a.Message), refCODown))
		}
	}
	if d := o.degraded; d != nil && d.Status == configv1.ConditionTrue {
		if since := now.Sub(d.LastTransitionTime.Time); since > coDegradedWarnAfter {
			level := updatev1alpha1.WarningImpactLevel
			if since > coDegradedErrorAfter {
				level = updatev1alpha1.ErrorImpactLevel
			}
			out = append(out, newHealth(makeUID("co", name, "degraded"), d.LastTransitionTime.Time, updatev1alpha1.ScopeTypeControlPlane, res,
				level, updatev1alpha1.APIAvailabilityImpactType,
				fmt.Sprintf("Cluster Operator %s is degraded (%s)", name, d.Reason), orNoMessage(d.Message), refCODegraded))
		}
	}
	return out
}

// nodeHealth: a node that is seriously unavailable while not updating, and a
// node whose MCD gave up.
func nodeHealth(n nodeState, pool string, now time.Time) []updatev1alpha1.HealthInsight {
	var out []updatev1alpha1.HealthInsight
	name := n.node.Name
	scope := scopeOfPool(pool)
	res := []updatev1alpha1.ResourceRef{nodeRef(name)}
	if !n.updating && anySeriouslyUnavailable(n.unavailable, now) {
		// Once one reason is serious, oc lists every reason, and the
		// insight starts with the earliest of them.
		summaries := make([]string, 0, len(n.unavailable))
		descriptions := make([]string, 0, len(n.unavailable))
		for _, r := range n.unavailable {
			summaries = append(summaries, unavailableSummary(name, r))
			descriptions = append(descriptions, unavailableDescription(r))
		}
		description := strings.Join(descriptions, " | ")
		if n.degraded {
			// The MCD's reason explains a degraded node better than its conditions.
			description = n.degradedReason
		}
		out = append(out, newHealth(makeUID("node", name, "unavailable"), earliestSince(n.unavailable), scope, res,
			updatev1alpha1.WarningImpactLevel, updatev1alpha1.UpdateSpeedImpactType,
			strings.Join(summaries, " | "), description, refMCO))
	}
	if n.degraded {
		// The start of a degradation is not recorded on the node.
		out = append(out, newHealth(makeUID("node", name, "degraded"), time.Time{}, scope, res,
			updatev1alpha1.ErrorImpactLevel, updatev1alpha1.UpdateStalledImpactType,
			fmt.Sprintf("Node %s is degraded", name), n.degradedReason, refMCO))
	}
	return out
}

func anySeriouslyUnavailable(rs []unavailableReason, now time.Time) bool {
	for _, r := range rs {
		if seriouslyUnavailable(r, now) {
			return true
		}
	}
	return false
}

// seriouslyUnavailable filters out expected, short unavailability: cordons and
// the MCD's own work are part of updating; a node briefly not ready is normal.
// now is the wall clock offline, as in oc (see Snapshot.WallClock).
func seriouslyUnavailable(r unavailableReason, now time.Time) bool {
	if r.condition == nil {
		return false
	}
	if after, ok := seriousAfter[r.condition.Type]; ok {
		return now.Sub(r.condition.LastTransitionTime.Time) >= after
	}
	return true
}

// seriousAfter is how long each node condition must last to be serious.
var seriousAfter = map[corev1.NodeConditionType]time.Duration{
	corev1.NodeReady:              nodeNotReadySeriousAfter,
	corev1.NodeDiskPressure:       nodeDiskPressureSeriousAfter,
	corev1.NodeNetworkUnavailable: nodeNetworkSeriousAfter,
}

func unavailableSummary(node string, r unavailableReason) string {
	if r.condition != nil {
		switch r.condition.Type {
		case corev1.NodeReady:
			return fmt.Sprintf("Node %s is not ready", node)
		case corev1.NodeDiskPressure:
			return fmt.Sprintf("Node %s has disk pressure", node)
		case corev1.NodeNetworkUnavailable:
			return fmt.Sprintf("Node %s has unavailable network", node)
		}
	}
	return r.text
}

// unavailableDescription quotes oc's own short reason ("Not ready"), not the
// condition's reason field, exactly as oc does.
func unavailableDescription(r unavailableReason) string {
	c := r.condition
	if c == nil {
		return r.text
	}
	want := "True"
	if c.Type != corev1.NodeReady {
		want = "False"
	}
	return fmt.Sprintf("Node has a %s!=%s condition with Reason %q and message %q", c.Type, want, r.text, c.Message)
}

// pausedPoolHealth: a paused pool keeps outdated nodes from updating. (A
// pool a node-gate run paused is not asked: gateHealth reports the run.)
func pausedPoolHealth(pool *mcfgv1.MachineConfigPool, nodes []nodeState) []updatev1alpha1.HealthInsight {
	if !pool.Spec.Paused {
		return nil
	}
	for _, n := range nodes {
		if n.phase == PhasePaused {
			return []updatev1alpha1.HealthInsight{newHealth(makeUID("mcp", pool.Name, "paused"), time.Time{},
				updatev1alpha1.ScopeTypeWorkerPool, []updatev1alpha1.ResourceRef{poolRef(pool.Name).ResourceRef},
				updatev1alpha1.WarningImpactLevel, updatev1alpha1.UpdateStalledImpactType,
				fmt.Sprintf("Outdated nodes in a paused pool '%s' will not be updated", pool.Name),
				"Pool is paused, which stops all changes to the nodes in the pool, including updates. "+
					"The nodes will not be updated until the pool is unpaused by the administrator.",
				refPausedPool)}
		}
	}
	return nil
}

// alertHealth turns firing warning and critical alerts into insights when
// they started during the update or are known to block updates. Every alert
// entry that passes becomes its own insight, as in oc: two entries are never
// merged, even when they look alike.
func alertHealth(alerts []Alert, updateStarted time.Time) []updatev1alpha1.HealthInsight {
	var out []updatev1alpha1.HealthInsight
	occurrences := map[string]int{}
	for _, a := range alerts {
		name := a.Labels["alertname"]
		if name == "" {
			continue
		}
		allowlisted := alertsAffectingUpdates[name]
		duringUpdate := updateStarted.Before(a.ActiveAt)
		if !allowlisted && !duringUpdate {
			continue
		}
		if a.State == "pending" {
			continue
		}
		var level updatev1alpha1.InsightImpactLevel
		switch a.Labels["severity"] {
		case "warning":
			level = updatev1alpha1.WarningImpactLevel
		case "critical":
			level = updatev1alpha1.CriticalImpactLevel
		default:
			continue // info, anything else or none: oc drops Info alerts
		}
		var prefix string
		switch {
		case allowlisted && duringUpdate:
			prefix = "Alert known to affect updates started firing during the update."
		case allowlisted:
			prefix = "Alert known to affect updates has been firing since before the update started."
		default:
			prefix = "Alert started firing during the update."
		}
		desc := prefix + " The alert has no description."
		if d := joinNonEmpty(" | ", a.Annotations["description"], a.Annotations["message"]); d != "" {
			desc = prefix + " The alert description is: " + d
		}
		summary := a.Annotations["summary"]
		if summary == "" {
			summary = name
		}
		ref := a.Annotations["runbook_url"]
		if ref == "" {
			ref = refAlertNoRunbok
		}
		ns := a.Labels["namespace"]
		out = append(out, newHealth(alertUID(a, occurrences), a.ActiveAt,
			updatev1alpha1.ScopeTypeCluster,
			[]updatev1alpha1.ResourceRef{{Group: configv1.GroupName, Resource: "alerts", Namespace: ns, Name: name}},
			level, updatev1alpha1.UnknownImpactType, "Alert is firing: "+summary, desc, ref))
	}
	return out
}

// alertUID identifies an alert entry by everything oc shows of it (labels,
// annotations, state, start), so entries that differ anywhere keep distinct
// UIDs; exact duplicates are told apart by their occurrence.
func alertUID(a Alert, occurrences map[string]int) string {
	parts := []string{a.Labels["namespace"], a.Labels["alertname"], a.ActiveAt.UTC().Format(time.RFC3339Nano),
		a.State, labelsKey(a.Labels), labelsKey(a.Annotations)}
	base := makeUID("alert", parts...)
	n := occurrences[base]
	occurrences[base] = n + 1
	if n == 0 {
		return base
	}
	return makeUID("alert", append(parts, fmt.Sprint(n))...)
}

// labelsKey is an unambiguous, order-independent text of a string map.
func labelsKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys) // so the key (and so the UID) does not depend on map order
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "\x01" + l[k] + "\x02")
	}
	return b.String()
}

var uidUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// makeUID builds a readable, stable UID ("co-etcd-degraded") that is a valid
// DNS label. Parts that would make it invalid or too long are replaced by a
// short hash of all parts, so distinct problems keep distinct UIDs.
func makeUID(kind string, parts ...string) string {
	readable := kind + "-" + strings.Join(parts, "-")
	if kind != "alert" && len(readable) <= 63 && readable == uidUnsafe.ReplaceAllString(readable, "") &&
		!strings.HasSuffix(readable, "-") && !strings.Contains(readable, "--") {
		return readable
	}
	sum := sha256.Sum256([]byte(strings.Join(append([]string{kind}, parts...), "\x00")))
	hash := hex.EncodeToString(sum[:])[:16]
	prefix := strings.Trim(uidUnsafe.ReplaceAllString(strings.ToLower(kind+"-"+parts[0]), "-"), "-")
	if max := 63 - len(hash) - 1; len(prefix) > max {
		prefix = strings.Trim(prefix[:max], "-")
	}
	return prefix + "-" + hash
}

// Limits of the API fields; longer texts are cut.
const (
	maxSummary     = 256
	maxDescription = 4096
)

// dedupeHealth drops incomplete insights (as oc does before display) and
// keeps the first of any UID. Distinct problems have distinct UIDs, so only a
// problem reported twice is dropped.
func dedupeHealth(in []updatev1alpha1.HealthInsight) []updatev1alpha1.HealthInsight {
	seen := map[string]bool{}
	var out []updatev1alpha1.HealthInsight
	for _, h := range in {
		if h.Impact.Summary == "" || h.Impact.Description == "" || h.Remediation.Reference == "" || seen[h.UID] {
			continue
		}
		seen[h.UID] = true
		out = append(out, h)
	}
	return out
}

// cutToAPILimits cuts texts to the API's limits. Only what is written to the
// API is cut: oc never shortens a text, and neither does the offline mode.
func cutToAPILimits(in []updatev1alpha1.HealthInsight) []updatev1alpha1.HealthInsight {
	for i := range in {
		in[i].Impact.Summary = truncate.String(in[i].Impact.Summary, maxSummary)
		in[i].Impact.Description = truncate.String(in[i].Impact.Description, maxDescription)
	}
	return in
}

// omittedHealthUID names the insight that stands for those left out.
const omittedHealthUID = "health-insights-omitted"

var levelRank = map[updatev1alpha1.InsightImpactLevel]int{
	updatev1alpha1.CriticalImpactLevel: 4, updatev1alpha1.ErrorImpactLevel: 3,
	updatev1alpha1.WarningImpactLevel: 2, updatev1alpha1.InfoImpactLevel: 1,
}

// boundHealth keeps the status within MaxHealthInsights, which the API
// enforces: past it every status write would be refused. On a large cluster
// with a bad day (a degraded node is one insight) that is reachable, so the
// most severe insights are kept, in their order, and one more says how many
// less severe ones were left out, at the level of the worst of them.
func boundHealth(in []updatev1alpha1.HealthInsight) []updatev1alpha1.HealthInsight {
	if len(in) <= updatev1alpha1.MaxHealthInsights {
		return in
	}
	byLevel := append([]updatev1alpha1.HealthInsight(nil), in...)
	sort.SliceStable(byLevel, func(i, j int) bool {
		return levelRank[byLevel[i].Impact.Level] > levelRank[byLevel[j].Impact.Level]
	})
	keep := updatev1alpha1.MaxHealthInsights - 1
	kept := map[string]bool{}
	for _, h := range byLevel[:keep] {
		kept[h.UID] = true
	}
	out := make([]updatev1alpha1.HealthInsight, 0, updatev1alpha1.MaxHealthInsights)
	for _, h := range in {
		if kept[h.UID] {
			out = append(out, h)
		}
	}
	omitted := len(in) - keep
	return append(out, newHealth(omittedHealthUID, time.Time{}, updatev1alpha1.ScopeTypeCluster, nil,
		byLevel[keep].Impact.Level, updatev1alpha1.NoneImpactType,
		fmt.Sprintf("%d more health insights are not listed", omitted),
		fmt.Sprintf("The update status lists at most %d health insights; the %d least severe are left out. "+
			"Each node's own state is in its NodeProgressInsight.", updatev1alpha1.MaxHealthInsights, omitted),
		refOmittedHealth))
}

// cvFailing is the CVO's Failing condition type (openshift/api has no constant for it).
const cvFailing configv1.ClusterStatusConditionType = "Failing"
