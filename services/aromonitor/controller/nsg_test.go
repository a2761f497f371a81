package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/services/aromonitor/azure"
	"github.com/upshift-io/upshift/services/aromonitor/controller"
	"github.com/upshift-io/upshift/tools/azuresim"
)

const (
	tenant   = "11111111-1111-1111-1111-111111111111"
	clientID = "22222222-2222-2222-2222-222222222222"
	sub      = "33333333-3333-3333-3333-333333333333"
	vnetPath = "/subscriptions/" + sub + "/resourceGroups/vnet-rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/"
	nsgID    = "/subscriptions/" + sub + "/resourceGroups/aro-c1/providers/Microsoft.Network/networkSecurityGroups/c1-x7k2p-nsg"
	machNS   = "openshift-machine-api"
	credNS   = "openshift-azure-operator"
)

var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

// azureCluster is a simulated ARO cluster: the Cluster object, master Machines
// and a worker MachineSet naming two subnets, the credentials Secret, and the
// subnets in the local ARM.
type azureCluster struct {
	arm   *azuresim.Server
	clock *testingclock.FakeClock
	creds types.NamespacedName
}

func newAzureCluster(ctx context.Context) *azureCluster {
	arm := azuresim.Start()
	DeferCleanup(arm.Close)
	arm.AddApp(azuresim.App{Tenant: tenant, ClientID: clientID, Secret: "first"})
	arm.AddNSG(nsgID)
	arm.AddSubnet(vnetPath+"master", "10.0.0.0/23", nsgID)
	arm.AddSubnet(vnetPath+"worker", "10.0.2.0/23", "")
	// As an ARO install leaves them (the service endpoints' own Describe
	// takes them away).
	for _, s := range []string{"master", "worker"} {
		arm.SetSubnetServiceEndpoints(vnetPath+s, "Microsoft.ContainerRegistry", "Microsoft.Storage")
	}

	for _, ns := range []string{machNS, credNS} {
		Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	}
	spec := func(subnet string) *runtime.RawExtension {
		return &runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AzureMachineProviderSpec","vnet":"vnet","subnet":%q,"networkResourceGroup":"vnet-rg"}`, subnet))}
	}
	for i := 0; i < 3; i++ {
		m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c1-master-%d", i), Namespace: machNS,
			Labels: map[string]string{"machine.openshift.io/cluster-api-machine-role": "master"}}}
		m.Spec.ProviderSpec.Value = spec("master")
		Expect(env.Client.Create(ctx, m)).To(Succeed())
	}
	ms := &machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Name: "c1-worker-eastus1", Namespace: machNS,
		Labels: map[string]string{"machine.openshift.io/cluster-api-machine-role": "worker"}}}
	ms.Spec.Selector.MatchLabels = map[string]string{"set": "w"}
	ms.Spec.Template.Labels = map[string]string{"set": "w"}
	ms.Spec.Template.Spec.ProviderSpec.Value = spec("worker")
	Expect(env.Client.Create(ctx, ms)).To(Succeed())

	creds := types.NamespacedName{Namespace: credNS, Name: "azure-cloud-credentials"}
	Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: creds.Name, Namespace: creds.Namespace},
		Data: map[string][]byte{azure.KeyTenantID: []byte(tenant), azure.KeyClientID: []byte(clientID),
			azure.KeyClientSecret: []byte("first"), azure.KeySubscriptionID: []byte(sub)}})).To(Succeed())

	Expect(env.Client.Create(ctx, &arov1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: arov1alpha1.ClusterSpec{
		ResourceID:             "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/openShiftClusters/c1",
		ClusterResourceGroupID: "/subscriptions/" + sub + "/resourceGroups/aro-c1",
		InfraID:                "c1-x7k2p", ArchitectureVersion: 1, AZEnvironment: "AzurePublicCloud",
	}})).To(Succeed())
	a := &azureCluster{arm: arm, clock: testingclock.NewFakeClock(t0), creds: creds}
	DeferCleanup(a.teardown)
	createMonitorConfig(ctx)
	return a
}

// teardown deletes what newAzureCluster created, for the next Describe.
func (a *azureCluster) teardown(ctx context.Context) {
	Expect(env.Client.DeleteAllOf(ctx, &machinev1beta1.Machine{}, client.InNamespace(machNS))).To(Succeed())
	Expect(env.Client.DeleteAllOf(ctx, &machinev1beta1.MachineSet{}, client.InNamespace(machNS))).To(Succeed())
	Expect(env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: a.creds.Name, Namespace: a.creds.Namespace}})).To(Succeed())
	Expect(env.Client.Delete(ctx, &arov1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}})).To(Succeed())
}

// reconciler is a fresh NSG reconciler, as after a restart: everything it
// remembers comes from its record, the MonitorConfig's status.
func (a *azureCluster) reconciler() *controller.NSGReconciler {
	cloud := a.arm.Cloud()
	return &controller.NSGReconciler{
		Client: env.Client, Recorder: recorder, Clock: a.clock,
		Azure:       azure.NewFactory(azure.Options{Cloud: &cloud, Transport: a.arm.Client(), RequestsPerMinute: 600}),
		Credentials: a.creds, MachineNamespace: machNS,
	}
}

func (a *azureCluster) pass(ctx context.Context) reconcile.Result {
	res, err := a.reconciler().Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "cluster"}})
	Expect(err).NotTo(HaveOccurred())
	return res
}

func (a *azureCluster) puts() int {
	n := 0
	for _, r := range a.arm.Log() {
		if r.Method == "PUT" {
			n++
		}
	}
	return n
}

func cluster(ctx context.Context) *arov1alpha1.Cluster {
	c := &arov1alpha1.Cluster{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "cluster"}, c)).To(Succeed())
	return c
}

// record is aro-monitor's record: the MonitorConfig's status.
func record(ctx context.Context) amv1alpha1.MonitorConfigStatus {
	mc := &amv1alpha1.MonitorConfig{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, mc)).To(Succeed())
	return mc.Status
}

// createMonitorConfig creates the MonitorConfig that holds the record (the
// master's ConfigReconciler does so in a running aro-monitor), and deletes
// it after the Describe: each starts with no record.
func createMonitorConfig(ctx context.Context) {
	mc := &amv1alpha1.MonitorConfig{ObjectMeta: metav1.ObjectMeta{Name: amv1alpha1.SingletonName}}
	Expect(env.Client.Create(ctx, mc)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, mc)).To(Succeed()) })
}

// setNSGMode sets the MonitorConfig's spec.nsg.mode.
func setNSGMode(ctx context.Context, mode amv1alpha1.NSGMode) {
	mc := &amv1alpha1.MonitorConfig{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, mc)).To(Succeed())
	mc.Spec.NSG.Mode = mode
	Expect(env.Client.Update(ctx, mc)).To(Succeed())
}

func conditionOf(conds []operatorv1.OperatorCondition, t string) operatorv1.OperatorCondition {
	for _, x := range conds {
		if x.Type == t {
			return x
		}
	}
	return operatorv1.OperatorCondition{}
}

// eventsWith returns the Events on the Cluster object with this reason.
func eventsWith(ctx context.Context, reason string) []eventsv1.Event {
	var list eventsv1.EventList
	Expect(env.Client.List(ctx, &list)).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "Cluster" && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

var _ = Describe("NSG association", Ordered, func() {
	var a *azureCluster
	BeforeAll(func(ctx context.Context) { a = newAzureCluster(ctx) })

	It("re-associates a detached worker subnet once, and leaves it alone after", func(ctx context.Context) {
		res := a.pass(ctx)
		Expect(res.RequeueAfter).To(BeNumerically(">=", 13*time.Minute), "the 15m interval, jittered")
		Expect(a.arm.SubnetNSG(vnetPath + "worker")).To(Equal(nsgID))
		Expect(a.puts()).To(Equal(1))
		c := record(ctx)
		Expect(conditionOf(c.Conditions, amv1alpha1.NSGAssociated).Status).To(Equal(operatorv1.ConditionTrue))
		Expect(conditionOf(c.Conditions, amv1alpha1.RemediationSuppressed).Status).To(Equal(operatorv1.ConditionFalse))
		Expect(c.Subnets).To(HaveLen(2))
		Expect(c.Subnets[1].ID).To(HaveSuffix("/subnets/worker"))
		Expect(c.Subnets[1].Remediations).To(HaveLen(1))
		Eventually(func() []eventsv1.Event { return eventsWith(ctx, controller.EventReassociated) }).Should(HaveLen(1))
		Expect(eventsWith(ctx, controller.EventReassociated)[0].Note).To(ContainSubstring("subnet is associated with no network security group instead of " + nsgID))

		a.clock.Step(time.Minute)
		a.pass(ctx)
		Expect(a.puts()).To(Equal(1), "an associated subnet is not written again")
	})

	It("stops at a tug-of-war and says so, then resumes after the suppression", func(ctx context.Context) {
		suppressed := emitted.count(controller.EventSuppressed)
		a.clock.Step(time.Minute)
		a.arm.SetSubnetNSG(vnetPath+"worker", "")
		a.pass(ctx)
		Expect(a.puts()).To(Equal(1), "drift back within the 10m window is not fought")
		c := record(ctx)
		sup := conditionOf(c.Conditions, amv1alpha1.RemediationSuppressed)
		Expect(sup.Status).To(Equal(operatorv1.ConditionTrue))
		Expect(sup.Reason).To(Equal("TugOfWar"))
		Expect(sup.Message).To(ContainSubstring("something else is changing this subnet"))
		Expect(conditionOf(c.Conditions, amv1alpha1.NSGAssociated).Status).To(Equal(operatorv1.ConditionFalse))
		Expect(conditionOf(c.Conditions, amv1alpha1.NSGAssociated).Message).To(ContainSubstring("worker is associated with no network security group"))
		Eventually(func() []eventsv1.Event { return eventsWith(ctx, controller.EventSuppressed) }).Should(HaveLen(1))
		Expect(eventsWith(ctx, controller.EventSuppressed)[0].Type).To(Equal(corev1.EventTypeWarning))

		a.clock.Step(30 * time.Minute)
		a.pass(ctx)
		Expect(a.puts()).To(Equal(1), "still suppressed")
		Expect(emitted.count(controller.EventSuppressed)).To(Equal(suppressed+1), "one Event over both suppressed passes")

		a.clock.Step(31 * time.Minute)
		a.pass(ctx)
		Expect(a.puts()).To(Equal(2), "the suppression ended")
		Expect(conditionOf(record(ctx).Conditions, amv1alpha1.RemediationSuppressed).Status).To(Equal(operatorv1.ConditionFalse))
	})

	It("only reports drift in Observe mode, once", func(ctx context.Context) {
		setNSGMode(ctx, amv1alpha1.NSGObserve)
		DeferCleanup(func(ctx context.Context) { setNSGMode(ctx, amv1alpha1.NSGRemediate) })
		drifts := emitted.count(controller.EventDrift)
		a.clock.Step(2 * time.Hour)
		a.arm.SetSubnetNSG(vnetPath+"master", "")
		a.pass(ctx)
		a.clock.Step(time.Minute)
		a.pass(ctx)
		Expect(a.puts()).To(Equal(2))
		Expect(conditionOf(record(ctx).Conditions, amv1alpha1.NSGAssociated).Status).To(Equal(operatorv1.ConditionFalse))
		Expect(emitted.count(controller.EventDrift)).To(Equal(drifts+1), "one Event over two drifted passes")
		Eventually(func(g Gomega) {
			var notes []string
			for _, e := range eventsWith(ctx, controller.EventDrift) {
				if strings.HasPrefix(e.Note, "Subnet master:") {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(HaveLen(1))
			g.Expect(notes[0]).To(ContainSubstring("remediation is off (Observe)"))
		}).Should(Succeed())
	})

	It("reports its own failures as Unknown, never False", func(ctx context.Context) {
		a.arm.SetSubnetNSG(vnetPath+"master", nsgID)
		a.arm.FailNext("GET", vnetPath+"master", azuresim.Fault{Status: 403, Code: "AuthorizationFailed"})
		a.clock.Step(time.Minute)
		res := a.pass(ctx)
		Expect(res.RequeueAfter).To(BeNumerically("<=", 66*time.Second), "a failed read is retried within about a minute")
		cond := conditionOf(record(ctx).Conditions, amv1alpha1.NSGAssociated)
		Expect(cond.Status).To(Equal(operatorv1.ConditionUnknown))
		Expect(cond.Reason).To(Equal(controller.ReasonARMUnavailable))
		Expect(cond.Message).To(ContainSubstring("403 AuthorizationFailed"))
	})

	It("picks up a rotated client secret without a restart", func(ctx context.Context) {
		cloud := a.arm.Cloud()
		r := a.reconciler()
		r.Azure = azure.NewFactory(azure.Options{Cloud: &cloud, Transport: a.arm.Client()})
		req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "cluster"}}
		_, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(conditionOf(record(ctx).Conditions, amv1alpha1.NSGAssociated).Status).To(Equal(operatorv1.ConditionTrue))

		a.arm.UpdateApp(clientID, func(app *azuresim.App) { app.Secret = "second" })
		secret := &corev1.Secret{}
		Expect(env.Client.Get(ctx, a.creds, secret)).To(Succeed())
		secret.Data[azure.KeyClientSecret] = []byte("second")
		Expect(env.Client.Update(ctx, secret)).To(Succeed())
		a.clock.Step(time.Minute)
		// The same reconciler, the same factory: the new Secret version
		// builds a new credential.
		_, err = r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		cond := conditionOf(record(ctx).Conditions, amv1alpha1.NSGAssociated)
		Expect(cond.Status).To(Equal(operatorv1.ConditionTrue), cond.Message)
		Expect(strings.Count(fmt.Sprint(a.arm.Log()), "oauth2/v2.0/token")).To(BeNumerically(">=", 2))
	})
})

func subnetRecord(st amv1alpha1.MonitorConfigStatus, name string) amv1alpha1.SubnetStatus {
	for _, s := range st.Subnets {
		if strings.HasSuffix(s.ID, "/subnets/"+name) {
			return s
		}
	}
	return amv1alpha1.SubnetStatus{}
}

var _ = Describe("NSG records across failures", Ordered, func() {
	var a *azureCluster
	BeforeAll(func(ctx context.Context) { a = newAzureCluster(ctx) })

	It("credentials unavailable keeps subnet records", func(ctx context.Context) {
		a.pass(ctx)
		a.clock.Step(time.Minute)
		a.arm.SetSubnetNSG(vnetPath+"worker", "")
		a.pass(ctx)
		Expect(a.puts()).To(Equal(1))
		before := subnetRecord(record(ctx), "worker")
		Expect(before.Remediations).To(HaveLen(1))
		Expect(before.SuppressedReason).To(Equal("TugOfWar"))

		// The Secret is deleted and recreated, as in a rotation.
		secret := &corev1.Secret{}
		Expect(env.Client.Get(ctx, a.creds, secret)).To(Succeed())
		Expect(env.Client.Delete(ctx, secret)).To(Succeed())
		a.clock.Step(time.Minute)
		res := a.pass(ctx)
		Expect(res.RequeueAfter).To(BeNumerically("<=", time.Minute))
		c := record(ctx)
		Expect(conditionOf(c.Conditions, amv1alpha1.NSGAssociated).Reason).To(Equal(controller.ReasonCredentialsUnavailable))
		after := subnetRecord(c, "worker")
		Expect(after.Remediations).To(Equal(before.Remediations), "the budget spent is kept")
		Expect(after.SuppressedUntil).To(Equal(before.SuppressedUntil), "the suppression is kept")
		Expect(after.SuppressedReason).To(Equal("TugOfWar"))
		sup := conditionOf(c.Conditions, amv1alpha1.RemediationSuppressed)
		Expect(sup.Status).To(Equal(operatorv1.ConditionTrue))
		Expect(sup.Reason).To(Equal("TugOfWar"))

		secret.ResourceVersion, secret.UID = "", ""
		Expect(env.Client.Create(ctx, secret)).To(Succeed())
		a.clock.Step(time.Minute)
		a.pass(ctx)
		Expect(a.puts()).To(Equal(1), "the suppression still holds after the Secret is back")
		Expect(conditionOf(record(ctx).Conditions, amv1alpha1.RemediationSuppressed).Status).To(Equal(operatorv1.ConditionTrue))
	})

	It("keeps the records while the check is off, and ends the suppression in time", func(ctx context.Context) {
		c := cluster(ctx)
		c.Spec.OperatorFlags = map[string]string{"aro.azuresubnets.enabled": "false"}
		Expect(env.Client.Update(ctx, c)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			c := cluster(ctx)
			c.Spec.OperatorFlags = nil
			Expect(env.Client.Update(ctx, c)).To(Succeed())
		})
		a.clock.Step(time.Minute)
		res := a.pass(ctx)
		Expect(res.RequeueAfter).To(BeNumerically(">", 0), "requeued to see the suppression end")
		st := record(ctx)
		Expect(conditionOf(st.Conditions, amv1alpha1.NSGAssociated).Reason).To(Equal(controller.ReasonCheckDisabled))
		Expect(subnetRecord(st, "worker").Remediations).To(HaveLen(1))
		Expect(conditionOf(st.Conditions, amv1alpha1.RemediationSuppressed).Status).To(Equal(operatorv1.ConditionTrue))

		a.clock.Step(2 * time.Hour)
		a.pass(ctx)
		sup := conditionOf(record(ctx).Conditions, amv1alpha1.RemediationSuppressed)
		Expect(sup.Status).To(Equal(operatorv1.ConditionFalse))
		Expect(sup.Reason).To(Equal(controller.ReasonCheckDisabled))
	})

	It("counts a re-association ARM refuses against the budget", func(ctx context.Context) {
		a.clock.Step(2 * time.Hour)
		a.arm.SetSubnetNSG(vnetPath+"worker", "")
		forbidden := azuresim.Fault{Status: 403, Code: "AuthorizationFailed"}
		a.arm.FailNext("PUT", vnetPath+"worker", forbidden, forbidden, forbidden, forbidden, forbidden, forbidden)
		start := a.puts()
		for i := 0; i < 6; i++ {
			a.pass(ctx)
			a.clock.Step(time.Minute)
		}
		Expect(a.puts()-start).To(Equal(3), "the budget of 3 per hour bounds the failing PUTs")
		c := record(ctx)
		rec := subnetRecord(c, "worker")
		Expect(rec.LastRemediationFailed).To(BeTrue())
		Expect(rec.SuppressedReason).To(Equal("BudgetExhausted"), "a failed repair is no tug-of-war")
		Eventually(func() []eventsv1.Event { return eventsWith(ctx, controller.EventReassociationFailed) }).ShouldNot(BeEmpty())
	})
})

var _ = Describe("NSG status writes", Ordered, func() {
	var a *azureCluster
	BeforeAll(func(ctx context.Context) { a = newAzureCluster(ctx) })

	// failingApplies is the real client with status applies failing from
	// the n-th on (counting from 1).
	failingApplies := func(n int) client.Client {
		wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		count := 0
		return interceptor.NewClient(wc, interceptor.Funcs{
			SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
				count++
				if count >= n {
					return errors.New("injected: the apiserver is unavailable")
				}
				return c.SubResource(sub).Apply(ctx, obj, opts...)
			},
		})
	}

	It("stores a re-association's record before the pass ends", func(ctx context.Context) {
		r := a.reconciler()
		r.Client = failingApplies(2) // the record after the PUT lands; the end of the pass does not
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "cluster"}})
		Expect(err).To(HaveOccurred())
		Expect(a.puts()).To(Equal(1))
		Expect(subnetRecord(record(ctx), "worker").Remediations).To(HaveLen(1))
	})

	It("keeps the records and retries after the interval when the Machines cannot be listed", func(ctx context.Context) {
		before := subnetRecord(record(ctx), "worker")
		Expect(before.Remediations).To(HaveLen(1))
		wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		r := a.reconciler()
		r.Client = interceptor.NewClient(wc, interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if _, ok := list.(*machinev1beta1.MachineList); ok {
					return errors.New("injected: machines unavailable")
				}
				return c.List(ctx, list, opts...)
			},
		})
		a.clock.Step(time.Minute)
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "cluster"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.RequeueAfter).To(BeNumerically(">=", 13*time.Minute), "retried after the interval, not never")
		c := record(ctx)
		Expect(conditionOf(c.Conditions, amv1alpha1.NSGAssociated).Reason).To(Equal(controller.ReasonConfigurationInvalid))
		Expect(subnetRecord(c, "worker").Remediations).To(Equal(before.Remediations))
	})

	It("does not retry at once when the record of a PUT cannot be stored", func(ctx context.Context) {
		a.clock.Step(2 * time.Hour)
		a.arm.SetSubnetNSG(vnetPath+"worker", "")
		r := a.reconciler()
		r.Client = failingApplies(1)
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "cluster"}})
		Expect(err).NotTo(HaveOccurred(), "an error would be retried within seconds, each retry free to PUT again")
		Expect(res.RequeueAfter).To(BeNumerically(">=", 13*time.Minute))
		Expect(a.puts()).To(Equal(2))
	})
})
