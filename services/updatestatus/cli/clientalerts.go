package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/snapshot"
)

// Alerts are read the way `oc adm upgrade status` reads them, so that the
// client-side report has the same alert insights, or the same notice:
// from the Prometheus alerts API of the Thanos querier in
// openshift-monitoring, at the hosts its Route is admitted under, with the
// user's own credentials and CAs. The monitoring stack authenticates bearer
// tokens only, so a kubeconfig without one (client certificates) is not
// even tried. When the alerts cannot be read the report goes on without
// them, after oc's notice.

// The Route of the Thanos querier.
var thanosRoute = client.ObjectKey{Namespace: "openshift-monitoring", Name: "thanos-querier"}

var routeGVK = schema.GroupVersionKind{Group: "route.openshift.io", Version: "v1", Kind: "Route"}

// alertsRead is the outcome of reading the alerts: err is nil when they
// were read.
type alertsRead struct {
	alerts []assess.Alert
	err    error
}

// readAlerts reads the alerts through the Thanos querier's Route.
func readAlerts(ctx context.Context, cl clusterClients) alertsRead {
	if !hasBearerToken(cl.cfg) {
		return alertsRead{err: errors.New("the kubeconfig's credentials have no bearer token, which the monitoring API requires")}
	}
	hosts, err := routeHosts(ctx, cl.c)
	if err != nil {
		return alertsRead{err: err}
	}
	got, err := alertsFromHosts(ctx, hosts, cl.hc.Transport, cl.cfg.Timeout)
	if err != nil {
		return alertsRead{err: err}
	}
	return alertsRead{alerts: assess.FromAlerts(got)}
}

func hasBearerToken(cfg *rest.Config) bool {
	return cfg.BearerToken != "" || cfg.BearerTokenFile != ""
}

// routeHosts are the hosts the Thanos querier's Route is admitted under.
func routeHosts(ctx context.Context, c client.Reader) ([]string, error) {
	route := &unstructured.Unstructured{}
	route.SetGroupVersionKind(routeGVK)
	if err := c.Get(ctx, thanosRoute, route); err != nil {
		return nil, fmt.Errorf("cannot read the Route %s: %w", thanosRoute, err)
	}
	ingresses, _, _ := unstructured.NestedSlice(route.Object, "status", "ingress")
	var hosts []string
	for _, in := range ingresses {
		if m, ok := in.(map[string]any); ok {
			if h, ok := m["host"].(string); ok && h != "" {
				hosts = append(hosts, h)
			}
		}
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("the Route %s is not admitted under any host", thanosRoute)
	}
	return hosts, nil
}

// alertsFromHosts reads the alerts over HTTPS from the first of hosts that
// answers, over rt; the errors of all when none does.
func alertsFromHosts(ctx context.Context, hosts []string, rt http.RoundTripper, timeout time.Duration) ([]alerts.Alert, error) {
	var errs []string
	for _, host := range hosts {
		c, err := alerts.New(alerts.Config{URL: "https://" + host, API: alerts.Prometheus, Transport: rt, Timeout: timeout})
		if err == nil {
			var got []alerts.Alert
			if got, err = c.Alerts(ctx); err == nil {
				return got, nil
			}
		}
		errs = append(errs, host+": "+err.Error())
	}
	return nil, fmt.Errorf("cannot read the alerts from the Route %s: %s", thanosRoute, strings.Join(errs, "; "))
}

// alertsNotice is oc's notice when the alerts cannot be read.
func alertsNotice(err error) string { return snapshot.AlertsNotice(err) }
