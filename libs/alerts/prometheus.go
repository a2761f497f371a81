package alerts

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
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
