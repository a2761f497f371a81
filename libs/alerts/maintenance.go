package alerts

import (
	"context"
	"fmt"

	amsilence "github.com/prometheus/alertmanager/api/v2/client/silence"
	"github.com/prometheus/alertmanager/api/v2/models"
)

// Maintenance silences.
//
// The upgrade-scheduler silences alerts while it upgrades (MUO's
// maintenance silences). Those silences must not blind a component that
// gates on alerts (node-gate's health gate): an alert silenced only because
// an upgrade is under way still says the cluster is unhealthy. So the
// scheduler marks every silence it creates with a matcher on
// MaintenanceLeaseLabel (and one on MaintenanceOwnerLabel), and a reader
// that gates tells those silences apart from a person's.

// Marker labels of the upgrade-scheduler's silences. No alert carries them:
// a "!=" matcher on them matches every alert, so they identify a silence
// without narrowing it.
const (
	// MaintenanceOwnerLabel's value is the UID of the UpgradeConfig the
	// silence belongs to.
	MaintenanceOwnerLabel = "upshift_upgradeconfig"
	// MaintenanceLeaseLabel's value is the lease the silence serves
	// ("<version>/<purpose>").
	MaintenanceLeaseLabel = "upshift_lease"
)

// IsMaintenanceMatcher reports whether a matcher is the scheduler's lease
// marker: MaintenanceLeaseLabel, not equal, not a regex.
func IsMaintenanceMatcher(name string, isEqual, isRegex bool) bool {
	return name == MaintenanceLeaseLabel && !isEqual && !isRegex
}

// SilenceReader is what a Client of an API that knows silences
// (Alertmanager's) also does.
type SilenceReader interface {
	// MaintenanceSilences returns the IDs of the upgrade-scheduler's
	// silences, in any state.
	MaintenanceSilences(ctx context.Context) (map[string]bool, error)
}

// SuppressedOnlyBy reports whether the alert is suppressed by silences
// alone, each of them in silences: no inhibition, no other silence. Such an
// alert is active for a reader that does not honour those silences.
func (a Alert) SuppressedOnlyBy(silences map[string]bool) bool {
	if !a.Suppressed || len(a.InhibitedBy) > 0 || len(a.SilencedBy) == 0 {
		return false
	}
	for _, id := range a.SilencedBy {
		if !silences[id] {
			return false
		}
	}
	return true
}

// MaintenanceSilences lists every silence and keeps the scheduler's. (The
// server-side filter matches a silence's matchers exactly, value included,
// so it cannot select "any lease".)
func (a *alertmanagerClient) MaintenanceSilences(ctx context.Context) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	params := amsilence.NewGetSilencesParamsWithContext(ctx).WithTimeout(a.timeout).WithHTTPClient(a.hc)
	res, err := a.api.Silence.GetSilences(params)
	if err != nil {
		return nil, fmt.Errorf("reading Alertmanager silences: %w", err)
	}
	return maintenanceIDs(res.Payload), nil
}

func maintenanceIDs(in models.GettableSilences) map[string]bool {
	out := map[string]bool{}
	for _, s := range in {
		if s == nil || s.ID == nil {
			continue
		}
		for _, m := range s.Matchers {
			if m == nil || m.Name == nil {
				continue
			}
			equal := m.IsEqual == nil || *m.IsEqual // Alertmanager's default is equal
			if IsMaintenanceMatcher(*m.Name, equal, m.IsRegex != nil && *m.IsRegex) {
				out[*s.ID] = true
				break
			}
		}
	}
	return out
}
