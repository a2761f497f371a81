package assess

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// keepStable carries times over from the previous result (see package doc):
// unchanged conditions keep their lastTransitionTime, and health insights
// without a known start keep the start they had.
func keepStable(r *Result, prev *Previous, now time.Time) {
	if ps := prev.Status; ps != nil {
		if cp, pcp := r.Status.ControlPlane, ps.ControlPlane; cp != nil && pcp != nil {
			keepConditions(cp.Conditions, pcp.Conditions)
			if cp.ClusterVersion != nil && pcp.ClusterVersion != nil {
				keepConditions(cp.ClusterVersion.Conditions, pcp.ClusterVersion.Conditions)
				keepEstimate(cp.ClusterVersion, pcp.ClusterVersion)
			}
			prevCOs := map[string]updatev1alpha1.ClusterOperatorStatusInsight{}
			for _, co := range pcp.ClusterOperators {
				prevCOs[co.Name] = co
			}
			for i := range cp.ClusterOperators {
				if p, ok := prevCOs[cp.ClusterOperators[i].Name]; ok {
					keepConditions(cp.ClusterOperators[i].Conditions, p.Conditions)
				}
			}
			if cp.Pool != nil && pcp.Pool != nil {
				keepConditions(cp.Pool.Conditions, pcp.Pool.Conditions)
			}
		}
		prevPools := map[string]updatev1alpha1.Pool{}
		for _, p := range ps.WorkerPools {
			prevPools[p.Name] = p
		}
		for i := range r.Status.WorkerPools {
			wp := &r.Status.WorkerPools[i]
			if p, ok := prevPools[wp.Name]; ok {
				keepConditions(wp.Conditions, p.Conditions)
				keepConditions(wp.Pool.Conditions, p.Pool.Conditions)
			}
		}
		prevHealth := map[string]updatev1alpha1.HealthInsight{}
		for _, h := range ps.Health {
			prevHealth[h.UID] = h
		}
		for i := range r.Status.Health {
			h := &r.Status.Health[i]
			// No start known (nil), or only "seen now" (oc's start of the
			// missing Failing condition): the first sighting stands.
			unknown := h.StartedAt == nil || h.StartedAt.Time.Equal(now)
			if p, ok := prevHealth[h.UID]; ok && unknown && p.StartedAt != nil {
				t := *p.StartedAt
				h.StartedAt = &t
			}
		}
	}
	for i := range r.Nodes {
		if p, ok := prev.Nodes[r.Nodes[i].Name]; ok {
			keepConditions(r.Nodes[i].Conditions, p.Conditions)
		}
	}
}

// estimateJitter is how far a new completion estimate may move from the
// published one before it replaces it. The estimate is now+remaining and
// drifts by a second or so between computations; republishing it each time
// would write the UpgradeStatus on every recomputation for no reader's gain.
const estimateJitter = time.Minute

// keepEstimate keeps the previous estimated completion time while the new one
// is within estimateJitter of it.
func keepEstimate(cur, prev *updatev1alpha1.ClusterVersionStatusInsight) {
	c, p := cur.EstimatedCompletedAt, prev.EstimatedCompletedAt
	if c == nil || p == nil {
		return
	}
	if d := c.Sub(p.Time); d > -estimateJitter && d < estimateJitter {
		t := *p
		cur.EstimatedCompletedAt = &t
	}
}

// keepConditions gives every condition in cur whose type and status are the
// same in prev the previous lastTransitionTime.
func keepConditions(cur, prev []metav1.Condition) {
	for i := range cur {
		for _, p := range prev {
			if p.Type == cur[i].Type && p.Status == cur[i].Status {
				cur[i].LastTransitionTime = p.LastTransitionTime
			}
		}
	}
}
