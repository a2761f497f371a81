package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"

	"github.com/upshift-io/upshift/services/aromonitor/ownership"
)

// EventOwnershipChanged is recorded on the MonitorConfig when a check
// changes hands between ARO's operator and aro-monitor, and on the first
// decision.
const EventOwnershipChanged = "OwnershipChanged"

// ownershipEvents is the Event of check changing hands, if it did.
func ownershipEvents(check amv1alpha1.CheckName, prev amv1alpha1.CheckStatus, d ownership.Decision) []events.Event {
	if prev.Ownership == d.Ownership {
		return nil
	}
	mc := &amv1alpha1.MonitorConfig{ObjectMeta: metav1.ObjectMeta{Name: amv1alpha1.SingletonName}}
	return []events.Event{events.Normal(mc, EventOwnershipChanged, "Decide", fmt.Sprintf("%s: %s", check, d.Message))}
}

// checkWrite is a check's write of its part of the record and, where it
// replaces ARO's controller, of ARO's condition: next — everything the
// check's field manager owns, the check's record first in Checks — is
// applied with who owns the check when it differs from recorded (a check
// whose record always moves, such as the credentials check's, always
// writes), the Event of the check changing hands follows, and for a check
// aro-monitor replaces, ARO's condition types in next are merged into the
// Cluster (no request when they are there already: the cached Cluster is
// compared first).
type checkWrite struct {
	check          amv1alpha1.CheckName
	manager        string
	owner          ownership.Decision
	recorded, next amv1alpha1.MonitorConfigStatus
}

func (w checkWrite) do(ctx context.Context, c client.Client, rec *events.Recorder, cluster *arov1alpha1.Cluster, now time.Time) error {
	// A new slice: next may share recorded's.
	w.next.Checks = append([]amv1alpha1.CheckStatus{withOwnership(w.next.Checks[0], w.owner)}, w.next.Checks[1:]...)
	if !equality.Semantic.DeepEqual(w.recorded, w.next) {
		if err := applyStatus(ctx, c, w.manager, w.next); err != nil {
			return err
		}
		rec.Record(ownershipEvents(w.check, w.recorded.Checks[0], w.owner)...)
	}
	if w.owner.Ownership != amv1alpha1.OwnershipReplace {
		return nil
	}
	return setAROConditions(ctx, c, cluster, now, w.next.Conditions...)
}
