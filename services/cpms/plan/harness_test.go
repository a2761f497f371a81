package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/upshift-io/upshift/libs/events"
)

var t0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

const ns = "openshift-machine-api"

// awsSpec is the provider spec of a control-plane machine in zone z with
// the given instance type, shaped like an installer-written one.
func awsSpec(instanceType, z string) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig",`+
		`"ami":{"id":"ami-0123"},"instanceType":%q,"placement":{"availabilityZone":"us-east-1%s","region":"us-east-1"},`+
		`"subnet":{"filters":[{"name":"tag:Name","values":["c1-private-us-east-1%s"]}]},"userDataSecret":{"name":"master-user-data"}}`,
		instanceType, z, z))
}

var masterLabels = map[string]string{
	"machine.openshift.io/cluster-api-machine-role": "master",
	"machine.openshift.io/cluster-api-machine-type": "master",
	"machine.openshift.io/cluster-api-cluster":      "c1",
}

// world is a cluster as the planner sees it, plus just enough of the
// machine API (provisioning, deletion) and of the etcd operator (hooks,
// members) to play scenarios through.
type world struct {
	t        *testing.T
	cpms     *machinev1.ControlPlaneMachineSet
	machines map[string]*machinev1beta1.Machine
	nodes    map[string]*corev1.Node
	cos      []configv1.ClusterOperator
	cv       *configv1.ClusterVersion
	cfg      Config
	now      time.Time
	members  map[string]string // machine -> learner|voting
	uids     int
	events   []events.Event
	// ceoStalled: the etcd operator never promotes nor releases.
	ceoStalled bool
	trace      []string
	// cpmsOperator: OpenShift's control-plane-machine-set operator runs
	// (see world.cpmso); it chooses the planner's Mode.
	cpmsOperator bool
	// actions are every action the planner returned, in order.
	actions []*Action
}

type worldOpt func(*world)

func onDelete(w *world) { w.cpms.Spec.Strategy.Type = machinev1.OnDelete }
func inactive(w *world) { w.cpms.Spec.State = machinev1.ControlPlaneMachineSetStateInactive }
func withZones(zs ...string) worldOpt {
	return func(w *world) {
		var fds []machinev1.AWSFailureDomain
		for _, z := range zs {
			fds = append(fds, machinev1.AWSFailureDomain{
				Placement: machinev1.AWSFailureDomainPlacement{AvailabilityZone: "us-east-1" + z},
				Subnet: &machinev1.AWSResourceReference{Type: machinev1.AWSFiltersReferenceType,
					Filters: &[]machinev1.AWSResourceFilter{{Name: "tag:Name", Values: []string{"c1-private-us-east-1" + z}}}},
			})
		}
		w.cpms.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains = &machinev1.FailureDomains{Platform: configv1.AWSPlatformType, AWS: &fds}
	}
}

// machinesAt places running machines "c1-master-<i>" at index i in zone z
// ("0a", "1b", ...), replacing the default three.
func machinesAt(specs ...string) worldOpt {
	return func(w *world) {
		w.machines = map[string]*machinev1beta1.Machine{}
		w.nodes = map[string]*corev1.Node{}
		w.members = map[string]string{}
		for _, s := range specs {
			w.addRunning("c1-master-"+s[:len(s)-1], "m6i.xlarge", s[len(s)-1:])
		}
	}
}

func newWorld(t *testing.T, opts ...worldOpt) *world {
	w := &world{t: t, now: t0, machines: map[string]*machinev1beta1.Machine{}, nodes: map[string]*corev1.Node{}, members: map[string]string{}}
	w.cfg = DefaultConfig()
	w.cpms = &machinev1.ControlPlaneMachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster", Namespace: ns, UID: "cpms-uid", Generation: 1},
		Spec: machinev1.ControlPlaneMachineSetSpec{
			State: machinev1.ControlPlaneMachineSetStateActive, Replicas: ptr(int32(3)),
			Strategy: machinev1.ControlPlaneMachineSetStrategy{Type: machinev1.RollingUpdate},
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{
				"machine.openshift.io/cluster-api-machine-role": "master", "machine.openshift.io/cluster-api-machine-type": "master"}},
			Template: machinev1.ControlPlaneMachineSetTemplate{
				MachineType: machinev1.OpenShiftMachineV1Beta1MachineType,
				OpenShiftMachineV1Beta1Machine: &machinev1.OpenShiftMachineV1Beta1MachineTemplate{
					ObjectMeta: machinev1.ControlPlaneMachineSetTemplateObjectMeta{Labels: masterLabels},
					Spec:       machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: awsSpec("m6i.xlarge", "a")}}},
				},
			},
		},
	}
	withZones("a", "b", "c")(w)
	for i, z := range []string{"a", "b", "c"} {
		w.addRunning(fmt.Sprintf("c1-master-%d", i), "m6i.xlarge", z)
	}
	w.cos = []configv1.ClusterOperator{operator("etcd"), operator("kube-apiserver")}
	for _, o := range opts {
		o(w)
	}
	return w
}

func operator(name string) configv1.ClusterOperator {
	return configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: configv1.ClusterOperatorStatus{Conditions: []configv1.ClusterOperatorStatusCondition{
		{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue}, {Type: configv1.OperatorDegraded, Status: configv1.ConditionFalse}}}}
}

func (w *world) degradeOperator(name string, degraded bool) {
	for i := range w.cos {
		if w.cos[i].Name == name {
			s := configv1.ConditionFalse
			if degraded {
				s = configv1.ConditionTrue
			}
			w.cos[i].Status.Conditions[1] = configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorDegraded, Status: s, Message: "member unhealthy"}
		}
	}
}

func (w *world) uid() types.UID { w.uids++; return types.UID(fmt.Sprintf("uid-%d", w.uids)) }

// addRunning adds an adopted, running machine with a Ready Node, an etcd
// hook and a voting member: a settled control-plane machine.
func (w *world) addRunning(name, instanceType, z string) {
	m := &machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: w.uid(), Labels: masterLabels, CreationTimestamp: metav1.NewTime(w.now.Add(-24 * time.Hour)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "machine.openshift.io/v1", Kind: "ControlPlaneMachineSet", Name: "cluster", UID: "cpms-uid", Controller: ptr(true)}}},
		Spec: machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: awsSpec(instanceType, z)}}},
	}
	w.machines[name] = m
	w.provision(name)
	w.addHook(m)
	w.members[name] = "voting"
}

func (w *world) addHook(m *machinev1beta1.Machine) {
	if !hasEtcdHook(m) {
		m.Spec.LifecycleHooks.PreDrain = append(m.Spec.LifecycleHooks.PreDrain, machinev1beta1.LifecycleHook{Name: EtcdHookName, Owner: EtcdHookOwner})
	}
}

// provision brings a machine to Running with a Ready Node.
func (w *world) provision(name string) {
	m := w.machines[name]
	m.Status.Phase = ptr(machinev1beta1.PhaseRunning)
	m.Spec.ProviderID = ptr("aws:///" + name)
	m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: name}
	w.nodes[name] = &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": ""}},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///" + name},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(w.now)}}},
	}
}

func (w *world) setPhase(name, phase string) {
	w.machines[name].Status.Phase = ptr(phase)
}

func (w *world) fail(name, msg string) {
	m := w.machines[name]
	m.Status.Phase = ptr(machinev1beta1.PhaseFailed)
	m.Status.ErrorMessage = ptr(msg)
	m.Status.ErrorReason = ptr(machinev1beta1.InvalidConfigurationMachineError)
}

func (w *world) setNodeReady(name string, s corev1.ConditionStatus, since time.Time) {
	n := w.nodes[name]
	n.Status.Conditions[0].Status = s
	n.Status.Conditions[0].LastTransitionTime = metav1.NewTime(since)
}

func (w *world) setInstanceType(it string) {
	w.cpms.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value.Raw = awsSpec(it, "a")
	w.cpms.Generation++
}

// userDelete is a person (or a MachineHealthCheck) deleting a machine.
func (w *world) userDelete(name string) {
	if m := w.machines[name]; m != nil && m.DeletionTimestamp == nil {
		m.DeletionTimestamp = ptr(metav1.NewTime(w.now))
	}
}

func (w *world) input() Input {
	in := Input{CPMS: w.cpms.DeepCopy(), Config: w.cfg, Now: w.now, ClusterOperators: w.cos, ClusterVersion: w.cv,
		CPMSOperator: CPMSOperator{Running: w.cpmsOperator, Description: "test"}}
	for _, n := range slices.Sorted(maps.Keys(w.machines)) {
		in.Machines = append(in.Machines, *w.machines[n].DeepCopy())
	}
	for _, n := range slices.Sorted(maps.Keys(w.nodes)) {
		in.Nodes = append(in.Nodes, *w.nodes[n].DeepCopy())
	}
	return in
}

// plan runs the planner and writes its status, as the reconciler would:
// only its own conditions while the upstream operator owns the status.
func (w *world) plan() Output {
	out := Plan(w.input())
	if out.StatusOwned {
		w.cpms.Status = out.Status
	} else {
		for _, t := range OwnConditionTypes {
			meta.SetStatusCondition(&w.cpms.Status.Conditions, *meta.FindStatusCondition(out.Status.Conditions, t))
		}
	}
	if out.Action != nil {
		w.actions = append(w.actions, out.Action)
	}
	w.events = append(w.events, out.Events...)
	w.trace = append(w.trace, fmt.Sprintf("%s plan: %s | %s", w.now.Format("15:04"), describe(out.Action), w.summary()))
	return out
}

// apply performs an action with the API server's semantics.
func (w *world) apply(a *Action) {
	if a == nil {
		return
	}
	switch a.Kind {
	case CreateMachine:
		if _, exists := w.machines[a.Machine.Name]; exists {
			return // AlreadyExists: a previous pass made it
		}
		m := a.Machine.DeepCopy()
		m.UID = w.uid()
		m.CreationTimestamp = metav1.NewTime(w.now)
		w.machines[m.Name] = m
	case Remediate:
		if w.cpms.Annotations == nil {
			w.cpms.Annotations = map[string]string{}
		}
		w.cpms.Annotations[RemediationAnnotation] = a.Annotation
		fallthrough
	case DeleteMachine:
		if m := w.machines[a.Target.Name]; m != nil && m.UID == a.Target.UID && m.DeletionTimestamp == nil {
			m.DeletionTimestamp = ptr(metav1.NewTime(w.now))
		}
	case Adopt:
		for _, r := range a.Adopt {
			if m := w.machines[r.Name]; m != nil && m.UID == r.UID {
				m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: "machine.openshift.io/v1", Kind: "ControlPlaneMachineSet", Name: w.cpms.Name, UID: w.cpms.UID, Controller: ptr(true)})
			}
		}
	}
	w.events = append(w.events, a.Event)
}

// mao plays the machine API: new machines provision (unless their spec
// asks for the "bad" instance type, which fails), deleting machines go once
// no preDrain hook holds them.
func (w *world) mao() {
	for _, name := range slices.Sorted(maps.Keys(w.machines)) {
		m := w.machines[name]
		switch {
		case m.DeletionTimestamp != nil:
			if len(m.Spec.LifecycleHooks.PreDrain) == 0 {
				delete(w.machines, name)
				delete(w.nodes, name)
				delete(w.members, name)
			}
		case m.Status.Phase == nil:
			w.setPhase(name, machinev1beta1.PhaseProvisioning)
		case *m.Status.Phase == machinev1beta1.PhaseProvisioning:
			if strings.Contains(string(m.Spec.ProviderSpec.Value.Raw), `"bad"`) {
				w.fail(name, "InvalidParameterValue: instance type bad does not exist")
			} else {
				w.provision(name)
			}
		}
	}
}

// ceo plays the etcd operator: a hook on every live machine, a learner on
// every healthy live machine, promotion, and on a deleting machine removal
// of its member (only while more voting members than replicas remain) and
// then of its hook.
func (w *world) ceo() {
	if w.ceoStalled {
		return
	}
	replicas := int(*w.cpms.Spec.Replicas)
	for _, name := range slices.Sorted(maps.Keys(w.machines)) {
		m := w.machines[name]
		if m.DeletionTimestamp == nil {
			w.addHook(m)
			if n := w.nodes[name]; n != nil && m.Status.Phase != nil && *m.Status.Phase == machinev1beta1.PhaseRunning && n.Status.Conditions[0].Status == corev1.ConditionTrue {
				switch w.members[name] {
				case "":
					w.members[name] = "learner"
				case "learner":
					w.members[name] = "voting"
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(w.machines)) {
		m := w.machines[name]
		if m.DeletionTimestamp == nil || !hasEtcdHook(m) {
			continue
		}
		switch w.members[name] {
		case "voting":
			if w.voting() <= replicas {
				continue
			}
			delete(w.members, name)
		case "learner":
			delete(w.members, name)
		}
		m.Spec.LifecycleHooks.PreDrain = nil
	}
}

func (w *world) voting() int {
	n := 0
	for _, s := range w.members {
		if s == "voting" {
			n++
		}
	}
	return n
}

// settle runs planner, machine API and etcd operator until nothing moves.
func (w *world) settle() {
	w.t.Helper()
	for i := 0; i < 100; i++ {
		before := w.fingerprint()
		out := w.plan()
		w.apply(out.Action)
		w.mao()
		w.ceo()
		w.now = w.now.Add(time.Minute)
		if out.Action == nil && w.fingerprint() == before {
			return
		}
	}
	w.t.Fatalf("did not settle:\n%s", w.tail())
}

// summary is one line of machine states: name:phase[flags].
func (w *world) summary() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(w.machines)) {
		m := w.machines[name]
		s := name + ":"
		if m.Status.Phase != nil {
			s += *m.Status.Phase
		}
		if m.DeletionTimestamp != nil {
			s += "(deleting)"
		}
		if strings.Contains(string(m.Spec.ProviderSpec.Value.Raw), "2xlarge") {
			s += "[new]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// fingerprint is everything the simulated actors change, to tell when
// nothing moves any more.
func (w *world) fingerprint() string {
	s := w.summary()
	for _, name := range slices.Sorted(maps.Keys(w.machines)) {
		s += fmt.Sprintf(" %s:%d:%s", name, len(w.machines[name].Spec.LifecycleHooks.PreDrain), w.members[name])
	}
	return s
}

func (w *world) tail() string {
	tr := w.trace
	if len(tr) > 40 {
		tr = tr[len(tr)-40:]
	}
	return strings.Join(tr, "\n")
}

func describe(a *Action) string {
	if a == nil {
		return "-"
	}
	switch a.Kind {
	case CreateMachine:
		return "create " + a.Machine.Name
	case DeleteMachine, Remediate:
		return string(a.Kind) + " " + a.Target.Name
	}
	return string(a.Kind)
}

func (w *world) cond(t string) *metav1.Condition {
	return meta.FindStatusCondition(w.cpms.Status.Conditions, t)
}

func (w *world) inIndex(i int) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(w.machines)) {
		if strings.HasSuffix(name, fmt.Sprintf("-%d", i)) {
			out = append(out, name)
		}
	}
	return out
}

func (w *world) expectCond(t string, s metav1.ConditionStatus, reason string) {
	w.t.Helper()
	c := w.cond(t)
	if c == nil || c.Status != s || c.Reason != reason {
		w.t.Fatalf("%s = %+v, want %s/%s\n%s", t, c, s, reason, w.tail())
	}
}

func (w *world) hasEvent(reason, substr string) bool {
	for _, e := range w.events {
		if e.Reason == reason && strings.Contains(e.Note, substr) {
			return true
		}
	}
	return false
}
