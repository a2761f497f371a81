package controller

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/services/updatestatus/render"
)

// jsonOf is v as generic JSON values.
func jsonOf(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The apply configurations send exactly what the typed objects hold: a
// field the JSON round trip lost would be removed from the object by the
// apply, since the controller owns all of it.
func TestApplyConfigurationsCarryTheWholeObject(t *testing.T) {
	in := benchInsight("worker-7")
	ac, err := insightApplyConfiguration(in)
	if err != nil {
		t.Fatal(err)
	}
	got := jsonOf(t, ac).(map[string]any)
	want := map[string]any{
		"apiVersion": "update.upshift.io/v1alpha1", "kind": "NodeProgressInsight",
		"metadata": map[string]any{"name": "worker-7", "labels": jsonOf(t, in.Labels),
			"ownerReferences": jsonOf(t, in.OwnerReferences)},
		"status": jsonOf(t, in.Status),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("insight apply configuration (-typed +applied):\n%s", d)
	}

	st := withConditions(status(true, updatev1alpha1.ControlPlaneAssessmentProgressing, "worker=Progressing"), &t0)
	st.ControlPlane.ClusterVersion.StartedAt = metav1.NewTime(t0)
	// The times as the assessment fills them (fitStatus): a zero time is
	// JSON null, which the API refuses for these fields, and which an apply
	// configuration leaves out.
	node := nodeInsight("worker-0", "worker", "Draining", true)
	for i := range node.Conditions {
		node.Conditions[i].LastTransitionTime = metav1.NewTime(t0)
	}
	st.ReportedNodes = render.Reported(st, []updatev1alpha1.NodeStatusInsight{node})
	sac, err := statusApplyConfiguration(updatev1alpha1.UpgradeStatusName, &st)
	if err != nil {
		t.Fatal(err)
	}
	got = jsonOf(t, sac).(map[string]any)
	want = map[string]any{
		"apiVersion": "update.upshift.io/v1alpha1", "kind": "UpgradeStatus",
		"metadata": map[string]any{"name": updatev1alpha1.UpgradeStatusName},
		"status":   jsonOf(t, st),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("status apply configuration (-typed +applied):\n%s", d)
	}
}
