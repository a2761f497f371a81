package assess

import "github.com/upshift-io/upshift/libs/alerts"

// FromAlerts converts alerts as libs/alerts reads them, leaving out those
// someone has already dealt with: an alert silenced or inhibited in
// Alertmanager is a decision already made, not news about the update.
func FromAlerts(in []alerts.Alert) []Alert {
	out := make([]Alert, 0, len(in))
	for _, a := range in {
		if a.Suppressed {
			continue
		}
		out = append(out, Alert{Labels: a.Labels, Annotations: a.Annotations, State: a.State, ActiveAt: a.ActiveAt})
	}
	return out
}
