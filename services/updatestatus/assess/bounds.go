package assess

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/truncate"
)

// The API validates every status write against its schema; one field out of
// bounds makes the apiserver refuse the whole write, and every later one too,
// so the status would stay stale for good. Cluster objects are less
// constrained than the API (a pool may be named "infra.gpu", a cluster may
// have forty pools, a message may be long), so the result is brought within
// the API's limits here: lists keep their most relevant items and a health
// insight says what was left out, names the API cannot hold are left out the
// same way, texts are cut. The limits are the CRD's; api/update/v1alpha1's
// markers are the source, and a test checks random results against the CRD.
const (
	maxWorkerPools      = 32
	maxClusterOperators = 128
	maxNameLen          = 64 // pool and operator names in the insights
	maxVersionLen       = 64 // Version.version, NodeStatusInsight.version
	maxNodeMessage      = 4096
	maxReference        = 512
	maxRefName          = 253
	maxRefNamespace     = 63
	maxReasonLen        = 1024 // progressingReason
	maxSummaryCount     = 8192
	// Condition messages may be 32768 characters in the API; in the
	// UpgradeStatus there are hundreds of them in one object that etcd
	// limits to 1.5 MiB, so they are cut much shorter.
	maxConditionMessage = 1024
)

// insightName is the pattern of pool and operator names in the insights.
var insightName = regexp.MustCompile(`^[a-z0-9-]+$`)

func validInsightName(name string) bool {
	return len(name) <= maxNameLen && insightName.MatchString(name)
}

// UIDs of the insights that say what the bounds left out.
const (
	omittedPoolsUID     = "worker-pools-omitted"
	omittedOperatorsUID = "cluster-operators-omitted"
)

// poolRank orders pool assessments by how much a reader needs to see them.
var poolRank = map[updatev1alpha1.PoolAssessment]int{
	updatev1alpha1.PoolDegraded: 0, updatev1alpha1.PoolProgressing: 1, updatev1alpha1.PoolExcluded: 2,
	updatev1alpha1.PoolPending: 3, updatev1alpha1.PoolCompleted: 4,
}

// boundWorkerPools keeps the worker pools the API can hold: those with a
// valid name, at most maxWorkerPools of them, the most relevant first
// (degraded, progressing, excluded, pending, completed), in their order. The
// health insight it returns, if any, names the pools left out; their nodes
// keep their NodeProgressInsights.
func boundWorkerPools(pools []updatev1alpha1.Pool) ([]updatev1alpha1.Pool, []updatev1alpha1.HealthInsight) {
	var valid []updatev1alpha1.Pool
	var invalid []string
	for _, p := range pools {
		if validInsightName(p.Name) {
			valid = append(valid, p)
		} else {
			invalid = append(invalid, p.Name)
		}
	}
	kept, dropped := valid, []updatev1alpha1.Pool(nil)
	if len(valid) > maxWorkerPools {
		byRank := append([]updatev1alpha1.Pool(nil), valid...)
		sort.SliceStable(byRank, func(i, j int) bool {
			return poolRank[byRank[i].Pool.Assessment] < poolRank[byRank[j].Pool.Assessment]
		})
		keep := map[string]bool{}
		for _, p := range byRank[:maxWorkerPools] {
			keep[p.Name] = true
		}
		kept = nil
		for _, p := range valid {
			if keep[p.Name] {
				kept = append(kept, p)
			} else {
				dropped = append(dropped, p)
			}
		}
	}
	if len(invalid) == 0 && len(dropped) == 0 {
		return kept, nil
	}
	level := updatev1alpha1.InfoImpactLevel
	var names []string
	for _, p := range dropped {
		names = append(names, fmt.Sprintf("%s (%s)", p.Name, p.Pool.Assessment))
		if p.Pool.Assessment != updatev1alpha1.PoolCompleted {
			level = updatev1alpha1.WarningImpactLevel
		}
	}
	var desc []string
	if len(dropped) > 0 {
		desc = append(desc, fmt.Sprintf("The update status lists at most %d worker pools, the least advanced first; "+
			"these are left out: %s.", maxWorkerPools, strings.Join(names, ", ")))
	}
	if len(invalid) > 0 {
		level = updatev1alpha1.WarningImpactLevel
		desc = append(desc, fmt.Sprintf("These pools have names the update status cannot hold "+
			"(only lower-case letters, digits and '-', at most %d characters), so they are left out: %s.",
			maxNameLen, strings.Join(invalid, ", ")))
	}
	desc = append(desc, "Their nodes' NodeProgressInsights are published as usual.")
	return kept, []updatev1alpha1.HealthInsight{newHealth(omittedPoolsUID, time.Time{}, updatev1alpha1.ScopeTypeWorkerPool, nil,
		level, updatev1alpha1.NoneImpactType,
		fmt.Sprintf("%d worker pools are not listed", len(invalid)+len(dropped)),
		strings.Join(desc, " "), refOmittedHealth)}
}

// boundOperators keeps the ClusterOperator insights the API can hold: valid
// names, at most maxClusterOperators, those not updated or not healthy first.
func boundOperators(cos []updatev1alpha1.ClusterOperatorStatusInsight) ([]updatev1alpha1.ClusterOperatorStatusInsight, []updatev1alpha1.HealthInsight) {
	var valid []updatev1alpha1.ClusterOperatorStatusInsight
	var left []string
	for _, co := range cos {
		if validInsightName(co.Name) {
			valid = append(valid, co)
		} else {
			left = append(left, co.Name)
		}
	}
	kept := valid
	if len(valid) > maxClusterOperators {
		interesting := func(co updatev1alpha1.ClusterOperatorStatusInsight) bool {
			return !hasCondition(co.Conditions, updatev1alpha1.ConditionUpdating, metav1.ConditionFalse, updatev1alpha1.ReasonUpdated) ||
				!hasCondition(co.Conditions, updatev1alpha1.ConditionHealthy, metav1.ConditionTrue, "")
		}
		byRank := append([]updatev1alpha1.ClusterOperatorStatusInsight(nil), valid...)
		sort.SliceStable(byRank, func(i, j int) bool { return interesting(byRank[i]) && !interesting(byRank[j]) })
		keep := map[string]bool{}
		for _, co := range byRank[:maxClusterOperators] {
			keep[co.Name] = true
		}
		kept = nil
		for _, co := range valid {
			if keep[co.Name] {
				kept = append(kept, co)
			} else {
				left = append(left, co.Name)
			}
		}
	}
	if len(left) == 0 {
		return kept, nil
	}
	return kept, []updatev1alpha1.HealthInsight{newHealth(omittedOperatorsUID, time.Time{}, updatev1alpha1.ScopeTypeControlPlane, nil,
		updatev1alpha1.InfoImpactLevel, updatev1alpha1.NoneImpactType,
		fmt.Sprintf("%d cluster operators are not listed", len(left)),
		fmt.Sprintf("The update status lists at most %d cluster operators, those updating or unhealthy first, "+
			"and only names of lower-case letters, digits and '-' up to %d characters; these are left out: %s.",
			maxClusterOperators, maxNameLen, strings.Join(left, ", ")),
		refOmittedHealth)}
}

// hasCondition reports whether conds has a condition of type t with the status and,
// unless empty, the reason.
func hasCondition(conds []metav1.Condition, t string, status metav1.ConditionStatus, reason string) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == status && (reason == "" || c.Reason == reason)
		}
	}
	return false
}

// fitStatus cuts the texts of the status to the API's limits and fills the
// times the API requires.
func fitStatus(s *updatev1alpha1.UpgradeStatusStatus, now time.Time) {
	if cp := s.ControlPlane; cp != nil {
		fitConditions(cp.Conditions, now)
		if cv := cp.ClusterVersion; cv != nil {
			fitConditions(cv.Conditions, now)
			fitVersion(&cv.Versions.Target)
			if cv.Versions.Previous != nil {
				fitVersion(cv.Versions.Previous)
			}
			if cv.StartedAt.IsZero() {
				// Neither history nor Progressing says when; the API requires a time.
				cv.StartedAt = metav1.NewTime(now)
			}
			cv.Resource = fitRef(cv.Resource)
			cv.CompletedAt = noZeroTime(cv.CompletedAt)
			cv.EstimatedCompletedAt = noZeroTime(cv.EstimatedCompletedAt)
		}
		for i := range cp.ClusterOperators {
			co := &cp.ClusterOperators[i]
			fitConditions(co.Conditions, now)
			co.ProgressingReason = truncate.String(co.ProgressingReason, maxReasonLen)
		}
		if cp.Pool != nil {
			fitPool(cp.Pool, now)
		}
	}
	for i := range s.WorkerPools {
		fitConditions(s.WorkerPools[i].Conditions, now)
		fitPool(&s.WorkerPools[i].Pool, now)
	}
	for i := range s.Health {
		h := &s.Health[i]
		h.Remediation.Reference = truncate.String(h.Remediation.Reference, maxReference)
		h.StartedAt = noZeroTime(h.StartedAt)
		h.Remediation.EstimatedFinish = noZeroTime(h.Remediation.EstimatedFinish)
		for j := range h.Scope.Resources {
			h.Scope.Resources[j] = fitRef(h.Scope.Resources[j])
		}
	}
}

func fitPool(p *updatev1alpha1.MachineConfigPoolStatusInsight, now time.Time) {
	fitConditions(p.Conditions, now)
	for i := range p.Summaries {
		p.Summaries[i].Count = min(p.Summaries[i].Count, maxSummaryCount)
	}
}

// fitNode cuts a node insight's texts to the API's limits.
func fitNode(n *updatev1alpha1.NodeStatusInsight, now time.Time) {
	fitConditions(n.Conditions, now)
	n.Message = truncate.String(n.Message, maxNodeMessage)
	n.Version = truncate.String(n.Version, maxVersionLen)
}

func fitVersion(v *updatev1alpha1.Version) {
	if v.Version == "" {
		v.Version = unknownVersion
	}
	v.Version = truncate.String(v.Version, maxVersionLen)
}

func fitRef(r updatev1alpha1.ResourceRef) updatev1alpha1.ResourceRef {
	r.Name = truncate.String(r.Name, maxRefName)
	r.Namespace = truncate.String(r.Namespace, maxRefNamespace)
	if r.Name == "" {
		r.Name = "-"
	}
	return r
}

func fitConditions(conds []metav1.Condition, now time.Time) {
	for i := range conds {
		conds[i].Message = truncate.String(conds[i].Message, maxConditionMessage)
		if conds[i].LastTransitionTime.IsZero() {
			conds[i].LastTransitionTime = metav1.NewTime(now)
		}
	}
}

// noZeroTime drops a time that is not set: it would be written as null,
// which the API refuses for a timestamp.
func noZeroTime(t *metav1.Time) *metav1.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	return t
}
