package render

import (
	"fmt"
	"io"
	"testing"
	"time"

	u "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// largeCluster is a 5,000-worker cluster in the middle of its update: three
// masters, 33 operators, 4,997 workers in two pools with every phase, 1 % of
// them unavailable or degraded, and the API's maximum of health insights.
func largeCluster(workers int) Input {
	cp := updatingControlPlane(90*time.Minute, 100, 0)
	cp.Conditions[0] = cond("Updating", "False", u.ReasonClusterVersionNotProgressing, "", 30*time.Minute)
	cp.ClusterVersion.Assessment = u.ControlPlaneAssessmentCompleted
	cp.ClusterVersion.CompletedAt = at(-30 * time.Minute)
	cp.ClusterOperators = updatedCOs(33)
	in := Input{Status: u.UpgradeStatusStatus{ControlPlane: cp}}
	for i := 0; i < 3; i++ {
		in.Nodes = append(in.Nodes, nodeInsight(fmt.Sprintf("master-%d", i), "master", "Completed", "4.14.1", dur(0)))
	}
	counts := map[string][7]int32{}
	for i := 0; i < workers; i++ {
		pool := "worker"
		if i%5 == 0 {
			pool = "infra"
		}
		name := fmt.Sprintf("ip-10-0-%d-%d.us-east-2.compute.internal", i/250, i%250)
		var n u.NodeStatusInsight
		switch i % 10 {
		case 0, 1, 2, 3:
			n = nodeInsight(name, pool, "Completed", "4.14.1", dur(0))
		case 4:
			n = nodeInsight(name, pool, "Draining", "4.14.0", dur(10*time.Minute))
		case 5:
			n = nodeInsight(name, pool, "Rebooting", "4.14.0", dur(5*time.Minute))
		default:
			n = nodeInsight(name, pool, "Pending", "4.14.0", nil)
		}
		switch {
		case i%100 == 7:
			n.Conditions = append(n.Conditions, cond("Available", "False", u.ReasonNodeNotReady, "Not ready", time.Hour))
			n.Message = "Not ready"
		case i%100 == 8:
			n.Conditions = append(n.Conditions, cond("Degraded", "True", u.ReasonNodeMCDDegraded, "", time.Hour))
			n.Message = "failed to drain node: " + name + " after 1 hour\nPlease see machine-config-controller logs"
		}
		in.Nodes = append(in.Nodes, n)
		c := counts[pool]
		c[0]++
		counts[pool] = c
	}
	for _, pool := range []string{"worker", "infra"} {
		total := counts[pool][0]
		in.Status.WorkerPools = append(in.Status.WorkerPools, workerPool(pool, u.PoolDegraded, 40, total, total*9/10, total/5, total*6/10, total/10, 0, total/100))
	}
	for i := 0; i < u.MaxHealthInsights; i++ {
		in.Status.Health = append(in.Status.Health, u.HealthInsight{
			UID: fmt.Sprintf("node-%d-degraded", i), StartedAt: at(-time.Duration(i%7) * time.Minute),
			Scope:       u.InsightScope{Type: u.ScopeTypeWorkerPool, Resources: []u.ResourceRef{{Resource: "nodes", Name: fmt.Sprintf("node-%d", i)}}},
			Impact:      u.InsightImpact{Level: u.ErrorImpactLevel, Type: u.UpdateStalledImpactType, Summary: fmt.Sprintf("Node node-%d is degraded", i), Description: "failed to drain"},
			Remediation: u.InsightRemediation{Reference: "https://example.com"},
		})
	}
	return in
}

func BenchmarkRender5000Nodes(b *testing.B) {
	in := largeCluster(5000)
	for _, details := range []Details{DetailsNone, DetailsAll} {
		b.Run(string(details), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Render(io.Discard, in, Options{Details: details, Now: now}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The renderer's share of `kubectl upshift status` on a 5,000-node cluster
// must stay far below a second (it measures tens of milliseconds).
func TestRender5000NodesIsFast(t *testing.T) {
	in := largeCluster(5000)
	for _, details := range []Details{DetailsNone, DetailsAll} {
		start := time.Now()
		if err := Render(io.Discard, in, Options{Details: details, Now: now}); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 500*time.Millisecond {
			t.Errorf("--details=%s: rendering 5,000 nodes took %v", details, took)
		}
	}
}

// Reported runs in every recomputation of the controller, which publishes
// its tables; rendering from them is what a report without
// --details=nodes does.
func BenchmarkReported5000Nodes(b *testing.B) {
	in := largeCluster(5000)
	b.Run("compute", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if Reported(in.Status, in.Nodes) == nil {
				b.Fatal("no tables")
			}
		}
	})
	b.Run("render", func(b *testing.B) {
		published := Input{Status: in.Status, FromReported: true}
		published.Status.ReportedNodes = Reported(in.Status, in.Nodes)
		b.ReportAllocs()
		for b.Loop() {
			if err := Render(io.Discard, published, Options{Details: DetailsNone, Now: now}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
