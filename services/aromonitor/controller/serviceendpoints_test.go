package controller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorv1 "github.com/openshift/api/operator/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/services/aromonitor/controller"
	"github.com/upshift-io/upshift/services/aromonitor/ownership"
)

var _ = Describe("subnet service endpoints", Ordered, func() {
	var a *azureCluster
	endpoints := func(ctx context.Context) operatorv1.OperatorCondition {
		return conditionOf(record(ctx).Conditions, amv1alpha1.SubnetServiceEndpoints)
	}
	setFlags := func(ctx context.Context, flags map[string]string, gateway []string) {
		c := cluster(ctx)
		c.Spec.OperatorFlags, c.Spec.GatewayDomains = flags, gateway
		Expect(env.Client.Update(ctx, c)).To(Succeed())
	}

	BeforeAll(func(ctx context.Context) {
		a = newAzureCluster(ctx)
		// The worker subnet lacks the registry's endpoint (and, as
		// newAzureCluster leaves it, its network security group).
		a.arm.SetSubnetServiceEndpoints(vnetPath+"worker", "Microsoft.Storage")
	})

	It("adds a missing endpoint in the PUT that re-associates the group, keeping the others, and says so", func(ctx context.Context) {
		added := emitted.count(controller.EventServiceEndpointsAdded)
		a.pass(ctx)
		Expect(a.puts()).To(Equal(1), "one PUT of the worker subnet did both")
		Expect(a.arm.SubnetNSG(vnetPath + "worker")).To(Equal(nsgID))
		Expect(a.arm.SubnetServiceEndpoints(vnetPath + "worker")).To(Equal([]string{"Microsoft.Storage", "Microsoft.ContainerRegistry"}))
		c := endpoints(ctx)
		Expect([]string{string(c.Status), c.Reason, c.Message}).To(Equal([]string{"True", "Added", "added Microsoft.ContainerRegistry to subnet worker"}))
		Expect(emitted.count(controller.EventServiceEndpointsAdded)).To(Equal(added + 1))
		Expect(conditionOf(cluster(ctx).Status.Conditions, amv1alpha1.SubnetServiceEndpoints).Type).To(BeEmpty(), "never a type on ARO's Cluster")
	})

	It("writes nothing to Azure when every endpoint is there", func(ctx context.Context) {
		a.pass(ctx)
		Expect(a.puts()).To(Equal(1))
		Expect(endpoints(ctx).Reason).To(Equal("AllPresent"))
	})

	It("adds them with a PUT of its own on a subnet whose group is right", func(ctx context.Context) {
		a.arm.SetSubnetServiceEndpoints(vnetPath + "master")
		a.pass(ctx)
		Expect(a.puts()).To(Equal(2))
		Expect(a.arm.SubnetServiceEndpoints(vnetPath + "master")).To(Equal([]string{"Microsoft.ContainerRegistry", "Microsoft.Storage"}))
		Expect(a.arm.SubnetNSG(vnetPath+"master")).To(Equal(nsgID), "the group as read")
		Expect(endpoints(ctx).Message).To(Equal("added Microsoft.ContainerRegistry, Microsoft.Storage to subnet master"))
	})

	It("only reports while spec.nsg.mode is Observe", func(ctx context.Context) {
		setNSGMode(ctx, amv1alpha1.NSGObserve)
		DeferCleanup(setNSGMode, amv1alpha1.NSGRemediate)
		a.arm.SetSubnetServiceEndpoints(vnetPath+"master", "Microsoft.Storage")
		a.pass(ctx)
		Expect(a.puts()).To(Equal(2))
		c := endpoints(ctx)
		Expect([]string{string(c.Status), c.Reason}).To(Equal([]string{"False", "Missing"}))
		Expect(c.Message).To(HavePrefix("subnet master lacks Microsoft.ContainerRegistry: reported only"))
	})

	It("only reports while ARO's operator runs its subnet controller", func(ctx context.Context) {
		dep := aroDeployment(ownership.MasterDeployment, 1)
		Expect(env.Client.Create(ctx, dep)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, dep))).To(Succeed()) })
		a.pass(ctx)
		Expect(a.puts()).To(Equal(2), "no PUT: ARO's controller adds them")
		Expect(endpoints(ctx).Reason).To(Equal("Missing"))
		Expect(env.Client.Delete(ctx, dep)).To(Succeed())
		a.pass(ctx)
		Expect(a.puts()).To(Equal(3), "replacing again: added")
		Expect(endpoints(ctx).Reason).To(Equal("Added"))
	})

	It("leaves them alone with ARO's flag false, and on an egress lockdown cluster", func(ctx context.Context) {
		a.arm.SetSubnetServiceEndpoints(vnetPath+"master", "Microsoft.Storage")
		setFlags(ctx, map[string]string{"aro.azuresubnets.serviceendpoint.managed": "false"}, nil)
		a.pass(ctx)
		Expect(a.puts()).To(Equal(3))
		c := endpoints(ctx)
		Expect([]string{string(c.Status), c.Reason, c.Message}).To(Equal([]string{"Unknown", "CheckDisabled", "not managed: aro.azuresubnets.serviceendpoint.managed is false"}))

		setFlags(ctx, nil, []string{"gateway.example.com"})
		a.pass(ctx)
		Expect(a.puts()).To(Equal(3))
		Expect(endpoints(ctx).Message).To(ContainSubstring("egress lockdown"))

		setFlags(ctx, nil, nil)
		a.pass(ctx)
		Expect(a.puts()).To(Equal(4), "managed again: added")
		Expect(endpoints(ctx).Status).To(Equal(operatorv1.ConditionTrue))
	})
})
