package cpmsoperator

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// set is an Active OnDelete set of three AWS masters of cluster c1 in
// zones a, b, c, as the installer writes it.
func set(mutate ...func(*machinev1.ControlPlaneMachineSet)) *machinev1.ControlPlaneMachineSet {
	tmpl := machineapi.Machine(machineapi.MachineSpec{Name: "t", InfraName: "c1", Role: "master", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "m6i.xlarge"})
	fds := []machinev1.AWSFailureDomain{
		{Placement: machinev1.AWSFailureDomainPlacement{AvailabilityZone: "us-east-1c"}},
		{Placement: machinev1.AWSFailureDomainPlacement{AvailabilityZone: "us-east-1a"}},
		{Placement: machinev1.AWSFailureDomainPlacement{AvailabilityZone: "us-east-1b"}},
	}
	s := &machinev1.ControlPlaneMachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: SetName, Namespace: Namespace, UID: "set-uid"},
		Spec: machinev1.ControlPlaneMachineSetSpec{
			Replicas: ptr.To(int32(3)),
			State:    machinev1.ControlPlaneMachineSetStateActive,
			Strategy: machinev1.ControlPlaneMachineSetStrategy{Type: machinev1.OnDelete},
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{machineapi.RoleLabel: "master", machineapi.TypeLabel: "master"}},
			Template: machinev1.ControlPlaneMachineSetTemplate{
				MachineType: machinev1.OpenShiftMachineV1Beta1MachineType,
				OpenShiftMachineV1Beta1Machine: &machinev1.OpenShiftMachineV1Beta1MachineTemplate{
					FailureDomains: &machinev1.FailureDomains{Platform: configv1.AWSPlatformType, AWS: &fds},
					ObjectMeta: machinev1.ControlPlaneMachineSetTemplateObjectMeta{
						Labels:      map[string]string{machineapi.ClusterLabel: "c1", machineapi.RoleLabel: "master", machineapi.TypeLabel: "master"},
						Annotations: map[string]string{"example.com/note": "from the template"},
					},
					Spec: tmpl.Spec,
				},
			},
		},
	}
	for _, f := range mutate {
		f(s)
	}
	return s
}

// master is a control-plane Machine in zone, created age ago.
func master(name, zone string, age time.Duration, mutate ...func(*machinev1beta1.Machine)) machinev1beta1.Machine {
	m := machineapi.Machine(machineapi.MachineSpec{Name: name, InfraName: "c1", Role: "master", Region: "us-east-1", Zone: zone, InstanceType: "m6i.xlarge"})
	m.CreationTimestamp = metav1.NewTime(t0.Add(-age))
	for _, f := range mutate {
		f(m)
	}
	return *m
}

func deleting(m *machinev1beta1.Machine) {
	now := metav1.NewTime(t0)
	m.DeletionTimestamp = &now
}

func withSubnet(id string) func(*machinev1beta1.Machine) {
	return func(m *machinev1beta1.Machine) {
		v := map[string]any{}
		_ = json.Unmarshal(m.Spec.ProviderSpec.Value.Raw, &v)
		v["subnet"] = map[string]any{"id": id}
		raw, _ := json.Marshal(v)
		m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: raw}
	}
}

func spec(t *testing.T, m *machinev1beta1.Machine) map[string]any {
	t.Helper()
	v := map[string]any{}
	if err := json.Unmarshal(m.Spec.ProviderSpec.Value.Raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRuns(t *testing.T) {
	d := func(replicas *int32, deleted bool) *appsv1.Deployment {
		x := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: Deployment.Name, Namespace: Deployment.Namespace}, Spec: appsv1.DeploymentSpec{Replicas: replicas}}
		if deleted {
			now := metav1.Now()
			x.DeletionTimestamp = &now
		}
		return x
	}
	cases := []struct {
		name string
		d    *appsv1.Deployment
		want bool
	}{
		{"no Deployment", nil, false},
		{"one replica", d(ptr.To(int32(1)), false), true},
		{"replicas unset means one", d(nil, false), true},
		{"scaled to zero", d(ptr.To(int32(0)), false), false},
		{"being deleted", d(ptr.To(int32(1)), true), false},
	}
	for _, c := range cases {
		if got := Runs(c.d); got != c.want {
			t.Errorf("%s: Runs = %v", c.name, got)
		}
	}
}

func TestMachineIndexAndName(t *testing.T) {
	for name, want := range map[string]int32{"c1-master-2": 2, "c1-master-abcde-2": 2, "c1-master-10": 10} {
		if got, ok := MachineIndex(name); !ok || got != want {
			t.Errorf("MachineIndex(%q) = %d, %v", name, got, ok)
		}
	}
	for _, name := range []string{"c1-master", "master", "c1-master-x2"} {
		if _, ok := MachineIndex(name); ok {
			t.Errorf("MachineIndex(%q) has an index", name)
		}
	}
	// The deleted machine's name does not matter: the operator names by
	// the template (or the prefix), so c1-master-2 and c1-master-abcde-2
	// are both replaced by c1-master-<random>-2.
	if got, err := MachineName(set(), 2, "xyz12"); err != nil || got != "c1-master-xyz12-2" {
		t.Errorf("MachineName = %q, %v", got, err)
	}
	if got, _ := MachineName(set(func(s *machinev1.ControlPlaneMachineSet) { s.Spec.MachineNamePrefix = "cp" }), 0, "xyz12"); got != "cp-xyz12-0" {
		t.Errorf("MachineName with a prefix = %q", got)
	}
	if _, err := MachineName(set(func(s *machinev1.ControlPlaneMachineSet) {
		delete(s.Spec.Template.OpenShiftMachineV1Beta1Machine.ObjectMeta.Labels, machineapi.ClusterLabel)
	}), 0, "xyz12"); err == nil {
		t.Error("a template without the cluster label named a machine")
	}
}

func TestOnDeleteReplacements(t *testing.T) {
	m0 := master("c1-master-0", "us-east-1a", 48*time.Hour)
	m1 := master("c1-master-1", "us-east-1b", 48*time.Hour)
	m2 := master("c1-master-2", "us-east-1c", 48*time.Hour)
	d1 := master("c1-master-1", "us-east-1b", 48*time.Hour, deleting)
	d1newer := master("c1-master-q7x2z-1", "us-east-1b", time.Hour, deleting)
	r1 := master("c1-master-b4n8k-1", "us-east-1b", time.Minute)
	worker := master("c1-worker-a-1", "us-east-1a", time.Hour, deleting, func(m *machinev1beta1.Machine) {
		m.Labels[machineapi.RoleLabel], m.Labels[machineapi.TypeLabel] = "worker", "worker"
	})
	type want struct {
		index int32
		from  string
	}
	cases := []struct {
		name     string
		set      *machinev1.ControlPlaneMachineSet
		machines []machinev1beta1.Machine
		want     []want
	}{
		{"every index has a live machine", set(), []machinev1beta1.Machine{m0, m1, m2}, nil},
		{"a deleted machine alone in its index", set(), []machinev1beta1.Machine{m0, d1, m2}, []want{{1, "c1-master-1"}}},
		{"its replacement exists: never a second one", set(), []machinev1beta1.Machine{m0, d1, r1, m2}, nil},
		{"two deleted machines in an index: one replacement, keeping the newest's domain", set(), []machinev1beta1.Machine{m0, d1, d1newer, m2}, []want{{1, "c1-master-q7x2z-1"}}},
		{"a missing index", set(), []machinev1beta1.Machine{m0, m2}, []want{{1, ""}}},
		{"no machine at all", set(), nil, []want{{0, ""}, {1, ""}, {2, ""}}},
		{"indexes are filled up to replicas only", set(), []machinev1beta1.Machine{m0, m2, master("c1-master-5", "us-east-1b", time.Hour)}, nil},
		{"a machine of another role is not the set's", set(), []machinev1beta1.Machine{m0, m1, m2, worker}, nil},
		{"RollingUpdate: nothing", set(func(s *machinev1.ControlPlaneMachineSet) { s.Spec.Strategy.Type = machinev1.RollingUpdate }), []machinev1beta1.Machine{m0, d1, m2}, nil},
		{"Inactive: nothing", set(func(s *machinev1.ControlPlaneMachineSet) {
			s.Spec.State = machinev1.ControlPlaneMachineSetStateInactive
		}), []machinev1beta1.Machine{m0, d1, m2}, nil},
	}
	for _, c := range cases {
		sel, err := Selected(c.set, c.machines)
		if err != nil {
			t.Fatal(err)
		}
		var got []want
		for _, r := range OnDeleteReplacements(c.set, sel) {
			w := want{index: r.Index}
			if r.From != nil {
				w.from = r.From.Name
			}
			got = append(got, w)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestNewMachine(t *testing.T) {
	outdated := func(s *machinev1.ControlPlaneMachineSet) {
		tm := s.Spec.Template.OpenShiftMachineV1Beta1Machine
		tm.Spec.ProviderSpec.Value = machineapi.NewProviderSpec("us-east-1", "us-east-1a", "m6i.2xlarge")
	}
	d1 := master("c1-master-1", "us-east-1b", 48*time.Hour, deleting, withSubnet("subnet-b"))
	m0 := master("c1-master-0", "us-east-1a", 48*time.Hour)
	m2 := master("c1-master-2", "us-east-1c", 48*time.Hour)

	s := set(outdated)
	m, err := NewMachine(s, Replacement{Index: 1, From: &d1}, []machinev1beta1.Machine{m0, d1, m2}, "xyz12")
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "c1-master-xyz12-1" || m.Namespace != Namespace {
		t.Errorf("name %s/%s", m.Namespace, m.Name)
	}
	if m.Labels[machineapi.ClusterLabel] != "c1" || m.Labels[machineapi.RoleLabel] != "master" || m.Annotations["example.com/note"] != "from the template" {
		t.Errorf("metadata %v %v", m.Labels, m.Annotations)
	}
	if ref := metav1.GetControllerOf(m); ref == nil || ref.Kind != "ControlPlaneMachineSet" || ref.Name != SetName || ref.UID != "set-uid" {
		t.Errorf("controller %+v", ref)
	}
	ps := spec(t, m)
	if ps["instanceType"] != "m6i.2xlarge" {
		t.Errorf("the template's instance type is not used: %v", ps)
	}
	if p := ps["placement"].(map[string]any); p["availabilityZone"] != "us-east-1b" || p["region"] != "us-east-1" {
		t.Errorf("the deleted machine's zone is not kept: %v", p)
	}
	if !reflect.DeepEqual(ps["subnet"], map[string]any{"id": "subnet-b"}) {
		t.Errorf("the deleted machine's subnet is not kept: %v", ps["subnet"])
	}
	if NeedsUpdate(s, m) {
		t.Error("the replacement itself needs an update")
	}
	if !NeedsUpdate(s, &m0) || NeedsUpdate(set(), &m0) {
		t.Error("NeedsUpdate does not follow the template")
	}
	// the template labels are copied, not shared
	m.Labels["x"] = "y"
	if _, ok := s.Spec.Template.OpenShiftMachineV1Beta1Machine.ObjectMeta.Labels["x"]; ok {
		t.Error("the machine shares the template's labels")
	}

	// Without failure domains the template is used as it is.
	noFD := set(outdated, func(s *machinev1.ControlPlaneMachineSet) {
		s.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains = nil
	})
	m, _ = NewMachine(noFD, Replacement{Index: 1, From: &d1}, nil, "xyz12")
	if ps := spec(t, m); ps["placement"].(map[string]any)["availabilityZone"] != "us-east-1a" || ps["subnet"] != nil {
		t.Errorf("without failure domains: %v", ps)
	}

	// A missing index takes the declared domain with the fewest live
	// machines, with its subnet.
	withSubnets := set(func(s *machinev1.ControlPlaneMachineSet) {
		fds := *s.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains.AWS
		fds[2].Subnet = &machinev1.AWSResourceReference{Type: machinev1.AWSIDReferenceType, ID: ptr.To("subnet-b")}
	})
	m, _ = NewMachine(withSubnets, Replacement{Index: 1}, []machinev1beta1.Machine{m0, d1, m2}, "xyz12")
	if ps := spec(t, m); ps["placement"].(map[string]any)["availabilityZone"] != "us-east-1b" || !reflect.DeepEqual(ps["subnet"], map[string]any{"id": "subnet-b"}) {
		t.Errorf("missing index: %v", ps)
	}
}

func TestMachineReady(t *testing.T) {
	node := func(status corev1.ConditionStatus, since time.Duration) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(t0.Add(-since))}}}}
	}
	inPhase := func(phase string, linked bool) *machinev1beta1.Machine {
		m := master("c1-master-0", "us-east-1a", time.Hour)
		m.Status.Phase = ptr.To(phase)
		if linked {
			m.Status.NodeRef = &corev1.ObjectReference{Name: m.Name}
		}
		return &m
	}
	grace := 20 * time.Minute
	cases := []struct {
		name    string
		m       *machinev1beta1.Machine
		n       *corev1.Node
		ready   bool
		recheck time.Duration
	}{
		{"Running, Node Ready", inPhase(machinev1beta1.PhaseRunning, true), node(corev1.ConditionTrue, time.Hour), true, 0},
		{"Running, Node NotReady for 5m (a reboot)", inPhase(machinev1beta1.PhaseRunning, true), node(corev1.ConditionFalse, 5*time.Minute), true, 15 * time.Minute},
		{"Running, Node NotReady past the grace", inPhase(machinev1beta1.PhaseRunning, true), node(corev1.ConditionFalse, time.Hour), false, 0},
		{"Deleting, Node still Ready", inPhase(machinev1beta1.PhaseDeleting, true), node(corev1.ConditionTrue, time.Hour), true, 0},
		{"Deleting, Node NotReady", inPhase(machinev1beta1.PhaseDeleting, true), node(corev1.ConditionFalse, time.Minute), false, 0},
		{"Provisioned, no Node yet", inPhase(machinev1beta1.PhaseProvisioned, false), nil, false, 0},
		{"Running, Node gone", inPhase(machinev1beta1.PhaseRunning, true), nil, false, 0},
	}
	for _, c := range cases {
		ready, recheck := MachineReady(c.m, c.n, grace, t0)
		if ready != c.ready || recheck != c.recheck {
			t.Errorf("%s: ready=%v recheck=%v", c.name, ready, recheck)
		}
	}
}

func TestObserveAndConditions(t *testing.T) {
	cond := func(conds []configv1.ClusterOperatorStatusCondition, ty configv1.ClusterStatusConditionType) string {
		for _, c := range conds {
			if c.Type == ty {
				return string(c.Status) + " " + c.Reason + " " + c.Message
			}
		}
		return ""
	}
	m0 := master("c1-master-0", "us-east-1a", 48*time.Hour)
	m1 := master("c1-master-1", "us-east-1b", 48*time.Hour)
	m2 := master("c1-master-2", "us-east-1c", 48*time.Hour)
	d1 := master("c1-master-1", "us-east-1b", 48*time.Hour, deleting)
	r1 := master("c1-master-b4n8k-1", "us-east-1b", time.Minute)
	outdated := set(func(s *machinev1.ControlPlaneMachineSet) {
		s.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value = machineapi.NewProviderSpec("us-east-1", "us-east-1a", "m6i.2xlarge")
	})
	r1new := r1
	r1new.Spec.ProviderSpec.Value = machineapi.NewProviderSpec("us-east-1", "us-east-1b", "m6i.2xlarge")
	allReady := func(*machinev1beta1.Machine) bool { return true }
	notReady := func(names ...string) func(*machinev1beta1.Machine) bool {
		return func(m *machinev1beta1.Machine) bool {
			for _, n := range names {
				if m.Name == n {
					return false
				}
			}
			return true
		}
	}
	cases := []struct {
		name                                         string
		set                                          *machinev1.ControlPlaneMachineSet
		machines                                     []machinev1beta1.Machine
		ready                                        func(*machinev1beta1.Machine) bool
		counts                                       Counts
		available, progressing, degraded, upgradable string
	}{
		{"settled", set(), []machinev1beta1.Machine{m0, m1, m2}, allReady, Counts{3, 3, 3, 3, 0},
			"True AllReplicasAvailable ", "False AllReplicasUpdated ", "False AsExpected ", "True AsExpected cluster operator is upgradable"},
		{"the template changed: every master is outdated", outdated, []machinev1beta1.Machine{m0, m1, m2}, allReady, Counts{3, 3, 3, 0, 0},
			"True AllReplicasAvailable ", "True NeedsUpdateReplicas Observed 3 replica(s) in need of update", "False AsExpected ", "True AsExpected cluster operator is upgradable"},
		{"a replacement is provisioning, the old machine draining", outdated, []machinev1beta1.Machine{m0, d1, r1new, m2}, notReady(r1new.Name), Counts{3, 4, 3, 0, 0},
			"True AllReplicasAvailable ", "True NeedsUpdateReplicas Observed 3 replica(s) in need of update", "False AsExpected ", "True AsExpected cluster operator is upgradable"},
		{"the replacement is ready", outdated, []machinev1beta1.Machine{m0, d1, r1new, m2}, allReady, Counts{3, 4, 4, 1, 0},
			"True AllReplicasAvailable ", "True NeedsUpdateReplicas Observed 2 replica(s) in need of update", "False AsExpected ", "True AsExpected cluster operator is upgradable"},
		{"an extra up-to-date replica (the operator counts ready minus updated as old)", set(), []machinev1beta1.Machine{m0, m1, r1, m2}, allReady, Counts{3, 4, 4, 4, 0},
			"True AllReplicasAvailable ", "True ExcessReplicas Waiting for 0 old replica(s) to be removed", "False AsExpected ", "True AsExpected cluster operator is upgradable"},
		{"an index without a ready machine", set(), []machinev1beta1.Machine{m0, m2}, allReady, Counts{3, 2, 2, 2, 1},
			"False UnavailableReplicas Missing 1 available replica(s)", "True NeedsUpdateReplicas Observed 1 replica(s) in need of update", "False AsExpected ", "False AsExpected cluster operator is not upgradable"},
		{"nothing ready", set(), []machinev1beta1.Machine{m0, m1, m2}, notReady(m0.Name, m1.Name, m2.Name), Counts{3, 3, 0, 0, 3},
			"False UnavailableReplicas Missing 3 available replica(s)", "True NeedsUpdateReplicas Observed 3 replica(s) in need of update", "True NoReadyMachines ", "False AsExpected cluster operator is not upgradable"},
		{"Inactive set", set(func(s *machinev1.ControlPlaneMachineSet) {
			s.Spec.State = machinev1.ControlPlaneMachineSetStateInactive
		}), []machinev1beta1.Machine{m0}, allReady, Counts{},
			"True AsExpected cluster operator is available", "False AsExpected ", "False AsExpected ", "True AsExpected cluster operator is upgradable"},
		{"no set", nil, nil, allReady, Counts{},
			"True AsExpected cluster operator is available", "False AsExpected ", "False AsExpected ", "True AsExpected cluster operator is upgradable"},
	}
	for _, c := range cases {
		var counts Counts
		if Active(c.set) {
			sel, err := Selected(c.set, c.machines)
			if err != nil {
				t.Fatal(err)
			}
			counts = Observe(c.set, sel, c.ready)
		}
		if counts != c.counts {
			t.Errorf("%s: counts %+v, want %+v", c.name, counts, c.counts)
		}
		conds := Conditions(c.set, counts)
		for ty, want := range map[configv1.ClusterStatusConditionType]string{"Available": c.available, "Progressing": c.progressing, "Degraded": c.degraded, "Upgradeable": c.upgradable} {
			if got := cond(conds, ty); got != want {
				t.Errorf("%s: %s = %q, want %q", c.name, ty, got, want)
			}
		}
	}
}

func TestReleaseVersion(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: Deployment.Name}}
	if ReleaseVersion(d) != "" {
		t.Error("a Deployment without containers has a version")
	}
	d.Spec.Template.Spec.Containers = []corev1.Container{
		{Name: "kube-rbac-proxy", Env: []corev1.EnvVar{{Name: "RELEASE_VERSION", Value: "wrong"}}},
		{Name: Deployment.Name, Env: []corev1.EnvVar{{Name: "OTHER", Value: "x"}, {Name: "RELEASE_VERSION", Value: "4.16.2"}}},
	}
	if got := ReleaseVersion(d); got != "4.16.2" {
		t.Errorf("ReleaseVersion = %q", got)
	}
}
