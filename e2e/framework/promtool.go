package framework

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/libs/testenv"
)

// PromtoolBinary is the file name of promtool in the testbin folder, with
// the version of Prometheus it is built from (the builder module
// tools/build/promtool; TestPromtoolBinaryMatchesBuilder keeps the two in
// step).
const PromtoolBinary = "promtool-v0.316.0"

// Promtool returns the path of the promtool `make testbin` builds.
func Promtool() (string, error) {
	dir, err := testenv.TestBinDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, PromtoolBinary)
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s missing in %s: run `make testbin`", PromtoolBinary, dir)
	}
	return bin, nil
}

// RuleGroups returns the rule groups of every PrometheusRule the chart
// renders, as a Prometheus rule file (`groups:`): what the Prometheus
// Operator hands Prometheus, for promtool to load and test.
func (c *Chart) RuleGroups() ([]byte, error) {
	var groups []any
	for _, pr := range c.Kinds("PrometheusRule") {
		gs, found, err := unstructured.NestedSlice(pr.Object, "spec", "groups")
		if err != nil || !found {
			return nil, fmt.Errorf("PrometheusRule %s: no spec.groups (%v)", pr.GetName(), err)
		}
		groups = append(groups, gs...)
	}
	return yaml.Marshal(map[string]any{"groups": groups})
}

// Alerts returns the names of the chart's alerting rules, in order.
func (c *Chart) Alerts() []string {
	var out []string
	for _, r := range c.rules() {
		if name, _ := r.rule["alert"].(string); name != "" {
			out = append(out, name)
		}
	}
	return out
}
