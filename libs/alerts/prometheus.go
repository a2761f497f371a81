package alerts

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// prometheusClient reads /api/v1/alerts through client_golang's API client.
type prometheusClient struct {
	api     promv1.API
	timeout time.Duration
}

func newPrometheus(base *url.URL, hc *http.Client, timeout time.Duration) (*prometheusClient, error) {
	c, err := api.NewClient(api.Config{Address: base.String(), Client: hc})
	if err != nil {
		return nil, fmt.Errorf("alerts client for %s: %w", base, err)
	}
	return &prometheusClient{api: promv1.NewAPI(c), timeout: timeout}, nil
}

func (p *prometheusClient) Alerts(ctx context.Context) ([]Alert, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	res, err := p.api.Alerts(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading Prometheus alerts: %w", err)
	}
	return FromPrometheus(res.Alerts), nil
}

// FromPrometheus converts alerts as the Prometheus API returns them (the
// client library's own type, also how `oc adm inspect-alerts` output decodes).
func FromPrometheus(in []promv1.Alert) []Alert {
	out := make([]Alert, 0, len(in))
	for _, a := range in {
		out = append(out, Alert{
			Labels:      labelMap(a.Labels),
			Annotations: labelMap(a.Annotations),
			State:       string(a.State),
			ActiveAt:    a.ActiveAt,
		})
	}
	return out
}

func labelMap(ls model.LabelSet) map[string]string {
	m := make(map[string]string, len(ls))
	for k, v := range ls {
		m[string(k)] = string(v)
	}
	return m
}

// History reads which alerts fired in the past, from Prometheus's ALERTS
// series: only Prometheus (or the Thanos querier) keeps them; Alertmanager
// knows the alerts of now alone.
type History interface {
	// FiredCritical names the alerts among names that fired with severity
	// critical at any time between start and end, in Prometheus's order.
	FiredCritical(ctx context.Context, names []string, start, end time.Time) ([]string, error)
}

// FiredCritical asks what MUO asks after an upgrade: the highest value, over
// the upgrade's span, of the firing critical ALERTS of those names, summed by
// alert name, evaluated now with an offset back to the upgrade's end.
func (p *prometheusClient) FiredCritical(ctx context.Context, names []string, start, end time.Time) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	now := time.Now()
	span := max(end.Sub(start).Truncate(time.Second), time.Second)
	offset := max(now.Sub(end).Truncate(time.Second), 0)
	q := FiredCriticalQuery(names, span, offset)
	res, _, err := p.api.Query(ctx, q, now)
	if err != nil {
		return nil, fmt.Errorf("querying Prometheus for the alerts of the upgrade: %w", err)
	}
	vec, ok := res.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("querying Prometheus for the alerts of the upgrade: a %s, not a vector", res.Type())
	}
	var out []string
	for _, s := range vec {
		out = append(out, string(s.Metric[model.AlertNameLabel]))
	}
	return out, nil
}

// FiredCriticalQuery is MUO's query for the alerts of an upgrade that lasted
// span and ended offset ago.
func FiredCriticalQuery(names []string, span, offset time.Duration) string {
	return fmt.Sprintf(`sum by (alertname) (max_over_time(ALERTS{alertstate="firing",severity="critical",alertname=~"%s"}[%s] offset %s))`,
		strings.Join(names, "|"), model.Duration(span), model.Duration(offset))
}
