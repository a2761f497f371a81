// Package events records a controller's decisions as Kubernetes Events, the
// same way in every Upshift component.
//
// A planner returns Events as plain values (Event); the reconciler hands
// them to a Recorder after it has carried out what they report. The
// Recorder applies the one folding rule:
//
// client-go's events library folds Events that share the object they are
// about (at its resourceVersion), the related object, type, reason, action
// and reporting controller into one series, which keeps the first note and
// counts the rest. Two different things said in one pass with one reason
// would show as one. So within one Record call, an Event that would fold
// into an earlier one but says something else gets a numbered action
// (Plan, Plan-2, Plan-3, …), and an Event identical to an earlier one is
// recorded once. A planner that wants changes of one kind to stay apart
// across passes gives each its own reason or related object.
//
// Notes are cut to the API's limit of 1,024 bytes (a longer one is refused,
// and the Event lost).
package events

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	"github.com/upshift-io/upshift/libs/truncate"
)

// NoteLimit is the API server's limit on an Event's note (events.k8s.io/v1).
const NoteLimit = 1024

// Event is one Event to record.
type Event struct {
	// Regarding is the object the Event is about.
	Regarding runtime.Object
	// Related is another object involved, or nil; `kubectl events --for`
	// finds the Event on either.
	Related runtime.Object
	// Warning makes the Event a Warning; otherwise it is Normal.
	Warning bool
	// Reason is why, in CamelCase (ReplacementStarted, DrainForced).
	Reason string
	// Action is what the controller did or was doing (Plan, Gate, Delete).
	Action string
	// Note says it for a person.
	Note string
}

// Normal is a Normal Event.
func Normal(regarding runtime.Object, reason, action, note string) Event {
	return Event{Regarding: regarding, Reason: reason, Action: action, Note: note}
}

// Warning is a Warning Event.
func Warning(regarding runtime.Object, reason, action, note string) Event {
	return Event{Regarding: regarding, Warning: true, Reason: reason, Action: action, Note: note}
}

// Type is the Event's type, corev1.EventTypeNormal or EventTypeWarning.
func (e Event) Type() string {
	if e.Warning {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

// Recorder records Events through client-go's events library (the
// manager's GetEventRecorder). A Recorder without a library records
// nothing: tests of a reconciler that do not look at Events.
type Recorder struct {
	rec events.EventRecorder
}

// NewRecorder wraps rec; nil is allowed.
func NewRecorder(rec events.EventRecorder) *Recorder { return &Recorder{rec: rec} }

// Record records evs in order, numbering the actions of Events that would
// fold into an earlier one of the call and dropping repeats.
func (r *Recorder) Record(evs ...Event) {
	if r == nil || r.rec == nil {
		return
	}
	for _, e := range Fold(evs) {
		// A nil pointer in the interface would be taken for an object.
		var related runtime.Object
		if !isNil(e.Related) {
			related = e.Related
		}
		r.rec.Eventf(e.Regarding, related, e.Type(), e.Reason, e.Action, "%s", truncate.String(e.Note, NoteLimit))
	}
}

// Fold applies the folding rule to the Events of one call: what Record
// records, in order.
func Fold(evs []Event) []Event {
	type key struct {
		regarding, related any
		warning            bool
		reason, action     string
	}
	seen := map[key][]string{} // the notes recorded under each key
	out := make([]Event, 0, len(evs))
	for _, e := range evs {
		k := key{identity(e.Regarding), identity(e.Related), e.Warning, e.Reason, e.Action}
		notes := seen[k]
		repeat := false
		for _, n := range notes {
			repeat = repeat || n == e.Note
		}
		if repeat {
			continue
		}
		seen[k] = append(notes, e.Note)
		if len(notes) > 0 {
			e.Action = fmt.Sprintf("%s-%d", e.Action, len(notes)+1)
		}
		out = append(out, e)
	}
	return out
}

// identity tells objects apart as the library does: by kind, namespace,
// name, UID and resourceVersion.
func identity(obj runtime.Object) any {
	if isNil(obj) {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj
	}
	type id struct{ kind, namespace, name, uid, rv string }
	return id{reflect.TypeOf(obj).String(), m.GetNamespace(), m.GetName(), string(m.GetUID()), m.GetResourceVersion()}
}

func isNil(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
