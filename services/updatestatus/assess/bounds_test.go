package assess

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

func healthByUID(r Result, uid string) *updatev1alpha1.HealthInsight {
	for i := range r.Status.Health {
		if r.Status.Health[i].UID == uid {
			return &r.Status.Health[i]
		}
	}
	return nil
}

func TestWorkerPoolsAreBoundedMostRelevantFirst(t *testing.T) {
	s := baseSnapshot()
	// 40 custom pools; pool-07 has a node that is updating (Progressing),
	// the others have no nodes (Completed).
	for i := range 40 {
		name := fmt.Sprintf("pool-%02d", i)
		s.MachineConfigPools = append(s.MachineConfigPools, pool(name, name, "w-new", false))
	}
	s.Nodes = append(s.Nodes, node("gpu-0", "pool-37", "w-old", "w-new", "Working"))
	s.MachineConfigPools[2+37].Spec.Configuration.Name = "w-new"
	r := mustAssess(t, s)
	if got := len(r.Status.WorkerPools); got != maxWorkerPools {
		t.Fatalf("%d worker pools, want %d", got, maxWorkerPools)
	}
	var names []string
	for _, p := range r.Status.WorkerPools {
		names = append(names, p.Name)
	}
	if names[0] != "worker" || !contains(strings.Join(names, ","), "pool-37") {
		t.Errorf("kept %v: want worker (Pending) and pool-37 (Progressing) among them", names)
	}
	for i := 1; i < len(names); i++ {
		if names[i] != "pool-37" && names[i-1] != "worker" && names[i] < names[i-1] {
			t.Errorf("kept pools out of order: %v", names)
		}
	}
	h := healthByUID(r, omittedPoolsUID)
	if h == nil {
		t.Fatalf("no insight says which pools are left out")
	}
	// 42 pools - master - 32 kept = 9 left out, all Completed (empty).
	if h.Impact.Summary != "9 worker pools are not listed" || h.Impact.Level != updatev1alpha1.InfoImpactLevel {
		t.Errorf("omitted insight = %q at %s", h.Impact.Summary, h.Impact.Level)
	}
	if !contains(h.Impact.Description, "pool-39 (Completed)") {
		t.Errorf("description does not name the pools left out: %q", h.Impact.Description)
	}
	// The nodes of every pool keep their insights.
	if len(r.Nodes) != len(s.Nodes) {
		t.Errorf("%d node insights, want %d", len(r.Nodes), len(s.Nodes))
	}
}

func TestNamesTheAPICannotHoldAreLeftOutAndSaidSo(t *testing.T) {
	s := baseSnapshot()
	s.MachineConfigPools = append(s.MachineConfigPools, pool("infra.gpu", "infra", "w-new", false))
	s.Nodes = append(s.Nodes, node("infra-0", "infra", "w-old", "w-old", "Done"))
	s.ClusterOperators = append(s.ClusterOperators, co("operator.with.dots", "4.18.1"))
	r := mustAssess(t, s)
	for _, p := range r.Status.WorkerPools {
		if p.Name == "infra.gpu" {
			t.Errorf("pool infra.gpu is in the status; the API refuses its name")
		}
	}
	for _, c := range r.Status.ControlPlane.ClusterOperators {
		if c.Name == "operator.with.dots" {
			t.Errorf("operator.with.dots is in the status; the API refuses its name")
		}
	}
	if h := healthByUID(r, omittedPoolsUID); h == nil || !contains(h.Impact.Description, "infra.gpu") ||
		h.Impact.Level != updatev1alpha1.WarningImpactLevel {
		t.Errorf("omitted pools insight = %+v, want a warning naming infra.gpu", h)
	}
	if h := healthByUID(r, omittedOperatorsUID); h == nil || !contains(h.Impact.Description, "operator.with.dots") {
		t.Errorf("omitted operators insight = %+v, want one naming operator.with.dots", h)
	}
	found := false
	for _, n := range r.Nodes {
		if n.Name == "infra-0" {
			found = n.PoolResource.Name == "infra.gpu"
		}
	}
	if !found {
		t.Errorf("infra-0 lost its node insight or its pool")
	}
}

func TestTextsAreCutToTheAPILimits(t *testing.T) {
	s := baseSnapshot()
	long := strings.Repeat("é", 40000)
	s.Nodes[1] = node("worker-0", "worker", "w-old", "w-new", "Degraded", annotate(annoReason, long))
	s.ClusterOperators[1] = co("kube-apiserver", "4.18.0",
		withCond("Progressing", configv1.ConditionTrue, strings.Repeat("R", 2000), long, 3*0))
	s.ClusterVersion.Status.History[0].Version = strings.Repeat("4", 100)
	s.MachineConfigs = append(s.MachineConfigs, mcfgv1.MachineConfig{})
	r := mustAssess(t, s)
	for _, n := range r.Nodes {
		if l := utf8.RuneCountInString(n.Message); l > maxNodeMessage {
			t.Errorf("node %s message has %d characters", n.Name, l)
		}
		for _, c := range n.Conditions {
			if l := utf8.RuneCountInString(c.Message); l > maxConditionMessage {
				t.Errorf("node %s condition %s message has %d characters", n.Name, c.Type, l)
			}
		}
	}
	cp := r.Status.ControlPlane
	for _, c := range cp.ClusterOperators {
		if utf8.RuneCountInString(c.ProgressingReason) > maxReasonLen {
			t.Errorf("progressingReason has %d characters", utf8.RuneCountInString(c.ProgressingReason))
		}
		for _, cond := range c.Conditions {
			if l := utf8.RuneCountInString(cond.Message); l > maxConditionMessage {
				t.Errorf("operator %s condition %s message has %d characters", c.Name, cond.Type, l)
			}
		}
	}
	if l := utf8.RuneCountInString(cp.ClusterVersion.Versions.Target.Version); l > maxVersionLen {
		t.Errorf("target version has %d characters", l)
	}
}
