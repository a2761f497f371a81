package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/services/cpms/plan"
	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
)

// cpmsNamespace is where the cpms-controller runs: the namespace of the
// ControlPlaneMachineSet, as OpenShift's own operator for it runs there.
const cpmsNamespace = "openshift-machine-api"

// rollControlPlane is the second act: it changes the instance type in the
// ControlPlaneMachineSet's template (strategy OnDelete: the cpms-controller
// chooses when each master goes, OpenShift's operator replaces it) and
// prints one line per step of every
// control-plane machine (created, launching, running, deleting, held by the
// etcd operator's hook, gone) until the three masters are replaced and the
// set reports it.
func rollControlPlane(ctx context.Context, c client.Client, instanceType string, timeout time.Duration) (time.Duration, error) {
	key := client.ObjectKey{Namespace: cpmsNamespace, Name: "cluster"}
	set := &machinev1.ControlPlaneMachineSet{}
	if err := c.Get(ctx, key, set); err != nil {
		return 0, err
	}
	tmpl := set.Spec.Template.OpenShiftMachineV1Beta1Machine
	old := machineapi.ReadProviderSpec(&machinev1beta1.Machine{Spec: tmpl.Spec})
	say("Act 2: changing the control-plane instance type in ControlPlaneMachineSet %s from %s to %s, strategy OnDelete. "+
		"OpenShift's control-plane-machine-set operator runs (%s), so the cpms-controller orchestrates it: after its pre-flight checks it deletes one outdated master at a time, and the operator creates the replacement",
		key.Name, old.InstanceType, instanceType, conditionText(set.Status.Conditions, plan.ConditionMode))
	patch := client.MergeFromWithOptions(set.DeepCopy(), client.MergeFromWithOptimisticLock{})
	tmpl.Spec.ProviderSpec.Value = machineapi.NewProviderSpec(old.Placement.Region, "", instanceType)
	set.Spec.Strategy.Type = machinev1.OnDelete
	if err := c.Patch(ctx, set, patch); err != nil {
		return 0, err
	}
	gen := set.Generation
	start := time.Now()
	last := map[string]string{}
	deadline := time.After(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var list machinev1beta1.MachineList
		if err := c.List(ctx, &list, client.InNamespace(cpmsNamespace), client.MatchingLabels{machineapi.RoleLabel: "master"}); err != nil {
			return 0, err
		}
		now := map[string]string{}
		replaced := 0
		for i := range list.Items {
			m := &list.Items[i]
			ps := machineapi.ReadProviderSpec(m)
			now[m.Name] = fmt.Sprintf("%-12s %-14s %s", ps.InstanceType, ps.Placement.AvailabilityZone, machineStep(m))
			if ps.InstanceType == instanceType && m.DeletionTimestamp == nil && ptr.Deref(m.Status.Phase, "") == machinev1beta1.PhaseRunning {
				replaced++
			}
		}
		var names []string
		for n := range now {
			names = append(names, n)
		}
		for n := range last {
			if _, ok := now[n]; !ok {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			switch s, ok := now[n]; {
			case !ok:
				fmt.Printf("%6.1fs  %-22s gone\n", time.Since(start).Seconds(), n)
			case s != last[n]:
				fmt.Printf("%6.1fs  %-22s %s\n", time.Since(start).Seconds(), n, s)
			}
		}
		last = now
		if err := c.Get(ctx, key, set); err != nil {
			return 0, err
		}
		// Beside the operator the counters and Progressing are its own;
		// the cpms-controller's word is UpshiftProgressing.
		done := meta.FindStatusCondition(set.Status.Conditions, plan.ConditionUpshiftProgressing)
		if replaced == 3 && len(list.Items) == 3 && done != nil && done.ObservedGeneration >= gen &&
			done.Status == metav1.ConditionFalse && done.Reason == plan.ReasonAllReplicasUpdated {
			took := time.Since(start)
			fmt.Printf("ControlPlaneMachineSet cluster: %s; %s\n",
				conditionText(set.Status.Conditions, plan.ConditionMode), conditionText(set.Status.Conditions, plan.ConditionUpshiftProgressing))
			return took, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-deadline:
			return 0, fmt.Errorf("the control-plane rollout did not complete within %s", timeout)
		case <-tick.C:
		}
	}
}

// machineStep is what a control-plane machine is doing, as one phrase.
func machineStep(m *machinev1beta1.Machine) string {
	phase := ptr.Deref(m.Status.Phase, "")
	if phase == "" {
		phase = "created"
	}
	parts := []string{strings.ToLower(string(phase))}
	hook := false
	for _, h := range m.Spec.LifecycleHooks.PreDrain {
		hook = hook || h.Name == "EtcdQuorumOperator"
	}
	if m.DeletionTimestamp != nil {
		if hook {
			parts = append(parts, "deletion requested, held by the etcd operator's hook until the new member votes")
		} else {
			parts = append(parts, "deletion requested, etcd hook released: draining and terminating")
		}
	} else if m.Status.NodeRef != nil {
		parts = append(parts, "node "+m.Status.NodeRef.Name)
	}
	return strings.Join(parts, ", ")
}

// conditionText is one condition as type=status/reason, "<type> not set" without it.
func conditionText(conds []metav1.Condition, t string) string {
	c := meta.FindStatusCondition(conds, t)
	if c == nil {
		return t + " not set"
	}
	return fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason)
}
