package controller

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
