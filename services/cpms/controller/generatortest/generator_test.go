package generatortest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/services/cpms/controller"
	"github.com/upshift-io/upshift/services/cpms/generate"
	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
)

var setKey = types.NamespacedName{Namespace: controller.Namespace, Name: controller.Name}

const region = "us-east-1"

func master(name, zone, instanceType string) *machinev1beta1.Machine {
	return machineapi.Machine(machineapi.MachineSpec{Name: name, InfraName: "c1", Role: "master", Region: region, Zone: zone, InstanceType: instanceType})
}

// getSet returns the set, or nil when there is none.
func getSet(ctx context.Context, g Gomega) *machinev1.ControlPlaneMachineSet {
	s := &machinev1.ControlPlaneMachineSet{}
	err := env.Client.Get(ctx, setKey, s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	return s
}

// template is the set's provider spec, as the simulated AWS spec.
func template(s *machinev1.ControlPlaneMachineSet) machineapi.ProviderSpec {
	var ps machineapi.ProviderSpec
	ExpectWithOffset(1, json.Unmarshal(s.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value.Raw, &ps)).To(Succeed())
	return ps
}

func zonesOf(s *machinev1.ControlPlaneMachineSet) []string {
	var zones []string
	if fds := s.Spec.Template.OpenShiftMachineV1Beta1Machine.FailureDomains; fds != nil && fds.AWS != nil {
		for _, fd := range *fds.AWS {
			zones = append(zones, fd.Placement.AvailabilityZone)
		}
	}
	sort.Strings(zones)
	return zones
}

// setEvents are the Events of reason about the set with uid.
func setEvents(ctx context.Context, g Gomega, reason string, uid types.UID) []eventsv1.Event {
	var list eventsv1.EventList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(controller.Namespace))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Reason == reason && e.Regarding.Kind == "ControlPlaneMachineSet" && e.Regarding.UID == uid {
			out = append(out, e)
		}
	}
	return out
}

// The specs follow one cluster through its life: installed without a set,
// a master replaced by hand with a bigger one, the set activated, then
// deleted while the upstream operator runs.
var _ = Describe("the set generator", Ordered, func() {
	var firstUID types.UID

	It("generates nothing for one master, then an Inactive set matching the three masters", func(ctx SpecContext) {
		Expect(env.Client.Create(ctx, master("c1-master-0", "us-east-1a", "m6i.xlarge"))).To(Succeed())
		// A single master is single-node OpenShift: no set (upstream's
		// rule). Absence takes waiting to show.
		Consistently(func(g Gomega) { g.Expect(getSet(ctx, g)).To(BeNil()) }).Should(Succeed())

		for i, z := range []string{"us-east-1b", "us-east-1c"} {
			Expect(env.Client.Create(ctx, master(fmt.Sprintf("c1-master-%d", i+1), z, "m6i.xlarge"))).To(Succeed())
		}
		var set *machinev1.ControlPlaneMachineSet
		Eventually(func(g Gomega) {
			set = getSet(ctx, g)
			g.Expect(set).NotTo(BeNil())
			g.Expect(zonesOf(set)).To(Equal([]string{"us-east-1a", "us-east-1b", "us-east-1c"}))
		}).Should(Succeed())
		Expect(set.Spec.State).To(Equal(machinev1.ControlPlaneMachineSetStateInactive))
		Expect(set.Spec.Strategy.Type).To(Equal(machinev1.RollingUpdate))
		Expect(set.Spec.Replicas).To(Equal(ptr.To(int32(3))))
		Expect(set.Spec.Selector.MatchLabels).To(Equal(map[string]string{
			machineapi.ClusterLabel: "c1", machineapi.RoleLabel: "master", machineapi.TypeLabel: "master",
		}))
		ps := template(set)
		Expect(ps.Kind).To(Equal("AWSMachineProviderConfig"))
		Expect(ps.InstanceType).To(Equal("m6i.xlarge"))
		Expect(ps.Placement.Region).To(Equal(region))
		Expect(ps.Placement.AvailabilityZone).To(BeEmpty(), "the zone is the failure domains'")
		firstUID = set.UID

		Eventually(func(g Gomega) {
			evs := setEvents(ctx, g, controller.ReasonGenerated, set.UID)
			g.Expect(evs).To(HaveLen(1))
			g.Expect(evs[0].Note).To(ContainSubstring("c1-master-0, c1-master-1, c1-master-2"))
			g.Expect(evs[0].Note).To(ContainSubstring("3 replicas, RollingUpdate, failure domains: AWS{availabilityZone=us-east-1a}, AWS{availabilityZone=us-east-1b}, AWS{availabilityZone=us-east-1c}"))
		}).Should(Succeed())

		// kubectl upshift cpms generate prints the very set, and says so.
		var out, errOut bytes.Buffer
		Expect(generate.Print(ctx, generate.PrintOptions{Out: &out, ErrOut: &errOut,
			RESTConfig: func() (*rest.Config, error) { return env.Config, nil }})).To(Succeed())
		printed := &machinev1.ControlPlaneMachineSet{}
		Expect(yaml.UnmarshalStrict(out.Bytes(), printed)).To(Succeed())
		Expect(printed.Kind).To(Equal("ControlPlaneMachineSet"))
		differs, reason := generate.Differs(set, printed)
		Expect(differs).To(BeFalse(), reason)
		Expect(errOut.String()).To(Equal("note: openshift-machine-api/cluster exists (Inactive) and says the same\n"))
	})

	It("regenerates the Inactive set when a master is replaced by a bigger one, and not when the old one goes", func(ctx SpecContext) {
		// The manual replacement of index 0: a new machine first, then the
		// old one deleted.
		Expect(env.Client.Create(ctx, master("c1-master-r-0", "us-east-1a", "m6i.2xlarge"))).To(Succeed())
		var set *machinev1.ControlPlaneMachineSet
		Eventually(func(g Gomega) {
			set = getSet(ctx, g)
			g.Expect(set).NotTo(BeNil())
			g.Expect(set.UID).NotTo(Equal(firstUID))
			g.Expect(template(set).InstanceType).To(Equal("m6i.2xlarge"))
		}).Should(Succeed())
		Expect(set.Spec.State).To(Equal(machinev1.ControlPlaneMachineSetStateInactive))
		Expect(zonesOf(set)).To(Equal([]string{"us-east-1a", "us-east-1b", "us-east-1c"}))
		Eventually(func(g Gomega) {
			outdated := setEvents(ctx, g, controller.ReasonOutdated, firstUID)
			g.Expect(outdated).To(HaveLen(1))
			g.Expect(outdated[0].Note).To(ContainSubstring(`providerSpec.value.instanceType: "m6i.xlarge" -> "m6i.2xlarge"`))
			g.Expect(setEvents(ctx, g, controller.ReasonGenerated, set.UID)).To(HaveLen(1))
		}).Should(Succeed())

		old := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: controller.Namespace, Name: "c1-master-0"}}
		Expect(env.Client.Delete(ctx, old)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(old), old))).To(BeTrue())
		}).Should(Succeed())
		// The template and the zones are what they were: the set stays.
		Consistently(func(g Gomega) {
			now := getSet(ctx, g)
			g.Expect(now).NotTo(BeNil())
			g.Expect(now.UID).To(Equal(set.UID))
		}).Should(Succeed())
	})

	It("never touches an Active set, even one it would generate otherwise", func(ctx SpecContext) {
		var uid types.UID
		Eventually(func(g Gomega) {
			set := getSet(ctx, g)
			g.Expect(set).NotTo(BeNil())
			set.Spec.State = machinev1.ControlPlaneMachineSetStateActive
			set.Spec.Strategy.Type = machinev1.OnDelete
			g.Expect(env.Client.Update(ctx, set)).To(Succeed())
			uid = set.UID
		}).Should(Succeed())
		// A labelled master wakes the generator too.
		Eventually(func(g Gomega) {
			m := &machinev1beta1.Machine{}
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: controller.Namespace, Name: "c1-master-1"}, m)).To(Succeed())
			m.Labels["example.com/reviewed"] = "true"
			g.Expect(env.Client.Update(ctx, m)).To(Succeed())
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			set := getSet(ctx, g)
			g.Expect(set).NotTo(BeNil())
			g.Expect(set.UID).To(Equal(uid))
			g.Expect(set.DeletionTimestamp).To(BeNil())
			g.Expect(set.Spec.State).To(Equal(machinev1.ControlPlaneMachineSetStateActive))
			g.Expect(set.Spec.Strategy.Type).To(Equal(machinev1.OnDelete))
			g.Expect(setEvents(ctx, g, controller.ReasonOutdated, uid)).To(BeEmpty())
		}).Should(Succeed())
	})

	It("generates nothing while the upstream operator runs, and a set once it is scaled to zero", func(ctx SpecContext) {
		labels := map[string]string{"k8s-app": controller.CPMSOperatorDeployment}
		op := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: controller.Namespace, Name: controller.CPMSOperatorDeployment},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "operator", Image: "example.com/cpms-operator"}}},
				},
			},
		}
		Expect(env.Client.Create(ctx, op)).To(Succeed())
		// Deleting the Active set is how an administrator turns it off; the
		// reconciler releases the machines and removes its finalizer.
		var active machinev1.ControlPlaneMachineSet
		Expect(env.Client.Get(ctx, setKey, &active)).To(Succeed())
		Expect(env.Client.Delete(ctx, &active)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(getSet(ctx, g)).To(BeNil()) }).Should(Succeed())
		// The operator's own generator would make the set: ours makes none.
		Consistently(func(g Gomega) { g.Expect(getSet(ctx, g)).To(BeNil()) }).Should(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(op), op)).To(Succeed())
			op.Spec.Replicas = ptr.To(int32(0))
			g.Expect(env.Client.Update(ctx, op)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			set := getSet(ctx, g)
			g.Expect(set).NotTo(BeNil())
			g.Expect(set.Spec.State).To(Equal(machinev1.ControlPlaneMachineSetStateInactive))
			g.Expect(set.Spec.Strategy.Type).To(Equal(machinev1.RollingUpdate))
			g.Expect(template(set).InstanceType).To(Equal("m6i.2xlarge"))
			g.Expect(strings.Join(zonesOf(set), ",")).To(Equal("us-east-1a,us-east-1b,us-east-1c"))
		}).Should(Succeed())
	})
})
