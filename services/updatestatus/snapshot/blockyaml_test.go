package snapshot

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// sameAsYAMLLibrary checks blockYAMLToJSON against the YAML library on doc:
// when it converts doc, the JSON must hold exactly what the library's does.
// It reports whether the fast path converted doc.
func sameAsYAMLLibrary(t *testing.T, name string, doc []byte) bool {
	t.Helper()
	fast, ok := blockYAMLToJSON(doc)
	if !ok {
		return false
	}
	slow, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Errorf("%s: converted to %s, but the YAML library refuses it: %v", name, fast, err)
		return true
	}
	if got, want := decodeJSON(t, name, fast), decodeJSON(t, name, slow); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: converted to\n%s\nthe YAML library to\n%s", name, fast, slow)
	}
	return true
}

// decodeJSON decodes data keeping numbers as written, so that 1 and 1.0
// differ.
func decodeJSON(t *testing.T, name string, data []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: invalid JSON %s: %v", name, data, err)
	}
	return v
}

// Every YAML file of the CLI's snapshots, oc's examples among them, converts
// to what the YAML library gives; and the Node files, the bulk of a large
// snapshot, do take the fast path (or a large snapshot would be slow again
// without any test failing).
func TestBlockYAMLAsYAMLLibrary(t *testing.T) {
	for _, sf := range cliSnapshotFiles(t, "*.yaml") {
		f, data := sf.path, sf.data
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if isBlank(doc) {
				continue
			}
			converted := sameAsYAMLLibrary(t, f, doc)
			if !converted && !isJSON(doc) && strings.HasSuffix(f, "-node.yaml") {
				t.Errorf("%s: not converted by the fast path", f)
			}
		}
	}
}

// Each case is converted here (fast) exactly as the YAML library converts it,
// or left to the library.
func TestBlockYAMLCases(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		fast bool
	}{
		{"a: b\n", true},
		{"a:\n  b: c\n  d:\n  - 1\n  - x\ne: []\nf: {}\n", true},
		{"items:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: x\n-   k: v\n    l: w\n", true},
		{"a:\n  - - x\n", false},
		{"a: 'it''s'\nb: \"q\\\"\\u00e9\\n\"\nc: \"\"\nd: ''\n", true},
		{"a: \"\\x41\"\n", false},
		{"a: |\n  text\n", true},
		{"a: &x b\nc: *x\n", false},
		{"a: !!str 1\n", false},
		{"a: [1, 2]\n", false},
		{"a: {b: c}\n", false},
		{"a: b # comment\n", false},
		{"# comment\na: b\n\n", true},
		{"a: yes\n", false},
		{"a: On\n", false},
		{"a: true\nb: false\nc: null\nd:\n", true},
		{"a: ~\n", false},
		{"a: 1.5\n", false},
		{"a: 1e3\n", false},
		{"a: 0x1F\n", false},
		{"a: 0777\n", false},
		{"a: 1_000\n", false},
		{"a: 2024-02-27T15:42:50Z\n", false},
		{"a: 2024-02-27\n", false},
		{"a: 10.0.0.1\nb: 4.18.1\nc: 0\nd: -12\ne: 123456789012345678\n", true},
		{"a: 1234567890123456789\n", false},
		{"a: -0\n", false},
		{"a: .5\n", false},
		{"a: -x\n", false},
		{"a: b\n  c\n", false},
		{"a: \"b\n  c\"\n", false},
		{"a: b\na: c\n", false},
		{"a:\tb\n", false},
		{"a: b\r\n", false},
		{"a: b: c\n", false},
		{"a: b:\n", false},
		{"- a:b\n- http://x/y\n- k:{\"type\":\"Ready\"}\n", true},
		{"k:{\"type\":\"Ready\"}: {}\nf:metadata:\n  .: {}\n", false},
		{"f:metadata:\n  f:name: {}\n\"quoted key\": v\n'single': w\n", true},
		{"1: a\n", false},
		{"\"a\":b\n", false},
		{"a: b\n- c\n", false},
		{"a:\n  b: c\n d: e\n", false},
		{"-\n  a: b\n- c\n", true},
		{"a: \"b\" c\n", false},
		{"a: \"\u0085\"\n", false},
		{"a: x é ü 日本\n", true},
		{"a: é\n", false},
		{"a: |-\n  line one\n\n    indented\n  # not a comment\nb: |\n  x\n\n\nc: |-\nd: e\n", true},
		{"- |\n  x\n  y\n- z\n", true},
		{"a:\n- k: |-\n    x\n  l: m\n", true},
		{"a: |+\n  x\n", false},
		{"a: |2-\n   x\n", false},
		{"a: |-\n\n  x\n", false},
		{"a: |-\n    x\n  y\n", false},
		{"a: |-\n  x\n# c\n  y\n", false},
		{"a: >-\n  x\n", false},
		{"a: x\x7f\n", false},
		{"scalar\n", false},
		{"%YAML 1.1\n---\na: b\n", false},
		{"<<: a\n", false},
		{"a: <<\n", false},
		{"? a\n: b\n", false},
		{"a: [\n", false},
		{"a: ' x '\nb: \" y \"\n", true},
		{"a:    b   \n", true},
		{"a: b   #c\n", false},
		{"a: b#c\n", true},
		{"a: Yes\nb: NULL\n", false},
		{"a: truthy\nb: nope\nc: yesterday\n", true},
		// YAML's 1024 characters of an implicit key, up to its colon.
		{"a" + strings.Repeat("é", 1023) + ": v\n", true},
		{"a" + strings.Repeat("é", 1024) + ": v\n", false},
		{"- " + strings.Repeat("i", 1025) + ":\n", false},
		{"a:\n  \"" + strings.Repeat("i", 1022) + "\": v\n", true},
		{"a:\n  \"" + strings.Repeat("i", 1023) + "\": v\n", false},
	} {
		if converted := sameAsYAMLLibrary(t, tc.doc, []byte(tc.doc)); converted != tc.fast {
			t.Errorf("%q: converted here %v, want %v", tc.doc, converted, tc.fast)
		}
	}
}

// FuzzBlockYAML: whatever the fast path converts, it converts as the YAML
// library does.
func FuzzBlockYAML(f *testing.F) {
	f.Add([]byte("a:\n  b: [c]\n- d\n"))
	f.Add([]byte("items:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: n\n    labels:\n      x: \"1\"\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		sameAsYAMLLibrary(t, "fuzz", doc)
	})
}
