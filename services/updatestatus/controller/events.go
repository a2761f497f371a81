package controller

import (
	"fmt"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
)

// transitionEvents tell how the assessment moves from the published status
// to the desired one: an update starting or finishing, and changes of the
// control-plane and pool assessments. Nothing is said when nothing was
// published yet, so the first computation (after a restart, or ever) does
// not repeat history. The Events are about regarding, the UpgradeStatus.
//
// Each transition has its own reason (and a pool event names its pool as the
// related object) because the events library merges Events with the same
// object, reason and related object into one series that keeps the first
// note: one reason for every change would hide all changes but the first
// (libs/events numbers the actions of such Events only within one record).
func transitionEvents(regarding runtime.Object, prev, cur *updatev1alpha1.UpgradeStatusStatus) []events.Event {
	var out []events.Event
	if pcp, cp := prev.ControlPlane, cur.ControlPlane; pcp != nil && cp != nil {
		was := meta.IsStatusConditionTrue(pcp.Conditions, updatev1alpha1.ConditionUpdating)
		is := meta.IsStatusConditionTrue(cp.Conditions, updatev1alpha1.ConditionUpdating)
		switch {
		case !was && is:
			out = append(out, events.Normal(regarding, "ControlPlaneUpdateStarted", actionAssess,
				"Control plane started updating"+versions(cp)))
		case was && !is:
			out = append(out, events.Normal(regarding, "ControlPlaneUpdateCompleted", actionAssess,
				"Control plane finished updating"+versions(cp)))
		}
		if pcp.ClusterVersion != nil && cp.ClusterVersion != nil && pcp.ClusterVersion.Assessment != cp.ClusterVersion.Assessment {
			now := cp.ClusterVersion.Assessment
			out = append(out, events.Event{Regarding: regarding, Warning: warning(string(now)),
				Reason: "ControlPlane" + reasonWord(string(now)), Action: actionAssess,
				Note: fmt.Sprintf("Control plane assessment changed from %s to %s (%d%% complete)",
					pcp.ClusterVersion.Assessment, now, cp.ClusterVersion.Completion)})
		}
	}
	prevPools := map[string]updatev1alpha1.PoolAssessment{}
	for _, p := range prev.WorkerPools {
		prevPools[p.Name] = p.Pool.Assessment
	}
	for _, p := range cur.WorkerPools {
		if was, ok := prevPools[p.Name]; ok && was != p.Pool.Assessment {
			out = append(out, events.Event{Regarding: regarding, Related: poolRef(p.Name), Warning: warning(string(p.Pool.Assessment)),
				Reason: "WorkerPool" + reasonWord(string(p.Pool.Assessment)), Action: actionAssess,
				Note: fmt.Sprintf("Worker pool %s assessment changed from %s to %s (%d%% complete)",
					p.Name, was, p.Pool.Assessment, p.Pool.Completion)})
		}
	}
	return out
}

// actionAssess is the action of every transition Event.
const actionAssess = "Assess"

// poolRef is the MachineConfigPool a pool Event names as its related object.
func poolRef(name string) *mcfgv1.MachineConfigPool {
	return &mcfgv1.MachineConfigPool{
		TypeMeta:   metav1.TypeMeta{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfigPool"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
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

// warning: the assessment is one a person should look at.
func warning(assessment string) bool {
	switch assessment {
	case string(updatev1alpha1.ControlPlaneAssessmentStalled), string(updatev1alpha1.ControlPlaneAssessmentDegraded),
		string(updatev1alpha1.ControlPlaneAssessmentSlow):
		return true
	}
	return false
}
