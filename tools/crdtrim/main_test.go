package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// A CRD with no pod template goes through unchanged, byte for byte: the
// round trip keeps controller-gen's layout, so a trimmed file differs from
// its generated form only where a pod template was trimmed.
func TestTrimKeepsLayout(t *testing.T) {
	in, err := os.ReadFile("../../api/crds/nodegate.upshift.io_mutextargets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, n, err := Trim(in)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("trimmed %d pod specs in a CRD that has none", n)
	}
	if !bytes.Equal(in, out) {
		t.Fatalf("layout changed:\n%s", out)
	}
}

// The committed MutexRule CRD is trimmed (make generate ran crdtrim), in its
// four Job templates, and trimming again changes nothing.
func TestMutexRuleCRDTrimmed(t *testing.T) {
	in, err := os.ReadFile("../../api/crds/nodegate.upshift.io_mutexrules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, n, err := Trim(in)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Fatalf("trimmed %d pod specs, want 4 (jobSpec, cleanUpJobSpec, preHooks[], postHooks[])", n)
	}
	if !bytes.Equal(in, out) {
		t.Fatal("the committed CRD is not trimmed: run make generate")
	}
	js, err := yaml.YAMLToJSON(in)
	if err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(string(js), EphemeralContainersMessage); c != 4 {
		t.Fatalf("the refusal appears %d times, want 4", c)
	}
}

// Only ephemeralContainers of a pod spec changes; the containers beside it
// and an object that merely has an ephemeralContainers property do not.
func TestTrimOnlyPodSpecs(t *testing.T) {
	in := []byte(`---
spec:
  notAPod:
    properties:
      ephemeralContainers:
        type: string
  pod:
    properties:
      containers:
        items:
          type: object
        type: array
      ephemeralContainers:
        items:
          properties:
            name:
              type: string
          type: object
        type: array
`)
	out, n, err := Trim(in)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("trimmed %d, want 1", n)
	}
	var got struct {
		Spec struct {
			NotAPod struct {
				Properties map[string]map[string]any `json:"properties"`
			} `json:"notAPod"`
			Pod struct {
				Properties map[string]map[string]any `json:"properties"`
			} `json:"pod"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.NotAPod.Properties["ephemeralContainers"]["type"] != "string" {
		t.Errorf("an object without containers was trimmed: %v", got.Spec.NotAPod.Properties)
	}
	eph := got.Spec.Pod.Properties["ephemeralContainers"]
	items, _ := eph["items"].(map[string]any)
	if items["x-kubernetes-preserve-unknown-fields"] != true || eph["x-kubernetes-validations"] == nil {
		t.Errorf("ephemeralContainers not replaced by the refusing rule: %v", eph)
	}
	if got.Spec.Pod.Properties["containers"]["type"] != "array" {
		t.Errorf("containers changed: %v", got.Spec.Pod.Properties["containers"])
	}
}
