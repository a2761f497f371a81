package cli

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/render"
	"github.com/upshift-io/upshift/services/updatestatus/snapshot"
)

// TestShownRendersAsAll is the property readShown rests on: for any set of
// node insights, the report rendered from the rows it reads in full plus the
// others as their labels tell them is the report rendered from every insight
// in full.
func TestShownRendersAsAll(t *testing.T) {
	loaded, err := snapshot.Load(filepath.Join("testdata", "many-nodes-cv.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	result, err := assess.Assess(loaded.Snapshot, nil)
	if err != nil {
		t.Fatal(err)
	}
	status := result.Status
	if len(status.WorkerPools) != 1 {
		t.Fatalf("the fixture has %d worker pools, want 1", len(status.WorkerPools))
	}
	// A second worker pool: the report has a node table for each.
	infra := *status.WorkerPools[0].DeepCopy()
	infra.Name, infra.Pool.Name = "infra", "infra"
	status.WorkerPools = append(status.WorkerPools, infra)
	// The control plane, two worker pools, no pool, and a pool name no label
	// value can hold.
	pools := []string{"master", status.WorkerPools[0].Name, "infra", "", strings.Repeat("p", 70)}
	someSummarized := 0
	for seed := uint64(0); seed < 400; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		nodes := randomNodes(rng, pools, rng.IntN(150))
		for _, details := range []render.Details{render.DetailsNone, render.DetailsNodes, render.DetailsAll} {
			want := renderNodes(t, status, nodes, details)

			byName := map[string]updatev1alpha1.NodeStatusInsight{}
			items := make([]metav1.PartialObjectMetadata, len(nodes))
			for i, n := range nodes {
				byName[n.Name] = n
				items[i] = metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: updatev1alpha1.NodeInsightLabels(&n)}}
			}
			summaries, full := splitShown(status, items, details)
			if len(summaries)+len(full) != len(nodes) {
				t.Fatalf("seed %d: %d summarized + %d in full, want %d nodes", seed, len(summaries), len(full), len(nodes))
			}
			read := append([]updatev1alpha1.NodeStatusInsight(nil), summaries...)
			for _, m := range full {
				read = append(read, byName[m.Name])
			}
			if got := renderNodes(t, status, read, details); got != want {
				t.Fatalf("seed %d, --details=%s: the report from %d insights read in full and %d summarized differs from the report from all:\n--- all\n%s\n--- shown\n%s",
					seed, details, len(full), len(summaries), want, got)
			}
			if details == render.DetailsNone && len(summaries) > 0 {
				someSummarized++
			}
		}
	}
	if someSummarized < 250 {
		t.Fatalf("only %d of 400 seeds left nodes out of the report: the property was barely exercised", someSummarized)
	}
}

func renderNodes(t *testing.T, status updatev1alpha1.UpgradeStatusStatus, nodes []updatev1alpha1.NodeStatusInsight, details render.Details) string {
	t.Helper()
	nodes = append([]updatev1alpha1.NodeStatusInsight(nil), nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	var out bytes.Buffer
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	if err := render.Render(&out, render.Input{Status: status, Nodes: nodes}, render.Options{Details: details, Now: now}); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// randomNodes makes n node insights of the given pools in every combination
// of phase, availability and degradation the controller writes, and some it
// does not (conditions missing).
func randomNodes(rng *rand.Rand, pools []string, n int) []updatev1alpha1.NodeStatusInsight {
	phases := []assess.Phase{assess.PhaseDraining, assess.PhaseUpdating, assess.PhaseRebooting, assess.PhasePaused, assess.PhasePending, assess.PhaseUpdated}
	status := func() metav1.ConditionStatus {
		return []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}[rng.IntN(3)]
	}
	out := make([]updatev1alpha1.NodeStatusInsight, n)
	for i := range out {
		// Few phases and pools, so that rows tie on rank and sort by name.
		name := fmt.Sprintf("node-%03d", rng.IntN(1000))
		for taken(out[:i], name) {
			name += "x"
		}
		pool := pools[rng.IntN(len(pools))]
		in := updatev1alpha1.NodeStatusInsight{
			Name:         name,
			PoolResource: updatev1alpha1.PoolResourceRef{ResourceRef: updatev1alpha1.ResourceRef{Name: pool}},
			ScopeType:    updatev1alpha1.ScopeTypeWorkerPool,
			Version:      []string{"4.18.1", "4.17.9", ""}[rng.IntN(3)],
			Message:      []string{"", "Node " + name + " is draining", "Disk pressure"}[rng.IntN(3)],
		}
		if pool == "master" {
			in.ScopeType = updatev1alpha1.ScopeTypeControlPlane
		}
		if r := rng.IntN(3); r > 0 {
			in.EstimatedToComplete = &metav1.Duration{Duration: time.Duration(r-1) * 7 * time.Minute}
		}
		if rng.IntN(20) > 0 {
			p := phases[rng.IntN(len(phases))]
			s := metav1.ConditionFalse
			if p.Updating() {
				s = metav1.ConditionTrue
			}
			in.Conditions = append(in.Conditions, metav1.Condition{Type: updatev1alpha1.ConditionUpdating, Status: s, Reason: string(p)})
		}
		if rng.IntN(10) > 0 {
			in.Conditions = append(in.Conditions, metav1.Condition{Type: updatev1alpha1.ConditionAvailable, Status: status(), Reason: updatev1alpha1.ReasonNodeNotReady})
		}
		if rng.IntN(10) > 0 {
			in.Conditions = append(in.Conditions, metav1.Condition{Type: updatev1alpha1.ConditionDegraded, Status: status(), Reason: updatev1alpha1.ReasonNodeMCDDegraded})
		}
		out[i] = in
	}
	return out
}

func taken(nodes []updatev1alpha1.NodeStatusInsight, name string) bool {
	for _, n := range nodes {
		if n.Name == name {
			return true
		}
	}
	return false
}
