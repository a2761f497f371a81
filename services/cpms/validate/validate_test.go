package validate

import (
	"fmt"
	"strings"
	"testing"

	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// awsSet is shaped like the AWS example of the OpenShift documentation
// ("Control plane machine set configuration", Amazon Web Services): three
// zones of us-east-1, each with its private subnet by tag filter.
const awsSet = `
apiVersion: machine.openshift.io/v1
kind: ControlPlaneMachineSet
metadata:
  name: cluster
  namespace: openshift-machine-api
spec:
  replicas: 3
  state: Active
  strategy:
    type: RollingUpdate
  selector:
    matchLabels:
      machine.openshift.io/cluster-api-machine-role: master
      machine.openshift.io/cluster-api-machine-type: master
  template:
    machineType: machines_v1beta1_machine_openshift_io
    machines_v1beta1_machine_openshift_io:
      failureDomains:
        platform: AWS
        aws:
        - placement:
            availabilityZone: us-east-1a
          subnet:
            type: Filters
            filters:
            - name: tag:Name
              values: [c1-private-us-east-1a]
        - placement:
            availabilityZone: us-east-1b
          subnet:
            type: Filters
            filters:
            - name: tag:Name
              values: [c1-private-us-east-1b]
        - placement:
            availabilityZone: us-east-1c
          subnet:
            type: Filters
            filters:
            - name: tag:Name
              values: [c1-private-us-east-1c]
      metadata:
        labels:
          machine.openshift.io/cluster-api-cluster: c1
          machine.openshift.io/cluster-api-machine-role: master
          machine.openshift.io/cluster-api-machine-type: master
      spec:
        providerSpec:
          value:
            apiVersion: machine.openshift.io/v1beta1
            kind: AWSMachineProviderConfig
            ami:
              id: ami-0123
            instanceType: m6i.xlarge
            placement:
              availabilityZone: ""
              region: us-east-1
            securityGroups:
            - filters:
              - name: tag:Name
                values: [c1-master-sg]
            subnet: {}
            userDataSecret:
              name: master-user-data
`

// azureSet follows the Azure example of the same page.
const azureSet = `
apiVersion: machine.openshift.io/v1
kind: ControlPlaneMachineSet
metadata:
  name: cluster
  namespace: openshift-machine-api
spec:
  replicas: 3
  state: Inactive
  strategy:
    type: RollingUpdate
  selector:
    matchLabels:
      machine.openshift.io/cluster-api-machine-role: master
      machine.openshift.io/cluster-api-machine-type: master
  template:
    machineType: machines_v1beta1_machine_openshift_io
    machines_v1beta1_machine_openshift_io:
      failureDomains:
        platform: Azure
        azure:
        - zone: "1"
        - zone: "2"
        - zone: "3"
      metadata:
        labels:
          machine.openshift.io/cluster-api-cluster: c1
          machine.openshift.io/cluster-api-machine-role: master
          machine.openshift.io/cluster-api-machine-type: master
      spec:
        providerSpec:
          value:
            apiVersion: machine.openshift.io/v1beta1
            kind: AzureMachineProviderSpec
            internalLoadBalancer: c1-internal
            location: eastus
            vmSize: Standard_D8s_v3
            zone: ""
`

func load(t *testing.T, doc string) *machinev1.ControlPlaneMachineSet {
	t.Helper()
	var c machinev1.ControlPlaneMachineSet
	if err := yaml.UnmarshalStrict([]byte(doc), &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func awsMachine(name, zone, instanceType string) machinev1beta1.Machine {
	spec := fmt.Sprintf(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig","ami":{"id":"ami-0123"},`+
		`"instanceType":%q,"placement":{"availabilityZone":"us-east-%s","region":"us-east-1"},`+
		`"subnet":{"filters":[{"name":"tag:Name","values":["c1-private-us-east-%s"]}]}}`, instanceType, zone, zone)
	return machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openshift-machine-api", Labels: map[string]string{
			"machine.openshift.io/cluster-api-cluster":      "c1",
			"machine.openshift.io/cluster-api-machine-role": "master",
			"machine.openshift.io/cluster-api-machine-type": "master",
		}},
		Spec: machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(spec)}}},
	}
}

func masters(zones ...string) []machinev1beta1.Machine {
	var out []machinev1beta1.Machine
	for i, z := range zones {
		out = append(out, awsMachine(fmt.Sprintf("c1-master-%d", i), z, "m6i.xlarge"))
	}
	return out
}

func setProviderSpec(c *machinev1.ControlPlaneMachineSet, mutate func(map[string]any)) {
	var tree map[string]any
	v := c.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value
	if err := yaml.Unmarshal(v.Raw, &tree); err != nil {
		panic(err)
	}
	mutate(tree)
	raw, _ := yaml.Marshal(tree)
	j, _ := yaml.YAMLToJSON(raw)
	c.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: j}
}

func TestSet(t *testing.T) {
	inactive := func(c *machinev1.ControlPlaneMachineSet) {
		c.Spec.State = machinev1.ControlPlaneMachineSetStateInactive
	}
	cases := []struct {
		name string
		doc  string
		// old, when set, makes the case an update from old(doc) to mutate(doc).
		old      func(*machinev1.ControlPlaneMachineSet)
		mutate   func(*machinev1.ControlPlaneMachineSet)
		machines []machinev1beta1.Machine
		// wantErrs are the rendered errors, in order, each as fragments
		// separated by " ~ " that must all appear in it.
		wantErrs []string
		wantWarn []string
	}{
		{name: "the documented AWS set over its three machines", doc: awsSet, machines: masters("1a", "1b", "1c")},
		{name: "the documented Azure set, Inactive, with no machines yet", doc: azureSet},
		{name: "another name", doc: awsSet, machines: masters("1a", "1b", "1c"),
			mutate:   func(c *machinev1.ControlPlaneMachineSet) { c.Name = "other" },
			wantErrs: []string{`metadata.name: Invalid value: "other": must be "cluster"`}},
		{name: "selector that misses the template labels", doc: awsSet, machines: masters("1a", "1b", "1c"),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				c.Spec.Selector.MatchLabels["machine.openshift.io/cluster-api-machine-type"] = "control-plane"
			},
			// The selector now matches no machine either.
			wantErrs: []string{"spec.selector: Invalid value ~ does not match the template labels (spec.template.machines_v1beta1_machine_openshift_io.metadata.labels)", "spec.replicas: Invalid value: 3: 0 control-plane machines match spec.selector"}},
		{name: "empty selector", doc: awsSet, machines: masters("1a", "1b", "1c"),
			mutate:   func(c *machinev1.ControlPlaneMachineSet) { c.Spec.Selector = metav1.LabelSelector{} },
			wantErrs: []string{"spec.selector: Invalid value ~ must not be empty"}},
		{name: "failure domains of another platform than the provider spec", doc: awsSet, machines: masters("1a", "1b", "1c"),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains = &machinev1.FailureDomains{Platform: "GCP", GCP: &[]machinev1.GCPFailureDomain{{Zone: "us-central1-a"}}}
			},
			wantErrs: []string{`spec.template.machines_v1beta1_machine_openshift_io.failureDomains.platform: Invalid value: "GCP": failure domains are for platform GCP but the template providerSpec is of kind "AWSMachineProviderConfig"`}},
		{name: "failure domains of a platform that has none", doc: awsSet, machines: masters("1a", "1b", "1c"),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains = &machinev1.FailureDomains{Platform: "BareMetal", OpenStack: []machinev1.OpenStackFailureDomain{{AvailabilityZone: "az1"}}}
			},
			wantErrs: []string{`failureDomains.platform: Invalid value: "BareMetal": failure domains for platform BareMetal are not supported`}},
		{name: "OpenStack failure domains over an AWS provider spec", doc: awsSet, machines: masters("1a", "1b", "1c"),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains = &machinev1.FailureDomains{Platform: "OpenStack", OpenStack: []machinev1.OpenStackFailureDomain{{AvailabilityZone: "az1"}}}
			},
			wantErrs: []string{`failureDomains.platform: Invalid value: "OpenStack": failure domains are for platform OpenStack but the template providerSpec is of kind "AWSMachineProviderConfig"`}},
		{name: "a provider spec that does not decode for its platform", doc: awsSet, machines: masters("1a", "1b", "1c"),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				setProviderSpec(c, func(t map[string]any) { t["instanceType"] = 42 })
			},
			wantErrs: []string{"spec.template.machines_v1beta1_machine_openshift_io.spec.providerSpec.value: Invalid value ~ does not decode for platform AWS"}},
		{name: "no provider spec", doc: awsSet, machines: masters("1a", "1b", "1c"),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				c.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value = nil
			},
			wantErrs: []string{"spec.template.machines_v1beta1_machine_openshift_io.spec.providerSpec.value: Required value"}},
		{name: "unknown provider-spec fields are a warning", doc: awsSet, machines: masters("1a", "1b", "1c"),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				setProviderSpec(c, func(t map[string]any) { t["futureField"] = "x" })
			},
			wantWarn: []string{`field "futureField" is unknown to the AWS provider type and will not be compared`}},
		{name: "Azure without the internal load balancer", doc: azureSet,
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				setProviderSpec(c, func(t map[string]any) { delete(t, "internalLoadBalancer") })
			},
			wantErrs: []string{"spec.template.machines_v1beta1_machine_openshift_io.spec.providerSpec.value.internalLoadBalancer: Required value"}},
		{name: "GCP without target pools is only a warning", doc: azureSet,
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains = &machinev1.FailureDomains{Platform: "GCP", GCP: &[]machinev1.GCPFailureDomain{{Zone: "us-central1-a"}, {Zone: "us-central1-b"}}}
				c.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"GCPMachineProviderSpec","machineType":"n2-standard-4","region":"us-central1","zone":""}`)}
			},
			wantWarn: []string{"spec.template.machines_v1beta1_machine_openshift_io.spec.providerSpec.value.targetPools: no targetPools"}},
		{name: "created Active over fewer machines than replicas", doc: awsSet, machines: masters("1a", "1b"),
			wantErrs: []string{"spec.replicas: Invalid value: 3: 2 control-plane machines match spec.selector (c1-master-0, c1-master-1)"}},
		{name: "created Inactive over fewer machines: nothing is created until activation", doc: awsSet, machines: masters("1a", "1b"), mutate: inactive},
		{name: "deleting machines do not count", doc: awsSet,
			machines: func() []machinev1beta1.Machine {
				ms := masters("1a", "1b", "1c")
				ms = append(ms, awsMachine("c1-master-old-1", "1b", "m5.xlarge"))
				ms[3].DeletionTimestamp = &metav1.Time{}
				return ms
			}()},
		{name: "activation over fewer machines than replicas (the upstream webhook checks this on create only)", doc: awsSet, machines: masters("1a", "1b"),
			old: inactive, wantErrs: []string{"spec.replicas: Invalid value: 3: 2 control-plane machines match spec.selector"}},
		{name: "an update of an Active set does not recount machines", doc: awsSet, machines: masters("1a", "1b"),
			old: func(*machinev1.ControlPlaneMachineSet) {}},
		{name: "a machine in a zone the set does not declare", doc: awsSet, machines: masters("1a", "1b", "1d"),
			wantErrs: []string{`failureDomains: Invalid value: "AWS{availabilityZone=us-east-1d, subnet=filters:[tag:Name=c1-private-us-east-1d]}": machine c1-master-2 is in AWS{availabilityZone=us-east-1d, ~ which the set does not declare: activating would move it to AWS{availabilityZone=us-east-1c,`}},
		{name: "two machines in one zone while a declared zone is unused: activation would rebalance", doc: awsSet, machines: masters("1a", "1a", "1b"),
			old:      inactive,
			wantErrs: []string{"failureDomains: Invalid value: ~ machine c1-master-1 shares AWS{availabilityZone=us-east-1a, ~ with another control-plane machine while a declared failure domain is unused ~ would move it to AWS{availabilityZone=us-east-1c,"}},
		{name: "an extra declared zone moves nothing", doc: awsSet, machines: masters("1a", "1b", "1c"),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				fds := *c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains.AWS
				fds = append(fds, machinev1.AWSFailureDomain{Placement: machinev1.AWSFailureDomainPlacement{AvailabilityZone: "us-east-1d"}})
				c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains.AWS = &fds
			}},
		{name: "without failure domains, machines outside the template's zone", doc: awsSet, machines: masters("1a", "1b", "1a"),
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains = nil
				setProviderSpec(c, func(t map[string]any) {
					t["placement"] = map[string]any{"availabilityZone": "us-east-1a", "region": "us-east-1"}
				})
			},
			wantErrs: []string{"spec.template.machines_v1beta1_machine_openshift_io.spec.providerSpec.value: Invalid value: \"AWS{availabilityZone=us-east-1a}\": machine c1-master-1 is in AWS{availabilityZone=us-east-1b, ~ places every machine in AWS{availabilityZone=us-east-1a}"}},
		{name: "changing the failure domains of an Active set is a rollout, not an error", doc: awsSet, machines: masters("1a", "1b", "1c"),
			old: func(*machinev1.ControlPlaneMachineSet) {},
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				(*c.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains.AWS)[2].Placement.AvailabilityZone = "us-east-1d"
			}},
		{name: "activating a set being deleted", doc: awsSet, machines: masters("1a", "1b", "1c"),
			old: func(c *machinev1.ControlPlaneMachineSet) {
				inactive(c)
				c.DeletionTimestamp = &metav1.Time{}
			},
			mutate:   func(c *machinev1.ControlPlaneMachineSet) { c.DeletionTimestamp = &metav1.Time{} },
			wantErrs: []string{"spec.state: Forbidden: a ControlPlaneMachineSet that is being deleted cannot be activated"}},
		{name: "an update that leaves the spec alone is never refused, even when the spec no longer validates", doc: awsSet,
			old: func(c *machinev1.ControlPlaneMachineSet) { c.Spec.Selector = metav1.LabelSelector{} },
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				c.Spec.Selector = metav1.LabelSelector{}
				c.Annotations = map[string]string{"cpms.upshift.io/remediation": "{}"}
			}},
		{name: "an update that changes the spec is validated whole", doc: awsSet,
			old: func(c *machinev1.ControlPlaneMachineSet) { c.Spec.Selector = metav1.LabelSelector{} },
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				c.Spec.Selector = metav1.LabelSelector{}
				c.Spec.Strategy.Type = machinev1.OnDelete
			},
			wantErrs: []string{"spec.selector: Invalid value ~ must not be empty"}},
		{name: "releasing a deleting set is never refused, even when it no longer validates", doc: awsSet,
			old: func(c *machinev1.ControlPlaneMachineSet) {
				c.DeletionTimestamp = &metav1.Time{}
				c.Finalizers = []string{"controlplanemachineset.machine.openshift.io"}
				c.Spec.Selector = metav1.LabelSelector{}
			},
			mutate: func(c *machinev1.ControlPlaneMachineSet) {
				c.DeletionTimestamp = &metav1.Time{}
				c.Spec.Selector = metav1.LabelSelector{}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cpms := load(t, tc.doc)
			var old *machinev1.ControlPlaneMachineSet
			if tc.old != nil {
				old = cpms.DeepCopy()
				tc.old(old)
			}
			if tc.mutate != nil {
				tc.mutate(cpms)
			}
			warnings, errs := Set(old, cpms, tc.machines, nil)
			if len(errs) != len(tc.wantErrs) {
				t.Fatalf("errors:\n  %s\nwant %d: %q", errs.ToAggregate(), len(tc.wantErrs), tc.wantErrs)
			}
			for i, want := range tc.wantErrs {
				for _, frag := range strings.Split(want, " ~ ") {
					if !strings.Contains(errs[i].Error(), frag) {
						t.Errorf("error %d is\n  %s\nwant it to contain %q", i, errs[i].Error(), frag)
					}
				}
			}
			allW := strings.Join(warnings, "\n")
			if len(warnings) != len(tc.wantWarn) {
				t.Fatalf("warnings %q, want %q", warnings, tc.wantWarn)
			}
			for _, w := range tc.wantWarn {
				if !strings.Contains(allW, w) {
					t.Errorf("warnings %q, want one containing %q", warnings, w)
				}
			}
		})
	}
}
