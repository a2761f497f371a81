package controller

import (
	"fmt"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// recordEvents tells, as Events on the UpgradeStatus, how the assessment moved
// since the published status: an update starting or finishing, and changes of
// the control-plane and pool assessments. Nothing is said on the first
// computation, so a restart does not repeat history.
//
// Each transition has its own reason (and a pool event names its pool as the
// related object) because the events library merges Events with the same
// object, reason and related object into one series that keeps the first
// note: one reason for every change would hide all changes but the first.
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
			now := cp.ClusterVersion.Assessment
			rec.Eventf(us, nil, eventType(string(now)), "ControlPlane"+reasonWord(string(now)), "Assess",
				"Control plane assessment changed from %s to %s (%d%% complete)",
				pcp.ClusterVersion.Assessment, now, cp.ClusterVersion.Completion)
		}
	}
	prevPools := map[string]updatev1alpha1.PoolAssessment{}
	for _, p := range prev.Status.WorkerPools {
		prevPools[p.Name] = p.Pool.Assessment
	}
	for _, p := range cur.WorkerPools {
		if was, ok := prevPools[p.Name]; ok && was != p.Pool.Assessment {
			pool := &mcfgv1.MachineConfigPool{
				TypeMeta:   metav1.TypeMeta{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfigPool"},
				ObjectMeta: metav1.ObjectMeta{Name: p.Name},
			}
			rec.Eventf(us, pool, eventType(string(p.Pool.Assessment)), "WorkerPool"+reasonWord(string(p.Pool.Assessment)), "Assess",
				"Worker pool %s assessment changed from %s to %s (%d%% complete)", p.Name, was, p.Pool.Assessment, p.Pool.Completion)
		}
	}
}

// reasonWord turns an assessment ("Progressing - Slow") into the CamelCase
// part of an Event reason ("ProgressingSlow").
func reasonWord(assessment string) string {
	var b strings.Builder
	for _, w := range strings.Fields(assessment) {
		if w == "-" {
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
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
