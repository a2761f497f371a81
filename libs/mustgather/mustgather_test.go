package mustgather

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Every literal env value anywhere in an object is redacted; references,
// names and everything else stay.
func TestRedact(t *testing.T) {
	in := `
apiVersion: nodegate.upshift.io/v1alpha1
kind: MutexRule
metadata:
  name: r
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"secret":"s3cr3t"}'
    keep: me
spec:
  jobSpec:
    template:
      spec:
        initContainers: [{name: i, env: [{name: A, value: s3cr3t}]}]
        containers:
        - name: c
          env:
          - {name: B, value: "http://u:s3cr3t@proxy"}
          - {name: C, valueFrom: {secretKeyRef: {name: s, key: k}}}
          - {name: D, value: ""}
          envFrom: [{secretRef: {name: s}}]
  preHooks: [{containers: [{name: h, env: [{name: E, value: s3cr3t}]}]}]
  other: {env: [{name: F, value: kept, because: not a container}]}
`
	want := `
apiVersion: nodegate.upshift.io/v1alpha1
kind: MutexRule
metadata:
  name: r
  annotations:
    keep: me
spec:
  jobSpec:
    template:
      spec:
        initContainers: [{name: i, env: [{name: A, value: REDACTED}]}]
        containers:
        - name: c
          env:
          - {name: B, value: REDACTED}
          - {name: C, valueFrom: {secretKeyRef: {name: s, key: k}}}
          - {name: D, value: REDACTED}
          envFrom: [{secretRef: {name: s}}]
  preHooks: [{containers: [{name: h, env: [{name: E, value: REDACTED}]}]}]
  other: {env: [{name: F, value: kept, because: not a container}]}
`
	u, w := &unstructured.Unstructured{}, map[string]any{}
	if err := yaml.Unmarshal([]byte(in), &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	redact(u)
	if !reflect.DeepEqual(u.Object, w) {
		got, _ := yaml.Marshal(u.Object)
		t.Errorf("redacted:\n%s\nwant:\n%s", got, want)
	}
}

// The paths oc's tools read.
func TestLayout(t *testing.T) {
	for got, want := range map[string]string{
		ObjectPath("", "nodes", "", "n1"):                                            "cluster-scoped-resources/core/nodes/n1.yaml",
		ObjectPath("config.openshift.io", "clusterversions", "", "version"):          "cluster-scoped-resources/config.openshift.io/clusterversions/version.yaml",
		ObjectPath("machine.openshift.io", "machines", "openshift-machine-api", "m"): "namespaces/openshift-machine-api/machine.openshift.io/machines/m.yaml",
		EventsPath("upshift"):               "namespaces/upshift/core/events.yaml",
		PodPath("upshift", "p"):             "namespaces/upshift/pods/p/p.yaml",
		LogPath("upshift", "p", "c", false): "namespaces/upshift/pods/p/c/c/logs/current.log",
		LogPath("upshift", "p", "c", true):  "namespaces/upshift/pods/p/c/c/logs/previous.log",
		NamespacePath("upshift"):            "namespaces/upshift/upshift.yaml",
		SecretNamesPath("upshift"):          "namespaces/upshift/core/secrets.names",
		MetricsPath("upshift", "p"):         "namespaces/upshift/pods/p/metrics.txt",
	} {
		if got != want {
			t.Errorf("%s, want %s", got, want)
		}
	}
}

// The .tar.gz holds the folder under its own name, file for file.
func TestWriteTarGz(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "must-gather.x")
	w := writer{root: dir}
	files := map[string]string{"summary.txt": "s\n", "namespaces/upshift/core/events.yaml": "e\n"}
	for p, data := range files {
		if err := w.write(p, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	out := dir + ".tar.gz"
	if err := WriteTarGz(dir, out); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	got := map[string]string{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(hdr.Name, "must-gather.x/") {
			t.Errorf("entry %s is not under the folder's name", hdr.Name)
		}
		if hdr.Typeflag == tar.TypeReg {
			raw, _ := io.ReadAll(tr)
			got[strings.TrimPrefix(hdr.Name, "must-gather.x/")] = string(raw)
		}
	}
	if !reflect.DeepEqual(got, files) {
		t.Errorf("archive holds %v, want %v", got, files)
	}
}

// A folder that holds something already is refused: two gatherings would
// mix.
func TestEnsureEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := ensureEmptyDir(dir); err != nil {
		t.Errorf("empty folder refused: %v", err)
	}
	if err := ensureEmptyDir(filepath.Join(dir, "new", "sub")); err != nil {
		t.Errorf("new folder refused: %v", err)
	}
	if err := ensureEmptyDir(dir); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("non-empty folder: %v", err)
	}
}
