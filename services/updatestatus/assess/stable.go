package assess

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// keepStable carries times over from the previous result (see package doc):
// unchanged conditions keep their lastTransitionTime, and health insights
// without a known start keep the start they had.
func keepStable(r *Result, prev *Previous) {
	if ps := prev.Status; ps != nil {
		if cp, pcp := r.Status.ControlPlane, ps.ControlPlane; cp != nil && pcp != nil {
			keepConditions(cp.Conditions, pcp.Conditions)
			if cp.ClusterVersion != nil && pcp.ClusterVersion != nil {
				keepConditions(cp.ClusterVersion.Conditions, pcp.ClusterVersion.Conditions)
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
			if p, ok := prevHealth[h.UID]; ok && h.StartedAt == nil && p.StartedAt != nil {
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
