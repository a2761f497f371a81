package drain

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/drain"
	"github.com/upshift-io/upshift/libs/mcostate"
)

var t0 = time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC)

func drainingNode(req, applied string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1", Annotations: map[string]string{
		mcostate.DesiredDrain: req, mcostate.LastAppliedDrain: applied, mcostate.State: mcostate.StateWorking,
	}}}
}

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
		{Name: "w1", Phase: nodegatev1alpha1.NodeReleased, Drain: &commonv1alpha1.DrainRecord{Request: "drain-rendered-x", StartTime: metav1.NewTime(t0)}},
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
		Pods: map[string][]corev1.Pod{"w1": {{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "db-0", Labels: map[string]string{"app": "db"}},
			Spec: corev1.PodSpec{NodeName: "w1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}}},
		PDBs: map[string][]policyv1.PodDisruptionBudget{"w1": {{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "db-pdb"},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}}}
	out := DecideRun(in, records)
	if len(out.Actions) != 1 || out.Actions[0].Node != "w1" || out.Actions[0].Name != "db-0" || out.Actions[0].Step != commonv1alpha1.DrainStepDelete {
		t.Fatalf("actions %+v, want the first step on db-0 of w1", out.Actions)
	}
	if out.Blocked != 1 || out.Stuck != 0 || out.RequeueAfter <= 0 {
		t.Fatalf("blocked %d stuck %d requeue %v", out.Blocked, out.Stuck, out.RequeueAfter)
	}
	if records[0].Drain == nil || len(records[0].Drain.BlockingPods) != 1 || records[1].Drain != nil || records[2].Drain != nil {
		t.Fatalf("records %+v", records)
	}
}

func TestTimeoutFor(t *testing.T) {
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	for _, tc := range []struct {
		name string
		run  *metav1.Duration
		ucs  map[string]int32
		want time.Duration
	}{
		{"nothing", nil, nil, DefaultTimeout},
		{"run's own", d(10 * time.Minute), map[string]int32{"a": 5}, 10 * time.Minute},
		{"run's zero is unset", d(0), map[string]int32{"a": 5}, 5 * time.Minute},
		{"upgradeconfig zero is unset", nil, map[string]int32{"a": 0}, DefaultTimeout},
		{"first by name", nil, map[string]int32{"b": 30, "a": 20, "c": 10}, 20 * time.Minute},
		{"first positive by name", nil, map[string]int32{"a": 0, "b": 30}, 30 * time.Minute},
	} {
		// Map order is random: the answer must not depend on it.
		for i := 0; i < 20; i++ {
			if got := TimeoutFor(tc.run, tc.ucs); got != tc.want {
				t.Fatalf("%s: %s, want %s", tc.name, got, tc.want)
			}
		}
	}
}

func TestNeeded(t *testing.T) {
	idle := drainingNode("uncordon-rendered-x", "uncordon-rendered-x")
	draining := drainingNode("drain-rendered-x", "uncordon-rendered-old")
	open := &commonv1alpha1.DrainRecord{Request: "drain-rendered-x"}
	released := func(d *commonv1alpha1.DrainRecord) *nodegatev1alpha1.NodeRecord {
		return &nodegatev1alpha1.NodeRecord{Name: "w1", Phase: nodegatev1alpha1.NodeReleased, Drain: d}
	}
	for _, c := range []struct {
		rec  *nodegatev1alpha1.NodeRecord
		n    *corev1.Node
		want bool
	}{
		{released(nil), draining, true},
		{released(nil), idle, false},
		{released(open), idle, true},
		{&nodegatev1alpha1.NodeRecord{Name: "w1", Phase: nodegatev1alpha1.NodePreHooks}, draining, false},
		// Past Released with the record still open: it must be closed.
		{&nodegatev1alpha1.NodeRecord{Name: "w1", Phase: nodegatev1alpha1.NodeCompleted, Drain: open}, idle, true},
		{&nodegatev1alpha1.NodeRecord{Name: "w1", Phase: nodegatev1alpha1.NodeCompleted}, idle, false},
		// ...but not while the MCO drains it again: that drain is not the run's.
		{&nodegatev1alpha1.NodeRecord{Name: "w1", Phase: nodegatev1alpha1.NodeCompleted, Drain: open}, draining, false},
	} {
		if got := Needed(c.rec, c.n); got != c.want {
			t.Fatalf("Needed(%+v, %v) = %v", c.rec, c.n.Annotations, got)
		}
	}
}

func TestStepTimeoutFor(t *testing.T) {
	if got := StepTimeoutFor(nil); got != drain.DefaultStepTimeout {
		t.Fatalf("none: %v", got)
	}
	if got := StepTimeoutFor(&metav1.Duration{}); got != drain.DefaultStepTimeout {
		t.Fatalf("zero: %v", got)
	}
	if got := StepTimeoutFor(&metav1.Duration{Duration: time.Minute}); got != time.Minute {
		t.Fatalf("a minute: %v", got)
	}
}
