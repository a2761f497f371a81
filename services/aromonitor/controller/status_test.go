package controller

import (
	"encoding/json"
	"testing"

	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
)

// The MonitorConfig's status apply configuration names the object and
// carries the status fields set, nothing of the spec: a manager owns its own
// status fields only.
func TestMonitorStatusApplyConfiguration(t *testing.T) {
	ac := &monitorStatus{
		TypeMetaApplyConfiguration:   *metav1ac.TypeMeta().WithAPIVersion(amv1alpha1.GroupVersion.String()).WithKind("MonitorConfig"),
		ObjectMetaApplyConfiguration: metav1ac.ObjectMeta().WithName(amv1alpha1.SingletonName),
		Status:                       &amv1alpha1.MonitorConfigStatus{Checks: []amv1alpha1.CheckStatus{{Name: amv1alpha1.CheckNSG}}},
	}
	got, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"MonitorConfig","apiVersion":"aromonitor.upshift.io/v1alpha1","metadata":{"name":"cluster"},"status":{"checks":[{"name":"NSG"}]}}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
