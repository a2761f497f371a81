// Package render runs `helm template` on a chart and returns the objects it
// renders: the same manifests `helm install` would create, so an OLM bundle
// made from them cannot drift from the chart.
package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Options say how to render a chart.
type Options struct {
	// Helm is the helm binary.
	Helm string
	// Release and Namespace are the release name and namespace helm renders
	// with (.Release.Name, .Release.Namespace).
	Release, Namespace string
	// Set are --set values (key=value).
	Set []string
	// Version and AppVersion, when set, replace the chart's own in a copy
	// of it before rendering, as `make charts` stamps a release: the default
	// image tag is the appVersion.
	Version, AppVersion string
}

// Chart renders the chart in dir and returns its objects in the order helm
// printed them.
func Chart(dir string, opts Options) ([]*unstructured.Unstructured, error) {
	if opts.Version != "" || opts.AppVersion != "" {
		stamped, err := os.MkdirTemp("", "upshift-olm-chart-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(stamped)
		if err := stamp(dir, stamped, opts.Version, opts.AppVersion); err != nil {
			return nil, err
		}
		dir = stamped
	}
	args := []string{"template", opts.Release, dir, "--namespace", opts.Namespace}
	for _, s := range opts.Set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(opts.Helm, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	return Decode(&stdout)
}

// stamp copies the chart in dir to into with version and appVersion set.
func stamp(dir, into, version, appVersion string) error {
	if err := os.CopyFS(into, os.DirFS(dir)); err != nil {
		return fmt.Errorf("copying chart %s: %w", dir, err)
	}
	path := filepath.Join(into, "Chart.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(string(raw), "\n")
	for i, l := range lines {
		switch {
		case version != "" && strings.HasPrefix(l, "version:"):
			lines[i] = "version: " + version
		case appVersion != "" && strings.HasPrefix(l, "appVersion:"):
			lines[i] = fmt.Sprintf("appVersion: %q", appVersion)
		}
	}
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644)
}

// Decode reads a multi-document YAML stream into objects, skipping empty
// documents (helm prints one for a template that renders nothing).
func Decode(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decoding rendered manifests: %w", err)
		}
		if len(m) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{Object: m}
		if obj.GetKind() == "" || obj.GetAPIVersion() == "" {
			return nil, fmt.Errorf("rendered document without kind or apiVersion: %v", m)
		}
		objs = append(objs, obj)
	}
}
