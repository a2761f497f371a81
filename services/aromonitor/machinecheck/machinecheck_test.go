package machinecheck

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/hysteresis"
)

func machine(name, role string, spec *machinev1beta1.AzureMachineProviderSpec) machinev1beta1.Machine {
	m := machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if role != "" {
		m.Labels[RoleLabel] = role
	}
	if spec != nil {
		raw, _ := json.Marshal(spec)
		m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: raw}
	}
	return m
}

func good(disk int32) *machinev1beta1.AzureMachineProviderSpec {
	return &machinev1beta1.AzureMachineProviderSpec{Image: machinev1beta1.Image{Publisher: ImagePublisher, Offer: ImageOffer, SKU: "aro_414", Version: "414.92.0"},
		OSDisk: machinev1beta1.OSDisk{DiskSizeGB: disk}}
}

func set(replicas int32) machinev1beta1.MachineSet {
	return machinev1beta1.MachineSet{Spec: machinev1beta1.MachineSetSpec{Replicas: ptr.To(replicas)}}
}

func cluster(workers ...machinev1beta1.Machine) []machinev1beta1.Machine {
	// Masters' disks are not checked: 64 GB passes.
	out := []machinev1beta1.Machine{machine("m0", "master", good(64)), machine("m1", "master", good(1024)), machine("m2", "master", good(1024))}
	return append(out, workers...)
}

func TestProblems(t *testing.T) {
	bananas := good(128)
	bananas.Image.Publisher = "bananas"
	bananas.Image.SKU, bananas.Image.Version = "", ""
	identity := good(128)
	identity.ManagedIdentity = "my-identity"
	for _, tc := range []struct {
		name     string
		machines []machinev1beta1.Machine
		sets     []machinev1beta1.MachineSet
		want     []string
	}{
		{"valid: three masters, workers as many as the replicas, infra counted as workers",
			cluster(machine("w0", "worker", good(128)), machine("i0", "infra", good(128))), []machinev1beta1.MachineSet{set(1), set(1), {}}, nil},
		{"a worker disk under 128 GB", cluster(machine("w0", "worker", good(127))), []machinev1beta1.MachineSet{set(1)},
			[]string{"machine w0: invalid disk size '127'"}},
		{"another image, printed as ARO prints it", cluster(machine("w0", "worker", bananas)), []machinev1beta1.MachineSet{set(1)},
			[]string{"machine w0: invalid image '{bananas aro4    }'"}},
		{"a managed identity", cluster(machine("w0", "worker", identity)), []machinev1beta1.MachineSet{set(1)},
			[]string{"machine w0: invalid managedIdentity 'my-identity'"}},
		{"no provider spec", cluster(machine("w0", "worker", nil)), []machinev1beta1.MachineSet{set(1)},
			[]string{"machine w0: provider spec missing"}},
		{"no role label: named, neither checked nor counted", cluster(machine("x", "", nil)), nil,
			[]string{"machine x: cluster-api-machine-role label not found"}},
		{"counts", []machinev1beta1.Machine{machine("m0", "master", good(128)), machine("w0", "worker", good(128))}, []machinev1beta1.MachineSet{set(2)},
			[]string{"invalid number of master machines 1, expected 3", "invalid number of worker machines 1, expected 2"}},
		{"a master role is matched exactly", cluster(machine("m3", "Master", good(128))), nil,
			[]string{"invalid number of worker machines 1, expected 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Problems(tc.machines, tc.sets); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestCondition(t *testing.T) {
	if ok, reason, msg := Condition(nil); !ok || reason != "CheckDone" || msg != "All machines valid" {
		t.Errorf("valid: %v %q %q", ok, reason, msg)
	}
	if ok, reason, msg := Condition([]string{"a", "b"}); ok || reason != "CheckFailed" || msg != "a\nb\n" {
		t.Errorf("invalid: %v %q %q", ok, reason, msg)
	}
}

// A machine count off for two rounds (a scale-down draining) never turns
// MachineValid False; three rounds do; one good round brings it back.
func TestRoundHysteresis(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	th := hysteresis.Thresholds{Failures: 3, Successes: 1}
	var st amv1alpha1.MonitorConfigStatus
	bad := []string{"invalid number of worker machines 4, expected 3"}
	var got []string
	for i, problems := range [][]string{nil, bad, bad, nil, bad, bad, bad, nil} {
		st = Round(st, problems, now.Add(time.Duration(i)*5*time.Minute), th)
		got = append(got, fmt.Sprintf("%s/%s", st.Conditions[0].Status, st.Conditions[0].Reason))
	}
	want := []string{"True/CheckDone", "True/CheckDone", "True/CheckDone", "True/CheckDone", "True/CheckDone", "True/CheckDone", "False/CheckFailed", "True/CheckDone"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	if c := st.Checks[0]; c.ConsecutiveSuccesses != 1 || c.ConsecutiveFailures != 0 || c.LastSuccessTime == nil || !c.LastSuccessTime.Equal(c.LastCheckTime) {
		t.Errorf("record %+v", c)
	}

	var fresh amv1alpha1.MonitorConfigStatus
	fresh = Round(fresh, bad, now, th)
	if c := fresh.Conditions[0]; c.Status != "Unknown" || c.Reason != ReasonSettling || c.Message != "failing (1 of 3 failed rounds before False): "+bad[0] {
		t.Errorf("failing from the start: %+v", c)
	}
}
