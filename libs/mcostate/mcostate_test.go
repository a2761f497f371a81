package mcostate

import "testing"

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
		{"before: runs old", map[string]string{CurrentConfig: old, DesiredConfig: old, State: StateDone}, true, Pending},
		{"1 node controller targets it", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateDone}, true, Updating},
		{"2 MCD Working", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking}, true, Updating},
		{"3 drain requested", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking, DesiredDrain: "drain-" + target, LastAppliedDrain: "uncordon-" + old}, true, Draining},
		{"4 drained", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking, DesiredDrain: "drain-" + target, LastAppliedDrain: "drain-" + target}, true, Updating},
		{"5 rebooting", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking, DesiredDrain: "drain-" + target, LastAppliedDrain: "drain-" + target, PostConfigAction: PostConfigActionRebooting}, true, Rebooting},
		{"6 NotReady", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking, DesiredDrain: "drain-" + target, LastAppliedDrain: "drain-" + target, PostConfigAction: PostConfigActionRebooting}, false, Rebooting},
		{"7 back, action cleared, still NotReady", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking, DesiredDrain: "drain-" + target, LastAppliedDrain: "drain-" + target}, false, Rebooting},
		{"8 uncordon requested", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking, DesiredDrain: "uncordon-" + target, LastAppliedDrain: "drain-" + target}, true, Updating},
		{"9 uncordoned, not Done yet", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateWorking, DesiredDrain: "uncordon-" + target, LastAppliedDrain: "uncordon-" + target}, true, Updating},
		{"10 Done", map[string]string{CurrentConfig: target, DesiredConfig: target, State: StateDone, DesiredDrain: "uncordon-" + target, LastAppliedDrain: "uncordon-" + target}, true, Done},
		{"drain failed: Degraded", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateDegraded, Reason: "failed to drain node"}, true, Degraded},
		{"Unreconcilable", map[string]string{CurrentConfig: old, DesiredConfig: target, State: StateUnreconcilable}, true, Degraded},
		{"Done on target but degraded elsewhere is degraded", map[string]string{CurrentConfig: target, DesiredConfig: target, State: StateDegraded}, true, Degraded},
		{"no annotations yet", map[string]string{}, true, Pending},
		{"desired moved on past the target", map[string]string{CurrentConfig: target, DesiredConfig: "rendered-worker-newer", State: StateWorking}, true, Pending},
	}
	for _, s := range steps {
		if got := PhaseOf(NodeInfo{Annotations: s.a, Ready: s.ready}, target); got != s.want {
			t.Errorf("%s: phase %q, want %q", s.step, got, s.want)
		}
	}
	if got := PhaseOf(NodeInfo{Annotations: map[string]string{CurrentConfig: "x", DesiredConfig: "x", State: StateDone}}, ""); got != Pending {
		t.Errorf("no target: %q, want pending", got)
	}
}

func TestInProgress(t *testing.T) {
	want := map[Phase]bool{Pending: false, Draining: true, Updating: true, Rebooting: true, Done: false, Degraded: true}
	for _, p := range Phases {
		if p.InProgress() != want[p] {
			t.Errorf("%s: InProgress %v", p, p.InProgress())
		}
	}
	if !IsAnnotation(State) || IsAnnotation("kubernetes.io/hostname") {
		t.Error("IsAnnotation")
	}
}
