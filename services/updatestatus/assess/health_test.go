package assess

import (
	"fmt"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// TestHealthRules checks every health-insight rule of oc at and around its thresholds.
func TestHealthRules(t *testing.T) {
	type want struct {
		uid     string
		level   updatev1alpha1.InsightImpactLevel
		impact  updatev1alpha1.InsightImpactType
		summary string
		since   *time.Duration // nil: unknown start
	}
	d := func(x time.Duration) *time.Duration { return &x }
	alert := func(name, severity, state string, active time.Duration) Alert {
		return Alert{Labels: map[string]string{"alertname": name, "severity": severity, "namespace": "ns"},
			Annotations: map[string]string{"description": "desc"}, State: state, ActiveAt: now.Add(-active)}
	}
	tests := []struct {
		name   string
		mutate func(*Snapshot)
		want   []want // insights expected besides none; compared by uid
	}{
		{"healthy update has none", func(*Snapshot) {}, nil},
		{"no Failing condition", func(s *Snapshot) {
			s.ClusterVersion.Status.Conditions = s.ClusterVersion.Status.Conditions[:1]
		}, []want{{"cv-version-no-failing", "Warning", "Update Stalled", "Cluster Version version has no Failing condition", d(0)}}},
		{"Failing=True", func(s *Snapshot) {
			s.ClusterVersion.Status.Conditions[1] = cvCond("Failing", configv1.ConditionTrue, "ClusterOperatorsDegraded", "etcd is degraded", 7*time.Minute)
		}, []want{{"cv-version-failing", "Warning", "Update Stalled", "Cluster Version version is failing to proceed with the update (ClusterOperatorsDegraded)", d(7 * time.Minute)}}},
		{"Failing=Unknown (slow operator)", func(s *Snapshot) {
			s.ClusterVersion.Status.Conditions[1] = cvCond("Failing", configv1.ConditionUnknown, "SlowClusterOperator", "waiting on etcd", time.Minute)
		}, []want{{"cv-version-failing", "Warning", "Update Stalled", "Cluster Version version may be failing to proceed with the update (SlowClusterOperator)", d(time.Minute)}}},
		{"Failing=True without message is incomplete", func(s *Snapshot) {
			s.ClusterVersion.Status.Conditions[1] = cvCond("Failing", configv1.ConditionTrue, "X", "", time.Minute)
		}, nil},
		{"previous update partial", func(s *Snapshot) {
			s.ClusterVersion.Status.History = []configv1.UpdateHistory{
				partialEntry("4.18.1", 20*time.Minute), partialEntry("4.18.0", time.Hour), completedEntry("4.17.9", 5*time.Hour, 4*time.Hour),
			}
		}, []want{{"cv-version-previous-partial", "Warning", "None", "Previous update to 4.18.0 never completed, last complete update was 4.17.9", d(20 * time.Minute)}}},
		{"operator unavailable for 5m: not yet", func(s *Snapshot) {
			s.ClusterOperators[0] = co("etcd", "4.18.1", withCond("Available", configv1.ConditionFalse, "NoQuorum", "", 5*time.Minute))
		}, nil},
		{"operator unavailable for 6m: warning", func(s *Snapshot) {
			s.ClusterOperators[0] = co("etcd", "4.18.1", withCond("Available", configv1.ConditionFalse, "NoQuorum", "", 6*time.Minute))
		}, []want{{"co-etcd-unavailable", "Warning", "API Availability", "Cluster Operator etcd is unavailable (NoQuorum)", d(6 * time.Minute)}}},
		{"operator unavailable for 21m: error", func(s *Snapshot) {
			s.ClusterOperators[0] = co("etcd", "4.18.1", withCond("Available", configv1.ConditionFalse, "NoQuorum", "lost", 21*time.Minute))
		}, []want{{"co-etcd-unavailable", "Error", "API Availability", "Cluster Operator etcd is unavailable (NoQuorum)", d(21 * time.Minute)}}},
		{"operator availability unknown: none", func(s *Snapshot) {
			s.ClusterOperators[0] = co("etcd", "4.18.1", withCond("Available", configv1.ConditionUnknown, "X", "", time.Hour))
		}, nil},
		{"operator degraded for 39m: warning", func(s *Snapshot) {
			s.ClusterOperators[0] = co("etcd", "4.18.1", withCond("Degraded", configv1.ConditionTrue, "Members", "", 39*time.Minute))
		}, []want{{"co-etcd-degraded", "Warning", "API Availability", "Cluster Operator etcd is degraded (Members)", d(39 * time.Minute)}}},
		{"operator degraded for 41m: error", func(s *Snapshot) {
			s.ClusterOperators[0] = co("etcd", "4.18.1", withCond("Degraded", configv1.ConditionTrue, "Members", "", 41*time.Minute))
		}, []want{{"co-etcd-degraded", "Error", "API Availability", "Cluster Operator etcd is degraded (Members)", d(41 * time.Minute)}}},
		{"non-platform operator: none", func(s *Snapshot) {
			s.ClusterOperators = append(s.ClusterOperators, co("olm-thing", "1", notPlatform, withCond("Degraded", configv1.ConditionTrue, "X", "", time.Hour)))
		}, nil},
		{"node not ready for 4m: not serious", func(s *Snapshot) {
			s.Nodes[1] = node("worker-0", "worker", "w-old", "w-old", "Done", notReadyFor(4*time.Minute))
		}, nil},
		{"node not ready for 6m", func(s *Snapshot) {
			s.Nodes[1] = node("worker-0", "worker", "w-old", "w-old", "Done", notReadyFor(6*time.Minute))
		}, []want{{"node-worker-0-unavailable", "Warning", "Update Speed", "Node worker-0 is not ready", d(6 * time.Minute)}}},
		{"disk pressure for 2m", func(s *Snapshot) {
			s.Nodes[1] = node("worker-0", "worker", "w-old", "w-old", "Done", func(n *corev1.Node) {
				n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue, LastTransitionTime: ago(2 * time.Minute)})
			})
		}, []want{{"node-worker-0-unavailable", "Warning", "Update Speed", "Node worker-0 has disk pressure", d(2 * time.Minute)}}},
		{"cordoned node: not serious", func(s *Snapshot) {
			s.Nodes[1] = node("worker-0", "worker", "w-old", "w-old", "Done", cordoned)
		}, nil},
		{"not ready while updating: none", func(s *Snapshot) {
			s.Nodes[1] = node("worker-0", "worker", "w-old", "w-new", "Rebooting", notReadyFor(time.Hour))
		}, nil},
		{"degraded node", func(s *Snapshot) {
			s.Nodes[1] = node("worker-0", "worker", "w-old", "w-new", "Degraded", annotate(annoReason, "failed to drain"))
		}, []want{{"node-worker-0-degraded", "Error", "Update Stalled", "Node worker-0 is degraded", nil}}},
		{"degraded node without reason is incomplete", func(s *Snapshot) {
			s.Nodes[1] = node("worker-0", "worker", "w-old", "w-new", "Degraded")
		}, nil},
		{"paused pool with outdated nodes", func(s *Snapshot) {
			s.MachineConfigPools[1].Spec.Paused = true
		}, []want{{"mcp-worker-paused", "Warning", "Update Stalled", "Outdated nodes in a paused pool 'worker' will not be updated", nil}}},
		{"paused pool, all updated: none", func(s *Snapshot) {
			s.MachineConfigPools[1].Spec.Paused = true
			s.Nodes[1] = node("worker-0", "worker", "w-new", "w-new", "Done")
		}, nil},
		{"alerts", func(s *Snapshot) {
			s.Alerts = []Alert{
				alert("Pending", "critical", "pending", time.Minute),
				alert("InfoOnly", "info", "firing", time.Minute),
				alert("OldWarning", "warning", "firing", time.Hour),
				alert("NewCritical", "critical", "firing", time.Minute),
				alert("PodDisruptionBudgetAtLimit", "warning", "firing", time.Hour),
			}
		}, []want{
			{"", "Critical", "Unknown", "Alert is firing: NewCritical", d(time.Minute)},
			{"", "Warning", "Unknown", "Alert is firing: PodDisruptionBudgetAtLimit", d(time.Hour)},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := baseSnapshot()
			tc.mutate(&s)
			got := mustAssess(t, s).Status.Health
			if len(got) != len(tc.want) {
				for _, h := range got {
					t.Logf("got %s: %s", h.UID, h.Impact.Summary)
				}
				t.Fatalf("got %d insights, want %d", len(got), len(tc.want))
			}
			for i, w := range tc.want {
				h := got[i]
				if w.uid != "" && h.UID != w.uid {
					t.Errorf("uid = %s, want %s", h.UID, w.uid)
				}
				if h.Impact.Level != w.level || h.Impact.Type != w.impact || h.Impact.Summary != w.summary {
					t.Errorf("impact = %+v, want %s/%s/%q", h.Impact, w.level, w.impact, w.summary)
				}
				switch {
				case w.since == nil && h.StartedAt != nil:
					t.Errorf("startedAt = %v, want unknown", h.StartedAt)
				case w.since != nil && (h.StartedAt == nil || now.Sub(h.StartedAt.Time) != *w.since):
					t.Errorf("startedAt = %v, want %v ago", h.StartedAt, *w.since)
				}
				if h.Impact.Description == "" || h.Remediation.Reference == "" {
					t.Errorf("incomplete insight %+v", h)
				}
			}
		})
	}
}

func TestMakeUIDIsAValidDNSLabel(t *testing.T) {
	long := "ip-10-0-53-40.us-east-2.compute.internal-with-a-very-long-suffix-that-goes-on"
	for _, tc := range []struct{ kind, name string }{
		{"node", long}, {"node", "Upper_Case"}, {"co", "etcd"}, {"alert", "KubePodCrashLooping"},
	} {
		uid := makeUID(tc.kind, tc.name, "degraded")
		if len(uid) > 63 || !uidPattern.MatchString(uid) {
			t.Errorf("makeUID(%s, %s) = %q is not a DNS label", tc.kind, tc.name, uid)
		}
	}
	if makeUID("node", long, "a") == makeUID("node", long, "b") {
		t.Error("hashed UIDs of different problems collide")
	}
}

func TestHealthIsBoundedMostSevereFirst(t *testing.T) {
	var in []updatev1alpha1.HealthInsight
	add := func(n int, level updatev1alpha1.InsightImpactLevel) {
		for i := 0; i < n; i++ {
			in = append(in, newHealth(fmt.Sprintf("%s-%d", strings.ToLower(string(level)), i), now,
				updatev1alpha1.ScopeTypeWorkerPool, nil, level, updatev1alpha1.NoneImpactType, "s", "d", "r"))
		}
	}
	add(150, updatev1alpha1.WarningImpactLevel)
	add(10, updatev1alpha1.ErrorImpactLevel)
	add(40, updatev1alpha1.InfoImpactLevel)

	out := boundHealth(in)
	if len(out) != updatev1alpha1.MaxHealthInsights {
		t.Fatalf("got %d insights, want %d", len(out), updatev1alpha1.MaxHealthInsights)
	}
	counts := map[updatev1alpha1.InsightImpactLevel]int{}
	for _, h := range out[:len(out)-1] {
		counts[h.Impact.Level]++
	}
	// All 10 errors, then warnings up to 127; no info.
	if counts[updatev1alpha1.ErrorImpactLevel] != 10 || counts[updatev1alpha1.WarningImpactLevel] != 117 || counts[updatev1alpha1.InfoImpactLevel] != 0 {
		t.Errorf("kept %v, want 10 Error and 117 Warning", counts)
	}
	if out[0].UID != "warning-0" {
		t.Errorf("kept insights should stay in their order, first is %s", out[0].UID)
	}
	last := out[len(out)-1]
	if last.UID != omittedHealthUID || last.Impact.Level != updatev1alpha1.WarningImpactLevel ||
		!strings.Contains(last.Impact.Summary, "73 more") {
		t.Errorf("omission insight = %+v, want 73 more at Warning", last.Impact)
	}
	if got := boundHealth(in[:5]); len(got) != 5 {
		t.Errorf("a short list must pass unchanged, got %d", len(got))
	}
}
