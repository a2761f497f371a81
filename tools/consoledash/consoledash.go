// Package consoledash turns a chart's Grafana dashboard into the dashboard
// the OpenShift console draws (Observe > Dashboards). The Grafana JSON under
// charts/<chart>/dashboards/ is the one source; the console variant under
// dashboards/console/ is generated from it (`make generate`) and committed,
// so the chart ships it as a plain file.
//
// The console does not run Grafana: it reads the dashboard JSON itself and
// draws a few legacy panel types with its own components (PanelTypes). Each
// Grafana panel is mapped to the closest of them:
//
//   - timeseries and state-timeline become graph (unit as yaxes[0].format,
//     stacking as stack);
//   - stat and gauge that show one number become singlestat and gauge (unit
//     as format, value mappings as valueMaps, their colours as thresholds);
//   - table, bargauge and a stat that shows series names (textMode "name")
//     or has several queries become table: one column per label the query
//     groups by, one value column per query;
//   - row stays row.
//
// Panel and variable datasources are dropped (the console queries its own
// Prometheus; a datasource name would make it look for a plugin), as is the
// datasource variable. Any other panel type is an error, so a new one is
// mapped here before it ships.
package consoledash

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// PanelTypes are the panel types the console's dashboards draw: row holds
// panels; every other type is skipped without a word. They come from the
// console's monitoring plugin (openshift/monitoring-plugin, the legacy
// dashboards' Card component), which draws gauge, grafana-piechart-panel,
// graph, singlestat and table.
var PanelTypes = []string{"row", "graph", "singlestat", "gauge", "table", "grafana-piechart-panel"}

// Convert returns the console dashboard for a Grafana dashboard.
func Convert(grafana []byte) ([]byte, error) {
	var in dashboard
	if err := json.Unmarshal(grafana, &in); err != nil {
		return nil, err
	}
	out := map[string]any{
		"title":       in.Title,
		"uid":         in.UID,
		"description": in.Description,
		"tags":        in.Tags,
		"time":        in.Time,
		"refresh":     in.Refresh,
	}
	var vars []any
	for _, v := range in.Templating.List {
		switch v.Type {
		case "datasource":
			continue
		case "query":
			cv, err := variable(v)
			if err != nil {
				return nil, err
			}
			vars = append(vars, cv)
		default:
			return nil, fmt.Errorf("variable %s: type %q has no console counterpart", v.Name, v.Type)
		}
	}
	out["templating"] = map[string]any{"list": vars}
	panels, err := convertPanels(in.Panels)
	if err != nil {
		return nil, err
	}
	out["panels"] = panels
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

type dashboard struct {
	Title       string          `json:"title"`
	UID         string          `json:"uid"`
	Description string          `json:"description"`
	Tags        []string        `json:"tags"`
	Time        json.RawMessage `json:"time"`
	Refresh     string          `json:"refresh"`
	Panels      []panel         `json:"panels"`
	Templating  struct {
		List []templateVar `json:"list"`
	} `json:"templating"`
}

type templateVar struct {
	Name       string          `json:"name"`
	Label      string          `json:"label"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	IncludeAll bool            `json:"includeAll"`
	Hide       int             `json:"hide"`
}

type panel struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Collapsed   bool   `json:"collapsed"`
	GridPos     struct {
		W int `json:"w"`
	} `json:"gridPos"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
		RefID        string `json:"refId"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit       string   `json:"unit"`
			Decimals   *int     `json:"decimals"`
			NoValue    string   `json:"noValue"`
			Mappings   []valMap `json:"mappings"`
			Thresholds *struct {
				Steps []struct {
					Color string   `json:"color"`
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
			Custom struct {
				Stacking struct {
					Mode string `json:"mode"`
				} `json:"stacking"`
			} `json:"custom"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Options struct {
		TextMode string `json:"textMode"`
	} `json:"options"`
	Transformations []struct {
		ID      string `json:"id"`
		Options struct {
			ExcludeByName map[string]bool `json:"excludeByName"`
		} `json:"options"`
	} `json:"transformations"`
	Panels []panel `json:"panels"`
}

type valMap struct {
	Type    string `json:"type"`
	Options map[string]struct {
		Text  string `json:"text"`
		Color string `json:"color"`
	} `json:"options"`
}

// braced is Grafana's ${name} form of a variable; the console substitutes
// only $name.
var braced = regexp.MustCompile(`\$\{([a-zA-Z_][a-zA-Z0-9_]*)\}`)

func variable(v templateVar) (map[string]any, error) {
	// Grafana stores the query as a string or as {query: ...}.
	var q string
	if err := json.Unmarshal(v.Query, &q); err != nil {
		var obj struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &obj); err != nil {
			return nil, fmt.Errorf("variable %s: query: %w", v.Name, err)
		}
		q = obj.Query
	}
	return map[string]any{
		"name": v.Name, "label": v.Label, "type": "query", "query": braced.ReplaceAllString(q, "$$$1"),
		"includeAll": v.IncludeAll, "hide": v.Hide, "options": []any{},
	}, nil
}

func convertPanels(in []panel) ([]any, error) {
	var out []any
	for _, p := range in {
		c, err := convertPanel(p)
		if err != nil {
			return nil, fmt.Errorf("panel %q: %w", p.Title, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func convertPanel(p panel) (map[string]any, error) {
	out := map[string]any{"id": p.ID, "title": p.Title}
	if p.Description != "" {
		out["description"] = p.Description
	}
	if p.Type == "row" {
		nested, err := convertPanels(p.Panels)
		if err != nil {
			return nil, err
		}
		out["type"], out["showTitle"], out["collapse"], out["panels"] = "row", true, p.Collapsed, nonNil(nested)
		return out, nil
	}
	if len(p.Targets) == 0 {
		return nil, fmt.Errorf("no query")
	}
	// Grafana's grid is 24 columns wide, the console's 12.
	out["span"] = max(1, min(12, int(math.Round(float64(p.GridPos.W)/2))))
	var targets []any
	for i, t := range p.Targets {
		ref := t.RefID
		if ref == "" {
			ref = string(rune('A' + i))
		}
		targets = append(targets, map[string]any{"expr": braced.ReplaceAllString(t.Expr, "$$$1"), "legendFormat": t.LegendFormat, "refId": ref})
	}
	out["targets"] = targets
	d := p.FieldConfig.Defaults
	switch {
	case p.Type == "timeseries" || p.Type == "state-timeline":
		out["type"] = "graph"
		out["yaxes"] = []any{map[string]any{"format": or(d.Unit, "short")}, map[string]any{"format": "short"}}
		out["legend"] = map[string]any{"show": true}
		out["stack"] = d.Custom.Stacking.Mode != "" && d.Custom.Stacking.Mode != "none"
	case (p.Type == "stat" || p.Type == "gauge") && len(p.Targets) == 1 && p.Options.TextMode != "name":
		out["type"] = map[string]string{"stat": "singlestat", "gauge": "gauge"}[p.Type]
		out["format"] = or(d.Unit, "none")
		if d.Decimals != nil {
			out["decimals"] = *d.Decimals
		}
		maps, thresholds := valueMaps(d.Mappings, d.NoValue)
		if d.Thresholds != nil && len(thresholds) == 0 {
			for _, s := range d.Thresholds.Steps {
				// The console colours a value by the last threshold below
				// it; Grafana's base step has no value.
				v := -1e300
				if s.Value != nil {
					v = *s.Value
				}
				thresholds = append(thresholds, map[string]any{"color": s.Color, "value": v})
			}
		}
		if len(maps) > 0 {
			out["valueMaps"] = maps
		}
		if len(thresholds) > 0 {
			out["options"] = map[string]any{"fieldOptions": map[string]any{"thresholds": thresholds}}
		}
	case p.Type == "stat" || p.Type == "gauge" || p.Type == "table" || p.Type == "bargauge":
		styles, err := tableStyles(p)
		if err != nil {
			return nil, err
		}
		out["type"], out["styles"], out["transform"] = "table", styles, "table"
	default:
		return nil, fmt.Errorf("type %q has no console counterpart", p.Type)
	}
	return out, nil
}

// valueMaps turns Grafana's value mappings into the console's, and their
// colours into thresholds: the console colours a value by the last
// threshold strictly below it, so a whole number k gets its colour from a
// threshold at k-0.5.
func valueMaps(mappings []valMap, noValue string) (maps, thresholds []any) {
	type step struct {
		at    float64
		color string
	}
	var steps []step
	for _, m := range mappings {
		if m.Type != "value" {
			continue
		}
		keys := make([]string, 0, len(m.Options))
		for k := range m.Options {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			o := m.Options[k]
			maps = append(maps, map[string]any{"op": "=", "value": k, "text": o.Text})
			if n, err := strconv.Atoi(k); err == nil && o.Color != "" {
				steps = append(steps, step{float64(n) - 0.5, o.Color})
			}
		}
	}
	if noValue != "" {
		maps = append(maps, map[string]any{"op": "=", "value": "null", "text": noValue})
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].at < steps[j].at })
	for _, s := range steps {
		thresholds = append(thresholds, map[string]any{"color": s.color, "value": s.at})
	}
	return maps, thresholds
}

// groupBy finds the labels of an expression's first "by (...)": the labels
// every series of the result has, hence the table's label columns.
var groupBy = regexp.MustCompile(`\bby\s*\(([^)]*)\)`)

// placeholder is a label in a legend format, {{label}}.
var placeholder = regexp.MustCompile(`\{\{\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\}\}`)

// tableStyles are the console table's columns: the labels the queries
// group by, then one value column per query ("Value #<refId>"), named by
// its legend when that is plain text. A value Grafana hides (organize's
// excludeByName), or that only says a series exists (textMode "name"), is
// hidden.
func tableStyles(p panel) ([]any, error) {
	var labels []string
	seen := map[string]bool{}
	for _, t := range p.Targets {
		m := groupBy.FindStringSubmatch(t.Expr)
		if m == nil {
			return nil, fmt.Errorf("query %q groups by no label: the console table would have no label column", t.Expr)
		}
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !seen[l] {
				seen[l] = true
				labels = append(labels, l)
			}
		}
	}
	var styles []any
	for _, l := range labels {
		styles = append(styles, map[string]any{"alias": l, "pattern": l, "type": "string"})
	}
	hidden := p.Options.TextMode == "name"
	for _, tr := range p.Transformations {
		if tr.ID == "organize" && tr.Options.ExcludeByName["Value"] {
			hidden = true
		}
	}
	d := p.FieldConfig.Defaults
	for i, t := range p.Targets {
		ref := t.RefID
		if ref == "" {
			ref = string(rune('A' + i))
		}
		// The legend's plain words name the column ("{{pool}} degraded":
		// degraded); the labels have columns of their own.
		alias := strings.Trim(placeholder.ReplaceAllString(t.LegendFormat, ""), " :/-,")
		if !strings.ContainsFunc(alias, unicode.IsLetter) {
			alias = "Value"
			if len(p.Targets) > 1 {
				alias += " " + ref
			}
		}
		style := map[string]any{"alias": alias, "pattern": "Value #" + ref, "type": "number", "unit": or(d.Unit, "short")}
		if d.Decimals != nil {
			style["decimals"] = *d.Decimals
		}
		if hidden {
			style["type"] = "hidden"
		}
		styles = append(styles, style)
	}
	return styles, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func nonNil(s []any) []any {
	if s == nil {
		return []any{}
	}
	return s
}

// Pairs lists every chart's Grafana dashboard under root and the path of
// its console variant.
func Pairs(root string) (map[string]string, error) {
	grafana, err := filepath.Glob(filepath.Join(root, "charts", "*", "dashboards", "*.json"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, g := range grafana {
		out[g] = filepath.Join(filepath.Dir(g), "console", filepath.Base(g))
	}
	return out, nil
}

// WriteAll writes the console variant of every chart's Grafana dashboard
// under root and returns the files it wrote.
func WriteAll(root string) ([]string, error) {
	pairs, err := Pairs(root)
	if err != nil {
		return nil, err
	}
	var written []string
	for g, c := range pairs {
		raw, err := os.ReadFile(g)
		if err != nil {
			return nil, err
		}
		out, err := Convert(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g, err)
		}
		if err := os.MkdirAll(filepath.Dir(c), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(c, out, 0o644); err != nil {
			return nil, err
		}
		written = append(written, c)
	}
	sort.Strings(written)
	return written, nil
}
