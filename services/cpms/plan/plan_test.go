package plan

import (
	"errors"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHaltingProblems: each of these stops every mutation, is named in
// Degraded, and turns Progressing False.
func TestHaltingProblems(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(w *world)
		reason string
		msg    string
	}{
		{"a strategy the CRD does not allow", func(w *world) { w.cpms.Spec.Strategy.Type = machinev1.Recreate }, ReasonInvalidStrategy, `"Recreate"`},
		{"a machine controlled by someone else", func(w *world) {
			w.machines["c1-master-1"].OwnerReferences[0].UID = "other"
			w.machines["c1-master-1"].OwnerReferences[0].Kind = "MachineSet"
		}, ReasonMachinesAlreadyOwned, "c1-master-1 (by MachineSet cluster)"},
		{"a machine with no index in its name and no declared zone", func(w *world) {
			w.addRunning("hand-made", "m6i.xlarge", "d")
		}, ReasonUnindexableMachines, "hand-made"},
		{"failure domains for another platform than the template", func(w *world) {
			w.cpms.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains = &machinev1.FailureDomains{Platform: configv1.GCPPlatformType, GCP: &[]machinev1.GCPFailureDomain{{Zone: "a"}}}
		}, ReasonInvalidSpec, "GCP"},
		{"no machine ready at all", func(w *world) {
			for name := range w.nodes {
				w.setNodeReady(name, corev1.ConditionFalse, w.now.Add(-time.Hour))
			}
		}, ReasonNoReadyMachines, "no control-plane machine is ready"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.setInstanceType("m6i.2xlarge")
			c.setup(w)
			out := w.plan()
			if out.Action != nil {
				t.Fatalf("acted: %s", describe(out.Action))
			}
			w.expectCond(ConditionDegraded, metav1.ConditionTrue, c.reason)
			w.expectCond(ConditionProgressing, metav1.ConditionFalse, ReasonOperatorDegraded)
			if d := w.cond(ConditionDegraded); !strings.Contains(d.Message, c.msg) {
				t.Fatalf("message %q lacks %q", d.Message, c.msg)
			}
		})
	}
	// A hand-made machine in a declared zone is placed by its zone.
	w := newWorld(t)
	w.addRunning("hand-made", "m6i.xlarge", "b")
	w.machines["hand-made"].CreationTimestamp = metav1.NewTime(t0)
	out := w.plan()
	w.expectCond(ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected)
	if out.Indexes[1].Machines[1] != "hand-made" {
		t.Fatalf("index 1: %+v", out.Indexes[1])
	}
}

func TestUnknownProviderSpecFieldsAreNamed(t *testing.T) {
	w := newWorld(t)
	raw := w.machines["c1-master-0"].Spec.ProviderSpec.Value.Raw
	w.machines["c1-master-0"].Spec.ProviderSpec.Value.Raw = append([]byte(`{"futureKnob":1,`), raw[1:]...)
	out := w.plan()
	if len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], `"futureKnob"`) || out.Action != nil {
		t.Fatalf("warnings %v action %s", out.Warnings, describe(out.Action))
	}
}

func TestStatusCounters(t *testing.T) {
	w := newWorld(t)
	w.setInstanceType("m6i.2xlarge")
	w.addRunning("c1-master-new-0", "m6i.2xlarge", "a")
	w.machines["c1-master-new-0"].CreationTimestamp = metav1.NewTime(w.now)
	w.userDelete("c1-master-new-0") // an up-to-date machine on its way out
	w.setNodeReady("c1-master-2", corev1.ConditionFalse, w.now.Add(-time.Hour))
	w.plan()
	st := w.cpms.Status
	want := machinev1.ControlPlaneMachineSetStatus{ObservedGeneration: 2, Replicas: 4, ReadyReplicas: 3, UpdatedReplicas: 0, UnavailableReplicas: 1}
	st.Conditions = nil
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("status %+v, want %+v (a deleting machine is never an updated replica)", st, want)
	}
	for _, c := range w.cpms.Status.Conditions {
		if c.ObservedGeneration != 2 {
			t.Fatalf("condition %s observedGeneration %d", c.Type, c.ObservedGeneration)
		}
	}
}

// TestStatusIsStable: the same cluster, listed in another order, planned
// again later, gives the same status (messages included, transition times
// kept) and no new Event.
func TestStatusIsStable(t *testing.T) {
	w := newWorld(t, machinesAt("0a", "1a", "2a"))
	w.setInstanceType("m6i.2xlarge")
	w.setNodeReady("c1-master-1", corev1.ConditionUnknown, w.now)
	w.degradeOperator("etcd", true)
	first := w.plan()
	if len(first.Events) == 0 {
		t.Fatal("the first pass should report its conditions")
	}
	in := w.input()
	for seed := int64(0); seed < 5; seed++ {
		rng := rand.New(rand.NewSource(seed))
		rng.Shuffle(len(in.Machines), func(i, j int) { in.Machines[i], in.Machines[j] = in.Machines[j], in.Machines[i] })
		rng.Shuffle(len(in.Nodes), func(i, j int) { in.Nodes[i], in.Nodes[j] = in.Nodes[j], in.Nodes[i] })
		in.Now = w.now.Add(time.Duration(seed) * time.Minute)
		again := Plan(in)
		if !reflect.DeepEqual(again.Status, w.cpms.Status) {
			t.Fatalf("seed %d: status churns:\n%+v\n%+v", seed, again.Status, w.cpms.Status)
		}
		if len(again.Events) != 0 {
			t.Fatalf("seed %d: events on an unchanged cluster: %+v", seed, again.Events)
		}
		if describe(again.Action) != describe(first.Action) {
			t.Fatalf("seed %d: action %s, first %s", seed, describe(again.Action), describe(first.Action))
		}
	}
}

// TestRemediationSurvivesACrash: the budget is written before the delete;
// if the delete is lost, the next pass finishes it without spending again.
func TestRemediationSurvivesACrash(t *testing.T) {
	w := newWorld(t)
	w.cfg.Remediation = Remediation{Enabled: true, MaxRetries: 1, RetryPeriod: time.Minute}
	w.setInstanceType("m6i.2xlarge")
	out := w.plan()
	w.apply(out.Action)
	name := out.Action.Machine.Name
	w.fail(name, "boom")
	out = w.plan()
	if out.Action == nil || out.Action.Kind != Remediate {
		t.Fatalf("want Remediate, got %s", describe(out.Action))
	}
	b, err := ParseBudget(out.Action.Annotation)
	if err != nil || b["0"].Retries != 1 || b["0"].Machine != name || !b["0"].At.Equal(w.now) {
		t.Fatalf("budget %s (%v)", out.Action.Annotation, err)
	}
	// Crash: the annotation is written, the delete is not.
	w.cpms.Annotations = map[string]string{RemediationAnnotation: out.Action.Annotation}
	again := w.plan()
	if again.Action == nil || again.Action.Kind != Remediate || again.Action.Target.Name != name || again.Action.Annotation != out.Action.Annotation {
		t.Fatalf("after the crash: %s %q", describe(again.Action), again.Action.Annotation)
	}
	if !strings.Contains(again.Action.Event.Note, "retry 1 of 1") {
		t.Fatalf("event %q", again.Action.Event.Note)
	}
	// A budget that does not parse is reported and starts afresh.
	w.cpms.Annotations[RemediationAnnotation] = "{"
	out = w.plan()
	if !w.hasEvent("InvalidAnnotation", RemediationAnnotation) || out.Action == nil || out.Action.Kind != Remediate {
		t.Fatalf("garbled budget: %s %+v", describe(out.Action), w.events)
	}
}

func TestMachineNames(t *testing.T) {
	w := newWorld(t)
	w.userDelete("c1-master-2")
	a := w.plan().Action
	b := w.plan().Action
	if a.Machine.Name != b.Machine.Name || !strings.HasPrefix(a.Machine.Name, "c1-master-") || !strings.HasSuffix(a.Machine.Name, "-2") || len(a.Machine.Name) != len("c1-master-abcde-2") {
		t.Fatalf("names %s %s", a.Machine.Name, b.Machine.Name)
	}
	for _, r := range a.Machine.Name[len("c1-master-") : len("c1-master-")+5] {
		if !strings.ContainsRune(nameAlphabet, r) {
			t.Fatalf("name %s", a.Machine.Name)
		}
	}
	w.cpms.Spec.MachineNamePrefix = "cp"
	if n := w.plan().Action.Machine.Name; !strings.HasPrefix(n, "cp-") || !strings.HasSuffix(n, "-2") {
		t.Fatalf("prefix: %s", n)
	}
	w.cpms.Spec.MachineNamePrefix = ""
	w.setInstanceType("m6i.2xlarge")
	if n := w.plan().Action.Machine.Name; n == a.Machine.Name {
		t.Fatal("a new desired spec must give a new name")
	}
	// The created machine carries the template's labels and annotations
	// and the injected zone, and its spec otherwise is the template's.
	w = newWorld(t)
	w.cpms.Spec.Template.OpenShiftMachineV1Beta1Machine.ObjectMeta.Annotations = map[string]string{"a": "b"}
	w.cpms.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	w.userDelete("c1-master-1")
	m := w.plan().Action.Machine
	if m.Annotations["a"] != "b" || m.Labels["machine.openshift.io/cluster-api-cluster"] != "c1" || len(m.Spec.Taints) != 1 || m.Namespace != ns {
		t.Fatalf("machine %+v", m.ObjectMeta)
	}
	if !strings.Contains(string(m.Spec.ProviderSpec.Value.Raw), `"availabilityZone":"us-east-1b"`) || !strings.Contains(string(m.Spec.ProviderSpec.Value.Raw), `c1-private-us-east-1b`) {
		t.Fatalf("provider spec %s", m.Spec.ProviderSpec.Value.Raw)
	}
	if w.cpms.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value.Raw[0] != '{' || strings.Contains(string(w.cpms.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value.Raw), "us-east-1b") {
		t.Fatal("the template itself must not be modified")
	}
}

// TestIndexStates walks one index through its states.
func TestIndexStates(t *testing.T) {
	w := newWorld(t)
	state := func() IndexState {
		t.Helper()
		return w.plan().Indexes[0].State
	}
	if s := state(); s != Stable {
		t.Fatal(s)
	}
	w.setInstanceType("m6i.2xlarge")
	out := w.plan()
	if out.Indexes[0].State != ReplacementRequested || !strings.Contains(out.Indexes[0].Diff, "instanceType") {
		t.Fatalf("%+v", out.Indexes[0])
	}
	w.apply(out.Action)
	if s := state(); s != ReplacementProvisioning {
		t.Fatal(s)
	}
	w.mao()
	w.mao()
	out = w.plan()
	if out.Indexes[0].State != ReplacementReady || out.Action != nil || !strings.Contains(out.Indexes[0].Reason, "waits for the etcd operator") {
		t.Fatalf("before the etcd hook: %+v %s", out.Indexes[0], describe(out.Action))
	}
	w.ceo()
	out = w.plan()
	if out.Indexes[0].State != ReplacementReady || out.Action == nil || out.Action.Kind != DeleteMachine {
		t.Fatalf("%+v %s", out.Indexes[0], describe(out.Action))
	}
	w.apply(out.Action)
	if s := state(); s != OldDeleting {
		t.Fatal(s)
	}
	if w.plan().Indexes[1].State != ReplacementRequested {
		t.Fatal("index 1 should wait")
	}
	w.ceo()
	w.ceo()
	w.mao()
	if s := state(); s != Stable {
		t.Fatalf("%s: %s", s, w.summary())
	}
}

// A failed action is the planner's to interpret: Progressing names it (the
// reason stays what the plan decided), and the Warning Event is
// Failed<Kind>, about the set.
func TestFailedAction(t *testing.T) {
	cpms := &machinev1.ControlPlaneMachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster"}}
	planned := machinev1.ControlPlaneMachineSetStatus{Conditions: []metav1.Condition{
		{Type: ConditionProgressing, Status: metav1.ConditionTrue, Reason: ReasonNeedsUpdateReplicas, Message: "index 0: ReplacementRequested"},
	}}
	a := &Action{Kind: CreateMachine, Index: 0}
	st, ev := Failed(cpms, planned, a, errors.New("machines is forbidden"))
	c := meta.FindStatusCondition(st.Conditions, ConditionProgressing)
	if c.Reason != ReasonNeedsUpdateReplicas || c.Message != "index 0: ReplacementRequested; CreateMachine in index 0 failed: machines is forbidden" {
		t.Fatalf("Progressing %s: %q", c.Reason, c.Message)
	}
	if planned.Conditions[0].Message != "index 0: ReplacementRequested" {
		t.Fatal("Failed changed the planned status it was given")
	}
	if !ev.Warning || ev.Reason != "FailedCreateMachine" || ev.Action != "CreateMachine" || ev.Regarding != cpms ||
		ev.Note != "CreateMachine in index 0 failed: machines is forbidden" {
		t.Fatalf("event %+v", ev)
	}
}

func TestRelease(t *testing.T) {
	cpms := &machinev1.ControlPlaneMachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster", UID: "set"}}
	other := metav1.OwnerReference{Kind: "Other", Name: "o", UID: "other"}
	set := metav1.OwnerReference{Kind: "ControlPlaneMachineSet", Name: "cluster", UID: "set"}
	owned := func(name string, refs ...metav1.OwnerReference) machinev1beta1.Machine {
		return machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: refs}}
	}
	if r := Release(cpms, []machinev1beta1.Machine{owned("c1-master-0", other)}); len(r.Machines) != 0 || r.Event != nil {
		t.Fatalf("a set that owns nothing released %+v", r)
	}
	r := Release(cpms, []machinev1beta1.Machine{owned("c1-master-2", set), owned("c1-master-0", other, set), owned("c1-worker-a", other)})
	if len(r.Machines) != 2 || r.Machines[0].Name != "c1-master-0" || r.Machines[1].Name != "c1-master-2" {
		t.Fatalf("released %+v", r.Machines)
	}
	if !reflect.DeepEqual(r.Keep["c1-master-0"], []metav1.OwnerReference{other}) || r.Keep["c1-master-2"] != nil {
		t.Fatalf("kept %+v", r.Keep)
	}
	if r.Event == nil || r.Event.Warning || r.Event.Reason != "Released" || r.Event.Action != "Delete" ||
		r.Event.Note != "The set is being deleted: released machines c1-master-0, c1-master-2, which keep running" {
		t.Fatalf("event %+v", r.Event)
	}
}
