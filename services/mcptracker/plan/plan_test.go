package plan

import (
	"encoding/json"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/mcostate"
)

// The apply configuration carries exactly the tracker's fields, as their
// JSON encoding would: zero fields the API leaves out are not sent, so an
// apply neither claims nor clears them.
func TestApplyConfigurationSendsOnlyOwnFields(t *testing.T) {
	at := metav1.NewTime(time.Unix(1000, 0))
	s := ownStatus{
		Pools: []upgradev1alpha1.PoolUpdate{
			{Name: "worker", TargetConfig: "rendered-2", StartTime: &at, MachineCount: 3,
				Nodes: upgradev1alpha1.PoolNodeCounts{Done: 2, Updating: 1}, StuckNodes: 1,
				SlowestNode: &upgradev1alpha1.SlowestNode{Name: "w-1", State: "updating", Since: at, Reason: "waiting"}},
			{Name: "infra", RemovedTime: &at, LastUpdateDurationSeconds: 60},
		},
		Conditions: []metav1.Condition{{Type: upgradev1alpha1.WorkersUpgradedCondition, Status: metav1.ConditionFalse, Reason: "PoolsUpdating", Message: "updating", LastTransitionTime: at}},
		History:    []workerTimes{{Version: "4.16.2", WorkerStartTime: &at}},
	}
	uc := &upgradev1alpha1.UpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "managed-upgrade-config"}}
	got, err := json.Marshal(applyConfiguration(uc, s))
	if err != nil {
		t.Fatal(err)
	}
	status, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"UpgradeConfig","apiVersion":"upgrade.managed.openshift.io/v1alpha1","metadata":{"name":"managed-upgrade-config","namespace":"ns"},"status":` + string(status) + `}`
	if !jsonEqual(t, got, []byte(want)) {
		t.Fatalf("apply configuration\n%s\nwant\n%s", got, want)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// A pool whose first node moves: with no UpgradeConfig the Event goes on
// the pool; with one, a change within the write interval waits for its end
// (the requeue), and after it the write is planned.
func TestPlanEventsAndCoalescing(t *testing.T) {
	now := time.Unix(10000, 0)
	pool := mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}
	pool.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""}}
	pool.Spec.Configuration.Name = "rendered-1"
	node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w-0", Labels: map[string]string{"node-role.kubernetes.io/worker": ""},
		Annotations: map[string]string{mcostate.CurrentConfig: "rendered-1", mcostate.DesiredConfig: "rendered-1", mcostate.State: mcostate.StateDone}}}
	in := Input{Pools: []mcfgv1.MachineConfigPool{pool}, Nodes: []corev1.Node{node}, Now: now, MinWriteInterval: 5 * time.Second}
	first := Plan(in)
	if len(first.Events) != 0 || len(first.Writes) != 0 {
		t.Fatalf("first pass: %d events, %d writes", len(first.Events), len(first.Writes))
	}

	in.Prev = &first.Track.State
	in.Pools[0].Spec.Configuration.Name = "rendered-2"
	in.Nodes[0].Annotations = map[string]string{mcostate.CurrentConfig: "rendered-1", mcostate.DesiredConfig: "rendered-2", mcostate.State: mcostate.StateWorking}
	started := Plan(in)
	if len(started.Events) != 1 || started.Events[0].Regarding != &in.Pools[0] || started.Events[0].Reason != "PoolUpdateStarted" || started.Events[0].Action != EventAction {
		t.Fatalf("events %+v, want PoolUpdateStarted on the pool", started.Events)
	}

	uc := upgradev1alpha1.UpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "uc"}}
	key := types.NamespacedName{Namespace: "ns", Name: "uc"}
	in.UpgradeConfigs = []upgradev1alpha1.UpgradeConfig{uc}
	in.Prev = &started.Track.State
	in.LastWrite = map[types.NamespacedName]time.Time{key: now.Add(-2 * time.Second), {Namespace: "ns", Name: "gone"}: now}
	held := Plan(in)
	if len(held.Writes) != 0 || held.Requeue != 3*time.Second {
		t.Fatalf("within the interval: %d writes, requeue %v; want none, 3s", len(held.Writes), held.Requeue)
	}
	if _, ok := held.LastWrite[key]; !ok || len(held.LastWrite) != 1 {
		t.Fatalf("last writes %v: want only the live UpgradeConfig's", held.LastWrite)
	}

	in.Now = now.Add(3 * time.Second)
	due := Plan(in)
	if len(due.Writes) != 1 || due.Writes[0].Key != key {
		t.Fatalf("writes %+v, want one to %v", due.Writes, key)
	}
	if p := due.Writes[0].Status.Status.Pools; len(p) != 1 || *p[0].Name != "worker" || *p[0].TargetConfig != "rendered-2" {
		t.Fatalf("pools %+v", p)
	}
}

// A gate pool whose run the tracker has not seen yet (after an API server
// restart its caches of runs and of pools fill separately) is still known
// by its label: never a pool of its own, its node counted with worker,
// which is not done.
func TestGatePoolKnownByItsLabel(t *testing.T) {
	now := time.Unix(10000, 0)
	worker := mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}
	worker.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""}}
	worker.Spec.Configuration.Name = "rendered-2"
	gate := mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker-gate", Labels: map[string]string{gating.GatePoolLabel: "worker"}}}
	gate.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{gating.HoldLabel: "worker"}}
	gate.Spec.Configuration.Name = "rendered-1"
	gate.Spec.Paused = true
	node := func(name, config string, labels map[string]string) corev1.Node {
		labels["node-role.kubernetes.io/worker"] = ""
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
			Annotations: map[string]string{mcostate.CurrentConfig: config, mcostate.DesiredConfig: config, mcostate.State: mcostate.StateDone}}}
	}
	uc := upgradev1alpha1.UpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "uc"}}
	in := Input{Pools: []mcfgv1.MachineConfigPool{worker, gate}, Now: now, MinWriteInterval: 5 * time.Second,
		Nodes:          []corev1.Node{node("w-0", "rendered-2", map[string]string{}), node("w-1", "rendered-1", map[string]string{gating.HoldLabel: "worker"})},
		UpgradeConfigs: []upgradev1alpha1.UpgradeConfig{uc}}
	out := Plan(in)
	if len(out.Writes) != 1 {
		t.Fatalf("writes %+v, want one", out.Writes)
	}
	st := out.Writes[0].Status.Status
	for _, p := range st.Pools {
		if *p.Name == "worker-gate" {
			t.Fatalf("pools %+v: the gate pool is reported as a pool", st.Pools)
		}
	}
	for _, c := range st.Conditions {
		if *c.Type == "WorkersUpgraded" && *c.Status == metav1.ConditionTrue {
			t.Fatalf("WorkersUpgraded True while w-1 waits in the gate pool on rendered-1")
		}
	}
}
