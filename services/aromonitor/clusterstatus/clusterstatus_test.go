package clusterstatus

import (
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A condition keeps its transition time while its status stays, and takes
// the pass's time (whole seconds, as stored) when the status changes.
func TestConditionTransitionTime(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	now := time.Date(2026, 11, 2, 0, 0, 0, 500, time.UTC)
	existing := []operatorv1.OperatorCondition{{Type: "A", Status: operatorv1.ConditionTrue, LastTransitionTime: then}}
	if c := Condition(existing, operatorv1.OperatorCondition{Type: "A", Status: operatorv1.ConditionTrue, Message: "new"}, now); !c.LastTransitionTime.Equal(&then) {
		t.Fatalf("same status: transition %v, want %v", c.LastTransitionTime, then)
	}
	if c := Condition(existing, operatorv1.OperatorCondition{Type: "A", Status: operatorv1.ConditionFalse}, now); !c.LastTransitionTime.Time.Equal(now.Truncate(time.Second)) {
		t.Fatalf("changed status: transition %v, want %v", c.LastTransitionTime, now.Truncate(time.Second))
	}
	if ConditionByType(existing, "B") != nil || ConditionByType(existing, "A") != &existing[0] {
		t.Fatal("ConditionByType")
	}
}
