package mcostate

import "testing"

// FuzzPhaseOf feeds the machine-config daemon's annotations as any node may
// carry them (values the MCD never writes included) and checks the rules
// every consumer relies on: a degraded MCD wins; done means current and
// desired are the target and the MCD wrote Done; a node not told to move to
// the target is pending; and Done agrees with PhaseOf on the node's own
// desired config.
func FuzzPhaseOf(f *testing.F) {
	f.Add("rendered-worker-a", "rendered-worker-b", StateWorking, "drain-rendered-worker-b", "uncordon-rendered-worker-a", "", true, "rendered-worker-b")
	f.Add("rendered-worker-b", "rendered-worker-b", StateDone, "uncordon-rendered-worker-b", "uncordon-rendered-worker-b", "", true, "rendered-worker-b")
	f.Add("rendered-worker-a", "rendered-worker-b", StateDegraded, "", "", "", false, "rendered-worker-b")
	f.Add("a", "b", StateDone, "drain-b", "drain-b", PostConfigActionRebooting, false, "")
	f.Fuzz(func(t *testing.T, current, desired, state, desiredDrain, lastDrain, postAction string, ready bool, target string) {
		a := map[string]string{}
		for k, v := range map[string]string{CurrentConfig: current, DesiredConfig: desired, State: state,
			DesiredDrain: desiredDrain, LastAppliedDrain: lastDrain, PostConfigAction: postAction} {
			if v != "" {
				a[k] = v
			}
		}
		p := PhaseOf(NodeInfo{Annotations: a, Ready: ready}, target)
		degraded := state == StateDegraded || state == StateUnreconcilable
		switch {
		case degraded && p != PhaseDegraded:
			t.Fatalf("state %q gives %s, want degraded", state, p)
		case p == PhaseDone && (target == "" || current != target || desired != target || state != StateDone):
			t.Fatalf("done with current %q desired %q state %q target %q", current, desired, state, target)
		case !degraded && (target == "" || desired != target) && p != PhasePending:
			t.Fatalf("desired %q target %q gives %s, want pending", desired, target, p)
		}
		if desired != "" && !degraded && Done(a) != (PhaseOf(NodeInfo{Annotations: a, Ready: ready}, desired) == PhaseDone) {
			t.Fatalf("Done %v disagrees with PhaseOf for its own desired config (%+v)", Done(a), a)
		}
	})
}
