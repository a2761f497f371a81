package testenv_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/go-openapi/strfmt"
	amclient "github.com/prometheus/alertmanager/api/v2/client"
	amalert "github.com/prometheus/alertmanager/api/v2/client/alert"
	amsilence "github.com/prometheus/alertmanager/api/v2/client/silence"
	"github.com/prometheus/alertmanager/api/v2/models"

	"github.com/upshift-io/upshift/libs/testenv"
)

// TestAlertmanagerBinaryMatchesBuilder fails when the builder module's pinned
// version and the binary name testenv looks for drift apart.
func TestAlertmanagerBinaryMatchesBuilder(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "tools", "build", "alertmanager", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^require github\.com/prometheus/alertmanager (v\S+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("tools/build/alertmanager/go.mod does not require github.com/prometheus/alertmanager on a require line")
	}
	if got, want := testenv.AlertmanagerBinary, "alertmanager-"+string(m[1]); got != want {
		t.Fatalf("testenv looks for %s, make testbin builds %s", got, want)
	}
}

// TestStartAlertmanager starts the real Alertmanager, posts an alert and a
// silence over API v2, and sees the alert silenced: the server tests of the
// silence client and the alert checks rely on exactly this.
func TestStartAlertmanager(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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
	alert := &models.PostableAlert{
		Alert:    models.Alert{Labels: models.LabelSet{"alertname": "TestAlert", "severity": "warning", "namespace": "openshift-etcd"}},
		StartsAt: start, EndsAt: end,
	}
	if _, err := api.Alert.PostAlerts(amalert.NewPostAlertsParamsWithContext(ctx).WithAlerts(models.PostableAlerts{alert})); err != nil {
		t.Fatalf("posting an alert: %v", err)
	}

	id := postSilence(ctx, t, api, "TestAlert", "silence for the testenv self-test", start, end)
	got, err := api.Silence.GetSilence(amsilence.NewGetSilenceParamsWithContext(ctx).WithSilenceID(strfmt.UUID(id)))
	if err != nil {
		t.Fatalf("reading the silence back: %v", err)
	}
	if s := *got.Payload.Status.State; s != models.SilenceStatusStateActive {
		t.Fatalf("silence state %s, want active", s)
	}

	// Alertmanager applies silences to alerts asynchronously: poll its
	// answer (the thing under test), with a deadline.
	deadline := time.Now().Add(30 * time.Second)
	for {
		alerts, err := api.Alert.GetAlerts(amalert.NewGetAlertsParamsWithContext(ctx))
		if err != nil {
			t.Fatalf("listing alerts: %v", err)
		}
		if len(alerts.Payload) == 1 && *alerts.Payload[0].Status.State == models.AlertStatusStateSuppressed {
			if ids := alerts.Payload[0].Status.SilencedBy; len(ids) != 1 || ids[0] != id {
				t.Fatalf("alert silenced by %v, want [%s]", ids, id)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alert not silenced after 30s: %d alerts, first %+v", len(alerts.Payload), alerts.Payload)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAlertmanagerRestartKeepsSilences restarts Alertmanager as the
// whole-system suite does and reads back a silence posted before: the same
// URL answers and the silence is still there, as a real Alertmanager's is
// after a rollout.
func TestAlertmanagerRestartKeepsSilences(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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
	start, end := strfmt.DateTime(now), strfmt.DateTime(now.Add(time.Hour))
	comment := "kept across a restart"
	id := postSilence(ctx, t, api, "Restarted", comment, start, end)
	url := am.URL
	if err := am.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if am.URL != url {
		t.Fatalf("URL after the restart %s, want %s", am.URL, url)
	}
	got, err := api.Silence.GetSilence(amsilence.NewGetSilenceParamsWithContext(ctx).WithSilenceID(strfmt.UUID(id)))
	if err != nil {
		t.Fatalf("reading the silence after the restart: %v", err)
	}
	if c := *got.Payload.Comment; c != comment {
		t.Fatalf("silence comment %q after the restart, want %q", c, comment)
	}
}

// postSilence silences alertname from start to end, as testenv, and returns
// the silence's ID.
func postSilence(ctx context.Context, t *testing.T, api *amclient.AlertmanagerAPI, alertname, comment string, start, end strfmt.DateTime) string {
	t.Helper()
	name, isRegex, isEqual, createdBy := "alertname", false, true, "testenv"
	res, err := api.Silence.PostSilences(amsilence.NewPostSilencesParamsWithContext(ctx).WithSilence(&models.PostableSilence{Silence: models.Silence{
		Matchers: models.Matchers{{Name: &name, Value: &alertname, IsRegex: &isRegex, IsEqual: &isEqual}},
		StartsAt: &start, EndsAt: &end, CreatedBy: &createdBy, Comment: &comment,
	}}))
	if err != nil {
		t.Fatalf("posting a silence: %v", err)
	}
	if res.Payload.SilenceID == "" {
		t.Fatal("Alertmanager returned no silence ID")
	}
	return res.Payload.SilenceID
}
