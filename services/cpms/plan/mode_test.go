package plan

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestChooseMode(t *testing.T) {
	for _, tc := range []struct {
		prev              Mode
		running, inFlight bool
		want              Mode
		hold              string
	}{
		{"", true, false, ModeOrchestrate, ""},
		{"", true, true, ModeOrchestrate, ""},
		{"", false, true, ModeReplace, ""},
		{ModeReplace, false, true, ModeReplace, ""},
		{ModeOrchestrate, true, true, ModeOrchestrate, ""},
		// The operator came up: at once between replacements, never in the
		// middle of one.
		{ModeReplace, true, false, ModeOrchestrate, ""},
		{ModeReplace, true, true, ModeReplace, ReasonCPMSOperatorStarted},
		// The operator went away.
		{ModeOrchestrate, false, false, ModeReplace, ""},
		{ModeOrchestrate, false, true, ModeOrchestrate, ReasonCPMSOperatorStopped},
	} {
		got, hold := chooseMode(tc.prev, tc.running, tc.inFlight)
		if got != tc.want || hold != tc.hold {
			t.Errorf("chooseMode(%q, running %v, inFlight %v) = %s, %q; want %s, %q", tc.prev, tc.running, tc.inFlight, got, hold, tc.want, tc.hold)
		}
	}
}

// cpmso plays OpenShift's control-plane-machine-set operator under OnDelete:
// an index whose machines are all being deleted gets one replacement, the
// template with the deleted machine's zone.
func (w *world) cpmso() {
	if !w.cpmsOperator || w.cpms.Spec.Strategy.Type != machinev1.OnDelete {
		return
	}
	byIndex := map[string][]*machinev1beta1.Machine{}
	for _, name := range slices.Sorted(maps.Keys(w.machines)) {
		i := name[strings.LastIndex(name, "-")+1:]
		byIndex[i] = append(byIndex[i], w.machines[name])
	}
	for _, i := range slices.Sorted(maps.Keys(byIndex)) {
		ms := byIndex[i]
		live := slices.ContainsFunc(ms, func(m *machinev1beta1.Machine) bool { return m.DeletionTimestamp == nil })
		if live {
			continue
		}
		var old, tmpl map[string]any
		if err := json.Unmarshal(ms[0].Spec.ProviderSpec.Value.Raw, &old); err != nil {
			w.t.Fatal(err)
		}
		if err := json.Unmarshal(w.cpms.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value.Raw, &tmpl); err != nil {
			w.t.Fatal(err)
		}
		tmpl["placement"], tmpl["subnet"] = old["placement"], old["subnet"]
		raw, _ := json.Marshal(tmpl)
		w.uids++
		name := fmt.Sprintf("c1-master-op%d-%s", w.uids, i)
		w.machines[name] = &machinev1beta1.Machine{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: w.uid(), Labels: masterLabels, CreationTimestamp: metav1.NewTime(w.now),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "machine.openshift.io/v1", Kind: "ControlPlaneMachineSet", Name: "cluster", UID: "cpms-uid", Controller: ptr(true)}}},
			Spec: machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: raw}}},
		}
		w.trace = append(w.trace, w.now.Format("15:04")+" cpms operator: create "+name)
	}
}

// orchestrate runs planner, CPMS operator, machine API and etcd operator
// until nothing moves, checking the rollout's shape after every step.
func (w *world) orchestrate(maxSteps int) {
	w.t.Helper()
	for i := 0; i < maxSteps; i++ {
		before := w.fingerprint()
		out := w.plan()
		w.apply(out.Action)
		w.checkShape()
		w.cpmso()
		w.checkShape()
		w.mao()
		w.ceo()
		w.now = w.now.Add(time.Minute)
		if out.Action == nil && w.fingerprint() == before {
			return
		}
	}
	w.t.Fatalf("did not settle:\n%s", w.tail())
}

func withCPMSOperator(w *world) { w.cpmsOperator = true }

func TestOrchestrateDeletesOneOutdatedIndexAtATime(t *testing.T) {
	w := newWorld(t, onDelete, withCPMSOperator)
	w.orchestrate(5)
	w.expectCond(ConditionMode, metav1.ConditionTrue, string(ModeOrchestrate))
	if c := w.cond(ConditionProgressing); c != nil {
		t.Fatalf("Progressing is the operator's to write while it runs, got %+v", c)
	}
	w.setInstanceType("m6i.2xlarge")
	w.orchestrate(100)

	var deleted []string
	for _, a := range w.actions {
		if a.Kind != DeleteMachine {
			t.Fatalf("in Orchestrate mode only deletions, got %s\n%s", describe(a), w.tail())
		}
		deleted = append(deleted, a.Target.Name)
	}
	if want := []string{"c1-master-0", "c1-master-1", "c1-master-2"}; !slices.Equal(deleted, want) {
		t.Fatalf("deleted %v, want %v in index order\n%s", deleted, want, w.tail())
	}
	w.allNew(t)
	w.expectCond(ConditionUpshiftProgressing, metav1.ConditionFalse, ReasonAllReplicasUpdated)
	if !w.hasEvent("Deleted", "for the control-plane-machine-set operator to replace") {
		t.Fatalf("no Deleted Event naming the operator: %v", w.events)
	}
}

func TestOrchestrateHoldsForClusterUpdate(t *testing.T) {
	w := newWorld(t, onDelete, withCPMSOperator)
	w.cv = &configv1.ClusterVersion{Status: configv1.ClusterVersionStatus{Conditions: []configv1.ClusterOperatorStatusCondition{
		{Type: configv1.OperatorProgressing, Status: configv1.ConditionTrue, Message: "Working towards 4.16.2"}}}}
	w.setInstanceType("m6i.2xlarge")
	w.orchestrate(10)
	if len(w.actions) != 0 {
		t.Fatalf("acted during a cluster update: %s", describe(w.actions[0]))
	}
	w.expectCond(ConditionUpshiftProgressing, metav1.ConditionTrue, ReasonClusterUpdating)
	w.cv = nil
	w.orchestrate(100)
	w.allNew(t)
}

func TestOrchestrateNeedsTheEtcdHook(t *testing.T) {
	w := newWorld(t, onDelete, withCPMSOperator)
	w.ceoStalled = true
	w.machines["c1-master-0"].Spec.LifecycleHooks.PreDrain = nil
	w.setInstanceType("m6i.2xlarge")
	out := w.plan()
	if out.Action != nil {
		t.Fatalf("deleted a machine without the etcd hook: %s", describe(out.Action))
	}
	w.expectCond(ConditionUpshiftProgressing, metav1.ConditionTrue, ReasonEtcdHookMissing)
}

func TestOrchestrateLeavesRollingUpdateToTheOperator(t *testing.T) {
	w := newWorld(t, withCPMSOperator)
	w.setInstanceType("m6i.2xlarge")
	out := w.plan()
	if out.Action != nil {
		t.Fatalf("acted beside the operator's RollingUpdate: %s", describe(out.Action))
	}
	w.expectCond(ConditionUpshiftProgressing, metav1.ConditionFalse, ReasonCPMSOperatorRollingUpdate)
}

func TestReplaceStopsWhenTheOperatorStarts(t *testing.T) {
	w := newWorld(t)
	w.plan()
	w.expectCond(ConditionMode, metav1.ConditionTrue, string(ModeReplace))
	w.setInstanceType("m6i.2xlarge")
	out := w.plan()
	if out.Action == nil || out.Action.Kind != CreateMachine {
		t.Fatalf("Replace mode starts the rollout itself, got %s", describe(out.Action))
	}
	w.apply(out.Action)
	w.mao()

	// The operator comes up with index 0 in flight: nothing more is done by
	// this controller, whatever the next passes see.
	w.cpmsOperator = true
	for i := 0; i < 5; i++ {
		w.mao()
		w.ceo()
		w.now = w.now.Add(time.Minute)
		if out := w.plan(); out.Action != nil {
			t.Fatalf("acted after the operator started: %s", describe(out.Action))
		}
	}
	w.expectCond(ConditionMode, metav1.ConditionTrue, string(ModeReplace))
	w.expectCond(ConditionUpshiftProgressing, metav1.ConditionFalse, ReasonCPMSOperatorStarted)
	if !w.hasEvent(ReasonCPMSOperatorStarted, "stopped acting") {
		t.Fatalf("no Event names the operator: %v", w.events)
	}

	// Someone (the operator, a person) finishes the replacement: the old
	// machine goes. Then Orchestrate mode takes over.
	w.userDelete("c1-master-0")
	for i := 0; i < 5; i++ {
		w.ceo()
		w.mao()
	}
	w.plan()
	w.expectCond(ConditionMode, metav1.ConditionTrue, string(ModeOrchestrate))
	if !w.hasEvent(string(ModeOrchestrate), "operator runs") {
		t.Fatalf("no Event for the mode change: %v", w.events)
	}
}

func TestOrchestrateToReplaceWhenTheOperatorStops(t *testing.T) {
	w := newWorld(t, onDelete, withCPMSOperator)
	w.setInstanceType("m6i.2xlarge")
	out := w.plan()
	if out.Action == nil || out.Action.Kind != DeleteMachine {
		t.Fatalf("want the first deletion, got %s", describe(out.Action))
	}
	w.apply(out.Action)
	// The operator is scaled down before it created the replacement. The
	// deleted machine's etcd hook holds it; nothing is in flight, so Replace
	// mode takes over at once and restores the index itself.
	w.cpmsOperator = false
	out = w.plan()
	w.expectCond(ConditionMode, metav1.ConditionTrue, string(ModeReplace))
	if out.Action == nil || out.Action.Kind != CreateMachine || out.Action.Index != 0 {
		t.Fatalf("want index 0 restored, got %s", describe(out.Action))
	}
}

// On ARO the ARO operator deletes an Active set unless aro.cpms.enabled is
// "true": the controller reports it and does not act on the set.
func TestARODisabledSetIsReportedNotFought(t *testing.T) {
	w := newWorld(t)
	w.setInstanceType("m6i.2xlarge")
	in := w.input()
	in.ARO = &AROCluster{}
	out := Plan(in)
	if out.Action != nil {
		t.Fatalf("acted on a set the ARO operator deletes: %s", describe(out.Action))
	}
	if c := condOf(out, ConditionUpshiftProgressing); c.Reason != ReasonAROCPMSDisabled || !strings.Contains(c.Message, `aro.cpms.enabled is not "true"`) {
		t.Fatalf("UpshiftProgressing = %+v", c)
	}
	in.ARO.CPMSEnabled = true
	if out := Plan(in); out.Action == nil || out.Action.Kind != CreateMachine {
		t.Fatalf("with the flag set the rollout starts, got %s", describe(out.Action))
	}
}
