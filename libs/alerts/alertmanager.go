package alerts

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	httptransport "github.com/go-openapi/runtime/client"
	"github.com/go-openapi/strfmt"
	amclient "github.com/prometheus/alertmanager/api/v2/client"
	amalert "github.com/prometheus/alertmanager/api/v2/client/alert"
	"github.com/prometheus/alertmanager/api/v2/models"
)

// alertmanagerClient reads /api/v2/alerts through Alertmanager's generated
// API v2 client.
type alertmanagerClient struct {
	api     *amclient.AlertmanagerAPI
	hc      *http.Client
	timeout time.Duration
}

// newAlertmanager serves base, the URL in front of /api/v2 (a path prefix,
// such as a proxy's, is kept).
func newAlertmanager(base *url.URL, hc *http.Client, timeout time.Duration) *alertmanagerClient {
	tr := httptransport.NewWithClient(base.Host, base.Path+amclient.DefaultBasePath, []string{base.Scheme}, hc)
	return &alertmanagerClient{api: amclient.New(tr, strfmt.Default), hc: hc, timeout: timeout}
}

func (a *alertmanagerClient) Alerts(ctx context.Context) ([]Alert, error) {
	params := amalert.NewGetAlertsParamsWithContext(ctx).WithTimeout(a.timeout).WithHTTPClient(a.hc)
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	params.SetContext(ctx)
	res, err := a.api.Alert.GetAlerts(params)
	if err != nil {
		return nil, fmt.Errorf("reading Alertmanager alerts: %w", err)
	}
	return FromAlertmanager(res.Payload), nil
}

// FromAlertmanager converts alerts as Alertmanager's API v2 returns them.
func FromAlertmanager(in models.GettableAlerts) []Alert {
	out := make([]Alert, 0, len(in))
	for _, a := range in {
		if a == nil {
			continue
		}
		al := Alert{Labels: map[string]string(a.Labels), Annotations: map[string]string(a.Annotations), State: StateFiring}
		if a.StartsAt != nil {
			al.ActiveAt = time.Time(*a.StartsAt)
		}
		if a.Status != nil && a.Status.State != nil {
			al.Suppressed = *a.Status.State == models.AlertStatusStateSuppressed
		}
		if a.Status != nil {
			al.SilencedBy, al.InhibitedBy = nonEmpty(a.Status.SilencedBy), nonEmpty(a.Status.InhibitedBy)
		}
		out = append(out, al)
	}
	return out
}

// nonEmpty is nil for an empty list: Alertmanager sends [] for none.
func nonEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
