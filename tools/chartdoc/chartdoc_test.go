package chartdoc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// The rows below are written by hand from testdata/demo's files.
func TestRows(t *testing.T) {
	got, err := Rows("testdata/demo")
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		// A $ref is one value, described by the referring schema.
		{Key: "alert", Type: "object", Default: "`{\"for\":\"5m\",\"severity\":\"critical\"}`", Description: "Severity and for-duration."},
		// A group with a comment gets its own row, and covers its values.
		{Key: "image", Type: "object", Description: "The container image."},
		{Key: "image.digest", Type: "string", Default: "`\"\"`", Description: "sha256:<hex> | none"},
		{Key: "image.repository", Type: "string", Default: "`\"example.com/demo\"`"},
		// Only the paragraph right above the key is its comment.
		{Key: "logLevel", Type: "one of `\"debug\"`, `\"info\"`", Default: "`\"info\"`", Description: "Log verbosity."},
		{Key: "replicas", Type: "integer", Default: "`2`", Description: "How many copies run."},
		{Key: "secrets", Type: "array of object", Default: "`[]`", Description: "Pull secrets."},
		// Not in values.yaml: the schema's default.
		{Key: "timeout", Type: "integer or string", Default: "`\"5s\"`", Description: "Bound of a call."},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rows (-want +got):\n%s", d)
	}
}

func TestGenerate(t *testing.T) {
	out, err := Generate("testdata/demo")
	if err != nil {
		t.Fatal(err)
	}
	page := string(out)
	for _, want := range []string{
		"# demo\n\nA chart for the generator's test.\n",
		"Installs on Kubernetes `>=1.29.0-0`",
		"## What it installs\n\nNothing at all.\n",
		"helm install demo charts/demo ",
		"--set image.digest=sha256:<digest of demo>",
		// Escaped for the table: a | ends a cell, <hex> would be a tag.
		"| `image.digest` | string | `\"\"` | sha256:&lt;hex&gt; \\| none |\n",
		"| `image` | object | — | The container image. |\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	if strings.Index(page, "| `alert`") > strings.Index(page, "| `timeout`") {
		t.Error("rows are not sorted by key")
	}
}

func TestUndocumentedValueIsAnError(t *testing.T) {
	_, err := Generate("testdata/undocumented")
	if err == nil {
		t.Fatal("a chart with undocumented values generated a README")
	}
	for _, key := range []string{"value b ", "value c.d "} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("the error does not name %q: %v", key, err)
		}
	}
	if strings.Contains(err.Error(), "value a ") {
		t.Errorf("a documented value reported: %v", err)
	}
}

// Every chart of the repository generates, and every key its values.yaml
// sets is in its table: nothing an administrator can set is left out.
func TestRepositoryCharts(t *testing.T) {
	charts, err := filepath.Glob("../../charts/*/Chart.yaml")
	if err != nil || len(charts) == 0 {
		t.Fatalf("no charts found: %v", err)
	}
	for _, c := range charts {
		dir := filepath.Dir(c)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			rows, err := Rows(dir)
			if err != nil {
				t.Fatal(err)
			}
			keys := map[string]bool{}
			for _, r := range rows {
				if r.Default != "" { // a value, not a group's heading
					keys[r.Key] = true
				}
			}
			raw, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var values map[string]any
			if err := yaml.Unmarshal(raw, &values); err != nil {
				t.Fatal(err)
			}
			for _, k := range leaves("", values) {
				if !keys[k] && !coveredByRow(k, keys) {
					t.Errorf("values.yaml sets %s, which the README does not list", k)
				}
			}
		})
	}
}

// leaves are the keys of a values tree down to non-map values.
func leaves(prefix string, m map[string]any) []string {
	var out []string
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			out = append(out, leaves(key, sub)...)
			continue
		}
		out = append(out, key)
	}
	return out
}

// coveredByRow: a row shows an enclosing value whole (a map such as labels,
// or an alert's severity and for), or the key is an empty group whose
// values have rows (issuerRef: {}).
func coveredByRow(key string, rows map[string]bool) bool {
	for i := strings.LastIndex(key, "."); i > 0; i = strings.LastIndex(key[:i], ".") {
		if rows[key[:i]] {
			return true
		}
	}
	for r := range rows {
		if strings.HasPrefix(r, key+".") {
			return true
		}
	}
	return false
}
