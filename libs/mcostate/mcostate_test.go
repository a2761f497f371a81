package mcostate

import (
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func node(ready corev1.ConditionStatus, unschedulable bool, kv ...string) *corev1.Node {
	a := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = kv[i+1]
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: a}}
	n.Spec.Unschedulable = unschedulable
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
	}
	return n
}

// The rows follow the MCO's order of writes during an update: desiredConfig
// first, Working, the drain, the reboot (Ready flips), the uncordon, and only
// then currentConfig and Done. Only the last row is updated.
func TestUpdatedTo(t *testing.T) {
	const old, target = "rendered-worker-old", "rendered-worker-new"
	cases := []struct {
		name string
		n    *corev1.Node
		want bool
	}{
		{"targeted, still Done on old", node(corev1.ConditionTrue, false, CurrentConfig, old, DesiredConfig, target, State, StateDone), false},
		{"working", node(corev1.ConditionTrue, false, CurrentConfig, old, DesiredConfig, target, State, StateWorking), false},
		{"cordoned for the drain", node(corev1.ConditionTrue, true, CurrentConfig, old, DesiredConfig, target, State, StateWorking), false},
		{"rebooting, not ready", node(corev1.ConditionFalse, true, CurrentConfig, old, DesiredConfig, target, State, StateWorking), false},
		{"uncordoned before Done", node(corev1.ConditionTrue, false, CurrentConfig, old, DesiredConfig, target, State, StateWorking), false},
		{"done but still cordoned", node(corev1.ConditionTrue, true, CurrentConfig, target, DesiredConfig, target, State, StateDone), false},
		{"done but not ready", node(corev1.ConditionFalse, false, CurrentConfig, target, DesiredConfig, target, State, StateDone), false},
		{"done without a Ready condition", node("", false, CurrentConfig, target, DesiredConfig, target, State, StateDone), false},
		{"done on another config", node(corev1.ConditionTrue, false, CurrentConfig, old, DesiredConfig, old, State, StateDone), false},
		{"degraded on target", node(corev1.ConditionTrue, false, CurrentConfig, target, DesiredConfig, target, State, StateDegraded), false},
		{"image pending", node(corev1.ConditionTrue, false, CurrentConfig, target, DesiredConfig, target, State, StateDone, DesiredImage, "img"), false},
		{"updated", node(corev1.ConditionTrue, false, CurrentConfig, target, DesiredConfig, target, State, StateDone), true},
		{"updated with matching image", node(corev1.ConditionTrue, false, CurrentConfig, target, DesiredConfig, target, State, StateDone, CurrentImage, "i", DesiredImage, "i"), true},
	}
	for _, tc := range cases {
		if got := UpdatedTo(tc.n, target); got != tc.want {
			t.Errorf("%s: UpdatedTo = %v, want %v", tc.name, got, tc.want)
		}
	}
	if UpdatedTo(node(corev1.ConditionTrue, false, CurrentConfig, "", DesiredConfig, "", State, StateDone), "") {
		t.Error("empty target must never count as updated")
	}
}

func TestFailing(t *testing.T) {
	for _, s := range []string{StateDegraded, StateUnreconcilable} {
		if !Failing(map[string]string{DesiredConfig: "x", State: s}) {
			t.Errorf("%s must be failing", s)
		}
	}
	if Failing(map[string]string{State: StateDegraded}) {
		t.Error("a node never targeted is not failing")
	}
	if Failing(map[string]string{DesiredConfig: "x", State: StateWorking}) {
		t.Error("working is not failing")
	}
}

// The steps of a reboot-requiring node update, in the order the MCO's node
// controller, daemon and drain controller write them (MCO daemon and drain
// controller; the order is documented in the MCO's node update flow): each row
// is the node's annotations after that step, and the phase it is in.
func TestPhaseOfRebootUpdate(t *testing.T) {
	const old, target = "rendered-worker-old", "rendered-worker-new"
	steps := []struct {
		step  string
		a     map[string]string
		ready bool
		want  Phase
	}{
		{"before: runs old", map[string]string{CurrentConfig: old, DesiredConfig: old, State: StateDone}, true, PhasePending},
		{"1 node controller targets it", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateDone}, true, PhaseUpdating},
		{"2 MCD Working", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking}, true, PhaseUpdating},
		{"3 drain requested", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking, DesiredDrain: "drain-" + target, LastAppliedDrain: "uncordon-" + old}, true, PhaseDraining},
		{"4 drained", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking, DesiredDrain: "drain-" + target, LastAppliedDrain: "drain-" + target}, true, PhaseUpdating},
		{"5 rebooting", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking, DesiredDrain: "drain-" + target, LastAppliedDrain: "drain-" + target, PostConfigAction: PostConfigActionRebooting}, true, PhaseRebooting},
		{"6 NotReady", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking, DesiredDrain: "drain-" + target, LastAppliedDrain: "drain-" + target, PostConfigAction: PostConfigActionRebooting}, false, PhaseRebooting},
		{"7 back, action cleared, still NotReady", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking, DesiredDrain: "drain-" + target, LastAppliedDrain: "drain-" + target}, false, PhaseRebooting},
		{"8 uncordon requested", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking, DesiredDrain: "uncordon-" + target, LastAppliedDrain: "drain-" + target}, true, PhaseUpdating},
		{"9 uncordoned, not Done yet", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking, DesiredDrain: "uncordon-" + target, LastAppliedDrain: "uncordon-" + target}, true, PhaseUpdating},
		{"10 Done", map[string]string{CurrentConfig: target, DesiredConfig: target, State: StateDone, DesiredDrain: "uncordon-" + target, LastAppliedDrain: "uncordon-" + target}, true, PhaseDone},
		{"drain failed: Degraded", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateDegraded, Reason: "failed to drain node"}, true, PhaseDegraded},
		{"Unreconcilable", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateUnreconcilable}, true, PhaseDegraded},
		{"Done on target but degraded elsewhere is degraded", map[string]string{CurrentConfig: target, DesiredConfig: target, State: StateDegraded}, true, PhaseDegraded},
		{"no annotations yet", map[string]string{}, true, PhasePending},
		{"desired moved on past the target", map[string]string{CurrentConfig: target, DesiredConfig: "rendered-worker-newer", State: StateWorking}, true, PhasePending},
	}
	for _, s := range steps {
		if got := PhaseOf(NodeInfo{Annotations: s.a, Ready: s.ready}, target); got != s.want {
			t.Errorf("%s: phase %q, want %q", s.step, got, s.want)
		}
	}
	if got := PhaseOf(NodeInfo{Annotations: map[string]string{CurrentConfig: "x", DesiredConfig: "x", State: StateDone}}, ""); got != PhasePending {
		t.Errorf("no target: %q, want pending", got)
	}
}

func TestInProgress(t *testing.T) {
	want := map[Phase]bool{PhasePending: false, PhaseDraining: true, PhaseUpdating: true, PhaseRebooting: true, PhaseDone: false, PhaseDegraded: true}
	for _, p := range Phases {
		if p.InProgress() != want[p] {
			t.Errorf("%s: InProgress %v", p, p.InProgress())
		}
	}
	if !IsAnnotation(State) || IsAnnotation("kubernetes.io/hostname") {
		t.Error("IsAnnotation")
	}
}

func TestMoving(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    map[string]string
		want bool
	}{
		{"never configured", map[string]string{}, false},
		{"done", map[string]string{CurrentConfig: "a", DesiredConfig: "a", State: StateDone}, false},
		{"told to move, not started", map[string]string{CurrentConfig: "a", DesiredConfig: "b", State: StateDone}, true},
		{"working on its config", map[string]string{CurrentConfig: "b", DesiredConfig: "b", State: StateWorking}, true},
		{"image not applied yet", map[string]string{CurrentConfig: "a", DesiredConfig: "a", State: StateDone, CurrentImage: "x", DesiredImage: "y"}, true},
		{"gave up", map[string]string{CurrentConfig: "a", DesiredConfig: "b", State: StateDegraded}, false},
		{"unreconcilable", map[string]string{CurrentConfig: "a", DesiredConfig: "b", State: StateUnreconcilable}, false},
	} {
		if got := Moving(tc.a); got != tc.want {
			t.Errorf("%s: Moving = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The MCO's reading of a pool's maxUnavailable.
func TestMaxUnavailable(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int32) *intstr.IntOrString { v := intstr.FromInt32(n); return &v }
	for _, c := range []struct {
		mu    *intstr.IntOrString
		nodes int
		want  int
	}{
		{nil, 10, 1}, {num(3), 10, 3}, {num(0), 10, 1}, {pct("10%"), 25, 2}, {pct("1%"), 10, 1}, {pct("bad"), 10, 1},
	} {
		pool := &mcfgv1.MachineConfigPool{}
		pool.Spec.MaxUnavailable = c.mu
		if got := MaxUnavailable(pool, c.nodes); got != c.want {
			t.Errorf("MaxUnavailable(%v, %d) = %d, want %d", c.mu, c.nodes, got, c.want)
		}
	}
}
