package mustgather

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Redacted replaces every literal environment variable value in the
// objects the archive holds.
const Redacted = "REDACTED"

// lastApplied is where `kubectl apply` keeps a copy of what was applied,
// environment values included.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// containerLists are the fields of a pod spec that hold containers.
var containerLists = map[string]bool{"containers": true, "initContainers": true, "ephemeralContainers": true}

// redact replaces the literal value of every environment variable of every
// container anywhere in the object — a Pod's, a Deployment's template, a
// node-gate hook's Job spec — with Redacted, whatever the variable's name:
// a name says nothing reliable about its value (a proxy URL can carry a
// password). References (valueFrom, envFrom) are kept: they name a Secret or
// a ConfigMap key, not its value. It drops the last-applied annotation,
// which repeats the object, values and all.
func redact(u *unstructured.Unstructured) {
	if ann := u.GetAnnotations(); ann != nil {
		if _, ok := ann[lastApplied]; ok {
			delete(ann, lastApplied)
			u.SetAnnotations(ann)
		}
	}
	redactEnv(u.Object)
}

func redactEnv(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if list, ok := child.([]any); ok && containerLists[k] {
				for _, c := range list {
					redactContainer(c)
				}
			}
			redactEnv(child)
		}
	case []any:
		for _, child := range v {
			redactEnv(child)
		}
	}
}

func redactContainer(c any) {
	container, ok := c.(map[string]any)
	if !ok {
		return
	}
	env, ok := container["env"].([]any)
	if !ok {
		return
	}
	for _, e := range env {
		if v, ok := e.(map[string]any); ok {
			if _, literal := v["value"]; literal {
				v["value"] = Redacted
			}
		}
	}
}
