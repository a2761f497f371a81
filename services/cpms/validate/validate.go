// Package validate holds the rules the ControlPlaneMachineSet's own schema
// and CEL cannot express, because they need the platform's provider spec or
// the machines that exist: the selector selects what the template creates,
// the failure domains fit the provider spec's platform, and activating the
// set neither changes the number of control-plane machines nor moves one to
// another failure domain. The admission webhook (package webhook) calls Set;
// everything here is pure.
package validate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/upshift-io/upshift/services/cpms/platform"
)

// Name is the only name the controller manages, and Namespace the only
// namespace (the upstream operator's).
const (
	Name      = "cluster"
	Namespace = "openshift-machine-api"
)

var (
	specPath     = field.NewPath("spec")
	templatePath = specPath.Child("template", "machines_v1beta1_machine_openshift_io")
	fdPath       = templatePath.Child("failureDomains")
	specValue    = templatePath.Child("spec", "providerSpec", "value")
)

// NeedsMachines reports whether Set needs the machines of the set's namespace
// for this request (a create, or an update that activates the set), so the
// webhook lists them only then.
func NeedsMachines(old, cpms *machinev1.ControlPlaneMachineSet) bool {
	return old == nil || activates(old, cpms)
}

func activates(old, cpms *machinev1.ControlPlaneMachineSet) bool {
	return cpms.Spec.State == machinev1.ControlPlaneMachineSetStateActive &&
		(old == nil || old.Spec.State != machinev1.ControlPlaneMachineSetStateActive)
}

// Set validates a create (old nil) or an update of cpms. machines are the
// Machines in its namespace (needed only when NeedsMachines). It returns
// warnings (accepted, but worth telling) and the errors that reject it.
func Set(old, cpms *machinev1.ControlPlaneMachineSet, machines []machinev1beta1.Machine) (warnings []string, errs field.ErrorList) {
	if cpms.DeletionTimestamp != nil {
		// A set being deleted is only ever released (its finalizer removed):
		// validating it again could make it undeletable once the rules have
		// changed under an older object. Only activating it is refused.
		if old != nil && activates(old, cpms) {
			errs = append(errs, field.Forbidden(specPath.Child("state"), "a ControlPlaneMachineSet that is being deleted cannot be activated"))
		}
		return nil, errs
	}
	if old != nil && equality.Semantic.DeepEqual(old.Spec, cpms.Spec) {
		// Metadata only (a finalizer, the remediation budget, a label): the
		// rules are about the spec, and refusing such an update would only
		// block the controller's own writes on a set admitted under older
		// rules.
		return nil, nil
	}
	if cpms.Name != Name {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cpms.Name, fmt.Sprintf("must be %q: the controller manages only the ControlPlaneMachineSet named %s", Name, Name)))
	}
	tmpl := cpms.Spec.Template.OpenShiftMachineV1Beta1Machine
	if cpms.Spec.Template.MachineType != machinev1.OpenShiftMachineV1Beta1MachineType || tmpl == nil {
		return warnings, append(errs, field.Required(templatePath, fmt.Sprintf("spec.template.machineType must be %s with its template set", machinev1.OpenShiftMachineV1Beta1MachineType)))
	}

	selector, err := metav1.LabelSelectorAsSelector(&cpms.Spec.Selector)
	switch {
	case err != nil:
		errs = append(errs, field.Invalid(specPath.Child("selector"), cpms.Spec.Selector, err.Error()))
	case selector.Empty():
		errs = append(errs, field.Invalid(specPath.Child("selector"), cpms.Spec.Selector, "must not be empty: it would select every Machine of the namespace, workers included"))
	case !selector.Matches(labels.Set(tmpl.ObjectMeta.Labels)):
		errs = append(errs, field.Invalid(specPath.Child("selector"), selector.String(),
			fmt.Sprintf("does not match the template labels (%s): machines created from the template would not belong to the set", templatePath.Child("metadata", "labels"))))
	}

	if tmpl.Spec.ProviderSpec.Value == nil || len(tmpl.Spec.ProviderSpec.Value.Raw) == 0 {
		return warnings, append(errs, field.Required(specValue, "the provider spec of the control-plane machines is required"))
	}
	spec := tmpl.Spec.ProviderSpec.Value.Raw
	p, err := platform.Detect(tmpl.FailureDomains, spec)
	if err != nil {
		return warnings, append(errs, field.Invalid(fdPath.Child("platform"), platformOf(tmpl.FailureDomains), err.Error()))
	}
	fds, err := platform.FromSpec(tmpl.FailureDomains)
	if err != nil {
		return warnings, append(errs, field.Invalid(fdPath.Child("platform"), platformOf(tmpl.FailureDomains), err.Error()))
	}
	// Decoding the spec through the platform's type proves it is a provider
	// spec of that platform; the fields the type does not know are not
	// compared later, which a person should hear about now.
	_, unknown, err := platform.Compare(p, spec, spec)
	if err != nil {
		return warnings, append(errs, field.Invalid(specValue, "<providerSpec>", fmt.Sprintf("does not decode for platform %s: %v", platformName(p), err)))
	}
	for _, u := range unknown {
		warnings = append(warnings, fmt.Sprintf("%s: field %q is unknown to the %s provider type and will not be compared", specValue, u, platformName(p)))
	}
	for i, fd := range fds {
		if _, err := p.Inject(spec, fd); err != nil {
			errs = append(errs, field.Invalid(fdPath.Child(strings.ToLower(string(fd.Platform))).Index(i), fd.String(), err.Error()))
		}
	}
	w, e := platformRules(p, spec)
	warnings, errs = append(warnings, w...), append(errs, e...)

	if old == nil || activates(old, cpms) {
		errs = append(errs, existingMachines(cpms, p, spec, fds, selector, machines)...)
	}
	return warnings, errs
}

// platformRules are the platform-specific rules of the upstream webhook for
// the platforms the controller knows.
func platformRules(p platform.Platform, spec []byte) (warnings []string, errs field.ErrorList) {
	var tree map[string]any
	if err := json.Unmarshal(spec, &tree); err != nil {
		return nil, nil // already reported by the decode
	}
	switch platformName(p) {
	case "Azure":
		if v, _ := tree["internalLoadBalancer"].(string); v == "" {
			errs = append(errs, field.Required(specValue.Child("internalLoadBalancer"), "control-plane machines on Azure must join the internal load balancer of the API, or they never receive API traffic"))
		}
	case "GCP":
		if v, _ := tree["targetPools"].([]any); len(v) == 0 {
			warnings = append(warnings, fmt.Sprintf("%s: no targetPools: control-plane machines are not added to a load balancer (expected only on private clusters)", specValue.Child("targetPools")))
		}
	}
	return warnings, errs
}

// existingMachines checks, on create and on activation, that the set agrees
// with the control plane that exists: as many machines as replicas (when
// Active), and every machine where the failure-domain mapping would keep it,
// so activating replaces nothing merely to move it.
func existingMachines(cpms *machinev1.ControlPlaneMachineSet, p platform.Platform, spec []byte, fds []platform.FailureDomain, selector labels.Selector, machines []machinev1beta1.Machine) field.ErrorList {
	var errs field.ErrorList
	if selector == nil || selector.Empty() {
		return errs // the selector is reported already; counting by it means nothing
	}
	var live []machinev1beta1.Machine
	for _, m := range machines {
		if m.DeletionTimestamp == nil && selector.Matches(labels.Set(m.Labels)) {
			live = append(live, m)
		}
	}
	sort.Slice(live, func(i, j int) bool { return live[i].Name < live[j].Name })
	replicas := 3
	if cpms.Spec.Replicas != nil {
		replicas = int(*cpms.Spec.Replicas)
	}
	if cpms.Spec.State == machinev1.ControlPlaneMachineSetStateActive && len(live) != replicas {
		names := make([]string, len(live))
		for i, m := range live {
			names[i] = m.Name
		}
		errs = append(errs, field.Invalid(specPath.Child("replicas"), replicas,
			fmt.Sprintf("%d control-plane machines match spec.selector (%s) but an Active set must start from exactly spec.replicas of them; activating would create or strand control-plane machines", len(live), strings.Join(names, ", "))))
	}

	var placed []platform.PlacedMachine
	var used []int
	observed := map[string]platform.FailureDomain{}
	for _, m := range live {
		if m.Spec.ProviderSpec.Value == nil {
			continue
		}
		fd, err := p.FailureDomain(m.Spec.ProviderSpec.Value.Raw)
		if err != nil {
			continue
		}
		observed[m.Name] = fd
		if idx, ok := platform.IndexFromName(m.Name); ok {
			used = append(used, idx)
			placed = append(placed, platform.PlacedMachine{Name: m.Name, Index: idx, Observed: fd, Created: m.CreationTimestamp.Time})
		}
	}
	if len(fds) == 0 {
		// Without failure domains every machine is made from the template as
		// is: the template's own zone must be every machine's.
		want, err := p.FailureDomain(spec)
		if err != nil || want.IsZero() {
			return errs
		}
		for _, pm := range placed {
			if !want.Matches(pm.Observed) {
				errs = append(errs, field.Invalid(specValue, want.String(),
					fmt.Sprintf("machine %s is in %s but the template declares no failure domains and places every machine in %s: activating would replace it; declare the failure domains the machines use", pm.Name, pm.Observed, want)))
			}
		}
		return errs
	}
	mapping := platform.MapFailureDomains(platform.Indexes(replicas, used), fds, placed)
	for _, pm := range placed {
		target, ok := mapping[pm.Index]
		if !ok || target.Matches(pm.Observed) {
			continue
		}
		declared := false
		for _, fd := range fds {
			declared = declared || fd.Matches(pm.Observed)
		}
		msg := fmt.Sprintf("machine %s is in %s, which the set does not declare: activating would move it to %s and reduce the failure domains the control plane uses; declare %s", pm.Name, pm.Observed, target, pm.Observed)
		if declared {
			msg = fmt.Sprintf("machine %s shares %s with another control-plane machine while a declared failure domain is unused: activating would move it to %s; activate with the failure domains the machines use, then change them to rebalance", pm.Name, pm.Observed, target)
		}
		errs = append(errs, field.Invalid(fdPath, pm.Observed.String(), msg))
	}
	return errs
}

func platformOf(fds *machinev1.FailureDomains) string {
	if fds == nil {
		return ""
	}
	return string(fds.Platform)
}

func platformName(p platform.Platform) string {
	if t := p.Type(); t != "" {
		return string(t)
	}
	return "generic"
}
