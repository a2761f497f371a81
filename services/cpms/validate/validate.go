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
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1alpha1 "github.com/openshift/api/machine/v1alpha1"
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

// NeedsInfrastructure reports whether Set needs the Infrastructure "cluster"
// for this request: vSphere and Nutanix failure domains are defined there,
// and the vSphere rules depend on whether it defines any. The webhook reads
// it only then, so the other platforms need no access to it.
func NeedsInfrastructure(old, cpms *machinev1.ControlPlaneMachineSet) bool {
	if cpms.DeletionTimestamp != nil || (old != nil && equality.Semantic.DeepEqual(old.Spec, cpms.Spec)) {
		return false // Set validates no spec rule for these
	}
	tmpl := cpms.Spec.Template.OpenShiftMachineV1Beta1Machine
	if tmpl == nil {
		return false
	}
	var spec []byte
	if tmpl.Spec.ProviderSpec.Value != nil {
		spec = tmpl.Spec.ProviderSpec.Value.Raw
	}
	if fds := tmpl.FailureDomains; fds != nil && (fds.Platform == configv1.VSpherePlatformType || fds.Platform == configv1.NutanixPlatformType) {
		return true
	}
	p, err := platform.Detect(tmpl.FailureDomains, spec)
	return err == nil && (p.Type() == configv1.VSpherePlatformType || p.Type() == configv1.NutanixPlatformType)
}

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
// Machines in its namespace (needed only when NeedsMachines), infra the
// Infrastructure "cluster" (needed only when NeedsInfrastructure; nil when
// absent). It returns warnings (accepted, but worth telling) and the errors
// that reject it.
func Set(old, cpms *machinev1.ControlPlaneMachineSet, machines []machinev1beta1.Machine, infra *configv1.Infrastructure) (warnings []string, errs field.ErrorList) {
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
	fds, fdErr := platform.FromSpec(tmpl.FailureDomains, infra)
	if undefined := (platform.UndefinedFailureDomainsError{}); errors.As(fdErr, &undefined) {
		for _, u := range undefined {
			errs = append(errs, field.Invalid(fdPath.Child(strings.ToLower(string(u.Platform))).Index(u.Index).Child("name"), u.Name, u.Error()))
		}
	} else if fdErr != nil {
		errs = append(errs, field.Invalid(fdPath.Child("platform"), platformOf(tmpl.FailureDomains), fdErr.Error()))
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
	for _, fd := range fds {
		if _, err := p.Inject(spec, fd); err != nil {
			errs = append(errs, field.Invalid(fdPath.Child(strings.ToLower(string(fd.Platform))).Index(declaredIndex(tmpl.FailureDomains, fd)), fd.String(), err.Error()))
		}
	}
	w, e := platformRules(p, spec, tmpl.FailureDomains, infra)
	warnings, errs = append(warnings, w...), append(errs, e...)
	if fdErr != nil {
		return warnings, errs // where machines belong is unknown
	}

	if old == nil || activates(old, cpms) {
		errs = append(errs, existingMachines(cpms, p, spec, fds, selector, machines)...)
	}
	return warnings, errs
}

// platformRules are the platform-specific rules of the upstream webhook for
// the platforms the controller knows, with its messages.
func platformRules(p platform.Platform, spec []byte, fds *machinev1.FailureDomains, infra *configv1.Infrastructure) (warnings []string, errs field.ErrorList) {
	var tree map[string]any
	if err := json.Unmarshal(spec, &tree); err != nil {
		return nil, nil // already reported by the decode
	}
	switch p.Type() {
	case configv1.AzurePlatformType:
		if v, _ := tree["internalLoadBalancer"].(string); v == "" {
			errs = append(errs, field.Required(specValue.Child("internalLoadBalancer"), "control-plane machines on Azure must join the internal load balancer of the API, or they never receive API traffic"))
		}
	case configv1.GCPPlatformType:
		if v, _ := tree["targetPools"].([]any); len(v) == 0 {
			warnings = append(warnings, fmt.Sprintf("%s: no targetPools: control-plane machines are not added to a load balancer (expected only on private clusters)", specValue.Child("targetPools")))
		}
	case configv1.OpenStackPlatformType:
		var c machinev1alpha1.OpenstackProviderSpec
		if json.Unmarshal(spec, &c) != nil {
			return nil, nil
		}
		for i, d := range c.AdditionalBlockDevices {
			// The etcd database may grow to its 8 GiB quota: a smaller
			// device would fill up before etcd raises its alarm.
			if d.Name == "etcd" && d.SizeGiB < 10 {
				errs = append(errs, field.Invalid(specValue.Child("additionalBlockDevices").Index(i).Child("sizeGiB"), d.SizeGiB, "etcd block device size must be at least 10 GiB"))
			}
		}
	case configv1.VSpherePlatformType:
		var c machinev1beta1.VSphereMachineProviderSpec
		if json.Unmarshal(spec, &c) != nil {
			return nil, nil
		}
		return vsphereRules(c, fds, infra)
	}
	return warnings, errs
}

// vsphereTemplatePath is what a template given as an inventory path must
// look like: /<datacenter>/vm/<...>.
var vsphereTemplatePath = regexp.MustCompile(`^/.*?/vm/.*?`)

// vsphereRules: when the Infrastructure defines failure domains, they are
// where the machines' placement comes from, and the template's own placement
// fields would be overwritten by them. Upstream refuses the ones a failure
// domain always sets (vCenter, datacenter, datastore, networks) and warns of
// those it may leave alone. It checks them only when the set declares
// failure domains, so that a set made before 4.16 stays editable.
func vsphereRules(c machinev1beta1.VSphereMachineProviderSpec, fds *machinev1.FailureDomains, infra *configv1.Infrastructure) (warnings []string, errs field.ErrorList) {
	templateRule := func() {
		// A name alone is an older installer's template; a path must be
		// the template's full inventory path.
		if strings.Contains(c.Template, "/") && !vsphereTemplatePath.MatchString(c.Template) {
			errs = append(errs, field.Invalid(specValue.Child("template"), c.Template, "template must be provided as the full path"))
		}
	}
	if infra == nil || infra.Spec.PlatformSpec.VSphere == nil || len(infra.Spec.PlatformSpec.VSphere.FailureDomains) == 0 {
		templateRule()
		return warnings, errs
	}
	if c.Template != "" {
		warnings = append(warnings, fmt.Sprintf("%s: template field is configured and may be ignored if configured in the failure domain.", specValue.Child("template")))
		templateRule()
	}
	if fds == nil || len(fds.VSphere) == 0 {
		return warnings, errs
	}
	for i, d := range c.Network.Devices {
		if d.NetworkName != "" {
			errs = append(errs, field.Forbidden(specValue.Child("network", "devices").Index(i).Child("networkName"),
				"network devices should not be set when control plane nodes are in a failure domain: the failure domain's topology.networks name them (only addressesFromPools may be set)"))
		}
	}
	if ws := c.Workspace; ws != nil {
		wsPath := specValue.Child("workspace")
		for _, f := range []struct{ name, value string }{{"datacenter", ws.Datacenter}, {"datastore", ws.Datastore}, {"server", ws.Server}} {
			if f.value != "" {
				errs = append(errs, field.Forbidden(wsPath.Child(f.name), "workspace fields should not be set when control plane nodes are in a failure domain: the failure domain's "+f.name+" replaces it"))
			}
		}
		if ws.Folder != "" {
			warnings = append(warnings, fmt.Sprintf("%s: folder field is configured and may be ignored if configured in the failure domain.", wsPath.Child("folder")))
		}
		if ws.ResourcePool != "" {
			warnings = append(warnings, fmt.Sprintf("%s: resourcePool field is configured and may be ignored if configured in the failure domain.", wsPath.Child("resourcePool")))
		}
	}
	return warnings, errs
}

// declaredIndex is fd's position in the failure domains as written (FromSpec
// returns them sorted), so that an error names the entry a person wrote.
func declaredIndex(fds *machinev1.FailureDomains, fd platform.FailureDomain) int {
	same := func(other platform.FailureDomain) bool { return other.String() == fd.String() }
	switch {
	case fd.AWS != nil && fds.AWS != nil:
		for i := range *fds.AWS {
			if same(platform.FailureDomain{AWS: &(*fds.AWS)[i]}) {
				return i
			}
		}
	case fd.Azure != nil && fds.Azure != nil:
		for i := range *fds.Azure {
			if same(platform.FailureDomain{Azure: &(*fds.Azure)[i]}) {
				return i
			}
		}
	case fd.GCP != nil && fds.GCP != nil:
		for i := range *fds.GCP {
			if same(platform.FailureDomain{GCP: &(*fds.GCP)[i]}) {
				return i
			}
		}
	case fd.OpenStack != nil:
		for i := range fds.OpenStack {
			if same(platform.FailureDomain{OpenStack: &fds.OpenStack[i]}) {
				return i
			}
		}
	case fd.VSphere != nil:
		for i, ref := range fds.VSphere {
			if ref.Name == fd.VSphere.Name {
				return i
			}
		}
	case fd.Nutanix != nil:
		for i, ref := range fds.Nutanix {
			if ref.Name == fd.Nutanix.Name {
				return i
			}
		}
	}
	return 0
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
