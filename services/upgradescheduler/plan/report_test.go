package plan

import (
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// The preflight report from the moment the upgrade is scheduled: the
// findings, which budget holds which node's drain, and the worker phase's
// expected length from the pools and their last update; kept as it was once
// the upgrade commenced.
func TestPreflightReport(t *testing.T) {
	w := newWorld(t)
	w.uc.Spec.CapacityReservation = false
	w.snap.Pools[1].Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""}}
	w.snap.Pools = append(w.snap.Pools, pool("infra", 2, 2, "rendered-infra-1"))
	w.snap.Pools[2].Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/infra": ""}}
	two := intstr.FromInt32(2)
	w.snap.Pools[2].Spec.MaxUnavailable = &two
	for i := range w.snap.Nodes {
		w.snap.Nodes[i].Labels = map[string]string{"node-role.kubernetes.io/worker": ""}
	}
	// worker-1 runs the guarded pod; worker-2 is an infra node too (infra
	// wins: a custom pool's selector takes the node from worker).
	w.snap.Nodes[5].Labels["node-role.kubernetes.io/infra"] = ""
	w.snap.PDBs = append(w.snap.PDBs, pdb("app", "db", 0, 1), pdb("app", "web", 1, 2))
	w.pdbNodes = map[string][]string{"app/db": {"worker-1"}}
	w.settle()

	r := w.uc.Status.Report
	if r == nil {
		t.Fatal("no report while Pending")
	}
	if r.Findings != "advisory: PodDisruptionBudgets" {
		t.Errorf("findings %q", r.Findings)
	}
	if len(r.DrainBlockers) != 1 || r.DrainBlockers[0].PodDisruptionBudget != "app/db" || len(r.DrainBlockers[0].Nodes) != 1 || r.DrainBlockers[0].Nodes[0] != "worker-1" {
		t.Errorf("drain blockers %+v", r.DrainBlockers)
	}
	// No timed update yet: MUO's expected drain time per round. worker: 3
	// rounds of 8m, one held for PDBForceDrainTimeout 60 + 8; infra: 1
	// round of 8m.
	want := []upgradev1alpha1.PoolEstimate{
		{Name: "worker", Nodes: 3, MaxUnavailable: 1, Rounds: 3, RoundDuration: &metav1.Duration{Duration: 8 * time.Minute}, Basis: "Default", BlockedRounds: 1},
		{Name: "infra", Nodes: 2, MaxUnavailable: 2, Rounds: 1, RoundDuration: &metav1.Duration{Duration: 8 * time.Minute}, Basis: "Default"},
	}
	if !equalEstimates(r.WorkerPools, want) || r.ExpectedWorkerDuration.Duration != 24*time.Minute+68*time.Minute {
		t.Errorf("estimates %+v, expected %v", r.WorkerPools, r.ExpectedWorkerDuration)
	}

	// The mcp-tracker timed the pools' last update: 30 minutes for worker.
	w.uc.Status.Pools = []upgradev1alpha1.PoolUpdate{{Name: "worker", LastUpdateDurationSeconds: 1800}}
	w.settle()
	r = w.uc.Status.Report
	if r.WorkerPools[0].Basis != "LastUpdate" || r.WorkerPools[0].RoundDuration.Duration != 10*time.Minute ||
		r.ExpectedWorkerDuration.Duration != 30*time.Minute+68*time.Minute {
		t.Errorf("from the last update: %+v, expected %v", r.WorkerPools[0], r.ExpectedWorkerDuration)
	}

	// The budget frees its pod: refreshed.
	w.snap.PDBs[len(w.snap.PDBs)-2] = pdb("app", "db", 1, 1)
	w.settle()
	r = w.uc.Status.Report
	if r.Findings != "none" || len(r.DrainBlockers) != 0 || r.ExpectedWorkerDuration.Duration != 30*time.Minute {
		t.Errorf("after the budget allows a disruption: %+v", r)
	}

	// Commenced: the report stays as it last was.
	w.now = t0.Add(time.Hour)
	w.settle()
	if w.desiredPatches != 1 {
		t.Fatalf("not commenced")
	}
	before := w.uc.Status.Report.DeepCopy()
	w.snap.PDBs[len(w.snap.PDBs)-2] = pdb("app", "db", 0, 1)
	w.settle()
	if r := w.uc.Status.Report; r.Findings != before.Findings || len(r.DrainBlockers) != 0 {
		t.Errorf("changed after commencement: %+v", r)
	}
}

func equalEstimates(a, b []upgradev1alpha1.PoolEstimate) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Name != y.Name || x.Nodes != y.Nodes || x.MaxUnavailable != y.MaxUnavailable || x.Rounds != y.Rounds ||
			x.Basis != y.Basis || x.BlockedRounds != y.BlockedRounds || x.RoundDuration.Duration != y.RoundDuration.Duration {
			return false
		}
	}
	return true
}

// A budget blocks evictions when it allows no disruption and guards pods:
// pods with a controller (expectedPods) or bare pods, which the disruption
// controller counts healthy without being able to scale them.
func TestBlocksEviction(t *testing.T) {
	bare := pdb("app", "bare", 0, 0)
	bare.Status.CurrentHealthy = 1
	deleting := pdb("app", "going", 0, 2)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	for _, c := range []struct {
		pdb  policyv1.PodDisruptionBudget
		want bool
	}{
		{pdb("app", "managed", 0, 2), true},
		{bare, true},
		{pdb("app", "empty", 0, 0), false},
		{pdb("app", "allows", 1, 2), false},
		{deleting, false},
	} {
		if got := blocksEviction(c.pdb); got != c.want {
			t.Errorf("%s: %v, want %v", c.pdb.Name, got, c.want)
		}
	}
}
