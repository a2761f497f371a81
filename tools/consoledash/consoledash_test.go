package consoledash

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/upshift-io/upshift/libs/testenv"
)

// TestCommittedConsoleDashboardsAreCurrent: the console variant each chart
// ships is what the generator makes of its Grafana dashboard today, so an
// edited Grafana dashboard without `make generate` fails here.
func TestCommittedConsoleDashboardsAreCurrent(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := Pairs(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) < 6 {
		t.Fatalf("found %d Grafana dashboards under charts/, want one per component chart", len(pairs))
	}
	for grafana, console := range pairs {
		raw, err := os.ReadFile(grafana)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Convert(raw)
		if err != nil {
			t.Errorf("%s: %v", grafana, err)
			continue
		}
		got, err := os.ReadFile(console)
		if err != nil {
			t.Errorf("%s: %v (run make generate)", grafana, err)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%s is stale: run make generate", console)
		}
	}
}

// A Grafana dashboard with one panel of every type the charts use, a
// collapsed row holding one, and the variables they declare.
const sample = `{
  "title": "T", "uid": "t", "tags": ["upshift"], "time": {"from": "now-6h", "to": "now"}, "refresh": "30s",
  "templating": {"list": [
    {"name": "datasource", "type": "datasource", "query": "prometheus", "hide": 0},
    {"name": "job", "type": "query", "datasource": {"type": "prometheus", "uid": "${datasource}"},
     "query": {"query": "label_values(up{component=\"x\"}, job)", "refId": "job"}, "hide": 0}
  ]},
  "panels": [
    {"id": 1, "type": "row", "title": "Open", "collapsed": false, "panels": []},
    {"id": 2, "type": "timeseries", "title": "Rate", "gridPos": {"w": 12},
     "datasource": {"type": "prometheus", "uid": "${datasource}"},
     "targets": [{"expr": "rate(x_total{job=\"${job}\"}[5m])", "legendFormat": "{{pool}}", "refId": "A"}],
     "fieldConfig": {"defaults": {"unit": "ops", "custom": {"stacking": {"mode": "normal"}}}}},
    {"id": 3, "type": "stat", "title": "Leader", "gridPos": {"w": 4},
     "targets": [{"expr": "max(leader{job=\"$job\"})"}],
     "fieldConfig": {"defaults": {"noValue": "none", "mappings": [{"type": "value", "options": {"0": {"text": "No", "color": "red"}, "1": {"text": "Yes", "color": "green"}}}]}}},
    {"id": 4, "type": "stat", "title": "Phase", "gridPos": {"w": 6}, "options": {"textMode": "name"},
     "targets": [{"expr": "max by (name, phase) (phase) == 1", "legendFormat": "{{name}}: {{phase}}"}]},
    {"id": 5, "type": "row", "title": "Closed", "collapsed": true, "panels": [
      {"id": 6, "type": "bargauge", "title": "Progress", "gridPos": {"w": 24},
       "targets": [{"expr": "sum by (pool) (done) / sum by (pool) (all)", "legendFormat": "{{pool}}", "refId": "A"},
                   {"expr": "sum by (pool) (stuck)", "legendFormat": "{{pool}} stuck", "refId": "B"}],
       "fieldConfig": {"defaults": {"unit": "percentunit"}}},
      {"id": 7, "type": "state-timeline", "title": "States", "gridPos": {"w": 24},
       "targets": [{"expr": "max by (index, state) (s) == 1", "refId": "A"}]}
    ]}
  ]
}`

func TestConvertMapsEveryPanelToOneTheConsoleDraws(t *testing.T) {
	out, err := Convert([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Templating struct {
			List []map[string]any `json:"list"`
		} `json:"templating"`
		Panels []map[string]any `json:"panels"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Templating.List) != 1 || got.Templating.List[0]["name"] != "job" ||
		got.Templating.List[0]["query"] != `label_values(up{component="x"}, job)` || got.Templating.List[0]["datasource"] != nil {
		t.Errorf("variables: want job alone, its query a string, no datasource; got %v", got.Templating.List)
	}
	byID := map[float64]map[string]any{}
	var walk func([]map[string]any)
	walk = func(ps []map[string]any) {
		for _, p := range ps {
			byID[p["id"].(float64)] = p
			if _, ok := p["datasource"]; ok {
				t.Errorf("panel %v keeps a datasource: the console would look for a plugin of that name", p["title"])
			}
			var nested []map[string]any
			b, _ := json.Marshal(p["panels"])
			_ = json.Unmarshal(b, &nested)
			walk(nested)
		}
	}
	walk(got.Panels)
	want := map[float64]string{1: "row", 2: "graph", 3: "singlestat", 4: "table", 5: "row", 6: "table", 7: "graph"}
	for id, typ := range want {
		if p := byID[id]; p == nil || p["type"] != typ {
			t.Errorf("panel %v: want type %s, got %v", id, typ, p)
		}
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	checks := []struct{ what, got, want string }{
		{"graph query: ${job} becomes $job", js(byID[2]["targets"]), `[{"expr":"rate(x_total{job=\"$job\"}[5m])","legendFormat":"{{pool}}","refId":"A"}]`},
		{"graph unit and stacking", js([]any{byID[2]["yaxes"], byID[2]["stack"], byID[2]["span"]}), `[[{"format":"ops"},{"format":"short"}],true,6]`},
		{"singlestat mappings", js(byID[3]["valueMaps"]), `[{"op":"=","text":"No","value":"0"},{"op":"=","text":"Yes","value":"1"},{"op":"=","text":"none","value":"null"}]`},
		{"singlestat colours: 0 red, 1 green", js(byID[3]["options"]), `{"fieldOptions":{"thresholds":[{"color":"red","value":-0.5},{"color":"green","value":0.5}]}}`},
		{"a stat of names: label columns, the value hidden", js(byID[4]["styles"]), `[{"alias":"name","pattern":"name","type":"string"},{"alias":"phase","pattern":"phase","type":"string"},{"alias":"Value","pattern":"Value #A","type":"hidden","unit":"short"}]`},
		{"bargauge of two queries: one value column each", js(byID[6]["styles"]), `[{"alias":"pool","pattern":"pool","type":"string"},{"alias":"Value A","pattern":"Value #A","type":"number","unit":"percentunit"},{"alias":"stuck","pattern":"Value #B","type":"number","unit":"percentunit"}]`},
		{"collapsed row", js([]any{byID[5]["collapse"], byID[5]["showTitle"]}), `[true,true]`},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.what, c.got, c.want)
		}
	}
}

func TestConvertRefusesWhatTheConsoleCannotDraw(t *testing.T) {
	for name, c := range map[string]struct{ dashboard, err string }{
		"a panel type without a counterpart": {`{"panels": [{"type": "text", "title": "Notes", "targets": [{"expr": "up"}]}]}`, `type "text"`},
		"a table without a label to show":    {`{"panels": [{"type": "table", "title": "T", "targets": [{"expr": "sum(up)"}]}]}`, "groups by no label"},
		"a panel without a query":            {`{"panels": [{"type": "timeseries", "title": "Empty"}]}`, "no query"},
		"a custom variable":                  {`{"templating": {"list": [{"name": "v", "type": "custom", "query": "a,b"}]}}`, `type "custom"`},
	} {
		_, err := Convert([]byte(c.dashboard))
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: want an error containing %q, got %v", name, c.err, err)
		}
	}
}
