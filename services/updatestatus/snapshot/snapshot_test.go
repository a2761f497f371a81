package snapshot

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Minimal valid contents of each file, in the shapes `oc get -o yaml` writes.
const (
	cvSingle = `apiVersion: config.openshift.io/v1
kind: ClusterVersion
metadata: {name: version}
status:
  desired: {version: 4.18.1}
  conditions:
  - {type: Progressing, status: "True", lastTransitionTime: "2025-06-01T10:00:00Z"}
  - {type: Failing, status: "False", lastTransitionTime: "2025-06-01T10:05:00Z"}
`
	coVList = `apiVersion: v1
kind: List
items:
- apiVersion: config.openshift.io/v1
  kind: ClusterOperator
  metadata: {name: etcd}
  status:
    conditions:
    - {type: Available, status: "True", lastTransitionTime: "2025-06-01T10:07:00Z"}
- apiVersion: config.openshift.io/v1
  kind: ClusterOperator
  metadata: {name: network}
`
	mcpTyped = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPoolList
items:
- metadata: {name: master}
- metadata: {name: worker}
`
	mcEmptyList = `apiVersion: v1
kind: List
items: []
`
	nodeMultiDoc = `apiVersion: v1
kind: Node
metadata: {name: a}
---
# the second node
apiVersion: v1
kind: Node
metadata: {name: b}
`
	mcoDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: machine-config-operator, namespace: openshift-machine-config-operator}
spec:
  selector: {matchLabels: {k8s-app: machine-config-operator}}
  template:
    spec:
      containers:
      - {name: kube-rbac-proxy, image: rbac:1}
      - {name: machine-config-operator, image: mco:2}
`
	alertsJSON = `{"status":"success","data":{"alerts":[{"labels":{"alertname":"A","severity":"warning"},"annotations":{"summary":"s"},"state":"firing","activeAt":"2025-06-01T09:00:00Z","value":"1e+00"}]}}`
)

// validFiles is a complete snapshot without the optional files.
func validFiles() map[string]string {
	return map[string]string{
		"x-cv.yaml": cvSingle, "x-co.yaml": coVList, "x-mcp.yaml": mcpTyped, "x-mc.yaml": mcEmptyList, "x-node.yaml": nodeMultiDoc,
	}
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoad(t *testing.T) {
	dir := writeFiles(t, validFiles())
	got, err := Load(filepath.Join(dir, "x-cv.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	s := got.Snapshot
	if s.ClusterVersion.Name != "version" || len(s.ClusterOperators) != 2 || len(s.MachineConfigPools) != 2 ||
		len(s.MachineConfigs) != 0 || len(s.Nodes) != 2 || s.Nodes[1].Name != "b" {
		t.Errorf("unexpected snapshot: cv %q, %d COs, %d MCPs, %d MCs, %d nodes",
			s.ClusterVersion.Name, len(s.ClusterOperators), len(s.MachineConfigPools), len(s.MachineConfigs), len(s.Nodes))
	}
	// now: the latest transition (etcd's Available at 10:07) plus oc's skew
	if want := time.Date(2025, 6, 1, 10, 7, 0, 368975, time.UTC); !s.Now.Equal(want) {
		t.Errorf("Now = %v, want %v", s.Now, want)
	}
	if !got.AlertsMissing || s.Alerts != nil || s.MCOImage != "" {
		t.Errorf("optional files absent: AlertsMissing %v, Alerts %v, MCOImage %q", got.AlertsMissing, s.Alerts, s.MCOImage)
	}
}

func TestLoadOptionalFiles(t *testing.T) {
	files := validFiles()
	files["x-mco-deployment.yaml"] = mcoDeployment
	files["x-alerts.json"] = alertsJSON
	dir := writeFiles(t, files)
	got, err := Load(filepath.Join(dir, "x-cv.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got.Snapshot.MCOImage != "mco:2" {
		t.Errorf("MCOImage = %q, want mco:2", got.Snapshot.MCOImage)
	}
	alerts := got.Snapshot.Alerts
	if got.AlertsMissing || len(alerts) != 1 || alerts[0].Labels["alertname"] != "A" || alerts[0].State != "firing" ||
		!alerts[0].ActiveAt.Equal(time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("alerts = %+v (missing %v)", alerts, got.AlertsMissing)
	}
}

// oc goes on without alerts it cannot read, after a notice in its words.
func TestAlertsNotice(t *testing.T) {
	for _, tc := range []struct {
		name, content string // "" : no file
		want          func(dir string) string
	}{
		{"missing", "", func(dir string) string {
			return "Unable to fetch alerts, ignoring alerts in 'Update Health':  open " + filepath.Join(dir, "x-alerts.json") + ": no such file or directory\n"
		}},
		{"malformed", "{", func(string) string {
			return "Ignoring alerts in 'Update Health'. Error unmarshaling alerts: %w unexpected end of JSON input\n"
		}},
		{"an error response has no alerts, and oc says nothing", `{"status":"error","error":"boom"}`, func(string) string { return "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := validFiles()
			if tc.content != "" {
				files["x-alerts.json"] = tc.content
			}
			dir := writeFiles(t, files)
			got, err := Load(filepath.Join(dir, "x-cv.yaml"))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if want := tc.want(dir); got.AlertsNotice != want || len(got.Snapshot.Alerts) != 0 {
				t.Errorf("notice %q, alerts %v; want notice %q and no alerts", got.AlertsNotice, got.Snapshot.Alerts, want)
			}
		})
	}
}

func TestLoadShapes(t *testing.T) {
	// The ClusterVersion in each accepted shape.
	typedList := "apiVersion: config.openshift.io/v1\nkind: ClusterVersionList\nitems:\n- " +
		strings.ReplaceAll(strings.TrimSpace(cvSingle), "\n", "\n  ") + "\n"
	vList := "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(cvSingle), "\n", "\n  ") + "\n"
	for name, cv := range map[string]string{"single object": cvSingle, "typed list": typedList, "v1 List": vList} {
		t.Run(name, func(t *testing.T) {
			files := validFiles()
			files["x-cv.yaml"] = cv
			got, err := Load(filepath.Join(writeFiles(t, files), "x-cv.yaml"))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got.Snapshot.ClusterVersion.Status.Desired.Version != "4.18.1" {
				t.Errorf("ClusterVersion not decoded: %+v", got.Snapshot.ClusterVersion)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cvName  string            // default x-cv.yaml
		change  map[string]string // file -> content; "" deletes the file
		wantErr []string          // substrings of the error
	}{
		{name: "cv path without -cv.yaml", cvName: "x.yaml", wantErr: []string{`"`, `must end in "-cv.yaml"`}},
		{name: "missing cv file", change: map[string]string{"x-cv.yaml": ""}, wantErr: []string{"x-cv.yaml: snapshot file is missing"}},
		{name: "missing co file", change: map[string]string{"x-co.yaml": ""}, wantErr: []string{"x-co.yaml: snapshot file is missing", "ClusterOperators"}},
		{name: "missing node file", change: map[string]string{"x-node.yaml": ""}, wantErr: []string{"x-node.yaml: snapshot file is missing"}},
		{name: "malformed yaml", change: map[string]string{"x-mcp.yaml": "kind: [unclosed"}, wantErr: []string{"x-mcp.yaml: malformed"}},
		{name: "no kind", change: map[string]string{"x-mc.yaml": "metadata: {name: a}\n"}, wantErr: []string{"x-mc.yaml: malformed", "Kind"}},
		{name: "only comments", change: map[string]string{"x-mc.yaml": "# nothing\n"}, wantErr: []string{"x-mc.yaml: holds no object; expected a MachineConfig, a MachineConfigList or a v1 List"}},
		{name: "wrong kind", change: map[string]string{"x-co.yaml": nodeMultiDoc}, wantErr: []string{"x-co.yaml: document 1 is a Node, expected a ClusterOperator"}},
		{name: "wrong kind in v1 List", change: map[string]string{"x-node.yaml": coVList}, wantErr: []string{"x-node.yaml: item 1 is a ClusterOperator, expected a Node"}},
		{name: "wrong kind of typed list", change: map[string]string{"x-node.yaml": mcpTyped}, wantErr: []string{"x-node.yaml: item 1 is a MachineConfigPool, expected a Node"}},
		{name: "broken v1 List item", change: map[string]string{"x-co.yaml": "apiVersion: v1\nkind: List\nitems:\n- metadata: {name: a}\n"}, wantErr: []string{"x-co.yaml: malformed list: item 1"}},
		{name: "two cluster versions", change: map[string]string{"x-cv.yaml": cvSingle + "---\n" + cvSingle}, wantErr: []string{"x-cv.yaml: holds 2 ClusterVersions, expected exactly one"}},
		{name: "deployment without MCO container", change: map[string]string{"x-mco-deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"},
			wantErr: []string{"x-mco-deployment.yaml: Deployment d has no container named \"machine-config-operator\""}},
		{name: "mco file of the wrong kind", change: map[string]string{"x-mco-deployment.yaml": nodeMultiDoc}, wantErr: []string{"x-mco-deployment.yaml: document 1 is a Node, expected a Deployment"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := validFiles()
			for name, content := range tc.change {
				if content == "" {
					delete(files, name)
				} else {
					files[name] = content
				}
			}
			dir := writeFiles(t, files)
			cvName := tc.cvName
			if cvName == "" {
				cvName = "x-cv.yaml"
			}
			_, err := Load(filepath.Join(dir, cvName))
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

// TestUniformListAsDecoder: for every file of the CLI's snapshots (oc's
// examples among them) that decodeUniformList decodes, it returns what the
// general path returns; and it does decode oc's Node files, the bulk of a
// large snapshot.
func TestUniformListAsDecoder(t *testing.T) {
	for _, sf := range cliSnapshotFiles(t, "*-node.yaml") {
		f, data := sf.path, sf.data
		fast, ok := decodeUniformList[*corev1.Node](data)
		if !ok {
			if sf.fromOC {
				t.Errorf("%s: not decoded in one pass", f)
			}
			continue
		}
		objs, err := decodeAll(data)
		if err != nil || len(objs) != 1 {
			t.Fatalf("%s: %d objects, %v", f, len(objs), err)
		}
		items, err := flatten(objs[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != len(fast) {
			t.Fatalf("%s: %d items, want %d", f, len(fast), len(items))
		}
		for i := range items {
			if !reflect.DeepEqual(items[i], fast[i]) {
				t.Errorf("%s: item %d differs:\n%#v\nwant\n%#v", f, i, fast[i], items[i])
			}
		}
	}
}

// snapshotFile is one file of the CLI's snapshots, read.
type snapshotFile struct {
	path string
	data []byte
	// fromOC: one of oc's examples (testdata/oc), not Upshift's own.
	fromOC bool
}

// cliSnapshotFiles reads the CLI's snapshot files whose names match
// pattern: Upshift's own and oc's examples, which must be there.
func cliSnapshotFiles(t *testing.T, pattern string) []snapshotFile {
	t.Helper()
	own, err := filepath.Glob(filepath.Join("..", "cli", "testdata", pattern))
	if err != nil {
		t.Fatal(err)
	}
	oc, err := filepath.Glob(filepath.Join("..", "cli", "testdata", "oc", pattern))
	if err != nil || len(oc) == 0 {
		t.Fatalf("no oc examples (err %v)", err)
	}
	var out []snapshotFile
	for i, f := range append(own, oc...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, snapshotFile{path: f, data: data, fromOC: i >= len(own)})
	}
	return out
}
