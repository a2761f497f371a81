package assess

import (
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// The expected texts in this file are oc's own output strings, as
// `oc adm upgrade status` prints them; they must never be taken from a run of
// this code.

func healthByPrefix(hs []updatev1alpha1.HealthInsight, summaryPrefix string) []updatev1alpha1.HealthInsight {
	var out []updatev1alpha1.HealthInsight
	for _, h := range hs {
		if strings.HasPrefix(h.Impact.Summary, summaryPrefix) {
			out = append(out, h)
		}
	}
	return out
}

func TestPausedPoolInsightIsOcs(t *testing.T) {
	s := baseSnapshot()
	s.MachineConfigPools[1].Spec.Paused = true
	got := healthByPrefix(mustAssess(t, s).Status.Health, "Outdated nodes in a paused pool")
	if len(got) != 1 {
		t.Fatalf("got %d paused-pool insights, want 1", len(got))
	}
	h := got[0]
	const wantDesc = "Pool is paused, which stops all changes to the nodes in the pool, including updates. The nodes will not be updated until the pool is unpaused by the administrator."
	if h.Impact.Summary != "Outdated nodes in a paused pool 'worker' will not be updated" || h.Impact.Description != wantDesc ||
		h.Impact.Level != updatev1alpha1.WarningImpactLevel || h.Impact.Type != updatev1alpha1.UpdateStalledImpactType ||
		h.Scope.Type != updatev1alpha1.ScopeTypeWorkerPool || h.StartedAt != nil ||
		h.Remediation.Reference != "https://docs.openshift.com/container-platform/latest/support/troubleshooting/troubleshooting-operator-issues.html#troubleshooting-disabling-autoreboot-mco_troubleshooting-operator-issues" {
		t.Errorf("paused-pool insight = %+v", h)
	}
	// oc uses the WorkerPool scope for the master pool too.
	s = baseSnapshot()
	s.MachineConfigPools[0].Spec.Paused = true
	got = healthByPrefix(mustAssess(t, s).Status.Health, "Outdated nodes in a paused pool 'master'")
	if len(got) != 1 || got[0].Scope.Type != updatev1alpha1.ScopeTypeWorkerPool {
		t.Errorf("paused master pool: %+v", got)
	}
}

func TestAlertRules(t *testing.T) {
	// The update started 20 minutes before now (baseSnapshot).
	start := now.Add(-20 * time.Minute)
	type alert struct {
		name, severity, state string
		activeAt              time.Time
		annotations           map[string]string
		noNamespace           bool
	}
	const (
		knownDuring = "Alert known to affect updates started firing during the update."
		knownBefore = "Alert known to affect updates has been firing since before the update started."
		during      = "Alert started firing during the update."
	)
	desc := map[string]string{"description": "D"}
	tests := []struct {
		name                              string
		a                                 alert
		kept                              bool
		level                             updatev1alpha1.InsightImpactLevel
		summary, description, ref, object string
	}{
		{"allowlisted, during the update", alert{"PodDisruptionBudgetAtLimit", "warning", "firing", start.Add(time.Second), desc, false}, true,
			"Warning", "Alert is firing: PodDisruptionBudgetAtLimit", knownDuring + " The alert description is: D", "<alert does not have a runbook_url annotation>", "ns/PodDisruptionBudgetAtLimit"},
		{"allowlisted, before the update", alert{"PodDisruptionBudgetLimit", "critical", "firing", start.Add(-time.Hour), desc, false}, true,
			"Critical", "Alert is firing: PodDisruptionBudgetLimit", knownBefore + " The alert description is: D", "<alert does not have a runbook_url annotation>", "ns/PodDisruptionBudgetLimit"},
		{"during the update", alert{"KubeNodeNotReady", "warning", "firing", start.Add(time.Minute), nil, true}, true,
			"Warning", "Alert is firing: KubeNodeNotReady", during + " The alert has no description.", "<alert does not have a runbook_url annotation>", "KubeNodeNotReady"},
		{"description and message", alert{"X", "warning", "firing", start.Add(time.Minute), map[string]string{"description": "D", "message": "M", "summary": "S", "runbook_url": "https://r"}, false}, true,
			"Warning", "Alert is firing: S", during + " The alert description is: D | M", "https://r", "ns/X"},
		{"only message", alert{"X", "warning", "firing", start.Add(time.Minute), map[string]string{"message": "M"}, false}, true,
			"Warning", "Alert is firing: X", during + " The alert description is: M", "<alert does not have a runbook_url annotation>", "ns/X"},
		{"before the update, not allowlisted", alert{"X", "critical", "firing", start.Add(-time.Minute), desc, false}, false, "", "", "", "", ""},
		{"active exactly at the start is not during", alert{"X", "critical", "firing", start, desc, false}, false, "", "", "", "", ""},
		{"a name that only starts with an allowlisted one", alert{"PodDisruptionBudgetAtLimitWithMessage", "warning", "firing", start.Add(-time.Hour), desc, false}, false, "", "", "", "", ""},
		{"pending", alert{"X", "critical", "pending", start.Add(time.Minute), desc, false}, false, "", "", "", "", ""},
		{"only exactly \"pending\" drops", alert{"X", "critical", "Pending", start.Add(time.Minute), desc, false}, true,
			"Critical", "Alert is firing: X", during + " The alert description is: D", "<alert does not have a runbook_url annotation>", "ns/X"},
		{"info", alert{"X", "info", "firing", start.Add(time.Minute), desc, false}, false, "", "", "", "", ""},
		{"unknown severity", alert{"X", "Critical", "firing", start.Add(time.Minute), desc, false}, false, "", "", "", "", ""},
		{"no severity", alert{"X", "", "firing", start.Add(time.Minute), desc, false}, false, "", "", "", "", ""},
		{"no alertname", alert{"", "critical", "firing", start.Add(time.Minute), desc, false}, false, "", "", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			labels := map[string]string{"alertname": tc.a.name, "namespace": "ns"}
			if tc.a.severity != "" {
				labels["severity"] = tc.a.severity
			}
			if tc.a.noNamespace {
				delete(labels, "namespace")
			}
			s := baseSnapshot()
			s.Alerts = []Alert{{Labels: labels, Annotations: tc.a.annotations, State: tc.a.state, ActiveAt: tc.a.activeAt}}
			got := healthByPrefix(mustAssess(t, s).Status.Health, "Alert is firing")
			if !tc.kept {
				if len(got) != 0 {
					t.Fatalf("alert kept: %+v", got[0])
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("got %d alert insights, want 1", len(got))
			}
			h := got[0]
			if h.Impact.Level != tc.level || h.Impact.Type != updatev1alpha1.UnknownImpactType || h.Impact.Summary != tc.summary ||
				h.Impact.Description != tc.description || h.Remediation.Reference != tc.ref || h.Scope.Type != updatev1alpha1.ScopeTypeCluster {
				t.Errorf("insight = %+v %s", h.Impact, h.Remediation.Reference)
			}
			r := h.Scope.Resources
			object := r[0].Name
			if r[0].Namespace != "" {
				object = r[0].Namespace + "/" + object
			}
			if len(r) != 1 || r[0].Group != "config.openshift.io" || r[0].Resource != "alerts" || object != tc.object {
				t.Errorf("resources = %+v, want alerts.config.openshift.io %s", r, tc.object)
			}
			if h.StartedAt == nil || !h.StartedAt.Time.Equal(tc.a.activeAt) {
				t.Errorf("startedAt = %v, want %v", h.StartedAt, tc.a.activeAt)
			}
		})
	}
}

// oc turns every alert entry into its own insight: two entries are never merged.
func TestAlertsAreNeverMerged(t *testing.T) {
	base := func(annotations map[string]string) Alert {
		return Alert{Labels: map[string]string{"alertname": "KubePodCrashLooping", "namespace": "ns", "severity": "warning", "pod": "p"},
			Annotations: annotations, State: "firing", ActiveAt: now.Add(-time.Minute)}
	}
	for name, alerts := range map[string][]Alert{
		"differing only in annotations": {base(map[string]string{"description": "one"}), base(map[string]string{"description": "two"})},
		"exact duplicates":              {base(map[string]string{"description": "one"}), base(map[string]string{"description": "one"}), base(map[string]string{"description": "one"})},
	} {
		t.Run(name, func(t *testing.T) {
			s := baseSnapshot()
			s.Alerts = alerts
			got := healthByPrefix(mustAssess(t, s).Status.Health, "Alert is firing")
			if len(got) != len(alerts) {
				t.Fatalf("got %d insights for %d alert entries", len(got), len(alerts))
			}
			uids := map[string]bool{}
			for _, h := range got {
				if !uidPattern.MatchString(h.UID) || len(h.UID) > 63 {
					t.Errorf("UID %q is not a DNS label", h.UID)
				}
				uids[h.UID] = true
			}
			if len(uids) != len(alerts) {
				t.Errorf("UIDs not distinct: %v", uids)
			}
		})
	}
}

func TestNodeUnavailableInsight(t *testing.T) {
	diskPressure := func(d time.Duration) nodeOpt {
		return func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue,
				Reason: "KubeletHasDiskPressure", Message: `disk "sda" is full`, LastTransitionTime: ago(d)})
		}
	}
	network := func(n *corev1.Node) {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionUnknown,
			Reason: "NoRouteCreated", LastTransitionTime: ago(3 * time.Minute)})
	}
	tests := []struct {
		name                 string
		node                 *corev1.Node
		summary, description string
		since                time.Duration // 0: no insight
	}{
		{"not ready: oc's fixed reason, quoted, never the condition's reason",
			node("worker-0", "worker", "w-old", "w-old", "Done", notReadyFor(6*time.Minute)),
			"Node worker-0 is not ready",
			`Node has a Ready!=True condition with Reason "Not ready" and message "PLEG is not healthy"`, 6 * time.Minute},
		{"all reasons are listed, the non-serious ones too; since is the earliest",
			node("worker-0", "worker", "w-old", "w-old", "Done", diskPressure(10*time.Second), notReadyFor(6*time.Minute), cordoned),
			"Node worker-0 is not ready | Node worker-0 has disk pressure | Node is marked unschedulable",
			`Node has a Ready!=True condition with Reason "Not ready" and message "PLEG is not healthy" | ` +
				`Node has a DiskPressure!=False condition with Reason "Disk pressure" and message "disk \"sda\" is full" | Node is marked unschedulable`,
			6 * time.Minute},
		{"disk pressure serious after a minute, earliest start across reasons",
			node("worker-0", "worker", "w-old", "w-old", "Done", notReadyFor(2*time.Minute), diskPressure(90*time.Second), network),
			"Node worker-0 is not ready | Node worker-0 has disk pressure | Node worker-0 has unavailable network",
			`Node has a Ready!=True condition with Reason "Not ready" and message "PLEG is not healthy" | ` +
				`Node has a DiskPressure!=False condition with Reason "Disk pressure" and message "disk \"sda\" is full" | ` +
				`Node has a NetworkUnavailable!=False condition with Reason "Network unavailable" and message ""`,
			3 * time.Minute},
		{"a degraded node's description is the MCD's reason",
			node("worker-0", "worker", "w-old", "w-other", "Degraded", notReadyFor(time.Hour), annotate(annoReason, "failed to drain")),
			"Node worker-0 is not ready", "failed to drain", time.Hour},
		{"nothing serious: no insight",
			node("worker-0", "worker", "w-old", "w-old", "Done", notReadyFor(4*time.Minute), cordoned), "", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := baseSnapshot()
			s.Nodes[1] = tc.node
			var got []updatev1alpha1.HealthInsight
			for _, h := range mustAssess(t, s).Status.Health {
				if h.UID == "node-worker-0-unavailable" {
					got = append(got, h)
				}
			}
			if tc.since == 0 {
				if len(got) != 0 {
					t.Fatalf("unexpected insight %+v", got[0].Impact)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("got %d unavailable insights, want 1", len(got))
			}
			h := got[0]
			if h.Impact.Summary != tc.summary || h.Impact.Description != tc.description {
				t.Errorf("summary %q\n description %q\nwant %q\n      %q", h.Impact.Summary, h.Impact.Description, tc.summary, tc.description)
			}
			if h.StartedAt == nil || now.Sub(h.StartedAt.Time) != tc.since {
				t.Errorf("startedAt = %v, want %v ago", h.StartedAt, tc.since)
			}
			if h.Impact.Level != updatev1alpha1.WarningImpactLevel || h.Impact.Type != updatev1alpha1.UpdateSpeedImpactType {
				t.Errorf("impact = %+v", h.Impact)
			}
		})
	}
}

// A node counts as unavailable only while its desiredImage is its pool's
// (none for a pool that is not layered), as oc (from the MCO) decides.
func TestUnavailabilityFollowsDesiredImage(t *testing.T) {
	tests := []struct {
		name        string
		poolImage   string
		nodeImage   *string
		unavailable bool
	}{
		{"no image anywhere", "", nil, true},
		{"empty desiredImage on a plain pool", "", ptr(""), true},
		{"desiredImage on a plain pool", "", ptr("quay.io/os@sha256:1"), false},
		{"layered pool, same image", "quay.io/os@sha256:1", ptr("quay.io/os@sha256:1"), true},
		{"layered pool, other image", "quay.io/os@sha256:1", ptr("quay.io/os@sha256:2"), false},
		{"layered pool, no image on the node", "quay.io/os@sha256:1", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := baseSnapshot()
			if tc.poolImage != "" {
				s.MachineConfigPools[1].Annotations = map[string]string{annoPoolOSImage: tc.poolImage}
			}
			opts := []nodeOpt{notReadyFor(time.Hour)}
			if tc.nodeImage != nil {
				opts = append(opts, annotate(annoDesiredImage, *tc.nodeImage), annotate(annoCurrentImage, *tc.nodeImage))
			}
			s.Nodes[1] = node("worker-0", "worker", "w-old", "w-old", "Done", opts...)
			r := mustAssess(t, s)
			insight := len(healthByPrefix(r.Status.Health, "Node worker-0 is not ready")) == 1
			var available string
			for _, n := range r.Nodes {
				if n.Name == "worker-0" {
					available = string(cond(n.Conditions, updatev1alpha1.ConditionAvailable).Status)
				}
			}
			if insight != tc.unavailable || (available == "False") != tc.unavailable {
				t.Errorf("insight %v, Available=%s; want unavailable %v", insight, available, tc.unavailable)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// "Done" needs both configs known and equal, both images absent or equal
// and known, and the MCD state Done; otherwise the MCD is still working.
func TestMCDDone(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    map[string]string
		done bool
	}{
		{"done", map[string]string{annoCurrentConfig: "c", annoDesiredConfig: "c", annoState: "Done"}, true},
		{"configs unknown", map[string]string{annoState: "Done"}, false},
		{"configs differ", map[string]string{annoCurrentConfig: "c", annoDesiredConfig: "d", annoState: "Done"}, false},
		{"working", map[string]string{annoCurrentConfig: "c", annoDesiredConfig: "c", annoState: "Working"}, false},
		{"images equal", map[string]string{annoCurrentConfig: "c", annoDesiredConfig: "c", annoState: "Done", annoCurrentImage: "i", annoDesiredImage: "i"}, true},
		{"images differ", map[string]string{annoCurrentConfig: "c", annoDesiredConfig: "c", annoState: "Done", annoCurrentImage: "i", annoDesiredImage: "j"}, false},
		{"images empty", map[string]string{annoCurrentConfig: "c", annoDesiredConfig: "c", annoState: "Done", annoCurrentImage: "", annoDesiredImage: ""}, false},
		{"only one image", map[string]string{annoCurrentConfig: "c", annoDesiredConfig: "c", annoState: "Done", annoCurrentImage: "i"}, false},
	} {
		if got := mcdDone(tc.a); got != tc.done {
			t.Errorf("%s: mcdDone = %v, want %v", tc.name, got, tc.done)
		}
	}
	// A ready node whose MCD is not done is unavailable for that reason.
	n := node("worker-0", "worker", "", "", "")
	if rs := unavailableReasons(n); len(rs) != 1 || rs[0].text != "Machine Config Daemon is processing the node" {
		t.Errorf("reasons = %+v", rs)
	}
}

// oc inserts insights pool by pool (by name: each pool's nodes, then the
// pool), then alerts in API order, then the ClusterVersion's Failing, the
// operators and the unfinished previous update; its sort keeps that order
// for insights with the same level and start.
func TestHealthInsertionOrder(t *testing.T) {
	s := baseSnapshot()
	s.ClusterVersion.Status.Conditions = s.ClusterVersion.Status.Conditions[:1] // no Failing: Warning, now
	s.ClusterVersion.Status.History = []configv1.UpdateHistory{
		partialEntry("4.18.1", 20*time.Minute), partialEntry("4.18.0", time.Hour), completedEntry("4.17.9", 5*time.Hour, 4*time.Hour),
	}
	s.ClusterOperators[0] = co("etcd", "4.18.1", withCond("Degraded", configv1.ConditionTrue, "Members", "m", 39*time.Minute))
	s.MachineConfigPools = append(s.MachineConfigPools, pool("infra", "infra", "w-new", true))
	s.MachineConfigPools[1].Spec.Paused = true
	s.Nodes = []*corev1.Node{
		node("worker-b", "worker", "w-old", "w-new", "Degraded", annotate(annoReason, "b")),
		node("worker-a", "worker", "w-old", "w-new", "Degraded", annotate(annoReason, "a")),
		node("worker-c", "worker", "w-old", "w-old", "Done"),
		node("infra-0", "infra", "w-old", "w-new", "Degraded", annotate(annoReason, "i")),
		node("infra-1", "infra", "w-old", "w-old", "Done"),
		node("master-0", "master", "m-old", "m-old", "Done"),
	}
	s.Alerts = []Alert{
		{Labels: map[string]string{"alertname": "Second", "severity": "warning"}, State: "firing", ActiveAt: now.Add(-time.Minute)},
		{Labels: map[string]string{"alertname": "First", "severity": "warning"}, State: "firing", ActiveAt: now.Add(-time.Minute)},
	}
	var got []string
	for _, h := range mustAssess(t, s).Status.Health {
		got = append(got, h.Impact.Summary)
	}
	want := []string{
		"Node infra-0 is degraded",
		"Outdated nodes in a paused pool 'infra' will not be updated",
		"Node worker-a is degraded",
		"Node worker-b is degraded",
		"Outdated nodes in a paused pool 'worker' will not be updated",
		"Alert is firing: Second",
		"Alert is firing: First",
		"Cluster Version version has no Failing condition",
		"Cluster Operator etcd is degraded (Members)",
		"Previous update to 4.18.0 never completed, last complete update was 4.17.9",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Offline display never cuts or bounds; what is written to the API does.
func TestDisplayIsNeverCut(t *testing.T) {
	s := baseSnapshot()
	long := strings.Repeat("x", 5000)
	s.Nodes = nil
	for i := 0; i < updatev1alpha1.MaxHealthInsights+10; i++ {
		s.Nodes = append(s.Nodes, node("worker-"+string(rune('a'+i/26))+string(rune('a'+i%26)), "worker", "w-old", "w-new", "Degraded", annotate(annoReason, long)))
	}
	display, err := AssessForDisplay(s)
	if err != nil {
		t.Fatal(err)
	}
	degraded := healthByPrefix(display.Status.Health, "Node worker-")
	if len(degraded) != len(s.Nodes) {
		t.Errorf("display has %d node insights, want all %d", len(degraded), len(s.Nodes))
	}
	for _, h := range degraded {
		if h.Impact.Description != long {
			t.Fatalf("display description cut to %d characters", len(h.Impact.Description))
		}
	}
	api := mustAssess(t, s).Status.Health
	if len(api) != updatev1alpha1.MaxHealthInsights {
		t.Errorf("API status has %d health insights, want the bound %d", len(api), updatev1alpha1.MaxHealthInsights)
	}
	if n := len([]rune(api[0].Impact.Description)); n != maxDescription {
		t.Errorf("API description has %d characters, want %d", n, maxDescription)
	}
}

// Whether a node is seriously unavailable is measured against the wall
// clock, as oc does even offline, where now is the snapshot's time.
func TestSeriousUnavailabilityUsesTheWallClock(t *testing.T) {
	s := baseSnapshot()
	s.Nodes[1] = node("worker-0", "worker", "w-old", "w-old", "Done", notReadyFor(time.Minute))
	if got := healthByPrefix(mustAssess(t, s).Status.Health, "Node worker-0"); len(got) != 0 {
		t.Fatalf("not ready for 1m at now: %d insights, want none", len(got))
	}
	s.WallClock = now.Add(time.Hour)
	got := healthByPrefix(mustAssess(t, s).Status.Health, "Node worker-0 is not ready")
	if len(got) != 1 || now.Sub(got[0].StartedAt.Time) != time.Minute {
		t.Fatalf("an hour later on the wall clock: %+v, want one insight started 1m before now", got)
	}
}
