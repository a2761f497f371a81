package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// recordEvents tells, as Events on the UpgradeStatus, how the assessment moved
// since the published status: an update starting or finishing, and changes of
// the control-plane and pool assessments. Nothing is said on the first
// computation, so a restart does not repeat history.
func recordEvents(rec events.EventRecorder, us *updatev1alpha1.UpgradeStatus, prev *updatev1alpha1.UpgradeStatus, cur *updatev1alpha1.UpgradeStatusStatus) {
	if rec == nil || prev == nil {
		return
	}
	if pcp, cp := prev.Status.ControlPlane, cur.ControlPlane; pcp != nil && cp != nil {
		was := meta.IsStatusConditionTrue(pcp.Conditions, updatev1alpha1.ConditionUpdating)
		is := meta.IsStatusConditionTrue(cp.Conditions, updatev1alpha1.ConditionUpdating)
		switch {
		case !was && is:
			rec.Eventf(us, nil, corev1.EventTypeNormal, "ControlPlaneUpdateStarted", "Assess",
				"Control plane started updating%s", versions(cp))
		case was && !is:
			rec.Eventf(us, nil, corev1.EventTypeNormal, "ControlPlaneUpdateCompleted", "Assess",
				"Control plane finished updating%s", versions(cp))
		}
		if pcp.ClusterVersion != nil && cp.ClusterVersion != nil && pcp.ClusterVersion.Assessment != cp.ClusterVersion.Assessment {
			rec.Eventf(us, nil, eventType(string(cp.ClusterVersion.Assessment)), "ControlPlaneAssessmentChanged", "Assess",
				"Control plane assessment changed from %s to %s (%d%% complete)",
				pcp.ClusterVersion.Assessment, cp.ClusterVersion.Assessment, cp.ClusterVersion.Completion)
		}
	}
	prevPools := map[string]updatev1alpha1.PoolAssessment{}
	for _, p := range prev.Status.WorkerPools {
		prevPools[p.Name] = p.Pool.Assessment
	}
	for _, p := range cur.WorkerPools {
		if was, ok := prevPools[p.Name]; ok && was != p.Pool.Assessment {
			rec.Eventf(us, nil, eventType(string(p.Pool.Assessment)), "WorkerPoolAssessmentChanged", "Assess",
				"Worker pool %s assessment changed from %s to %s (%d%% complete)", p.Name, was, p.Pool.Assessment, p.Pool.Completion)
		}
	}
}

func versions(cp *updatev1alpha1.ControlPlane) string {
	if cp.ClusterVersion == nil {
		return ""
	}
	v := cp.ClusterVersion.Versions
	if v.Previous == nil {
		return fmt.Sprintf(" to %s", v.Target.Version)
	}
	return fmt.Sprintf(" from %s to %s", v.Previous.Version, v.Target.Version)
}

// eventType is Warning for assessments a person should look at.
func eventType(assessment string) string {
	switch assessment {
	case string(updatev1alpha1.ControlPlaneAssessmentStalled), string(updatev1alpha1.ControlPlaneAssessmentDegraded),
		string(updatev1alpha1.ControlPlaneAssessmentSlow):
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}
