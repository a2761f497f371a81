package chartmetrics

import (
	"encoding/json"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/upshift-io/upshift/e2e/framework"
)

// consolePanelTypes are the panel types the OpenShift console's dashboards
// draw, read from the console's monitoring plugin (openshift/monitoring-
// plugin, web/src/features/legacy-dashboards/components/LegacyDashboard.tsx:
// a row's panels are drawn in turn; of the others, only gauge,
// grafana-piechart-panel, graph, singlestat and table are, any other type
// is left out without a word). Kept here rather than taken from the
// generator, so the generator cannot vouch for itself.
var consolePanelTypes = []string{"row", "gauge", "grafana-piechart-panel", "graph", "singlestat", "table"}

type consolePanel struct {
	Type       string            `json:"type"`
	Title      string            `json:"title"`
	Datasource json.RawMessage   `json:"datasource"`
	Targets    []json.RawMessage `json:"targets"`
	Styles     []json.RawMessage `json:"styles"`
	Panels     []consolePanel    `json:"panels"`
}

// TestEveryConsoleDashboardPanelIsOneTheConsoleDraws renders every
// component chart with dashboard.openshiftConsole and reads every panel,
// rows' panels included, of the dashboard it writes for the console: each
// must be of a type the console draws, with what that type needs, and the
// console dashboard must keep every query of the Grafana one.
func TestEveryConsoleDashboardPanelIsOneTheConsoleDraws(t *testing.T) {
	components, _, err := framework.ChartDirs()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range components {
		chart, err := framework.RenderChart(name, "r", "upshift", "dashboard.enabled=true", "dashboard.openshiftConsole=true")
		if err != nil {
			t.Fatal(err)
		}
		var console, grafana []*unstructured.Unstructured
		for _, cm := range chart.Kinds("ConfigMap") {
			if cm.GetNamespace() == "openshift-config-managed" && cm.GetLabels()["console.openshift.io/dashboard"] == "true" {
				console = append(console, cm)
			} else if cm.GetLabels()["grafana_dashboard"] == "1" {
				grafana = append(grafana, cm)
			}
		}
		if len(console) != 1 || len(grafana) != 1 {
			t.Errorf("%s: %d console and %d Grafana dashboard ConfigMaps, want one of each", name, len(console), len(grafana))
			continue
		}
		data, _, _ := unstructured.NestedStringMap(console[0].Object, "data")
		if len(data) != 1 {
			t.Errorf("%s: the console ConfigMap has %d keys, want one dashboard", name, len(data))
		}
		panels := 0
		for key, text := range data {
			var dash struct {
				Title  string         `json:"title"`
				Panels []consolePanel `json:"panels"`
			}
			if err := json.Unmarshal([]byte(text), &dash); err != nil {
				t.Errorf("%s %s: %v", name, key, err)
				continue
			}
			if dash.Title == "" {
				t.Errorf("%s %s: no title: the console lists dashboards by it", name, key)
			}
			var walk func([]consolePanel)
			walk = func(ps []consolePanel) {
				for _, p := range ps {
					panels++
					switch {
					case !slices.Contains(consolePanelTypes, p.Type):
						t.Errorf("%s: panel %q is of type %q, which the console does not draw", name, p.Title, p.Type)
					case p.Type != "row" && len(p.Targets) == 0:
						t.Errorf("%s: panel %q has no query: the console draws nothing", name, p.Title)
					case p.Type == "table" && len(p.Styles) == 0:
						t.Errorf("%s: table %q has no styles: the console shows an error instead", name, p.Title)
					case len(p.Datasource) > 0:
						t.Errorf("%s: panel %q names a datasource: the console would look for a plugin of that name", name, p.Title)
					}
					walk(p.Panels)
				}
			}
			walk(dash.Panels)
		}
		if panels == 0 {
			t.Errorf("%s: the console dashboard has no panel", name)
		}
		// Every query of the Grafana dashboard is in the console one.
		queries := func(cm *unstructured.Unstructured) []string {
			qs, err := (&framework.Chart{Objects: []*unstructured.Unstructured{cm}}).MonitoringQueries()
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, q := range qs {
				out = append(out, q.Expr)
			}
			slices.Sort(out)
			return out
		}
		if g, c := queries(grafana[0]), queries(console[0]); !slices.Equal(g, c) {
			t.Errorf("%s: the console dashboard's queries differ from the Grafana one's:\nGrafana %q\nconsole %q", name, g, c)
		}
	}
}
