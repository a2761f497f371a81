package controller

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// The scheduler's apply carries none of the mcp-tracker's fields, and all of
// its own.
func TestStatusApplyConfigurationLeavesTheTrackersFields(t *testing.T) {
	now := metav1.Now()
	uc := &upgradev1alpha1.UpgradeConfig{ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-config", Namespace: "ns"}}
	st := &upgradev1alpha1.UpgradeConfigStatus{
		CurrentStep: "ControlPlaneUpgraded",
		History: []upgradev1alpha1.UpgradeHistory{{
			Version: "4.16.2", Phase: upgradev1alpha1.UpgradePhaseUpgrading, StartTime: &now,
			WorkerStartTime: &now, WorkerCompleteTime: &now,
		}},
		Conditions: []metav1.Condition{
			{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Upgrading", LastTransitionTime: now},
			{Type: upgradev1alpha1.WorkersUpgradedCondition, Status: metav1.ConditionFalse, Reason: "Updating", LastTransitionTime: now},
		},
		Pools: []upgradev1alpha1.PoolUpdate{{Name: "worker", MachineCount: 3}},
	}
	before := st.DeepCopy()
	ac, err := statusApplyConfiguration(uc, st)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	for _, tracker := range []string{`"pools"`, `"workerStartTime"`, `"workerCompleteTime"`, upgradev1alpha1.WorkersUpgradedCondition} {
		if strings.Contains(got, tracker) {
			t.Errorf("the apply carries the tracker's %s: %s", tracker, got)
		}
	}
	for _, own := range []string{`"currentStep":"ControlPlaneUpgraded"`, `"version":"4.16.2"`, `"phase":"Upgrading"`, `"startTime"`, `"type":"Progressing"`, `"name":"managed-upgrade-config"`, `"namespace":"ns"`} {
		if !strings.Contains(got, own) {
			t.Errorf("the apply lacks %s: %s", own, got)
		}
	}
	if len(st.Pools) != len(before.Pools) || len(st.Conditions) != len(before.Conditions) || st.History[0].WorkerStartTime == nil {
		t.Errorf("the planned status was modified: %+v", st)
	}
}
