package alertrules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/upshift-io/upshift/e2e/framework"
)

// The charts are rendered as installed with their defaults, as release
// <chart> in this namespace: the test files' job and namespace labels follow.
const namespace = "upshift"

// TestChartAlerts runs every component chart's alert unit tests.
func TestChartAlerts(t *testing.T) {
	promtool, err := framework.Promtool()
	if err != nil {
		t.Fatal(err)
	}
	components, _, err := framework.ChartDirs()
	if err != nil {
		t.Fatal(err)
	}
	withTests := map[string]bool{}
	for _, chart := range components {
		t.Run(chart, func(t *testing.T) {
			rendered, err := framework.RenderChart(chart, chart, namespace, "prometheusRule.enabled=true")
			if err != nil {
				t.Fatal(err)
			}
			alerts := rendered.Alerts()
			raw, err := os.ReadFile(filepath.Join("testdata", chart+".yaml"))
			if os.IsNotExist(err) && len(alerts) == 0 {
				return
			}
			if err != nil {
				t.Fatalf("chart %s has %d alerts and no test file: %v", chart, len(alerts), err)
			}
			withTests[chart] = true
			problems, err := Coverage(alerts, raw)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("testdata/%s.yaml: %s", chart, p)
			}
			rules, err := rendered.RuleGroups()
			if err != nil {
				t.Fatal(err)
			}
			out, err := RunPromtool(promtool, rules, raw)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d alerts: %s", len(alerts), strings.TrimSpace(out))
		})
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, f := range files {
		if chart := strings.TrimSuffix(filepath.Base(f), ".yaml"); !withTests[chart] {
			t.Errorf("%s tests no chart's alerts", f)
		}
	}
}
