// Command crdtrim shrinks generated CRD manifests that embed Kubernetes pod
// templates, so that each stays under the 256 KiB a client-side
// `kubectl apply` (and Argo CD's default sync) can record in its
// last-applied-configuration annotation.
//
// controller-gen already writes those CRDs without descriptions; what is left
// is the schema of every embedded PodSpec. Of that, one field can never be
// valid in a pod template: spec.ephemeralContainers, which the apiserver
// refuses in every Job, Deployment or other template ("ephemeral containers
// not allowed in pod template"). crdtrim replaces its 11 KB schema with a
// rule that refuses it at admission with a message naming the field, so the
// object is refused exactly as before, earlier and more clearly, and nothing
// a user writes is pruned silently.
//
// Usage: crdtrim FILE... (each FILE is rewritten in place; running it twice
// changes nothing).
package main

import (
	"bytes"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crdtrim FILE...")
		os.Exit(2)
	}
	for _, f := range os.Args[1:] {
		if err := trimFile(f); err != nil {
			fmt.Fprintf(os.Stderr, "crdtrim: %s: %v\n", f, err)
			os.Exit(1)
		}
	}
}

func trimFile(path string) error {
	in, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, n, err := Trim(in)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no pod template found: is crdtrim still needed for this file?")
	}
	if bytes.Equal(in, out) {
		return nil
	}
	return os.WriteFile(path, out, 0o644)
}

// EphemeralContainersMessage is the admission error for a pod template that
// sets ephemeral containers.
const EphemeralContainersMessage = "ephemeralContainers cannot be set in a Job's pod template: ephemeral containers are added to running pods only"

// Trim rewrites one CRD manifest (controller-gen's YAML: one document,
// keys sorted) and returns it with the number of pod specs trimmed.
func Trim(manifest []byte) ([]byte, int, error) {
	var crd map[string]any
	if err := yaml.Unmarshal(manifest, &crd); err != nil {
		return nil, 0, err
	}
	n := walk(crd)
	body, err := yaml.Marshal(crd)
	if err != nil {
		return nil, 0, err
	}
	// controller-gen starts each file with a document separator.
	return append([]byte("---\n"), body...), n, nil
}

// walk trims every PodSpec schema below v and counts them. A PodSpec schema
// is an object schema whose properties hold both containers and
// ephemeralContainers.
func walk(v any) int {
	n := 0
	switch t := v.(type) {
	case map[string]any:
		if props, ok := t["properties"].(map[string]any); ok {
			if _, pod := props["containers"]; pod {
				if _, eph := props["ephemeralContainers"]; eph {
					props["ephemeralContainers"] = refused()
					n++
				}
			}
		}
		for _, c := range t {
			n += walk(c)
		}
	case []any:
		for _, c := range t {
			n += walk(c)
		}
	}
	return n
}

// refused is the schema that replaces ephemeralContainers: any list is kept
// as written (never pruned) and refused unless empty.
func refused() map[string]any {
	return map[string]any{
		"type": "array",
		"items": map[string]any{
			"type":                                 "object",
			"x-kubernetes-preserve-unknown-fields": true,
		},
		"x-kubernetes-validations": []any{
			map[string]any{
				"rule":    "size(self) == 0",
				"message": EphemeralContainersMessage,
			},
		},
	}
}
