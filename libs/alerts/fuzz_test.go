package alerts

import (
	"encoding/json"
	"testing"

	"github.com/prometheus/alertmanager/api/v2/models"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// FuzzAlertmanagerPayloads feeds any bytes as the bodies of Alertmanager's
// GET /api/v2/alerts and GET /api/v2/silences (what the API client decodes
// them into) and checks what the health gates rely on: no panic; one Alert
// per alert; the silences kept are exactly those with the scheduler's lease
// marker; an alert counts as suppressed only by those silences only when
// Alertmanager says it is suppressed, by silences alone, each of them kept.
func FuzzAlertmanagerPayloads(f *testing.F) {
	f.Add([]byte(`[{"labels":{"alertname":"KubeNodeNotReady","severity":"critical"},"annotations":{"summary":"s"},"startsAt":"2026-11-29T04:00:00Z","endsAt":"2026-11-29T05:00:00Z","updatedAt":"2026-11-29T04:00:00Z","fingerprint":"f1","receivers":[{"name":"r"}],"status":{"state":"suppressed","silencedBy":["s1"],"inhibitedBy":[]}}]`),
		[]byte(`[{"id":"s1","matchers":[{"name":"severity","value":"critical","isRegex":false,"isEqual":true},{"name":"upshift_lease","value":"4.16.2/workers","isRegex":false,"isEqual":false}],"startsAt":"2026-11-29T04:00:00Z","endsAt":"2026-11-29T06:00:00Z","createdBy":"upshift","comment":"c","status":{"state":"active"}}]`))
	f.Add([]byte(`[{"labels":{"alertname":"A"},"status":{"state":"suppressed","silencedBy":["s1","s2"],"inhibitedBy":["f9"]}},null]`),
		[]byte(`[{"id":"s2","matchers":[{"name":"upshift_lease","value":"x","isRegex":true}]},{"matchers":[]},null]`))
	f.Add([]byte(`[{"labels":{},"status":{"state":"active"}}]`), []byte(`[{"id":"s3","matchers":[{"name":"upshift_lease","value":"x"}]}]`))
	f.Fuzz(func(t *testing.T, alertsBody, silencesBody []byte) {
		var in models.GettableAlerts
		var sil models.GettableSilences
		if json.Unmarshal(alertsBody, &in) != nil || json.Unmarshal(silencesBody, &sil) != nil {
			return
		}
		ids := maintenanceIDs(sil)
		for _, s := range sil {
			if s == nil || s.ID == nil {
				continue
			}
			marked := false
			for _, m := range s.Matchers {
				if m != nil && m.Name != nil && *m.Name == MaintenanceLeaseLabel && m.IsEqual != nil && !*m.IsEqual && (m.IsRegex == nil || !*m.IsRegex) {
					marked = true
				}
			}
			if ids[*s.ID] != marked && !(ids[*s.ID] && duplicateID(sil, *s.ID)) {
				t.Fatalf("silence %s kept=%v, marked=%v", *s.ID, ids[*s.ID], marked)
			}
		}
		out := FromAlertmanager(in)
		nonNil := 0
		for _, a := range in {
			if a != nil {
				nonNil++
			}
		}
		if len(out) != nonNil {
			t.Fatalf("%d alerts in, %d out", nonNil, len(out))
		}
		for _, a := range out {
			if !a.SuppressedOnlyBy(ids) {
				continue
			}
			if !a.Suppressed || len(a.InhibitedBy) > 0 || len(a.SilencedBy) == 0 {
				t.Fatalf("suppressed only by maintenance silences, but %+v", a)
			}
			for _, id := range a.SilencedBy {
				if !ids[id] {
					t.Fatalf("silence %s is not the scheduler's: %+v", id, a)
				}
			}
		}
	})
}

// duplicateID: two silences share an ID (a malformed body): one marked
// copy keeps the ID.
func duplicateID(sil models.GettableSilences, id string) bool {
	n := 0
	for _, s := range sil {
		if s != nil && s.ID != nil && *s.ID == id {
			n++
		}
	}
	return n > 1
}

// FuzzPrometheusAlerts feeds any bytes as the body of Prometheus's (or the
// Thanos querier's) GET /api/v1/alerts and checks what the health gates
// rely on: no panic; one Alert per alert, with its labels, annotations and
// state as sent.
func FuzzPrometheusAlerts(f *testing.F) {
	f.Add([]byte(`{"status":"success","data":{"alerts":[{"labels":{"alertname":"KubeNodeNotReady","severity":"critical"},"annotations":{"summary":"s"},"state":"firing","activeAt":"2026-11-29T04:00:00Z","value":"1e+00"}]}}`))
	f.Add([]byte(`{"status":"success","data":{"alerts":[{"labels":{},"state":"pending"},{"labels":{"a":""},"annotations":null}]}}`))
	f.Add([]byte(`{"status":"success","data":{"alerts":null}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var resp struct {
			Data promv1.AlertsResult `json:"data"`
		}
		if json.Unmarshal(body, &resp) != nil {
			return
		}
		in := resp.Data.Alerts
		out := FromPrometheus(in)
		if len(out) != len(in) {
			t.Fatalf("%d alerts in, %d out", len(in), len(out))
		}
		for i, a := range out {
			if len(a.Labels) != len(in[i].Labels) || len(a.Annotations) != len(in[i].Annotations) || a.State != string(in[i].State) {
				t.Fatalf("alert %d: %+v from %+v", i, a, in[i])
			}
			for k, v := range in[i].Labels {
				if a.Labels[string(k)] != string(v) {
					t.Fatalf("alert %d: label %s = %q, sent %q", i, k, a.Labels[string(k)], v)
				}
			}
		}
	})
}
