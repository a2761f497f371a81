package controller

import (
	"encoding/json"
	"testing"

	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
)

// The Cluster's status apply configuration names the object and carries
// the status fields set, nothing of the spec: a manager owns its own status
// fields only.
func TestClusterStatusApplyConfiguration(t *testing.T) {
	ac := &clusterStatus{
		TypeMetaApplyConfiguration:   *metav1ac.TypeMeta().WithAPIVersion(arov1alpha1.GroupVersion.String()).WithKind("Cluster"),
		ObjectMetaApplyConfiguration: metav1ac.ObjectMeta().WithName(arov1alpha1.SingletonName),
		Status:                       &arov1alpha1.ClusterStatus{Checks: []arov1alpha1.CheckStatus{{Name: arov1alpha1.CheckNSG}}},
	}
	got, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"Cluster","apiVersion":"aro.openshift.io/v1alpha1","metadata":{"name":"cluster"},"status":{"checks":[{"name":"NSG"}]}}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
