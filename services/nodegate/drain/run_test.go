package drain

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

// DecideRun decides only the drains of released nodes, reads pods only for
// those the MCO drains now, writes each record, and sums what it found.
func TestDecideRun(t *testing.T) {
	run := &nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Name: "run", Namespace: "gate"}}
	run.Spec.DrainRemediation = &nodegatev1alpha1.DrainRemediation{}
	draining := drainingNode("drain-rendered-x", "uncordon-rendered-old")
	idle := drainingNode("uncordon-rendered-x", "uncordon-rendered-x")
	idle.Name = "w2"
	pending := drainingNode("drain-rendered-x", "uncordon-rendered-old")
	pending.Name = "w3"
	records := []nodegatev1alpha1.NodeRecord{
		{Name: "w1", Phase: nodegatev1alpha1.NodeReleased, Drain: &nodegatev1alpha1.DrainRecord{Request: "drain-rendered-x", StartTime: metav1.NewTime(t0)}},
		{Name: "w2", Phase: nodegatev1alpha1.NodeReleased},
		// Draining, but not released by the run: not the run's drain.
		{Name: "w3", Phase: nodegatev1alpha1.NodePending},
	}
	nodes := map[string]*corev1.Node{"w1": draining, "w2": idle, "w3": pending}
	for _, r := range records {
		n := nodes[r.Name]
		if got, want := NeedsPods(&r, n), r.Name == "w1"; got != want {
			t.Fatalf("NeedsPods(%s) = %v, want %v", r.Name, got, want)
		}
	}
	in := RunInput{Now: t0.Add(2 * time.Hour), Run: run, Nodes: nodes, Timeout: time.Hour,
		Pods: map[string][]corev1.Pod{"w1": {pod("db", "db-0", map[string]string{"app": "db"})}},
		PDBs: map[string][]policyv1.PodDisruptionBudget{"w1": {pdb("db", "db-pdb", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}})}}}
	out := DecideRun(in, records)
	if len(out.Actions) != 1 || out.Actions[0].Node != "w1" || out.Actions[0].Name != "db-0" || out.Actions[0].Step != nodegatev1alpha1.DrainStepDelete {
		t.Fatalf("actions %+v, want the first step on db-0 of w1", out.Actions)
	}
	if out.Blocked != 1 || out.Stuck != 0 || out.RequeueAfter <= 0 {
		t.Fatalf("blocked %d stuck %d requeue %v", out.Blocked, out.Stuck, out.RequeueAfter)
	}
	if records[0].Drain == nil || len(records[0].Drain.BlockingPods) != 1 || records[1].Drain != nil || records[2].Drain != nil {
		t.Fatalf("records %+v", records)
	}
}
