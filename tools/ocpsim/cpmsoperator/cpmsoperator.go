// Package cpmsoperator simulates the control-plane-machine-set operator
// (openshift/cluster-control-plane-machine-set-operator) as far as the
// product can see it: the Machines it creates for the ControlPlaneMachineSet
// openshift-machine-api/cluster, the ClusterOperator control-plane-machine-set
// it reports, and the Events it records on the set.
//
// The operator acts only while it runs: while its Deployment
// openshift-machine-api/control-plane-machine-set-operator exists, is not
// being deleted and asks for at least one replica (Runs). Scaling the
// Deployment to zero or deleting it stops the operator at once — no Machine
// is created and its ClusterOperator is no longer written, so it keeps
// whatever it last reported, including its version. The version it reports
// is the RELEASE_VERSION of its Deployment, which the simulated CVO sets when
// it rolls the release out: an update therefore waits on
// control-plane-machine-set while the operator is scaled down, and resumes
// once it runs again (see cvo.Options.SelfReported).
//
// While it runs, for an Active set:
//   - OnDelete: an index (the number after the last "-" of a Machine's name)
//     whose every Machine is being deleted, or that is missing (fewer indexes
//     than replicas), gets one new Machine: named <prefix>-<5 random>-<index>
//     (prefix: spec.machineNamePrefix, else the template's cluster-api-cluster
//     and cluster-api-machine-role labels, as upstream names them), with the
//     template's labels, annotations and spec, the failure domain of the
//     index (AWS: placement.availabilityZone and subnet of the deleted
//     Machine, when the set declares failure domains; for a missing index the
//     declared domain with the fewest live Machines), and the set as its
//     controller; an Event Created "created machine: NAME" on the set.
//   - RollingUpdate (and Recreate): the simulator does nothing to Machines.
//     Only OnDelete replacements are simulated; a rolling update is left to
//     whoever drives it (the product, or a test).
//
// The ClusterOperator carries the conditions the operator derives from the
// set's Machines (Available AllReplicasAvailable / UnavailableReplicas,
// Progressing NeedsUpdateReplicas while a Machine's providerSpec differs from
// the template or a replacement is not yet Ready, ExcessReplicas,
// AllReplicasUpdated; Degraded NoReadyMachines / AsExpected; Upgradeable
// following Available), or, without an Active set, the plain available ones.
//
// Not simulated: the set's own status and finalizer, adopting Machines
// (owner references), indexes derived from failure domains for Machines
// whose name has no index, failure domains of platforms other than AWS, the
// validation the operator's webhook does.
//
// SetupWebhook adds the payload's validating webhook for the sets
// (ocpsim.Options.PayloadWebhook), which answers — admitting everything —
// only while the operator runs, so that the apiserver refuses every create
// and update of a set while it is scaled to zero.
//
// cpmsoperator.go holds the pure decisions, controller.go the loop,
// webhook.go the webhook.
package cpmsoperator

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/upshift-io/upshift/tools/ocpsim/cvo"
	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
)

// Names of the operator's objects.
const (
	Namespace = machineapi.Namespace
	// SetName is the one ControlPlaneMachineSet the operator reconciles.
	SetName = "cluster"
	// ClusterOperator is the operator's ClusterOperator.
	ClusterOperator = cvo.ControlPlaneMachineSet
	// EventCreated is the reason of the Event recorded on the set for each
	// Machine created.
	EventCreated = "Created"
)

// Deployment is where the operator runs.
var Deployment = cvo.CPMSOperatorDeployment

// UnreadyNodeGracePeriod is how long the operator keeps counting a Running
// Machine whose Node turned NotReady as ready (a reboot is not an outage).
const UnreadyNodeGracePeriod = 20 * time.Minute

// Runs reports whether the operator runs: its Deployment exists (d not
// nil), is not being deleted and asks for at least one replica (unset
// means one).
func Runs(d *appsv1.Deployment) bool {
	return d != nil && cvo.OperatorRuns(d)
}

// ReleaseVersion is the version the operator of Deployment d reports: its
// container's RELEASE_VERSION ("" when it has none).
func ReleaseVersion(d *appsv1.Deployment) string {
	if c := cvo.OperatorContainer(d); c != nil {
		for _, e := range c.Env {
			if e.Name == cvo.ReleaseVersionEnv {
				return e.Value
			}
		}
	}
	return ""
}

// Active reports whether the operator manages the set's Machines.
func Active(set *machinev1.ControlPlaneMachineSet) bool {
	return set != nil && set.DeletionTimestamp == nil && set.Spec.State == machinev1.ControlPlaneMachineSetStateActive &&
		set.Spec.Template.MachineType == machinev1.OpenShiftMachineV1Beta1MachineType && set.Spec.Template.OpenShiftMachineV1Beta1Machine != nil
}

// MachineIndex is the index of a control-plane Machine: the number after the
// last "-" of its name.
func MachineIndex(name string) (int32, bool) {
	i := strings.LastIndex(name, "-")
	n, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}

// Selected returns the Machines the set's selector selects.
func Selected(set *machinev1.ControlPlaneMachineSet, machines []machinev1beta1.Machine) ([]machinev1beta1.Machine, error) {
	sel, err := metav1.LabelSelectorAsSelector(&set.Spec.Selector)
	if err != nil {
		return nil, err
	}
	if sel.Empty() {
		return nil, nil
	}
	var out []machinev1beta1.Machine
	for i := range machines {
		if machines[i].Namespace == set.Namespace && sel.Matches(labels.Set(machines[i].Labels)) {
			out = append(out, machines[i])
		}
	}
	return out, nil
}

// byIndex groups machines by index. Indexes are filled from 0 until there
// are as many as the set's replicas, as the operator does, so a missing
// index appears with no machine. Machines without an index are left out.
func byIndex(set *machinev1.ControlPlaneMachineSet, machines []machinev1beta1.Machine) map[int32][]*machinev1beta1.Machine {
	out := map[int32][]*machinev1beta1.Machine{}
	for i := range machines {
		if idx, ok := MachineIndex(machines[i].Name); ok {
			out[idx] = append(out[idx], &machines[i])
		}
	}
	replicas := ptr.Deref(set.Spec.Replicas, 0)
	for i := int32(0); int32(len(out)) < replicas; i++ {
		if _, ok := out[i]; !ok {
			out[i] = nil
		}
	}
	return out
}

func sortedIndexes(m map[int32][]*machinev1beta1.Machine) []int32 {
	out := make([]int32, 0, len(m))
	for i := range m {
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

// Replacement is a Machine the operator creates.
type Replacement struct {
	Index int32
	// From is the newest Machine of the index, whose failure domain the
	// new one keeps; nil for a missing index.
	From *machinev1beta1.Machine
}

// OnDeleteReplacements is the OnDelete strategy of an Active set over the
// Machines it selects: one new Machine for each index whose every Machine
// is being deleted, and for each missing index; never one for an index with
// a Machine that is not being deleted. Nothing for another strategy or a
// set that is not Active.
func OnDeleteReplacements(set *machinev1.ControlPlaneMachineSet, selected []machinev1beta1.Machine) []Replacement {
	if !Active(set) || set.Spec.Strategy.Type != machinev1.OnDelete {
		return nil
	}
	idx := byIndex(set, selected)
	var out []Replacement
	for _, i := range sortedIndexes(idx) {
		var from *machinev1beta1.Machine
		live := false
		for _, m := range idx[i] {
			if m.DeletionTimestamp == nil {
				live = true
				break
			}
			if from == nil || m.CreationTimestamp.After(from.CreationTimestamp.Time) {
				from = m
			}
		}
		if !live {
			out = append(out, Replacement{Index: i, From: from})
		}
	}
	return out
}

// MachineName names a new Machine of index as the operator does:
// <spec.machineNamePrefix>-<suffix>-<index>, or, without a prefix,
// <cluster-api-cluster>-<cluster-api-machine-role>-<suffix>-<index> from
// the template's labels.
func MachineName(set *machinev1.ControlPlaneMachineSet, index int32, suffix string) (string, error) {
	if set.Spec.MachineNamePrefix != "" {
		return fmt.Sprintf("%s-%s-%d", set.Spec.MachineNamePrefix, suffix, index), nil
	}
	l := set.Spec.Template.OpenShiftMachineV1Beta1Machine.ObjectMeta.Labels
	cluster, role := l[machineapi.ClusterLabel], l[machineapi.RoleLabel]
	if cluster == "" || role == "" {
		return "", fmt.Errorf("the template has no %s or %s label to name machines by", machineapi.ClusterLabel, machineapi.RoleLabel)
	}
	return fmt.Sprintf("%s-%s-%s-%d", cluster, role, suffix, index), nil
}

// failureDomain is an AWS failure domain as a providerSpec carries it.
type failureDomain struct {
	zone   string
	subnet map[string]any // providerSpec.value.subnet (v1beta1 AWSResourceReference)
}

func decode(raw *runtime.RawExtension) (map[string]any, error) {
	v := map[string]any{}
	if raw == nil || len(raw.Raw) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(raw.Raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// machineFailureDomain reads the AWS failure domain of a Machine.
func machineFailureDomain(m *machinev1beta1.Machine) failureDomain {
	v, err := decode(m.Spec.ProviderSpec.Value)
	if err != nil {
		return failureDomain{}
	}
	var fd failureDomain
	if p, ok := v["placement"].(map[string]any); ok {
		fd.zone, _ = p["availabilityZone"].(string)
	}
	if s, ok := v["subnet"].(map[string]any); ok && len(s) > 0 {
		fd.subnet = s
	}
	return fd
}

// declaredFailureDomains are the set's AWS failure domains, sorted by zone.
func declaredFailureDomains(set *machinev1.ControlPlaneMachineSet) []failureDomain {
	fds := set.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains
	if fds == nil || fds.Platform != configv1.AWSPlatformType || fds.AWS == nil {
		return nil
	}
	var out []failureDomain
	for _, d := range *fds.AWS {
		out = append(out, failureDomain{zone: d.Placement.AvailabilityZone, subnet: subnetV1Beta1(d.Subnet)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].zone < out[j].zone })
	return out
}

// subnetV1Beta1 turns a failure domain's subnet into the providerSpec's form.
func subnetV1Beta1(r *machinev1.AWSResourceReference) map[string]any {
	switch {
	case r == nil:
		return nil
	case r.Type == machinev1.AWSIDReferenceType && r.ID != nil:
		return map[string]any{"id": *r.ID}
	case r.Type == machinev1.AWSARNReferenceType && r.ARN != nil:
		return map[string]any{"arn": *r.ARN}
	case r.Type == machinev1.AWSFiltersReferenceType && r.Filters != nil:
		var fs []any
		for _, f := range *r.Filters {
			vals := make([]any, 0, len(f.Values))
			for _, v := range f.Values {
				vals = append(vals, v)
			}
			fs = append(fs, map[string]any{"name": f.Name, "values": vals})
		}
		return map[string]any{"filters": fs}
	}
	return nil
}

// providerSpec is the template's providerSpec.value with failure domain fd
// injected as the operator does for AWS: the zone when set, the subnet when
// the domain has one.
func providerSpec(set *machinev1.ControlPlaneMachineSet, fd *failureDomain) (map[string]any, error) {
	v, err := decode(set.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value)
	if err != nil {
		return nil, fmt.Errorf("template providerSpec: %w", err)
	}
	if fd == nil {
		return v, nil
	}
	if fd.zone != "" {
		p, _ := v["placement"].(map[string]any)
		if p == nil {
			p = map[string]any{}
		}
		p["availabilityZone"] = fd.zone
		v["placement"] = p
	}
	if len(fd.subnet) > 0 {
		v["subnet"] = fd.subnet
	}
	return v, nil
}

// indexFailureDomain is the failure domain a new Machine of r gets: none
// when the set declares no failure domains (the template as it is); the
// deleted Machine's; or, for a missing index, the declared domain with the
// fewest live Machines (ties: by zone).
func indexFailureDomain(set *machinev1.ControlPlaneMachineSet, r Replacement, selected []machinev1beta1.Machine) *failureDomain {
	declared := declaredFailureDomains(set)
	if len(declared) == 0 {
		return nil
	}
	if r.From != nil {
		fd := machineFailureDomain(r.From)
		return &fd
	}
	used := map[string]int{}
	for i := range selected {
		if selected[i].DeletionTimestamp == nil {
			used[machineFailureDomain(&selected[i]).zone]++
		}
	}
	best := declared[0]
	for _, d := range declared[1:] {
		if used[d.zone] < used[best.zone] {
			best = d
		}
	}
	return &best
}

// NewMachine builds the Machine that replaces r: named with suffix (five
// random characters in the operator), the template's labels, annotations
// and spec, the index's failure domain, and the set as controller.
func NewMachine(set *machinev1.ControlPlaneMachineSet, r Replacement, selected []machinev1beta1.Machine, suffix string) (*machinev1beta1.Machine, error) {
	name, err := MachineName(set, r.Index, suffix)
	if err != nil {
		return nil, err
	}
	tmpl := set.Spec.Template.OpenShiftMachineV1Beta1Machine
	ps, err := providerSpec(set, indexFailureDomain(set, r, selected))
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(ps)
	if err != nil {
		return nil, err
	}
	m := &machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: set.Namespace,
			Labels: copyMap(tmpl.ObjectMeta.Labels), Annotations: copyMap(tmpl.ObjectMeta.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, machinev1.GroupVersion.WithKind("ControlPlaneMachineSet"))},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: raw}
	return m, nil
}

func copyMap(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// NeedsUpdate reports whether a Machine's providerSpec differs from what the
// set would give its index now (the template with the Machine's failure
// domain, when the set declares failure domains).
func NeedsUpdate(set *machinev1.ControlPlaneMachineSet, m *machinev1beta1.Machine) bool {
	var fd *failureDomain
	if len(declaredFailureDomains(set)) > 0 {
		d := machineFailureDomain(m)
		fd = &d
	}
	want, err := providerSpec(set, fd)
	if err != nil {
		return true
	}
	have, err := decode(m.Spec.ProviderSpec.Value)
	if err != nil {
		return true
	}
	return !reflect.DeepEqual(want, have)
}

// MachineReady is the operator's readiness of a control-plane Machine with
// its Node (nil when it has none): Running with a Ready Node, or one NotReady
// for less than grace (wall time; a reboot); or Deleting while its Node is
// still Ready. recheck, when positive, is when a NotReady Node's grace ends.
func MachineReady(m *machinev1beta1.Machine, node *corev1.Node, grace time.Duration, now time.Time) (ready bool, recheck time.Duration) {
	if m.Status.NodeRef == nil || node == nil {
		return false, 0
	}
	var c *corev1.NodeCondition
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			c = &node.Status.Conditions[i]
		}
	}
	nodeReady := c != nil && c.Status == corev1.ConditionTrue
	switch ptr.Deref(m.Status.Phase, "") {
	case machinev1beta1.PhaseRunning:
		if nodeReady {
			return true, 0
		}
		if c != nil {
			if left := c.LastTransitionTime.Add(grace).Sub(now); left > 0 {
				return true, left
			}
		}
	case machinev1beta1.PhaseDeleting:
		return nodeReady, 0
	}
	return false, 0
}

// Counts are what the operator observes of the set's Machines (the set's
// status fields of the same names).
type Counts struct {
	Desired     int32 // spec.replicas
	Replicas    int32 // Machines with an index
	Ready       int32 // ready Machines
	Updated     int32 // ready Machines that need no update
	Unavailable int32 // indexes without a ready Machine
}

// Observe counts the set's Machines (ready tells a Machine's readiness).
func Observe(set *machinev1.ControlPlaneMachineSet, selected []machinev1beta1.Machine, ready func(*machinev1beta1.Machine) bool) Counts {
	c := Counts{Desired: ptr.Deref(set.Spec.Replicas, 0)}
	for _, ms := range byIndex(set, selected) {
		available := false
		for _, m := range ms {
			c.Replicas++
			if ready(m) {
				c.Ready++
				available = true
				if !NeedsUpdate(set, m) {
					c.Updated++
				}
			}
		}
		if !available {
			c.Unavailable++
		}
	}
	return c
}

// Conditions are the ClusterOperator's conditions: derived from c for an
// Active set, the plain available ones otherwise (no set, or Inactive).
func Conditions(set *machinev1.ControlPlaneMachineSet, c Counts) []configv1.ClusterOperatorStatusCondition {
	cond := func(t configv1.ClusterStatusConditionType, s configv1.ConditionStatus, reason, msg string) configv1.ClusterOperatorStatusCondition {
		return configv1.ClusterOperatorStatusCondition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	const asExpected = "AsExpected"
	if !Active(set) {
		return []configv1.ClusterOperatorStatusCondition{
			cond(configv1.OperatorAvailable, configv1.ConditionTrue, asExpected, "cluster operator is available"),
			cond(configv1.OperatorProgressing, configv1.ConditionFalse, asExpected, ""),
			cond(configv1.OperatorDegraded, configv1.ConditionFalse, asExpected, ""),
			cond(configv1.OperatorUpgradeable, configv1.ConditionTrue, asExpected, "cluster operator is upgradable"),
		}
	}
	available := cond(configv1.OperatorAvailable, configv1.ConditionTrue, "AllReplicasAvailable", "")
	if c.Unavailable > 0 {
		available = cond(configv1.OperatorAvailable, configv1.ConditionFalse, "UnavailableReplicas", fmt.Sprintf("Missing %d available replica(s)", c.Unavailable))
	}
	var progressing configv1.ClusterOperatorStatusCondition
	switch {
	case c.Desired > c.Updated:
		progressing = cond(configv1.OperatorProgressing, configv1.ConditionTrue, "NeedsUpdateReplicas", fmt.Sprintf("Observed %d replica(s) in need of update", c.Desired-c.Updated))
	case c.Desired < c.Ready:
		progressing = cond(configv1.OperatorProgressing, configv1.ConditionTrue, "ExcessReplicas", fmt.Sprintf("Waiting for %d old replica(s) to be removed", c.Ready-c.Updated))
	default:
		progressing = cond(configv1.OperatorProgressing, configv1.ConditionFalse, "AllReplicasUpdated", "")
	}
	degraded := cond(configv1.OperatorDegraded, configv1.ConditionFalse, asExpected, "")
	if c.Ready == 0 {
		degraded = cond(configv1.OperatorDegraded, configv1.ConditionTrue, "NoReadyMachines", "")
	}
	upgradeable := cond(configv1.OperatorUpgradeable, configv1.ConditionTrue, asExpected, "cluster operator is upgradable")
	if available.Status != configv1.ConditionTrue {
		upgradeable = cond(configv1.OperatorUpgradeable, configv1.ConditionFalse, asExpected, "cluster operator is not upgradable")
	}
	return []configv1.ClusterOperatorStatusCondition{available, progressing, degraded, upgradeable}
}

// RelatedObjects are the ClusterOperator's related objects.
func RelatedObjects() []configv1.ObjectReference {
	return []configv1.ObjectReference{
		{Group: "", Resource: "namespaces", Name: Namespace},
		{Group: machinev1.GroupName, Resource: "controlplanemachinesets"},
		{Group: machinev1beta1.GroupName, Resource: "machines"},
	}
}
