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
	if c := meta.FindStatusCondition(st.Conditions, ConditionProgressing); c != nil {
		note := msg
		if c.Message != "" {
			note = c.Message + "; " + msg
		}
		c.Message = truncate.String(note, maxMessage)
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

// Released is the Event of a set being deleted that released the named
// machines (removed its owner reference from them); none when there were
// none.
func Released(cpms *machinev1.ControlPlaneMachineSet, machines []string) (events.Event, bool) {
	if len(machines) == 0 {
		return events.Event{}, false
	}
	machines = slices.Sorted(slices.Values(machines))
	return events.Normal(cpms, "Released", "Delete", fmt.Sprintf("The set is being deleted: released machines %s, which keep running", strings.Join(machines, ", "))), true
}
