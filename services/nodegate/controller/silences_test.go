package controller

import (
	"context"
	"testing"
	"time"

	"github.com/go-openapi/strfmt"
	amalert "github.com/prometheus/alertmanager/api/v2/client/alert"
	amsilence "github.com/prometheus/alertmanager/api/v2/client/silence"
	"github.com/prometheus/alertmanager/api/v2/models"

	. "github.com/onsi/gomega"

	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/testenv"
)

// TestMaintenanceSilencesFromAlertmanager reads, from the real
// Alertmanager, an alert the upgrade-scheduler silenced (a silence carrying
// its lease marker) and one a person silenced: the reconciler finds the
// scheduler's silence, and only the first alert is suppressed by it alone.
func TestMaintenanceSilencesFromAlertmanager(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	am, err := testenv.StartAlertmanager(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer am.Stop()
	api, err := am.API()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	start, end := strfmt.DateTime(now.Add(-time.Minute)), strfmt.DateTime(now.Add(time.Hour))
	var posted models.PostableAlerts
	for _, name := range []string{"KubeNodeNotReady", "KnownIssue"} {
		posted = append(posted, &models.PostableAlert{Alert: models.Alert{Labels: models.LabelSet{"alertname": name}}, StartsAt: start, EndsAt: end})
	}
	if _, err := api.Alert.PostAlerts(amalert.NewPostAlertsParamsWithContext(ctx).WithAlerts(posted)); err != nil {
		t.Fatal(err)
	}
	silenceOf := func(by string, matchers ...*models.Matcher) string {
		comment := "test"
		res, err := api.Silence.PostSilences(amsilence.NewPostSilencesParamsWithContext(ctx).WithSilence(&models.PostableSilence{
			Silence: models.Silence{Matchers: matchers, StartsAt: &start, EndsAt: &end, CreatedBy: &by, Comment: &comment}}))
		if err != nil {
			t.Fatal(err)
		}
		return res.Payload.SilenceID
	}
	matcher := func(name, value string, equal, regex bool) *models.Matcher {
		return &models.Matcher{Name: &name, Value: &value, IsEqual: &equal, IsRegex: &regex}
	}
	// As the scheduler writes its worker lease: everything in the platform
	// namespaces... here every alert, plus its two markers.
	scheduler := silenceOf("managed-upgrade-operator", matcher("alertname", ".+", true, true),
		matcher(alerts.MaintenanceOwnerLabel, "uid-1", false, false), matcher(alerts.MaintenanceLeaseLabel, "4.16.2/workers", false, false))
	person := silenceOf("sre", matcher("alertname", "KnownIssue", true, false))

	client, err := alerts.New(alerts.Config{URL: am.URL, API: alerts.Alertmanager})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Alerts: client}
	g := NewWithT(t)
	// Alertmanager marks an alert silenced when it is next asked about it.
	var as []alerts.Alert
	g.Eventually(func(g Gomega) {
		as, err = client.Alerts(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(as).To(HaveEach(HaveField("Suppressed", BeTrue())))
		g.Expect(as).To(HaveLen(2))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	maintenance, err := r.maintenanceSilences(ctx, as, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(maintenance).To(Equal(map[string]bool{scheduler: true}), "the person's silence %s is not the scheduler's", person)
	gating := map[string]bool{}
	for _, a := range as {
		gating[a.Name()] = a.SuppressedOnlyBy(maintenance)
	}
	g.Expect(gating).To(Equal(map[string]bool{"KubeNodeNotReady": true, "KnownIssue": false}))
}
