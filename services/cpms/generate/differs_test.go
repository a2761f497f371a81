package generate_test

import (
	"encoding/json"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/upshift-io/upshift/services/cpms/generate"
	"github.com/upshift-io/upshift/services/cpms/plan"
)

func awsSet(t *testing.T, instanceType string) *machinev1.ControlPlaneMachineSet {
	t.Helper()
	set, err := generate.Set([]machinev1beta1.Machine{
		machine("c1-x7k2p-master-0", 0, awsSpec("us-east-1a", instanceType, "ami-1")),
		machine("c1-x7k2p-master-1", 0, awsSpec("us-east-1b", instanceType, "ami-1")),
		machine("c1-x7k2p-master-2", 0, awsSpec("us-east-1c", instanceType, "ami-1")),
	}, infra(configv1.AWSPlatformType, ""))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// editSpec rewrites the template's provider spec as a JSON object.
func editSpec(t *testing.T, set *machinev1.ControlPlaneMachineSet, edit func(map[string]any)) {
	t.Helper()
	v := set.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value
	m := tree(t, v.Raw)
	edit(m)
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	v.Raw = raw
}

func TestDiffers(t *testing.T) {
	for _, tc := range []struct {
		name string
		// edit turns the generated set into the one in the cluster.
		edit func(t *testing.T, s *machinev1.ControlPlaneMachineSet)
		// want is the reason; empty: the sets say the same.
		want string
	}{{
		name: "what the apiserver adds and the controller writes: metadata, status, defaults",
		edit: func(t *testing.T, s *machinev1.ControlPlaneMachineSet) {
			s.UID, s.ResourceVersion, s.Generation = "u1", "42", 1
			s.Finalizers = []string{"controlplanemachineset.machine.openshift.io"}
			s.Annotations = map[string]string{"note": "reviewed"}
			s.Status = machinev1.ControlPlaneMachineSetStatus{Replicas: 3, ReadyReplicas: 3, Conditions: []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue}}}
			tmpl := s.Spec.Template.OpenShiftMachineV1Beta1Machine
			tmpl.Spec.AuthoritativeAPI = machinev1beta1.MachineAuthorityMachineAPI
			tmpl.Spec.LifecycleHooks = machinev1beta1.LifecycleHooks{PreDrain: []machinev1beta1.LifecycleHook{}}
			tmpl.Spec.ObjectMeta.Labels = map[string]string{}
		},
	}, {
		name: "failure domains in another order",
		edit: func(_ *testing.T, s *machinev1.ControlPlaneMachineSet) {
			fds := *s.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains.AWS
			fds[0], fds[2] = fds[2], fds[0]
		},
	}, {
		name: "provider spec: another AMI, a zero value written out, keys reordered",
		edit: func(t *testing.T, s *machinev1.ControlPlaneMachineSet) {
			editSpec(t, s, func(m map[string]any) {
				m["ami"] = map[string]any{"id": "ami-2"}
				m["spotMarketOptions"] = nil
				m["blockDevices"] = []any{}
			})
		},
	}, {
		name: "another instance type",
		edit: func(t *testing.T, s *machinev1.ControlPlaneMachineSet) {
			editSpec(t, s, func(m map[string]any) { m["instanceType"] = "m5.xlarge" })
		},
		want: `spec.template.machines_v1beta1_machine_openshift_io.spec.providerSpec.value.instanceType: "m5.xlarge" -> "m6i.xlarge"`,
	}, {
		name: "a field the provider type does not know",
		edit: func(t *testing.T, s *machinev1.ControlPlaneMachineSet) {
			editSpec(t, s, func(m map[string]any) { m["futureField"] = "x" })
		},
		want: `spec.template.machines_v1beta1_machine_openshift_io.spec.providerSpec.value.futureField: "x" -> <absent>`,
	}, {
		name: "a failure domain the machines left, another they are in",
		edit: func(_ *testing.T, s *machinev1.ControlPlaneMachineSet) {
			fds := *s.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains.AWS
			fds[2] = machinev1.AWSFailureDomain{Placement: machinev1.AWSFailureDomainPlacement{AvailabilityZone: "us-east-1d"}}
		},
		want: "failure domains added: AWS{availabilityZone=us-east-1c, subnet=filters:[tag:Name=c1-x7k2p-subnet-private-us-east-1c]}; failure domains removed: AWS{availabilityZone=us-east-1d}",
	}, {
		name: "a person's edits of the Inactive set: strategy and replicas",
		edit: func(_ *testing.T, s *machinev1.ControlPlaneMachineSet) {
			s.Spec.Strategy.Type = machinev1.OnDelete
			s.Spec.Replicas = ptr.To(int32(5))
		},
		want: `spec.replicas: 5 -> 3; spec.strategy.type: "OnDelete" -> "RollingUpdate"`,
	}, {
		name: "selector and template labels",
		edit: func(_ *testing.T, s *machinev1.ControlPlaneMachineSet) {
			delete(s.Spec.Selector.MatchLabels, plan.ClusterIDLabel)
		},
		want: `spec.selector.matchLabels.machine.openshift.io/cluster-api-cluster: <absent> -> "c1-x7k2p"`,
	}, {
		name: "not a machine template",
		edit: func(_ *testing.T, s *machinev1.ControlPlaneMachineSet) {
			s.Spec.Template = machinev1.ControlPlaneMachineSetTemplate{MachineType: "other"}
		},
		want: `spec.template.machineType: "other" -> "machines_v1beta1_machine_openshift_io"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			generated := awsSet(t, "m6i.xlarge")
			existing := generated.DeepCopy()
			tc.edit(t, existing)
			differs, reason := generate.Differs(existing, generated)
			if differs != (tc.want != "") || reason != tc.want {
				t.Errorf("differs %v, reason:\n%s\nwant:\n%s", differs, reason, tc.want)
			}
		})
	}
}

// A reason names at most eight changes, so that it fits an Event's note.
func TestDiffersBounded(t *testing.T) {
	generated := awsSet(t, "m6i.xlarge")
	existing := generated.DeepCopy()
	editSpec(t, existing, func(m map[string]any) {
		for _, k := range []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "b1"} {
			m[k] = k
		}
	})
	_, reason := generate.Differs(existing, generated)
	if n := strings.Count(reason, "; "); n != 8 || !strings.HasSuffix(reason, "; and 2 more") {
		t.Errorf("reason %q", reason)
	}
}
