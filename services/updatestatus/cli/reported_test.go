package cli

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/services/updatestatus/render"
)

// TestReportedRendersAsObjects is the property a report from the
// UpgradeStatus alone rests on: for any set of node insights, the report
// rendered from the node tables published with the status (render.Reported,
// stored as JSON and read back, as the controller publishes them) is the
// report rendered from the insights themselves, for every --details that
// does not list every node; and the tables are left out exactly when the
// report lists no node or more nodes than the API's bound.
func TestReportedRendersAsObjects(t *testing.T) {
	_, result := loadAssessed(t, "many-nodes")
	status := result.Status
	infra := *status.WorkerPools[0].DeepCopy()
	infra.Name, infra.Pool.Name = "infra", "infra"
	status.WorkerPools = append(status.WorkerPools, infra)
	// The control plane, two worker pools, no pool, and a pool the status
	// does not list.
	pools := []string{"master", status.WorkerPools[0].Name, "infra", "", strings.Repeat("p", 70)}
	var published, over, omitting int
	for seed := uint64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		nodes := randomNodes(rng, pools, rng.IntN(700))
		want := renderNodes(t, status, nodes, render.DetailsNone)
		listed := 0
		for _, line := range strings.Split(want, "\n") {
			if strings.HasPrefix(line, "node-") {
				listed++
			}
		}

		withTables := *status.DeepCopy()
		withTables.ReportedNodes = render.Reported(withTables, nodes)
		if withTables.ReportedNodes == nil {
			if listed > 0 && listed <= updatev1alpha1.MaxReportedNodes {
				t.Fatalf("seed %d: no node tables for a report that lists %d nodes", seed, listed)
			}
			over++
			continue
		}
		if listed == 0 || listed > updatev1alpha1.MaxReportedNodes {
			t.Fatalf("seed %d: node tables for a report that lists %d nodes", seed, listed)
		}
		published++
		if strings.Contains(want, "Omitted additional") {
			omitting++
		}
		stored := storedStatus(t, withTables)
		for _, details := range []render.Details{render.DetailsNone, render.DetailsHealth, render.DetailsOperators} {
			if details != render.DetailsNone {
				want = renderNodes(t, status, nodes, details)
			}
			var got bytes.Buffer
			now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
			if err := render.Render(&got, render.Input{Status: stored, FromReported: true}, render.Options{Details: details, Now: now}); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if got.String() != want {
				t.Fatalf("seed %d, --details=%s: the report from the published tables differs from the report from the objects:\n--- objects\n%s\n--- tables\n%s",
					seed, details, want, got.String())
			}
		}
	}
	// Both sides of the bound, and the omitted counts, must be exercised.
	if published < 100 || over < 30 || omitting < 80 {
		t.Fatalf("of 300 seeds, %d published tables (%d of them omitting nodes) and %d were over the bound: the property was barely exercised",
			published, omitting, over)
	}
}

// storedStatus is s as the API server stores and returns it: through JSON.
func storedStatus(t *testing.T, s updatev1alpha1.UpgradeStatusStatus) updatev1alpha1.UpgradeStatusStatus {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out updatev1alpha1.UpgradeStatusStatus
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
