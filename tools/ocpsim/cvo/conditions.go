package cvo

import (
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReleaseAccepted is the CVO's condition type for payload loading.
const ReleaseAccepted configv1.ClusterStatusConditionType = "ReleaseAccepted"

// HealthyConditions are the conditions of a settled, healthy operator.
func HealthyConditions(version string, now metav1.Time) []configv1.ClusterOperatorStatusCondition {
	return []configv1.ClusterOperatorStatusCondition{
		{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, Reason: "AsExpected", Message: "All is well", LastTransitionTime: now},
		{Type: configv1.OperatorProgressing, Status: configv1.ConditionFalse, Reason: "AsExpected", Message: "Desired and current number of replicas are equal at version " + version, LastTransitionTime: now},
		{Type: configv1.OperatorDegraded, Status: configv1.ConditionFalse, Reason: "AsExpected", LastTransitionTime: now},
		{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionTrue, Reason: "AsExpected", LastTransitionTime: now},
	}
}

// SettledConditions are the ClusterVersion conditions of a cluster at version.
func SettledConditions(version, image string, now metav1.Time) []configv1.ClusterOperatorStatusCondition {
	return []configv1.ClusterOperatorStatusCondition{
		{Type: "RetrievedUpdates", Status: configv1.ConditionTrue, LastTransitionTime: now},
		{Type: ReleaseAccepted, Status: configv1.ConditionTrue, Reason: "PayloadLoaded", Message: PayloadLoaded(version, image), LastTransitionTime: now},
		{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, Message: "Done applying " + version, LastTransitionTime: now},
		{Type: "Failing", Status: configv1.ConditionFalse, LastTransitionTime: now},
		{Type: configv1.OperatorProgressing, Status: configv1.ConditionFalse, Message: "Cluster version is " + version, LastTransitionTime: now},
	}
}

// PayloadLoaded is the ReleaseAccepted message.
func PayloadLoaded(version, image string) string {
	return fmt.Sprintf("Payload loaded version=%q image=%q architecture=\"amd64\"", version, image)
}

// SetCondition sets a condition, moving lastTransitionTime only on a status change.
// It reports whether anything changed.
func SetCondition(conds *[]configv1.ClusterOperatorStatusCondition, t configv1.ClusterStatusConditionType, s configv1.ConditionStatus, reason, msg string, now metav1.Time) bool {
	for i := range *conds {
		c := &(*conds)[i]
		if c.Type != t {
			continue
		}
		if c.Status == s && c.Reason == reason && c.Message == msg {
			return false
		}
		if c.Status != s {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message = s, reason, msg
		return true
	}
	*conds = append(*conds, configv1.ClusterOperatorStatusCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: now})
	return true
}

// FindCondition returns the condition of type t, or nil.
func FindCondition(conds []configv1.ClusterOperatorStatusCondition, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// OperatorVersion returns the "operator" entry of a ClusterOperator's versions.
func OperatorVersion(co *configv1.ClusterOperator) string {
	for _, v := range co.Status.Versions {
		if v.Name == "operator" {
			return v.Version
		}
	}
	return ""
}
