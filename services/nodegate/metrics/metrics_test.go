package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/metricstest"
)

var t0 = time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { return &metav1.Time{Time: t0.Add(d)} }

func series(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	s, err := metricstest.Series(reg, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func status(hook nodegatev1alpha1.HookRecord, phase nodegatev1alpha1.NodePhase) *nodegatev1alpha1.MutexRunConfigStatus {
	r := nodegatev1alpha1.NodeRecord{Name: "w1", Pool: "worker", Phase: phase, StartTime: at(0), Hooks: []nodegatev1alpha1.HookRecord{hook}}
	if phase == nodegatev1alpha1.NodeCompleted {
		r.CompletionTime = at(10 * time.Minute)
	}
	return &nodegatev1alpha1.MutexRunConfigStatus{RunID: "r1", Nodes: []nodegatev1alpha1.NodeRecord{r, {Name: "w2", Pool: "worker", Phase: nodegatev1alpha1.NodePending}}}
}

func TestObserveTransitionsOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	running := nodegatev1alpha1.HookRecord{Rule: "ns/r", Name: "job", Stage: nodegatev1alpha1.StagePre, Phase: nodegatev1alpha1.HookRunning, Attempts: 1, StartTime: at(0)}
	done := running
	done.Phase, done.CompletionTime = nodegatev1alpha1.HookSucceeded, at(90*time.Second)

	s1 := status(running, nodegatev1alpha1.NodePreHooks)
	s2 := status(done, nodegatev1alpha1.NodeCompleted)
	m.Observe("ns/run", s1, s2, "", 0, 0)
	// The same status again (a later pass, or a restart reading it back).
	m.Observe("ns/run", s2, s2, "", 0, 0)

	h := series(t, reg, HookDurationName)
	if h["result=Succeeded,stage=Pre#count"] != 1 || h["result=Succeeded,stage=Pre#sum"] != 90 {
		t.Fatalf("hook histogram %v", h)
	}
	n := series(t, reg, NodeDurationName)
	if n["pool=worker#count"] != 1 || n["pool=worker#sum"] != 600 {
		t.Fatalf("node histogram %v", n)
	}
	p := series(t, reg, NodesName)
	if p["phase=Completed,run=ns/run"] != 1 || p["phase=Pending,run=ns/run"] != 1 || p["phase=Failed,run=ns/run"] != 0 {
		t.Fatalf("nodes %v", p)
	}
	if _, ok := p["phase=Skipped,run=ns/run"]; !ok {
		t.Fatal("every phase is exported, zeros too")
	}
}

func TestFailuresBlockedAndForget(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	running := nodegatev1alpha1.HookRecord{Rule: "ns/r", Name: "job", Stage: nodegatev1alpha1.StagePre, Phase: nodegatev1alpha1.HookRunning, Attempts: 1, StartTime: at(0)}
	retry := running
	retry.Attempts = 2
	failed := retry
	failed.Phase = nodegatev1alpha1.HookFailed
	s0 := status(running, nodegatev1alpha1.NodePreHooks)
	s1 := status(retry, nodegatev1alpha1.NodePreHooks)
	s2 := status(failed, nodegatev1alpha1.NodeFailed)
	s2.Phase, s2.PausedGeneration = nodegatev1alpha1.RunPaused, 1
	m.Observe("ns/run", s0, s1, "", 0, 0)
	m.Observe("ns/run", s1, s2, "HookFailed", 1, 2)
	if f := series(t, reg, HookFailuresName)["run=ns/run"]; f != 2 {
		t.Fatalf("hook failures %v, want 2 (a retry and the final failure)", f)
	}
	if v := series(t, reg, PausedName)["run=ns/run"]; v != 1 {
		t.Fatalf("paused %v", v)
	}
	if b := series(t, reg, BlockedName); b["reason=HookFailed,run=ns/run"] != 1 || len(b) != 1 {
		t.Fatalf("blocked %v", b)
	}
	if v := series(t, reg, DrainBlockedName)["run=ns/run"]; v != 1 {
		t.Fatalf("drain blocked %v", v)
	}
	// The reason changes: the old series goes.
	m.Observe("ns/run", s2, s2, "SpecPaused", 0, 0)
	if b := series(t, reg, BlockedName); b["reason=SpecPaused,run=ns/run"] != 1 || len(b) != 1 {
		t.Fatalf("blocked after a change %v", b)
	}
	m.Forced(commonv1alpha1.DrainStepForceDelete)
	if v := series(t, reg, ForcedDrainName); v["kind=ForceDelete"] != 1 || v["kind=Delete"] != 0 {
		t.Fatalf("forced %v", v)
	}
	m.Forget("ns/run")
	if len(series(t, reg, NodesName)) != 0 || len(series(t, reg, BlockedName)) != 0 {
		t.Fatal("a deleted run's series stay")
	}
}
