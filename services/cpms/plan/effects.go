package plan

import (
	"fmt"
	"slices"
	"strings"

	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/truncate"
)

// actionReconcile is the Event action of what a pass observed (a condition
// that changed), as opposed to a mutation it made (the action's kind).
const actionReconcile = "Reconcile"

// Failed is what a failed action means: the status to write instead of
// planned (Progressing names the failure, so `oc get` shows it while the
// controller retries with its back-off) and the Warning Event
// Failed<Kind>. The next pass plans from the cluster again, so a retry that
// succeeds, or a different decision, replaces both.
func Failed(cpms *machinev1.ControlPlaneMachineSet, planned machinev1.ControlPlaneMachineSetStatus, a *Action, err error) (machinev1.ControlPlaneMachineSetStatus, events.Event) {
	msg := fmt.Sprintf("%s in index %d failed: %v", a.Kind, a.Index, err)
	st := *planned.DeepCopy()
	for _, t := range []string{ConditionProgressing, ConditionUpshiftProgressing} {
		if c := meta.FindStatusCondition(st.Conditions, t); c != nil {
			note := msg
			if c.Message != "" {
				note = c.Message + "; " + msg
			}
			c.Message = truncate.String(note, maxMessage)
		}
	}
	return st, events.Warning(cpms, "Failed"+string(a.Kind), string(a.Kind), msg)
}

// machineEvent is the Event of an action on one machine, which names it as
// the related object (`kubectl events --for machine/<name>` finds it).
func (p *planner) machineEvent(warning bool, reason string, kind ActionKind, m *machinev1beta1.Machine, note string) events.Event {
	return events.Event{Regarding: p.in.CPMS, Related: m, Warning: warning, Reason: reason, Action: string(kind), Note: note}
}

// machineObject is the Machine a reference names, for an Event.
func (p *planner) machineObject(r MachineRef) *machinev1beta1.Machine {
	return &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: p.in.CPMS.Namespace, Name: r.Name, UID: r.UID}}
}

// Releasing is what deleting the set does to its machines, as the upstream
// operator does: every machine the set owns loses that owner reference (so
// the garbage collector leaves the control plane alone) and keeps running.
type Releasing struct {
	// Machines are the machines to release, in name order.
	Machines []*machinev1beta1.Machine
	// Keep is each one's owner references without the set's.
	Keep map[string][]metav1.OwnerReference
	// Event names them, to record once they are released; nil when the set
	// owned none.
	Event *events.Event
}

// Release decides the release of the machines of a set being deleted.
func Release(cpms *machinev1.ControlPlaneMachineSet, machines []machinev1beta1.Machine) Releasing {
	out := Releasing{Keep: map[string][]metav1.OwnerReference{}}
	var names []string
	for i := range machines {
		m := &machines[i]
		var keep []metav1.OwnerReference
		for _, o := range m.OwnerReferences {
			if o.UID != cpms.UID {
				keep = append(keep, o)
			}
		}
		if len(keep) == len(m.OwnerReferences) {
			continue
		}
		out.Machines = append(out.Machines, m)
		out.Keep[m.Name] = keep
		names = append(names, m.Name)
	}
	slices.SortFunc(out.Machines, func(a, b *machinev1beta1.Machine) int { return strings.Compare(a.Name, b.Name) })
	if len(names) > 0 {
		slices.Sort(names)
		ev := events.Normal(cpms, "Released", "Delete", fmt.Sprintf("The set is being deleted: released machines %s, which keep running", strings.Join(names, ", ")))
		out.Event = &ev
	}
	return out
}
