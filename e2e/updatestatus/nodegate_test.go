package updatestatus

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/gating"
)

// gatedByNodeGate is the spec of the controller beside node-gate. It runs
// in the suite's ordered container, before the permission check, which it
// needs: the runs' watch is the only use of the chart's mutexrunconfigs rule.
func gatedByNodeGate(ctx context.Context) {
	// Started without node-gate, the controller published a status
	// without any run in it.
	Eventually(func(g Gomega) { g.Expect(getStatus(ctx, g).Status.WorkerPools).NotTo(BeEmpty()) }).
		WithTimeout(30 * time.Second).Should(Succeed())

	Expect(framework.InstallCRD(ctx, env, gating.RunsCRD)).To(Succeed())
	run := &nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "workers"},
		Spec: nodegatev1alpha1.MutexRunConfigSpec{MutexTargets: []nodegatev1alpha1.ObjectReference{{Name: "all-workers"}}}}
	// The CRD is served a moment after it is created.
	Eventually(func() error { return env.Client.Create(ctx, run) }).WithTimeout(30 * time.Second).Should(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, run))).To(Succeed()) })

	// What a run that paused the worker pool records, as node-gate
	// writes it: the pool's original `paused` first, then the pause.
	nodes := &corev1.NodeList{}
	Expect(env.Client.List(ctx, nodes, client.HasLabels{"node-role.kubernetes.io/worker"})).To(Succeed())
	run.Status = nodegatev1alpha1.MutexRunConfigStatus{
		Phase:   nodegatev1alpha1.RunProgressing,
		Pools:   []nodegatev1alpha1.PoolRecord{{Name: "worker", OriginalPaused: ptr.To(false)}},
		Summary: nodegatev1alpha1.Summary{Total: int32(len(nodes.Items)), Pending: int32(len(nodes.Items))},
	}
	for _, n := range nodes.Items {
		run.Status.Nodes = append(run.Status.Nodes, nodegatev1alpha1.NodeRecord{Name: n.Name, Pool: "worker", Phase: nodegatev1alpha1.NodePending})
	}
	Expect(env.Client.Status().Update(ctx, run)).To(Succeed())
	pool := &mcfgv1.MachineConfigPool{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "worker"}, pool)).To(Succeed())
	patch := client.MergeFrom(pool.DeepCopy())
	pool.Spec.Paused = true
	Expect(env.Client.Patch(ctx, pool, patch)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "worker"}, pool)).To(Succeed())
		patch := client.MergeFrom(pool.DeepCopy())
		pool.Spec.Paused = false
		Expect(env.Client.Patch(ctx, pool, patch)).To(Succeed())
	})

	want := fmt.Sprintf("Pools 'worker' are gated by node-gate run %s/workers: 0 of %d nodes done", namespace, len(nodes.Items))
	Eventually(func(g Gomega) {
		us := getStatus(ctx, g)
		var gating *updatev1alpha1.HealthInsight
		for i := range us.Status.Health {
			h := &us.Status.Health[i]
			g.Expect(h.Impact.Summary).NotTo(ContainSubstring("paused pool"), "a pool a run paused is not an administrator's")
			if h.Impact.Summary == want {
				gating = h
			}
		}
		g.Expect(gating).NotTo(BeNil(), "health insights: %+v", us.Status.Health)
		g.Expect(gating.Impact.Level).To(Equal(updatev1alpha1.InfoImpactLevel))
	}).WithTimeout(60 * time.Second).Should(Succeed())

	// Once the run gives the pool back (its original recorded value
	// cleared), the gating is gone.
	run.Status.Phase, run.Status.Pools = nodegatev1alpha1.RunCompleted, []nodegatev1alpha1.PoolRecord{{Name: "worker"}}
	Expect(env.Client.Status().Update(ctx, run)).To(Succeed())
	Eventually(func(g Gomega) {
		for _, h := range getStatus(ctx, g).Status.Health {
			g.Expect(h.Impact.Summary).NotTo(Equal(want))
		}
	}).WithTimeout(60 * time.Second).Should(Succeed())
}
