package platform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
)

// Platform interprets provider specs of one kind.
type Platform interface {
	// Type is the platform, or "" for the generic comparison.
	Type() configv1.PlatformType
	// FailureDomain reads the failure domain a provider spec places its
	// machine in (zero for the generic platform).
	FailureDomain(spec []byte) (FailureDomain, error)
	// Inject returns spec with the fields of fd set and every other field,
	// known to us or not, left as it was. A zero fd returns spec unchanged.
	Inject(spec []byte, fd FailureDomain) ([]byte, error)
	// canonical decodes spec into the tree that is compared, with the fields
	// this platform ignores removed, and names the fields it does not know.
	canonical(spec []byte) (tree map[string]any, unknown []string, err error)
}

// Detect picks the Platform for a ControlPlaneMachineSet template: the
// failure domains' platform when they name one, else the provider spec's
// kind, else the generic comparison. A failure-domain platform that does not
// match the provider spec's kind is an error: injecting would produce nonsense.
func Detect(fds *machinev1.FailureDomains, templateSpec []byte) (Platform, error) {
	var head struct {
		Kind string `json:"kind"`
	}
	if len(templateSpec) > 0 {
		if err := json.Unmarshal(templateSpec, &head); err != nil {
			return nil, fmt.Errorf("template providerSpec is not a JSON object: %w", err)
		}
	}
	byKind := map[string]Platform{
		"AWSMachineProviderConfig":     aws{},
		"AzureMachineProviderSpec":     azure{},
		"GCPMachineProviderSpec":       gcp{},
		"VSphereMachineProviderSpec":   vsphere{},
		"OpenstackProviderSpec":        openstack{},
		"NutanixMachineProviderConfig": nutanix{},
	}
	p, known := byKind[head.Kind]
	if !known {
		p = generic{}
	}
	if fds != nil && fds.Platform != "" {
		switch fds.Platform {
		case configv1.AWSPlatformType, configv1.AzurePlatformType, configv1.GCPPlatformType,
			configv1.VSpherePlatformType, configv1.OpenStackPlatformType, configv1.NutanixPlatformType:
			if p.Type() != fds.Platform {
				return nil, fmt.Errorf("failure domains are for platform %s but the template providerSpec is of kind %q", fds.Platform, head.Kind)
			}
		}
	}
	return p, nil
}

// Compare reports how actual (a machine's provider spec) differs from desired
// (the template's, with the machine's failure domain injected). An empty Diff
// means the machine is up to date. Unknown lists fields of actual or desired
// that the platform's type does not know and that therefore were not compared.
func Compare(p Platform, desired, actual []byte) (d Diff, unknown []string, err error) {
	want, unknownWant, err := p.canonical(desired)
	if err != nil {
		return nil, nil, fmt.Errorf("desired providerSpec: %w", err)
	}
	got, unknownGot, err := p.canonical(actual)
	if err != nil {
		return nil, nil, fmt.Errorf("machine providerSpec: %w", err)
	}
	diffValues("", want, got, &d)
	seen := map[string]bool{}
	for _, u := range append(unknownWant, unknownGot...) {
		if !seen[u] {
			seen[u] = true
			unknown = append(unknown, u)
		}
	}
	sort.Strings(unknown)
	return d, unknown, nil
}

// typedCanonical round-trips spec through the typed struct obj (so that a
// field written as its zero value and a field left out compare equal, as
// they mean the same to the actuator), then clears what the platform ignores.
func typedCanonical(spec []byte, obj any, ignore func()) (map[string]any, []string, error) {
	if len(spec) == 0 {
		spec = []byte("{}")
	}
	if err := json.Unmarshal(spec, obj); err != nil {
		return nil, nil, err
	}
	unknown := unknownFields(spec, obj)
	ignore()
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, err
	}
	tree, err := decodeTree(b)
	if err != nil {
		return nil, nil, err
	}
	// kind/apiVersion vary between installer generations
	// (awsproviderconfig.openshift.io vs machine.openshift.io) without
	// changing the machine, and metadata is never used by the actuators.
	delete(tree, "kind")
	delete(tree, "apiVersion")
	delete(tree, "metadata")
	return tree, unknown, nil
}

// unknownFields names the top-level fields of spec that obj's type does not
// have: they are dropped by the typed round trip, so a change to one would go
// unnoticed; the caller reports them rather than hiding that.
func unknownFields(spec []byte, obj any) []string {
	var raw map[string]json.RawMessage
	if json.Unmarshal(spec, &raw) != nil {
		return nil
	}
	known := jsonFieldNames(reflect.TypeOf(obj).Elem())
	var out []string
	for k := range raw {
		if !known[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func jsonFieldNames(t reflect.Type) map[string]bool {
	names := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			// Embedded structs (TypeMeta, ObjectMeta) are inlined by encoding/json.
			for k := range jsonFieldNames(f.Type) {
				names[k] = true
			}
			continue
		}
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names[name] = true
	}
	return names
}

func decodeTree(b []byte) (map[string]any, error) {
	var tree map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	if tree == nil {
		tree = map[string]any{}
	}
	return prune(tree).(map[string]any), nil
}

// prune drops nulls, empty objects and empty lists: "absent" and "empty" ask
// the actuator for the same thing.
func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			e = prune(e)
			if isEmpty(e) {
				delete(t, k)
			} else {
				t[k] = e
			}
		}
		return t
	case []any:
		for i := range t {
			t[i] = prune(t[i])
		}
		return t
	}
	return v
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

// setPath sets tree[path...] = value, creating objects on the way, so that
// injection keeps every field it does not touch.
func setPath(tree map[string]any, value any, path ...string) {
	for _, p := range path[:len(path)-1] {
		next, ok := tree[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			tree[p] = next
		}
		tree = next
	}
	tree[path[len(path)-1]] = value
}

// injectInto decodes spec as a JSON tree, lets set edit it and encodes it
// again: fields set does not touch keep their value, known to us or not.
func injectInto(spec []byte, set func(tree map[string]any) error) ([]byte, error) {
	if len(spec) == 0 {
		spec = []byte("{}")
	}
	var tree map[string]any
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	if tree == nil {
		tree = map[string]any{}
	}
	if err := set(tree); err != nil {
		return nil, err
	}
	return json.Marshal(tree)
}
