// Package alertrules unit-tests the charts' alerting rules with Prometheus's
// own rule engine: each chart's PrometheusRule, rendered by helm as it is
// installed, is loaded by promtool (built from Prometheus's module by `make
// testbin`), and `promtool test rules` runs the chart's test file
// testdata/<chart>.yaml against it: series in, the alerts expected at given
// evaluation times out, labels and annotations included.
//
// A rule that does not parse fails the load; an alert of the chart with no
// case where it fires, or none where it stays quiet, fails the coverage
// check before promtool runs.
package alertrules

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"sigs.k8s.io/yaml"
)

// RulesFile is the name the test files give the rendered rules in their
// rule_files: the test writes the chart's rules under it, beside the file.
const RulesFile = "rules.yaml"

// testFile is the part of promtool's unit-test format the coverage check
// reads; promtool reads the rest.
type testFile struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name       string `json:"name"`
		AlertTests []struct {
			EvalTime  string `json:"eval_time"`
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// Coverage lists what the test file lacks for the chart's alerts: an alert
// with no case where it fires or none where it does not, a case for an alert
// the chart does not have (a typo would test nothing), and rule files other
// than the rendered chart's.
func Coverage(alerts []string, raw []byte) ([]string, error) {
	var f testFile
	if err := yaml.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("reading the test file: %w", err)
	}
	var out []string
	if !slices.Equal(f.RuleFiles, []string{RulesFile}) {
		out = append(out, fmt.Sprintf("rule_files is %q: want [%s], the chart's rendered rules", f.RuleFiles, RulesFile))
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tg := range f.Tests {
		for _, at := range tg.AlertTests {
			if !slices.Contains(alerts, at.Alertname) {
				out = append(out, fmt.Sprintf("test %q checks %s at %s, an alert the chart does not have", tg.Name, at.Alertname, at.EvalTime))
				continue
			}
			if len(at.ExpAlerts) > 0 {
				fires[at.Alertname] = true
			} else {
				quiet[at.Alertname] = true
			}
		}
	}
	for _, a := range alerts {
		if !fires[a] {
			out = append(out, a+" has no case where it fires")
		}
		if !quiet[a] {
			out = append(out, a+" has no case where it does not fire")
		}
	}
	return out, nil
}

// RunPromtool writes rules as RulesFile beside a copy of the test file and
// runs `promtool test rules` on it; the error carries promtool's report.
func RunPromtool(promtool string, rules, tests []byte) (string, error) {
	dir, err := os.MkdirTemp("", "upshift-alertrules-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, RulesFile), rules, 0o600); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "tests.yaml"), tests, 0o600); err != nil {
		return "", err
	}
	var out bytes.Buffer
	cmd := exec.Command(promtool, "test", "rules", "tests.yaml")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("promtool test rules: %w\n%s", err, out.String())
	}
	return out.String(), nil
}
