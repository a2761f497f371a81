package workloads

import (
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/hysteresis"
)

func ds(name string, desired, available int32) appsv1.DaemonSet {
	return appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-azure-logging", Name: name},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: desired, NumberAvailable: available}}
}

func TestDaemonSets(t *testing.T) {
	got := DaemonSets([]appsv1.DaemonSet{ds("otel-exporter-worker", 3, 1), ds("otel-exporter-master", 3, 3), ds("mdsd", 0, 0), ds("a-first", 2, 0)})
	if len(got) != 2 || got[0].Name != "a-first" || got[0].Problem != "0 of 2 available" || got[1].Name != "otel-exporter-worker" || got[1].Problem != "1 of 3 available" {
		t.Errorf("DaemonSets = %+v", got)
	}
}

func pod(name string, mutate func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-etcd", Name: name}, Spec: corev1.PodSpec{NodeName: "master-0"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue},
			// Other condition types are not judged (ARO's monitor flags
			// them when set at all, a false alarm on every recent pod).
			{Type: "PodReadyToStartContainers", Status: corev1.ConditionTrue}, {Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "etcd", RestartCount: 4}, {Name: "metrics", RestartCount: 5}}}}
	if mutate != nil {
		mutate(&p)
	}
	return p
}

func TestPods(t *testing.T) {
	unready := func(p *corev1.Pod) {
		p.Status.Conditions[2].Status = corev1.ConditionFalse
		p.Status.Conditions[3].Status = corev1.ConditionFalse
	}
	got := Pods([]corev1.Pod{
		pod("healthy", nil),
		pod("crashing", func(p *corev1.Pod) {
			unready(p)
			p.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
			p.Status.ContainerStatuses[0].RestartCount = 5
		}),
		pod("installer-done", func(p *corev1.Pod) { unready(p); p.Status.Phase = corev1.PodSucceeded }),
		pod("preempted", func(p *corev1.Pod) { unready(p); p.Status.Reason = "Preempting" }),
		pod("pending", func(p *corev1.Pod) {
			p.Spec.NodeName = ""
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse}}
			p.Status.ContainerStatuses = nil
		}),
	}, 10)
	want := map[string]string{
		"crashing": "ContainersReady is False; Ready is False; container etcd waiting: CrashLoopBackOff; 10 restarts",
		"pending":  "PodScheduled is False",
	}
	if len(got) != len(want) {
		t.Fatalf("Pods = %+v, want %v", got, want)
	}
	for _, p := range got {
		if p.Kind != KindPod || want[p.Name] != p.Problem {
			t.Errorf("%s: %q, want %q", p.Name, p.Problem, want[p.Name])
		}
	}
	if got[0].Node != "master-0" || got[1].Node != "" {
		t.Errorf("nodes: %+v", got)
	}
}

func TestRoundHysteresisAndMessages(t *testing.T) {
	th := hysteresis.Thresholds{Failures: 2, Successes: 1}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	healthy := Read{Namespaces: 9, DaemonSetCount: 2, PodCount: 40}
	st := Round(amv1alpha1.MonitorConfigStatus{}, healthy, now, th)
	if c := st.Conditions; c[0].Status != "True" || c[0].Message != "all 2 DaemonSets in 9 namespaces healthy" || c[1].Message != "all 40 pods in 9 namespaces healthy" {
		t.Fatalf("healthy: %+v", c)
	}
	var many []amv1alpha1.WorkloadProblem
	for i := range 60 {
		many = append(many, amv1alpha1.WorkloadProblem{Kind: KindPod, Namespace: "ns", Name: string(rune('a'+i%26)) + strings.Repeat("x", i/26), Problem: "Ready is False"})
	}
	sick := Read{Namespaces: 9, DaemonSetCount: 2, PodCount: 60, Pods: many}
	st = Round(st, sick, now.Add(5*time.Minute), th)
	if c := st.Conditions[1]; c.Status != "True" || !strings.HasPrefix(c.Message, "every pod healthy until 2 failed rounds in a row; failing for 1: 60 of 60 pods unhealthy: ns/a (Ready is False)") {
		t.Fatalf("held: %+v", c)
	}
	if st.Conditions[0].Status != "True" || len(st.Workloads) != MaxRecorded {
		t.Fatalf("DaemonSets follow their own rounds; %d problems recorded", len(st.Workloads))
	}
	st = Round(st, sick, now.Add(10*time.Minute), th)
	c := st.Conditions[1]
	if c.Status != "False" || c.Reason != ReasonUnhealthy || !strings.HasSuffix(c.Message, "and 50 more") {
		t.Fatalf("after two failed rounds: %+v", c)
	}
	if st.Checks[1].ConsecutiveFailures != 2 || st.Checks[0].ConsecutiveSuccesses != 3 {
		t.Fatalf("records: %+v", st.Checks)
	}
	broken := healthy
	broken.DaemonSetsErr = errors.New("forbidden")
	st = Round(st, broken, now.Add(15*time.Minute), th)
	if c := st.Conditions[0]; c.Status != "True" || !strings.HasSuffix(c.Message, "reading the DaemonSets: forbidden") {
		t.Fatalf("a read error is a failed round: %+v", c)
	}
	if c := st.Conditions[1]; c.Status != "True" || st.Workloads != nil {
		t.Fatalf("pods recovered with successThreshold 1: %+v %v", c, st.Workloads)
	}
}
