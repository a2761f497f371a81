package bundle

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// The bundle format's annotation keys (metadata/annotations.yaml, and the
// bundle image's labels).
const (
	MediaTypeKey      = "operators.operatorframework.io.bundle.mediatype.v1"
	ManifestsKey      = "operators.operatorframework.io.bundle.manifests.v1"
	MetadataKey       = "operators.operatorframework.io.bundle.metadata.v1"
	PackageKey        = "operators.operatorframework.io.bundle.package.v1"
	ChannelsKey       = "operators.operatorframework.io.bundle.channels.v1"
	DefaultChannelKey = "operators.operatorframework.io.bundle.channel.default.v1"
	// OpenShiftVersionsKey is the OpenShift releases the bundle is for,
	// which OpenShift's catalogs filter on.
	OpenShiftVersionsKey = "com.redhat.openshift.versions"
)

// Annotations are the bundle's metadata/annotations.yaml entries.
func (b *Bundle) Annotations() map[string]string {
	a := map[string]string{
		MediaTypeKey:      "registry+v1",
		ManifestsKey:      "manifests/",
		MetadataKey:       "metadata/",
		PackageKey:        b.Meta.Package,
		ChannelsKey:       strings.Join(b.Meta.Channels, ","),
		DefaultChannelKey: b.Meta.DefaultChannel,
	}
	if b.Meta.OpenShiftVersions != "" {
		a[OpenShiftVersionsKey] = b.Meta.OpenShiftVersions
	}
	return a
}

// Write writes the bundle into dir (which must not exist yet, or be empty):
// manifests/ with the CSV and one file per other object, metadata/
// annotations.yaml, and bundle.Dockerfile, which builds the bundle image
// from dir with the same annotations as labels.
func (b *Bundle) Write(dir string) error {
	manifests := filepath.Join(dir, "manifests")
	metadata := filepath.Join(dir, "metadata")
	for _, d := range []string{manifests, metadata} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	csv, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b.CSV)
	if err != nil {
		return err
	}
	delete(csv, "status")
	if err := writeYAML(filepath.Join(manifests, b.Meta.Package+".clusterserviceversion.yaml"), csv); err != nil {
		return err
	}
	for _, o := range append(append([]*unstructured.Unstructured{}, b.CRDs...), b.Others...) {
		if err := writeYAML(filepath.Join(manifests, fileName(o)), o.Object); err != nil {
			return err
		}
	}
	ann := b.Annotations()
	if err := writeYAML(filepath.Join(metadata, "annotations.yaml"), map[string]any{"annotations": ann}); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "bundle.Dockerfile"), []byte(dockerfile(ann)), 0o644)
}

// fileName follows operator-sdk's naming, <name>_<group>_<version>_<kind>.yaml
// (no group for the core API), so two objects never share a file.
func fileName(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	parts := []string{o.GetName()}
	if gvk.Group != "" {
		parts = append(parts, gvk.Group)
	}
	parts = append(parts, gvk.Version, strings.ToLower(gvk.Kind))
	return strings.Join(parts, "_") + ".yaml"
}

func dockerfile(ann map[string]string) string {
	keys := make([]string, 0, len(ann))
	for k := range ann {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var s strings.Builder
	s.WriteString("# The bundle image: build it from this folder, e.g.\n")
	s.WriteString("#   podman build -f bundle.Dockerfile -t <registry>/<package>-bundle:v<version> .\n")
	s.WriteString("FROM scratch\n\n")
	for _, k := range keys {
		fmt.Fprintf(&s, "LABEL %s=%s\n", k, ann[k])
	}
	s.WriteString("\nCOPY manifests /manifests/\nCOPY metadata /metadata/\n")
	return s.String()
}

func writeYAML(path string, v map[string]any) error {
	pruneNullTimestamps(v)
	out, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}

// pruneNullTimestamps drops the "creationTimestamp: null" the typed
// ObjectMeta leaves behind (in the CSV and its pod templates).
func pruneNullTimestamps(v any) {
	switch t := v.(type) {
	case map[string]any:
		if ts, ok := t["creationTimestamp"]; ok && ts == nil {
			delete(t, "creationTimestamp")
		}
		for _, c := range t {
			pruneNullTimestamps(c)
		}
	case []any:
		for _, c := range t {
			pruneNullTimestamps(c)
		}
	}
}
