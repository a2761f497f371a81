package mco

import (
	"fmt"
	"sort"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PoolStatus computes the status the MCO reports for a pool from its nodes,
// keeping lastTransitionTime of conditions whose status does not change.
func PoolStatus(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, now metav1.Time) mcfgv1.MachineConfigPoolStatus {
	target := pool.Spec.Configuration.Name
	st := *pool.Status.DeepCopy()
	st.ObservedGeneration = pool.Generation
	st.MachineCount = int32(len(nodes))
	st.UpdatedMachineCount, st.ReadyMachineCount, st.UnavailableMachineCount, st.DegradedMachineCount = 0, 0, 0, 0
	var degraded []string
	sorted := append([]*corev1.Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, n := range sorted {
		if IsUpdated(n, target) {
			st.UpdatedMachineCount++
			if IsReady(n) && !n.Spec.Unschedulable {
				st.ReadyMachineCount++
			}
		}
		if IsUnavailable(n) {
			st.UnavailableMachineCount++
		}
		if IsDegraded(n) {
			st.DegradedMachineCount++
			degraded = append(degraded, fmt.Sprintf("Node %s is reporting: %q", n.Name, n.Annotations[ReasonAnnotation]))
		}
	}
	line := "MachineConfig " + target
	all := st.UpdatedMachineCount == st.MachineCount && st.ReadyMachineCount == st.MachineCount && st.UnavailableMachineCount == 0
	if all {
		st.Configuration = pool.Spec.Configuration
		setCondition(&st, mcfgv1.MachineConfigPoolUpdated, corev1.ConditionTrue, "", "All nodes are updated with "+line, now)
		setCondition(&st, mcfgv1.MachineConfigPoolUpdating, corev1.ConditionFalse, "", "", now)
	} else {
		setCondition(&st, mcfgv1.MachineConfigPoolUpdated, corev1.ConditionFalse, "", "", now)
		if pool.Spec.Paused {
			setCondition(&st, mcfgv1.MachineConfigPoolUpdating, corev1.ConditionFalse, "", "Pool is paused; will not update to "+target, now)
		} else {
			setCondition(&st, mcfgv1.MachineConfigPoolUpdating, corev1.ConditionTrue, "", "All nodes are updating to "+line, now)
		}
	}
	if len(degraded) > 0 {
		setCondition(&st, mcfgv1.MachineConfigPoolNodeDegraded, corev1.ConditionTrue,
			fmt.Sprintf("%d nodes are reporting degraded status on sync", len(degraded)), strings.Join(degraded, ", "), now)
	} else {
		setCondition(&st, mcfgv1.MachineConfigPoolNodeDegraded, corev1.ConditionFalse, "", "", now)
	}
	renderDegraded := conditionStatus(&st, mcfgv1.MachineConfigPoolRenderDegraded) == corev1.ConditionTrue
	if renderDegraded {
		// keep whatever the render controller wrote
	} else {
		setCondition(&st, mcfgv1.MachineConfigPoolRenderDegraded, corev1.ConditionFalse, "", "", now)
	}
	if len(degraded) > 0 || renderDegraded {
		setCondition(&st, mcfgv1.MachineConfigPoolDegraded, corev1.ConditionTrue, "", "", now)
	} else {
		setCondition(&st, mcfgv1.MachineConfigPoolDegraded, corev1.ConditionFalse, "", "", now)
	}
	if st.Conditions == nil {
		st.Conditions = []mcfgv1.MachineConfigPoolCondition{}
	}
	if st.CertExpirys == nil {
		st.CertExpirys = []mcfgv1.CertExpiry{}
	}
	return st
}

// StatusEqual compares two pool statuses ignoring nothing; used to skip writes.
func StatusEqual(a, b mcfgv1.MachineConfigPoolStatus) bool { return equality.Semantic.DeepEqual(a, b) }

func conditionStatus(st *mcfgv1.MachineConfigPoolStatus, t mcfgv1.MachineConfigPoolConditionType) corev1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// PoolCondition returns the pool's condition of type t, or nil.
func PoolCondition(st *mcfgv1.MachineConfigPoolStatus, t mcfgv1.MachineConfigPoolConditionType) *mcfgv1.MachineConfigPoolCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func setCondition(st *mcfgv1.MachineConfigPoolStatus, t mcfgv1.MachineConfigPoolConditionType, s corev1.ConditionStatus, reason, msg string, now metav1.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != s {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message = s, reason, msg
		return
	}
	st.Conditions = append(st.Conditions, mcfgv1.MachineConfigPoolCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: now})
}

// PoolIsUpdatedTo reports that the pool finished rolling out config.
func PoolIsUpdatedTo(pool *mcfgv1.MachineConfigPool, config string) bool {
	c := PoolCondition(&pool.Status, mcfgv1.MachineConfigPoolUpdated)
	return c != nil && c.Status == corev1.ConditionTrue && pool.Status.Configuration.Name == config && pool.Spec.Configuration.Name == config
}
