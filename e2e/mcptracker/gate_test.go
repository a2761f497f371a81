package mcptracker

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/gating"
)

// releasedFrom is the label node-gate's gate pool selects the nodes it
// released on.
const releasedFrom = "nodegate.upshift.io/released-from"

// countsGatePoolInSource is the tracker beside node-gate: a gate pool the
// run created is not a pool of its own, its node counts in worker. It runs
// in the suite's ordered container before the permission check, which it
// needs: the runs' watch, and the watch of node-gate's CRD before it, are
// the only uses of the chart's node-gate rules.
func countsGatePoolInSource(ctx SpecContext) {
	Expect(framework.InstallCRD(ctx, env, gating.RunsCRD)).To(Succeed())
	run := &nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "workers"},
		Spec: nodegatev1alpha1.MutexRunConfigSpec{MutexTargets: []nodegatev1alpha1.ObjectReference{{Name: "all-workers"}}}}
	// The CRD is served a moment after it is created.
	Eventually(func() error { return env.Client.Create(ctx, run) }).Should(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, run))).To(Succeed()) })
	// What node-gate records before it creates its gate pool.
	run.Status = nodegatev1alpha1.MutexRunConfigStatus{Phase: nodegatev1alpha1.RunProgressing,
		Pools: []nodegatev1alpha1.PoolRecord{{Name: "worker", GatePool: "worker-gate", GatePoolCreated: true, OriginalPaused: ptr.To(false)}}}
	Expect(env.Client.Status().Update(ctx, run)).To(Succeed())

	By("a paused gate pool rendering worker's MachineConfigs, and one worker released into it")
	gate := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker-gate"}, Spec: mcfgv1.MachineConfigPoolSpec{
		MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"machineconfiguration.openshift.io/role": "worker"}},
		NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{releasedFrom: "worker"}},
		Paused:                true,
	}}
	Expect(env.Client.Create(ctx, gate)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, gate))).To(Succeed()) })
	var nodes corev1.NodeList
	Expect(env.Client.List(ctx, &nodes, client.HasLabels{"node-role.kubernetes.io/worker"})).To(Succeed())
	var released *corev1.Node
	for i := range nodes.Items {
		if _, infra := nodes.Items[i].Labels["node-role.kubernetes.io/infra"]; !infra {
			released = &nodes.Items[i]
			break
		}
	}
	Expect(released).NotTo(BeNil())
	patch := client.MergeFrom(released.DeepCopy())
	released.Labels[releasedFrom] = "worker"
	Expect(env.Client.Patch(ctx, released, patch)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		n := &corev1.Node{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: released.Name}, n)).To(Succeed())
		patch := client.MergeFrom(n.DeepCopy())
		delete(n.Labels, releasedFrom)
		Expect(env.Client.Patch(ctx, n, patch)).To(Succeed())
	})

	// The node waits in the paused gate pool for its target: pending in
	// worker, which still counts six nodes; worker-gate is no pool.
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: gate.Name}, gate)).To(Succeed())
		g.Expect(gate.Spec.Configuration.Name).NotTo(BeEmpty(), "ocpsim renders the gate pool")
		body := scrapeOnce(g)
		g.Expect(body).To(ContainSubstring(`upshift_mcp_tracker_nodes{pool="worker",state="pending"} 1`))
		g.Expect(body).To(ContainSubstring(`upshift_mcp_tracker_nodes{pool="worker",state="done"} 5`))
		g.Expect(body).NotTo(ContainSubstring(`pool="worker-gate"`))
	}, time.Minute).Should(Succeed())
}
