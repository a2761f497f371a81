package framework

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Query is a PromQL expression a chart ships, and where it is.
type Query struct {
	Source string
	Expr   string
}

// chartRule is one rule of a PrometheusRule the chart renders.
type chartRule struct {
	owner string // the PrometheusRule's name
	rule  map[string]any
}

// rules lists the rules of every PrometheusRule the chart renders, in order.
func (c *Chart) rules() []chartRule {
	var out []chartRule
	for _, pr := range c.Kinds("PrometheusRule") {
		groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
		for _, g := range groups {
			group, _ := g.(map[string]any)
			rules, _ := group["rules"].([]any)
			for _, r := range rules {
				rule, _ := r.(map[string]any)
				out = append(out, chartRule{owner: pr.GetName(), rule: rule})
			}
		}
	}
	return out
}

// MonitoringQueries returns the PromQL of every rule of the chart's
// PrometheusRules and of every panel target and query variable of the
// Grafana dashboards in its ConfigMaps (data keys ending in .json). A
// dashboard that is not valid JSON is an error.
func (c *Chart) MonitoringQueries() ([]Query, error) {
	var out []Query
	for _, r := range c.rules() {
		name, _ := r.rule["alert"].(string)
		if name == "" {
			name, _ = r.rule["record"].(string)
		}
		expr, _ := r.rule["expr"].(string)
		if expr == "" {
			return nil, fmt.Errorf("PrometheusRule %s: rule %q has no expr", r.owner, name)
		}
		out = append(out, Query{Source: "PrometheusRule " + r.owner + " rule " + name, Expr: expr})
	}
	for _, cm := range c.Kinds("ConfigMap") {
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		for key, text := range data {
			if !strings.HasSuffix(key, ".json") {
				continue
			}
			var dash grafanaDashboard
			if err := json.Unmarshal([]byte(text), &dash); err != nil {
				return nil, fmt.Errorf("ConfigMap %s key %s: %w", cm.GetName(), key, err)
			}
			src := "dashboard " + cm.GetName() + "/" + key
			out = append(out, dash.queries(src)...)
		}
	}
	return out, nil
}

type grafanaDashboard struct {
	Panels     []grafanaPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // of a collapsed row
}

// grafanaIntervals are the interval variables Grafana replaces with a
// duration before it sends a query. The tests give them one, so that
// Prometheus's parser can read the panel; every other variable the
// dashboards use stands inside a label matcher's string.
var grafanaIntervals = regexp.MustCompile(`\$(?:__rate_interval|__interval|__range)\b|\$\{(?:__rate_interval|__interval|__range)\}`)

// labelValues is the Grafana variable query label_values(<selector>, <label>).
var labelValues = regexp.MustCompile(`^\s*(?:label_values|query_result)\((.*?)(?:,\s*[a-zA-Z_][a-zA-Z0-9_]*)?\)\s*$`)

func (d grafanaDashboard) queries(src string) []Query {
	var out []Query
	var walk func([]grafanaPanel)
	walk = func(panels []grafanaPanel) {
		for _, p := range panels {
			for _, t := range p.Targets {
				out = append(out, Query{Source: src + " panel " + p.Title, Expr: grafanaIntervals.ReplaceAllString(t.Expr, "5m")})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string
		if json.Unmarshal(v.Query, &q) != nil {
			var obj struct {
				Query string `json:"query"`
			}
			_ = json.Unmarshal(v.Query, &obj)
			q = obj.Query
		}
		if m := labelValues.FindStringSubmatch(q); m != nil {
			q = m[1]
		}
		out = append(out, Query{Source: src + " variable " + v.Name, Expr: q})
	}
	return out
}

// Scraper is an identity that scrapes a component's /metrics, the way
// OpenShift's Prometheus does: a bearer token, over HTTPS that verifies the
// component's certificate against a CA and the metrics Service's name.
type Scraper struct {
	// User is the identity's username, e.g. system:serviceaccount:ns:name.
	User  string
	Token string
	// CA signed the component's serving certificate (MetricsCert.CA); nil
	// trusts only the system's roots, which sign none of ours.
	CA *x509.CertPool
	// ServerName is the name the certificate must carry, whichever address
	// is dialled (a test dials 127.0.0.1).
	ServerName string
}

// Scrape GETs url with the scraper's token and returns the body; any status
// but 200 is an error.
func (s *Scraper) Scrape(url string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	if s.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: s.CA, ServerName: s.ServerName},
	}}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s as %s: %s: %s", url, s.User, resp.Status, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}
