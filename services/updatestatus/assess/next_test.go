package assess

import (
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// published is what the controller would publish for s: Assess with its own
// previous result, as every recomputation after the first.
func published(t *testing.T, s Snapshot) (Result, *Previous) {
	t.Helper()
	first := mustAssess(t, s)
	prev := previousOf(first)
	r, err := Assess(s, prev)
	if err != nil {
		t.Fatal(err)
	}
	return r, previousOf(r)
}

func previousOf(r Result) *Previous {
	p := &Previous{Status: r.Status.DeepCopy(), Nodes: map[string]*updatev1alpha1.NodeStatusInsight{}}
	for _, n := range r.Nodes {
		p.Nodes[n.Name] = n.DeepCopy()
	}
	return p
}

// firstChange is the oracle: the first whole second after s.Now, within the
// horizon, at which assessing the same objects gives another result than
// the published one. It steps second by second, independently of how
// NextCheck is computed. Zero when nothing changes.
func firstChange(t *testing.T, s Snapshot, horizon time.Duration) time.Time {
	t.Helper()
	pub, prev := published(t, s)
	for d := time.Second; d <= horizon; d += time.Second {
		at := s
		at.Now = s.Now.Add(d)
		r, err := Assess(at, prev)
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(r.Status, pub.Status) || !equality.Semantic.DeepEqual(r.Nodes, pub.Nodes) {
			return at.Now
		}
	}
	return time.Time{}
}

func TestNextCheckIsWhenTheResultChanges(t *testing.T) {
	idle := func() Snapshot {
		s := baseSnapshot()
		s.ClusterVersion = idleCV()
		s.ClusterOperators[1] = co("kube-apiserver", "4.18.1")
		s.MachineConfigPools[0].Spec.Configuration.Name = "m-old"
		s.MachineConfigPools[1].Spec.Configuration.Name = "w-old"
		s.MachineConfigs = []mcfgv1.MachineConfig{mc("m-old", "4.18.1"), mc("w-old", "4.18.1")}
		return s
	}
	tests := []struct {
		name   string
		snap   func() Snapshot
		expect time.Duration // NextCheck - now, rounded up to the second; 0: none
	}{
		{"an idle cluster has nothing pending", idle, 0},
		{"an operator degraded for 3m becomes an insight at 5m", func() Snapshot {
			s := idle()
			s.ClusterOperators[1] = co("kube-apiserver", "4.18.1", withCond("Degraded", configv1.ConditionTrue, "X", "bad", 3*time.Minute))
			return s
		}, 2*time.Minute + time.Second},
		{"an operator degraded for 10m becomes an error at 40m", func() Snapshot {
			s := idle()
			s.ClusterOperators[1] = co("kube-apiserver", "4.18.1", withCond("Degraded", configv1.ConditionTrue, "X", "bad", 10*time.Minute))
			return s
		}, 30*time.Minute + time.Second},
		{"an operator unavailable for 1m becomes an insight at 5m", func() Snapshot {
			s := idle()
			s.ClusterOperators[1] = co("kube-apiserver", "4.18.1", withCond("Available", configv1.ConditionFalse, "X", "down", time.Minute))
			return s
		}, 4*time.Minute + time.Second},
		{"a node not ready for 2m is serious at 5m", func() Snapshot {
			s := idle()
			s.Nodes[1] = node("worker-0", "worker", "w-old", "w-old", "Done", notReadyFor(2*time.Minute))
			return s
		}, 3 * time.Minute},
		{"an updating control plane: its estimate moves", baseSnapshot, -1},
		{"a slow update turns stalled or moves its estimate", func() Snapshot {
			s := baseSnapshot()
			s.ClusterVersion = updatingCV(65 * time.Minute)
			s.ClusterOperators[1] = co("kube-apiserver", "4.18.0", withCond("Progressing", configv1.ConditionTrue, "", "", 60*time.Minute))
			return s
		}, -1},
		{"a stalled update's estimate moves", func() Snapshot {
			s := baseSnapshot()
			s.ClusterVersion = updatingCV(2 * time.Hour)
			s.ClusterOperators[1] = co("kube-apiserver", "4.18.0", withCond("Progressing", configv1.ConditionTrue, "", "", 115*time.Minute))
			return s
		}, -1},
		{"an estimate projected from elapsed time", func() Snapshot {
			s := baseSnapshot()
			s.ClusterVersion = updatingCV(30 * time.Minute)
			s.ClusterOperators[1] = co("kube-apiserver", "4.18.0", withCond("Progressing", configv1.ConditionTrue, "", "", 30*time.Minute))
			return s
		}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.snap()
			pub, _ := published(t, s)
			oracle := firstChange(t, s, 2*time.Hour)
			next := pub.NextCheck
			if tc.expect == 0 {
				if !next.IsZero() || !oracle.IsZero() {
					t.Fatalf("NextCheck = %v, first change = %v; want neither", next, oracle)
				}
				return
			}
			if next.IsZero() || oracle.IsZero() {
				t.Fatalf("NextCheck = %v, first change = %v; want both", next, oracle)
			}
			// NextCheck is the instant of the change; the oracle sees it at the
			// first whole second at or after it.
			if !(next.After(oracle.Add(-time.Second)) && !next.After(oracle)) {
				t.Errorf("NextCheck = now+%v, the result first changes at now+%v", next.Sub(now), oracle.Sub(now))
			}
			if tc.expect > 0 && oracle.Sub(now) != tc.expect {
				t.Errorf("first change at now+%v, want now+%v", oracle.Sub(now), tc.expect)
			}
		})
	}
}

func TestNextCheckIgnoresThePast(t *testing.T) {
	n := nextCheck{now: now}
	n.at(now.Add(-time.Minute))
	n.at(now)
	if !n.next.IsZero() {
		t.Fatalf("next = %v, want none", n.next)
	}
	n.at(now.Add(3 * time.Minute))
	n.at(now.Add(2 * time.Minute))
	n.at(now.Add(4 * time.Minute))
	if want := now.Add(2 * time.Minute); !n.next.Equal(want) {
		t.Fatalf("next = %v, want %v", n.next, want)
	}
}

func TestNoFailingConditionKeepsItsFirstSighting(t *testing.T) {
	s := baseSnapshot()
	s.ClusterVersion.Status.Conditions = s.ClusterVersion.Status.Conditions[:1] // no Failing
	pub, prev := published(t, s)
	later := s
	later.Now = s.Now.Add(10 * time.Second)
	r, err := Assess(later, prev)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(r.Status.Health, pub.Status.Health) {
		t.Errorf("health insights changed with the time alone:\n%+v\n%+v", pub.Status.Health, r.Status.Health)
	}
}
