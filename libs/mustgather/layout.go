package mustgather

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// The archive is laid out as `oc adm inspect` and OpenShift's must-gather
// lay theirs out, so that the tools that read those (omg, must-gather
// viewers, a grep by path in a support case) read ours:
//
//	cluster-scoped-resources/<group>/<resource>/<name>.yaml
//	namespaces/<ns>/<ns>.yaml
//	namespaces/<ns>/<group>/<resource>/<name>.yaml
//	namespaces/<ns>/core/events.yaml                          (one EventList)
//	namespaces/<ns>/pods/<pod>/<pod>.yaml
//	namespaces/<ns>/pods/<pod>/<container>/<container>/logs/current.log
//	namespaces/<ns>/pods/<pod>/<container>/<container>/logs/previous.log
//
// The core group is written "core". What is Upshift's own: each component
// pod's metrics as the pod served them, namespaces/<ns>/pods/<pod>/metrics.txt,
// the names of the Secrets of a component namespace (never more),
// namespaces/<ns>/core/secrets.names, and summary.txt at the top.
const (
	clusterScopedDir = "cluster-scoped-resources"
	namespacesDir    = "namespaces"
	// SummaryFile is what was gathered, what was not and why.
	SummaryFile = "summary.txt"
	// TimestampFile holds the start and end times, as oc's does.
	TimestampFile = "timestamp"
)

// groupDir is the folder name of an API group.
func groupDir(group string) string {
	if group == "" {
		return "core"
	}
	return group
}

// ObjectPath is where an object of group/resource is written, relative to
// the archive's root.
func ObjectPath(group, resource, namespace, name string) string {
	if namespace == "" {
		return filepath.Join(clusterScopedDir, groupDir(group), resource, name+".yaml")
	}
	return filepath.Join(namespacesDir, namespace, groupDir(group), resource, name+".yaml")
}

// EventsPath is the EventList of a namespace.
func EventsPath(namespace string) string {
	return filepath.Join(namespacesDir, namespace, "core", "events.yaml")
}

// NamespacePath is the Namespace object itself.
func NamespacePath(namespace string) string {
	return filepath.Join(namespacesDir, namespace, namespace+".yaml")
}

// SecretNamesPath lists the names of a namespace's Secrets, one a line.
func SecretNamesPath(namespace string) string {
	return filepath.Join(namespacesDir, namespace, "core", "secrets.names")
}

// PodPath is a pod's own YAML.
func PodPath(namespace, pod string) string {
	return filepath.Join(podDir(namespace, pod), pod+".yaml")
}

// LogPath is a container's log: current.log, or previous.log for the
// container before its last restart. The container's name is there twice,
// as oc writes it.
func LogPath(namespace, pod, container string, previous bool) string {
	file := "current.log"
	if previous {
		file = "previous.log"
	}
	return filepath.Join(podDir(namespace, pod), container, container, "logs", file)
}

// MetricsPath is a pod's metrics as scraped.
func MetricsPath(namespace, pod string) string {
	return filepath.Join(podDir(namespace, pod), "metrics.txt")
}

func podDir(namespace, pod string) string {
	return filepath.Join(namespacesDir, namespace, "pods", pod)
}

// writer writes files under the archive's root.
type writer struct{ root string }

func (w writer) write(rel string, data []byte) error {
	path := filepath.Join(w.root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// writeYAML writes obj as YAML (obj must marshal to JSON first: Kubernetes
// objects do).
func (w writer) writeYAML(rel string, obj any) error {
	raw, err := yaml.Marshal(obj)
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	return w.write(rel, raw)
}

// ensureEmptyDir creates dir, or accepts it when it exists and is empty (the
// volume oc mounts at /must-gather is): gathering into a folder that holds
// another archive would mix two clusters' or two moments' files.
func ensureEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case os.IsNotExist(err):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	case len(entries) > 0:
		return fmt.Errorf("destination %s is not empty: choose a new folder", dir)
	}
	return nil
}

// nonEmptyLines drops a trailing newline's empty line.
func nonEmptyLines(lines []string) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
