package controller

import (
	"fmt"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

// The cache keeps only what the planner reads: planning from trimmed objects
// must decide exactly what planning from the full ones decides, for every
// health check outcome.
func TestTrimmedObjectsPlanTheSame(t *testing.T) {
	now := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	hb := metav1.NewTime(now.Add(-time.Second))
	node := func(name string, ready corev1.ConditionStatus, cordoned bool, ann map[string]string) corev1.Node {
		return corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""},
				Annotations: ann, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
			Spec: corev1.NodeSpec{Unschedulable: cordoned, ProviderID: "aws:///" + name},
			Status: corev1.NodeStatus{
				Conditions: []corev1.NodeCondition{
					{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: hb},
					{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: hb, Reason: "KubeletReady"},
				},
				Images:   []corev1.ContainerImage{{Names: []string{"quay.io/x@sha256:1"}, SizeBytes: 1 << 30}},
				Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			},
		}
	}
	mco := func(current, desired, state string) map[string]string {
		return map[string]string{
			"machineconfiguration.openshift.io/currentConfig":        current,
			"machineconfiguration.openshift.io/desiredConfig":        desired,
			"machineconfiguration.openshift.io/state":                state,
			"volumes.kubernetes.io/controller-managed-attach-detach": "true",
		}
	}
	co := func(name string, degraded, available configv1.ConditionStatus) configv1.ClusterOperator {
		return configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: configv1.ClusterOperatorStatus{
				Conditions: []configv1.ClusterOperatorStatusCondition{
					{Type: configv1.OperatorDegraded, Status: degraded}, {Type: configv1.OperatorAvailable, Status: available},
				},
				Versions:       []configv1.OperandVersion{{Name: "operator", Version: "4.16.1"}},
				RelatedObjects: []configv1.ObjectReference{{Resource: "namespaces", Name: "openshift-" + name}},
			}}
	}
	pdb := func(ns, name string, allowed, expected int32) policyv1.PodDisruptionBudget {
		return policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrIntOrString(intstr.FromInt32(1))},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, ExpectedPods: expected, CurrentHealthy: expected, DesiredHealthy: 1}}
	}
	full := plan.Snapshot{
		ClusterVersion: &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"},
			Status: configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "4.16.1"},
				History:          []configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "4.16.1"}},
				AvailableUpdates: []configv1.Release{{Version: "4.16.2"}}}},
		Nodes: []corev1.Node{
			node("ok", corev1.ConditionTrue, false, mco("r1", "r1", "Done")),
			node("not-ready", corev1.ConditionFalse, false, mco("r1", "r1", "Done")),
			node("cordoned", corev1.ConditionTrue, true, mco("r1", "r1", "Done")),
			node("updating", corev1.ConditionFalse, true, mco("r1", "r2", "Working")),
		},
		ClusterOperators: []configv1.ClusterOperator{
			co("dns", configv1.ConditionFalse, configv1.ConditionTrue),
			co("ingress", configv1.ConditionTrue, configv1.ConditionTrue),
			co("console", configv1.ConditionFalse, configv1.ConditionFalse),
		},
		PDBs: []policyv1.PodDisruptionBudget{pdb("app", "blocks", 0, 2), pdb("app", "fine", 1, 2), pdb("app", "empty", 0, 0)},
	}
	trimmed := full
	trimmed.Nodes, trimmed.ClusterOperators, trimmed.PDBs = nil, nil, nil
	for i := range full.Nodes {
		trimmed.Nodes = append(trimmed.Nodes, *nodeFields.Trim(full.Nodes[i].DeepCopy()))
	}
	for i := range full.ClusterOperators {
		o, _ := trimClusterOperator(full.ClusterOperators[i].DeepCopy())
		trimmed.ClusterOperators = append(trimmed.ClusterOperators, *o.(*configv1.ClusterOperator))
	}
	for i := range full.PDBs {
		o, _ := trimPDB(full.PDBs[i].DeepCopy())
		trimmed.PDBs = append(trimmed.PDBs, *o.(*policyv1.PodDisruptionBudget))
	}
	if len(trimmed.Nodes[0].Status.Images) != 0 || trimmed.Nodes[0].ManagedFields != nil ||
		len(trimmed.Nodes[0].Annotations) != 3 || len(trimmed.Nodes[0].Status.Conditions) != 1 {
		t.Fatalf("node not trimmed: %+v", trimmed.Nodes[0])
	}

	cfg, err := config.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	uc := &upgradev1alpha1.UpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-config", Namespace: "ns", Generation: 1},
		Spec: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.16.2", Channel: "stable-4.16"},
			UpgradeAt: now.Add(-time.Minute).Format(time.RFC3339), Type: upgradev1alpha1.OSD},
	}
	// Three plans in a row, each from the status the previous one wrote: they
	// reach the pre-upgrade health check.
	var outFull, outTrimmed plan.Output
	ucFull, ucTrimmed := uc.DeepCopy(), uc.DeepCopy()
	for i := 0; i < 4; i++ {
		outFull = plan.Plan(plan.Input{UpgradeConfig: ucFull, Config: cfg, Snapshot: full, Now: now})
		outTrimmed = plan.Plan(plan.Input{UpgradeConfig: ucTrimmed, Config: cfg, Snapshot: trimmed, Now: now})
		ucFull.Status, ucTrimmed.Status = outFull.Status, outTrimmed.Status
	}
	if !equality.Semantic.DeepEqual(outFull, outTrimmed) {
		t.Errorf("plans differ:\nfull:    %+v\ntrimmed: %+v", outFull, outTrimmed)
	}
	failing := map[string]bool{}
	for _, c := range outFull.Status.Preflight {
		if !c.Passed {
			failing[c.Check] = true
		}
	}
	for _, want := range []string{plan.CheckNodes, plan.CheckClusterOperators, plan.CheckPodDisruptionBudgets} {
		if !failing[want] {
			t.Errorf("check %s passed; the fixture should fail it (preflight %+v)", want, outFull.Status.Preflight)
		}
	}
}

func ptrIntOrString(v intstr.IntOrString) *intstr.IntOrString { return &v }

// The chart grants UpgradeConfigs and the ConfigMap in one namespace only: a
// cache entry that watched them cluster-wide would be refused and the
// scheduler would never sync. Entries are keyed by pointer, so two for one
// type are possible and must not happen.
func TestManagerOptionsWatchOneNamespace(t *testing.T) {
	opts := ManagerOptions("upshift").Cache.ByObject
	seen := map[string]int{}
	for obj, by := range opts {
		typ := fmt.Sprintf("%T", obj)
		seen[typ]++
		switch obj.(type) {
		case *upgradev1alpha1.UpgradeConfig, *corev1.ConfigMap:
			if len(by.Namespaces) != 1 || by.Namespaces["upshift"].LabelSelector != nil {
				t.Errorf("%s cached in %v, want namespace upshift only", typ, by.Namespaces)
			}
		}
		if _, ok := obj.(*corev1.ConfigMap); ok {
			if sel := by.Namespaces["upshift"].FieldSelector; sel == nil || sel.String() != "metadata.name="+config.ConfigMapName {
				t.Errorf("ConfigMaps selected by %v, want by name", sel)
			}
		}
	}
	for typ, n := range seen {
		if n != 1 {
			t.Errorf("%d cache entries for %s, want 1", n, typ)
		}
	}
	for _, typ := range []string{"*v1alpha1.UpgradeConfig", "*v1.ConfigMap", "*v1.ClusterVersion", "*v1beta1.MachineSet"} {
		if seen[typ] != 1 {
			t.Errorf("no cache entry for %s (entries: %v)", typ, seen)
		}
	}
}
