package chartmetrics

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/upshift-io/upshift/e2e/framework"
)

// registered reports whether the process's registry has a collector of that
// name: registering another one under the name fails if so.
func registered(name string) bool {
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "probe"})
	if err := ctrlmetrics.Registry.Register(probe); err != nil {
		return true
	}
	ctrlmetrics.Registry.Unregister(probe)
	return false
}

// registeredSeries: a registered name, or a histogram's _bucket, _sum or _count.
func registeredSeries(name string) bool {
	if registered(name) {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && registered(base) {
			return true
		}
	}
	return false
}

// exposed is what the process's registry would serve on /metrics now.
func exposed(t *testing.T) framework.Exposition {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	exp, err := framework.ParseExposition(buf.String())
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

// checkChartQueries renders a component's chart with its alerts and
// dashboard and reports every query that selects no metric, or a metric the
// process does not register, or (for a series exp has) a label that series
// lacks. It returns the number of alert and panel queries it checked.
func checkChartQueries(t *testing.T, chartName, release, component string, exp framework.Exposition) (alerts, panels int) {
	t.Helper()
	chart, err := framework.RenderChart(chartName, release, "upshift", "prometheusRule.enabled=true", "dashboard.enabled=true", "dashboard.openshiftConsole=true")
	if err != nil {
		t.Fatal(err)
	}
	queries, err := chart.MonitoringQueries()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := framework.ParseQueries(queries)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range parsed {
		switch {
		case strings.HasPrefix(q.Source, "PrometheusRule"):
			alerts++
		case strings.Contains(q.Source, " panel "):
			panels++
		}
		if q.Err != nil {
			t.Error(q.Err)
			continue
		}
		if len(q.Selectors) == 0 {
			t.Errorf("%s selects no metric: %s", q.Source, q.Expr)
		}
		for _, s := range q.Selectors {
			if !registeredSeries(s.Metric) {
				t.Errorf("%s queries %s, which the %s does not register", q.Source, s.Metric, component)
				continue
			}
			// The labels of a series the fixture produced.
			if _, ok := exp[s.Metric]; ok {
				for _, m := range exp.Missing([]framework.Selector{s}) {
					t.Errorf("%s: %s", q.Source, m)
				}
			}
		}
	}
	return alerts, panels
}
