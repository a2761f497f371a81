package alertrules

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/testenv"
)

func TestCoverage(t *testing.T) {
	tests := []byte(`
rule_files: [other.yaml]
tests:
  - name: a
    alert_rule_test:
      - {eval_time: 1m, alertname: A, exp_alerts: [{exp_labels: {x: "1"}}]}
      - {eval_time: 0m, alertname: A}
      - {eval_time: 1m, alertname: B, exp_alerts: [{exp_labels: {x: "1"}}]}
      - {eval_time: 1m, alertname: C, exp_alerts: []}
`)
	got, err := Coverage([]string{"A", "B", "D"}, tests)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`rule_files is ["other.yaml"]: want [rules.yaml], the chart's rendered rules`,
		`test "a" checks C at 1m, an alert the chart does not have`,
		"B has no case where it does not fire",
		"D has no case where it fires",
		"D has no case where it does not fire",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := Coverage(nil, []byte("tests: {")); err == nil {
		t.Error("a test file that is not YAML: no error")
	}
}

// TestPromtoolFails: the real promtool, on a rule file that does not parse
// and on an expectation the rule does not meet, fails, and says why.
func TestPromtoolFails(t *testing.T) {
	promtool, err := framework.Promtool()
	if err != nil {
		t.Fatal(err)
	}
	rules := func(expr string) []byte {
		return []byte("groups:\n- name: g\n  rules:\n  - alert: Down\n    expr: '" + expr + "'\n    for: 5m\n    labels: {severity: warning}\n    annotations: {summary: '{{ $labels.job }} is down'}\n")
	}
	tests := func(job string) []byte {
		return []byte(`rule_files: [rules.yaml]
tests:
  - interval: 1m
    input_series:
      - {series: 'up{job="a"}', values: '0x10'}
    alert_rule_test:
      - {eval_time: 4m, alertname: Down}
      - eval_time: 5m
        alertname: Down
        exp_alerts:
          - exp_labels: {severity: warning, job: ` + job + `}
            exp_annotations: {summary: ` + job + ` is down}
`)
	}
	if out, err := RunPromtool(promtool, rules("up == 0"), tests("a")); err != nil {
		t.Fatalf("the passing case failed: %v\n%s", err, out)
	}
	if _, err := RunPromtool(promtool, rules("up == 0"), tests("b")); err == nil || !strings.Contains(err.Error(), "FAILED") {
		t.Errorf("an expectation the rule does not meet: %v", err)
	}
	if _, err := RunPromtool(promtool, rules("up =="), tests("a")); err == nil || !strings.Contains(err.Error(), "parse error") {
		t.Errorf("a rule that does not parse: %v", err)
	}
}

// TestPromtoolBinaryMatchesBuilder fails when the builder module's pinned
// Prometheus and the binary name the tests look for drift apart.
func TestPromtoolBinaryMatchesBuilder(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, mod := range []string{"build/promtool", "promql"} {
		gomod, err := os.ReadFile(filepath.Join(root, "tools", mod, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^(?:require)?\s+github\.com/prometheus/prometheus (v\S+)`).FindSubmatch(gomod)
		if m == nil {
			t.Fatalf("tools/%s/go.mod does not require github.com/prometheus/prometheus", mod)
		}
		if got, want := framework.PromtoolBinary, "promtool-"+string(m[1]); got != want {
			t.Errorf("the tests run %s, tools/%s pins %s", got, mod, want)
		}
	}
}
