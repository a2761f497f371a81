package generate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	machinev1 "github.com/openshift/api/machine/v1"

	"github.com/upshift-io/upshift/services/cpms/platform"
)

// maxChanges bounds the changes a reason names, so that it fits an Event.
const maxChanges = 8

// Differs reports whether existing (an Inactive set in the cluster) no
// longer says what generated (Set's output for the machines now) says, and
// names the changes as "field: existing value -> generated value". Only the
// spec counts, as upstream: labels, annotations, finalizers and the status
// are the set's own. Within the spec:
//
//   - the template's provider spec is compared as the controller compares a
//     machine with its template (platform.Compare: boot images ignored, a
//     field written as its zero value equal to one left out);
//   - failure domains are compared as a set (their order means nothing);
//   - authoritativeAPI is ignored, as upstream: the apiserver defaults it
//     where the machine-api migration is enabled, which is no reason to
//     regenerate;
//   - every other field is compared as canonical JSON (absent and empty
//     equal, so the apiserver's defaults do not count as changes).
func Differs(existing, generated *machinev1.ControlPlaneMachineSet) (bool, string) {
	et, gt := existing.Spec.Template.OpenShiftMachineV1Beta1Machine, generated.Spec.Template.OpenShiftMachineV1Beta1Machine
	if et == nil || gt == nil {
		if et == gt {
			return false, ""
		}
		return true, fmt.Sprintf("spec.template.machineType: %q -> %q", existing.Spec.Template.MachineType, generated.Spec.Template.MachineType)
	}
	var changes []string
	changes = append(changes, specChanges(existing.Spec, generated.Spec)...)
	changes = append(changes, failureDomainChanges(et.FailureDomains, gt.FailureDomains)...)
	changes = append(changes, providerSpecChanges(et, gt)...)
	if len(changes) == 0 {
		return false, ""
	}
	if len(changes) > maxChanges {
		changes = append(changes[:maxChanges], fmt.Sprintf("and %d more", len(changes)-maxChanges))
	}
	return true, strings.Join(changes, "; ")
}

// specChanges compares everything but the provider spec, the failure domains
// and authoritativeAPI.
func specChanges(existing, generated machinev1.ControlPlaneMachineSetSpec) []string {
	strip := func(s machinev1.ControlPlaneMachineSetSpec) []byte {
		s = *s.DeepCopy()
		t := s.Template.OpenShiftMachineV1Beta1Machine
		t.FailureDomains = nil
		t.Spec.ProviderSpec.Value = nil
		t.Spec.AuthoritativeAPI = ""
		b, _ := json.Marshal(s) // a typed spec always marshals
		return b
	}
	generic, _ := platform.Detect(nil, nil)
	d, _, err := platform.Compare(generic, strip(generated), strip(existing))
	if err != nil {
		return []string{"spec: " + err.Error()}
	}
	out := make([]string, len(d))
	for i, c := range d {
		out[i] = "spec." + c.String()
	}
	return out
}

// failureDomainChanges names the failure domains added and removed.
func failureDomainChanges(existing, generated *machinev1.FailureDomains) []string {
	had, want := failureDomainSet(existing), failureDomainSet(generated)
	var added, removed []string
	for k := range want {
		if !had[k] {
			added = append(added, k)
		}
	}
	for k := range had {
		if !want[k] {
			removed = append(removed, k)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	var out []string
	if len(added) > 0 {
		out = append(out, "failure domains added: "+strings.Join(added, ", "))
	}
	if len(removed) > 0 {
		out = append(out, "failure domains removed: "+strings.Join(removed, ", "))
	}
	return out
}

// failureDomainSet renders each declared failure domain the way the
// controller tells them apart (platform.FailureDomain.String; vSphere and
// Nutanix by name).
func failureDomainSet(fds *machinev1.FailureDomains) map[string]bool {
	out := map[string]bool{}
	if fds == nil {
		return out
	}
	add := func(fd platform.FailureDomain) { out[fd.String()] = true }
	if fds.AWS != nil {
		for i := range *fds.AWS {
			add(platform.FailureDomain{AWS: &(*fds.AWS)[i]})
		}
	}
	if fds.Azure != nil {
		for i := range *fds.Azure {
			add(platform.FailureDomain{Azure: &(*fds.Azure)[i]})
		}
	}
	if fds.GCP != nil {
		for i := range *fds.GCP {
			add(platform.FailureDomain{GCP: &(*fds.GCP)[i]})
		}
	}
	for i := range fds.OpenStack {
		add(platform.FailureDomain{OpenStack: &fds.OpenStack[i]})
	}
	for _, ref := range fds.VSphere {
		add(platform.FailureDomain{VSphere: &platform.VSphereFailureDomain{Name: ref.Name}})
	}
	for _, ref := range fds.Nutanix {
		add(platform.FailureDomain{Nutanix: &platform.NutanixFailureDomain{Name: ref.Name}})
	}
	return out
}

// providerSpecChanges compares the templates' provider specs through the
// generated one's platform. Fields its type does not know are compared as
// JSON: the typed comparison skips them, and a change there is a change.
func providerSpecChanges(existing, generated *machinev1.OpenShiftMachineV1Beta1MachineTemplate) []string {
	raw := func(t *machinev1.OpenShiftMachineV1Beta1MachineTemplate) []byte {
		if v := t.Spec.ProviderSpec.Value; v != nil {
			return v.Raw
		}
		return nil
	}
	want, got := raw(generated), raw(existing)
	const path = "spec.template.machines_v1beta1_machine_openshift_io.spec.providerSpec.value"
	p, err := platform.Detect(generated.FailureDomains, want)
	if err != nil {
		p, _ = platform.Detect(nil, nil)
	}
	d, unknown, err := platform.Compare(p, want, got)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", path, err)}
	}
	if len(unknown) > 0 {
		generic, _ := platform.Detect(nil, nil)
		u, _, err := platform.Compare(generic, only(want, unknown), only(got, unknown))
		if err != nil {
			return []string{fmt.Sprintf("%s: %v", path, err)}
		}
		d = append(d, u...)
		sort.Slice(d, func(i, j int) bool { return d[i].Path < d[j].Path })
	}
	out := make([]string, len(d))
	for i, c := range d {
		out[i] = path + "." + c.String()
	}
	return out
}

// only keeps the top-level fields keys of a JSON object.
func only(spec []byte, keys []string) []byte {
	var tree map[string]json.RawMessage
	if json.Unmarshal(spec, &tree) != nil {
		return nil
	}
	kept := map[string]json.RawMessage{}
	for _, k := range keys {
		if v, ok := tree[k]; ok {
			kept[k] = v
		}
	}
	b, _ := json.Marshal(kept) // raw messages from a decoded object marshal
	return b
}

// Summary says in one line what a generated set declares, for an Event or a
// log line: replicas and failure domains.
func Summary(set *machinev1.ControlPlaneMachineSet) string {
	replicas := int32(3)
	if set.Spec.Replicas != nil {
		replicas = *set.Spec.Replicas
	}
	fds := "none (the template places every machine)"
	if t := set.Spec.Template.OpenShiftMachineV1Beta1Machine; t != nil {
		if names := failureDomainSet(t.FailureDomains); len(names) > 0 {
			sorted := make([]string, 0, len(names))
			for n := range names {
				sorted = append(sorted, n)
			}
			sort.Strings(sorted)
			fds = strings.Join(sorted, ", ")
		}
	}
	return fmt.Sprintf("%d replicas, %s, failure domains: %s", replicas, set.Spec.Strategy.Type, fds)
}
