package render

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	u "github.com/upshift-io/upshift/api/update/v1alpha1"
)

var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }

func cond(t string, s metav1.ConditionStatus, reason, msg string, ago time.Duration) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: *at(-ago)}
}

func updatingControlPlane(started time.Duration, completion int32, est time.Duration) *u.ControlPlane {
	cv := &u.ClusterVersionStatusInsight{
		Assessment: u.ControlPlaneAssessmentProgressing,
		Versions:   u.ControlPlaneUpdateVersions{Previous: &u.Version{Version: "4.14.0"}, Target: u.Version{Version: "4.14.1"}},
		Completion: completion,
		StartedAt:  *at(-started),
	}
	if est != 0 {
		cv.EstimatedCompletedAt = at(est)
	}
	return &u.ControlPlane{
		Conditions:     []metav1.Condition{cond("Updating", "True", u.ReasonClusterVersionProgressing, "", started)},
		ClusterVersion: cv,
	}
}

func operator(name string, updating, healthy metav1.Condition) u.ClusterOperatorStatusInsight {
	return u.ClusterOperatorStatusInsight{Name: name, Conditions: []metav1.Condition{updating, healthy}}
}

func updatedCOs(n int) []u.ClusterOperatorStatusInsight {
	var out []u.ClusterOperatorStatusInsight
	for i := 0; i < n; i++ {
		out = append(out, operator(fmt.Sprintf("co-%02d", i), cond("Updating", "False", u.ReasonUpdated, "", time.Hour), cond("Healthy", "True", u.ReasonAsExpected, "", time.Hour)))
	}
	return out
}

func nodeInsight(name, pool, phase, version string, est *time.Duration, extra ...metav1.Condition) u.NodeStatusInsight {
	scope := u.ScopeTypeWorkerPool
	if pool == "master" {
		scope = u.ScopeTypeControlPlane
	}
	status := metav1.ConditionFalse
	if phase == "Draining" || phase == "Updating" || phase == "Rebooting" {
		status = metav1.ConditionTrue
	}
	n := u.NodeStatusInsight{
		Name: name, ScopeType: scope, Version: version,
		PoolResource: u.PoolResourceRef{ResourceRef: u.ResourceRef{Name: pool}},
		Conditions:   append([]metav1.Condition{cond("Updating", status, phase, "", time.Minute)}, extra...),
	}
	if est != nil {
		n.EstimatedToComplete = &metav1.Duration{Duration: *est}
	}
	return n
}

func dur(d time.Duration) *time.Duration { return &d }

func workerPool(name string, a u.PoolAssessment, completion int32, total, avail, progressing, outdated, draining, excluded, degraded int32) u.Pool {
	return u.Pool{Name: name, Pool: u.MachineConfigPoolStatusInsight{Name: name, Assessment: a, Completion: completion, Summaries: []u.NodeSummary{
		{Type: u.NodesTotal, Count: total}, {Type: u.NodesAvailable, Count: avail}, {Type: u.NodesProgressing, Count: progressing},
		{Type: u.NodesOutdated, Count: outdated}, {Type: u.NodesDraining, Count: draining}, {Type: u.NodesExcluded, Count: excluded},
		{Type: u.NodesDegraded, Count: degraded},
	}}}
}

// multiplePools is the cluster of oc's documented example.
func multiplePools() Input {
	cp := updatingControlPlane(14*time.Minute+4*time.Second, 97, 5*time.Minute)
	cp.ClusterOperators = append(updatedCOs(32), operator("machine-config",
		cond("Updating", "True", u.ReasonProgressing, "Working towards 4.14.1", 64*time.Minute+41*time.Second),
		cond("Healthy", "False", u.ReasonUnavailable, "", time.Minute)))
	cp.ClusterOperators[len(cp.ClusterOperators)-1].ProgressingReason = ""
	return Input{
		Status: u.UpgradeStatusStatus{
			ControlPlane: cp,
			// input order differs from display order on purpose
			WorkerPools: []u.Pool{
				workerPool("infra", u.PoolProgressing, 0, 2, 1, 1, 2, 1, 0, 0),
				workerPool("worker", u.PoolProgressing, 0, 2, 1, 1, 2, 1, 0, 0),
			},
		},
		Nodes: []u.NodeStatusInsight{
			nodeInsight("ip-10-0-92-180.us-east-2.compute.internal", "master", "Pending", "4.14.0", nil),
			nodeInsight("ip-10-0-30-217.us-east-2.compute.internal", "master", "Pending", "4.14.0", nil),
			nodeInsight("ip-10-0-53-40.us-east-2.compute.internal", "master", "Draining", "4.14.0", dur(10*time.Minute)),
			nodeInsight("ip-10-0-99-40.us-east-2.compute.internal", "worker", "Pending", "4.14.0", nil),
			nodeInsight("ip-10-0-4-159.us-east-2.compute.internal", "worker", "Draining", "4.14.0", dur(10*time.Minute)),
			nodeInsight("ip-10-0-20-162.us-east-2.compute.internal", "infra", "Pending", "4.14.0", nil),
			nodeInsight("ip-10-0-4-159-infra.us-east-2.compute.internal", "infra", "Draining", "4.14.0", dur(10*time.Minute)),
		},
	}
}

func notUpdating() Input {
	cp := updatingControlPlane(3*time.Hour, 100, 0)
	cp.Conditions[0] = cond("Updating", "False", u.ReasonClusterVersionNotProgressing, "", time.Hour)
	cp.ClusterVersion.Assessment = u.ControlPlaneAssessmentCompleted
	cp.ClusterVersion.CompletedAt = at(-time.Hour)
	return Input{Status: u.UpgradeStatusStatus{
		ControlPlane: cp,
		WorkerPools:  []u.Pool{workerPool("worker", u.PoolCompleted, 100, 3, 3, 0, 0, 0, 0, 0), workerPool("empty", u.PoolCompleted, 0, 0, 0, 0, 0, 0, 0, 0)},
	}}
}

// workersAfterControlPlane: the control plane is done, a paused pool and an
// empty pool, a degraded node and health insights with multi-line descriptions.
func workersAfterControlPlane() Input {
	cp := updatingControlPlane(2*time.Hour, 100, 0)
	cp.Conditions[0] = cond("Updating", "False", u.ReasonClusterVersionNotProgressing, "", 30*time.Minute)
	cp.ClusterVersion.Assessment = u.ControlPlaneAssessmentCompleted
	cp.ClusterVersion.CompletedAt = at(-30 * time.Minute)
	cp.ClusterOperators = updatedCOs(3)
	degraded := cond("Degraded", "True", u.ReasonNodeMCDDegraded, "", time.Minute)
	deg := nodeInsight("build0-worker-b-9lztv", "worker", "Updating", "4.14.0", nil, degraded)
	deg.Message = "failed to drain node: build0-worker-b-9lztv after 1 hour\nPlease see machine-config-controller logs"
	return Input{
		Status: u.UpgradeStatusStatus{
			ControlPlane: cp,
			WorkerPools: []u.Pool{
				workerPool("worker", u.PoolDegraded, 50, 2, 2, 0, 1, 0, 0, 1),
				workerPool("paused", u.PoolExcluded, 0, 1, 1, 0, 1, 0, 1, 0),
				workerPool("empty", u.PoolCompleted, 0, 0, 0, 0, 0, 0, 0, 0),
			},
			Health: []u.HealthInsight{
				{UID: "mcp-paused-paused", Scope: u.InsightScope{Type: u.ScopeTypeWorkerPool, Resources: []u.ResourceRef{{Group: "machineconfiguration.openshift.io", Resource: "machineconfigpools", Name: "paused"}}},
					Impact:      u.InsightImpact{Level: u.WarningImpactLevel, Type: u.UpdateStalledImpactType, Summary: "Outdated nodes in a paused pool 'paused' will not be updated", Description: "The pool is paused."},
					Remediation: u.InsightRemediation{Reference: "https://example.com/paused"}},
				{UID: "node-build0-worker-b-9lztv-degraded", Scope: u.InsightScope{Type: u.ScopeTypeWorkerPool, Resources: []u.ResourceRef{{Resource: "nodes", Name: "build0-worker-b-9lztv"}}},
					Impact:      u.InsightImpact{Level: u.ErrorImpactLevel, Type: u.UpdateStalledImpactType, Summary: "Node build0-worker-b-9lztv is degraded", Description: deg.Message},
					Remediation: u.InsightRemediation{Reference: "https://example.com/mco"}},
				{UID: "co-etcd-degraded", StartedAt: at(-(58*time.Minute + 18*time.Second)), Scope: u.InsightScope{Type: u.ScopeTypeControlPlane, Resources: []u.ResourceRef{
					{Group: "config.openshift.io", Resource: "clusteroperators", Name: "etcd"}, {Resource: "nodes", Name: "m-1"}, {Resource: "nodes", Name: "m-0"}}},
					Impact:      u.InsightImpact{Level: u.ErrorImpactLevel, Type: u.APIAvailabilityImpactType, Summary: "Cluster Operator etcd is degraded (Members)", Description: "line one\nline two"},
					Remediation: u.InsightRemediation{Reference: "https://example.com/etcd"}},
				{UID: "incomplete", Impact: u.InsightImpact{Level: u.CriticalImpactLevel, Summary: "dropped: no description"}, Remediation: u.InsightRemediation{Reference: "x"}},
			},
		},
		Nodes: []u.NodeStatusInsight{
			nodeInsight("worker-a", "worker", "Completed", "4.14.1", dur(0)),
			deg,
			nodeInsight("paused-0", "paused", "Paused", "4.14.0", dur(0)),
			nodeInsight("master-0", "master", "Completed", "4.14.1", dur(0)),
		},
	}
}

// manyNodes: 14 nodes in one pool, one unavailable beyond the tenth row;
// a stalled control plane with updating operators.
func manyNodes() Input {
	cp := updatingControlPlane(2*time.Hour, 50, -70*time.Minute)
	cp.ClusterVersion.Assessment = u.ControlPlaneAssessmentStalled
	cp.ClusterOperators = append(updatedCOs(1),
		operator("kube-apiserver", cond("Updating", "True", u.ReasonProgressing, "3 nodes are at revision 7\nwaiting for 1 more", 5*time.Minute), cond("Healthy", "False", u.ReasonDegraded, "", time.Hour)),
	)
	cp.ClusterOperators[1].ProgressingReason = "NodeInstaller_InstallerPodFailed"
	in := Input{Status: u.UpgradeStatusStatus{ControlPlane: cp, WorkerPools: []u.Pool{workerPool("worker", u.PoolProgressing, 29, 14, 13, 2, 10, 1, 0, 0)}}}
	for i := 0; i < 14; i++ {
		name := fmt.Sprintf("worker-%02d", i)
		switch {
		case i < 4:
			in.Nodes = append(in.Nodes, nodeInsight(name, "worker", "Completed", "4.14.1", dur(0)))
		case i == 4:
			in.Nodes = append(in.Nodes, nodeInsight(name, "worker", "Draining", "4.14.0", dur(10*time.Minute)))
		case i == 5:
			in.Nodes = append(in.Nodes, nodeInsight(name, "worker", "Rebooting", "4.14.0", dur(5*time.Minute)))
		case i == 13:
			n := nodeInsight(name, "worker", "Pending", "", nil, cond("Available", "False", u.ReasonNodeNotReady, "Not ready", time.Hour))
			n.Message = "Not ready"
			in.Nodes = append(in.Nodes, n)
		default:
			in.Nodes = append(in.Nodes, nodeInsight(name, "worker", "Pending", "4.14.0", nil))
		}
	}
	return in
}

// TestMultiplePoolsAsOc renders, from insights written here by hand, oc's
// example of a cluster whose workers update in several pools, and requires
// oc's own output for it (a copy of oc's example, see the README next to it).
// The whole-report comparison with every oc example is the CLI's
// TestMockGolden; this one keeps the renderer honest on its own.
func TestMultiplePoolsAsOc(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "cli", "testdata", "oc", "4.14.1-workers-started-updating-multiple-pools.output"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Render(&buf, multiplePools(), Options{Details: DetailsNone, Now: now}); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != string(want) {
		t.Errorf("output differs from oc's\n--- got ---\n%s\n--- want (oc) ---\n%s", got, want)
	}
}

// TestNotUpdating: a cluster that is not updating gets oc's one line, and
// nothing else, whatever the details asked for.
func TestNotUpdating(t *testing.T) {
	for _, details := range []Details{DetailsNone, DetailsAll} {
		var buf bytes.Buffer
		if err := Render(&buf, notUpdating(), Options{Details: details, Now: now}); err != nil {
			t.Fatal(err)
		}
		if got, want := buf.String(), "The cluster is not updating.\n"; got != want {
			t.Errorf("--details=%s: %q, want %q", details, got, want)
		}
	}
}

func TestShortDuration(t *testing.T) {
	for in, want := range map[time.Duration]string{
		0: "now", 14 * time.Minute: "14m", time.Hour: "1h", time.Hour + 59*time.Minute: "1h59m",
		time.Minute + 29400*time.Millisecond: "1m29s", 2*time.Hour + 5*time.Second: "2h0m5s", 59 * time.Second: "59s",
	} {
		if got := ShortDuration(in); got != want {
			t.Errorf("ShortDuration(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestParseDetails(t *testing.T) {
	if _, err := ParseDetails("bogus"); err == nil {
		t.Error("bogus accepted")
	}
	if d, err := ParseDetails("nodes"); err != nil || d != DetailsNodes {
		t.Errorf("nodes: %v %v", d, err)
	}
}
