package drain

import (
	"math/rand"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
)

var t0 = time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC)

func drainingNode(req, applied string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1", Annotations: map[string]string{
		mcostate.DesiredDrain: req, mcostate.LastAppliedDrain: applied, mcostate.State: mcostate.StateWorking,
	}}, Spec: corev1.NodeSpec{Unschedulable: true}}
}

func pod(ns, name string, lbls map[string]string, mods ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name), Labels: lbls},
		Spec: corev1.PodSpec{NodeName: "w1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, m := range mods {
		m(&p)
	}
	return p
}

func pdb(ns, name string, sel *metav1.LabelSelector) policyv1.PodDisruptionBudget {
	return policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}}
}

func in(now time.Time, node *corev1.Node, prev *commonv1alpha1.DrainRecord, pods ...corev1.Pod) Input {
	return Input{Now: now, Node: node, Pods: pods, Prev: prev, Policy: Policy{Timeout: time.Hour, StepTimeout: 2 * time.Minute, Owner: "node-gate", EventAction: "Gate"},
		PDBs: []policyv1.PodDisruptionBudget{pdb("db", "db-pdb", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}})}}
}

func TestNotDrainingNoRecord(t *testing.T) {
	n := drainingNode("uncordon-rendered-x", "uncordon-rendered-x")
	if r := Decide(in(t0, n, nil, pod("db", "db-0", map[string]string{"app": "db"}))); r.Record != nil || len(r.Actions) > 0 {
		t.Fatalf("a node that is not draining got %+v", r)
	}
}

func TestClockStartsAndWaitsForTimeout(t *testing.T) {
	n := drainingNode("drain-rendered-x", "uncordon-rendered-old")
	r := Decide(in(t0, n, nil, pod("db", "db-0", map[string]string{"app": "db"})))
	if r.Record == nil || !r.Record.StartTime.Time.Equal(t0) || r.Record.Request != "drain-rendered-x" {
		t.Fatalf("record %+v", r.Record)
	}
	if len(r.Actions) != 0 || r.Blocked || r.RequeueAfter != time.Hour {
		t.Fatalf("before the timeout: actions %v blocked %v requeue %v", r.Actions, r.Blocked, r.RequeueAfter)
	}
	want := []commonv1alpha1.BlockingPod{{Namespace: "db", Name: "db-0", UID: "db-db-0", PDBs: []string{"db-pdb"}}}
	if !reflect.DeepEqual(r.Record.BlockingPods, want) {
		t.Fatalf("blocking pods %+v, want %+v", r.Record.BlockingPods, want)
	}
	// A restart 59 minutes later, the node uncordoned in between (a flap):
	// the clock comes from the record.
	n.Spec.Unschedulable = false
	r2 := Decide(in(t0.Add(59*time.Minute), n, r.Record, pod("db", "db-0", map[string]string{"app": "db"})))
	if len(r2.Actions) != 0 || r2.RequeueAfter != time.Minute || !r2.Record.StartTime.Time.Equal(t0) {
		t.Fatalf("clock reset or acted early: %+v requeue %v", r2.Record, r2.RequeueAfter)
	}
	// A new drain request (another rendered config) is a new clock.
	n2 := drainingNode("drain-rendered-y", "uncordon-rendered-x")
	r3 := Decide(in(t0.Add(2*time.Hour), n2, r.Record, pod("db", "db-0", map[string]string{"app": "db"})))
	if !r3.Record.StartTime.Time.Equal(t0.Add(2*time.Hour)) || len(r3.Actions) != 0 {
		t.Fatalf("new request kept the old clock: %+v", r3.Record)
	}
}

// TestEscalation walks one PDB-guarded pod with a finalizer through every
// step, each only after the step timeout, and then gives up on it.
func TestEscalation(t *testing.T) {
	n := drainingNode("drain-rendered-x", "")
	p := pod("db", "db-0", map[string]string{"app": "db"}, func(p *corev1.Pod) { p.Finalizers = []string{"example.com/keep"} })
	rec := Decide(in(t0, n, nil, p)).Record
	now := t0.Add(time.Hour)
	steps := []struct {
		after time.Duration
		want  commonv1alpha1.DrainStep
		grace *int64
	}{
		{0, commonv1alpha1.DrainStepDelete, nil},
		{2 * time.Minute, commonv1alpha1.DrainStepForceDelete, new(int64)},
		{2 * time.Minute, commonv1alpha1.DrainStepRemoveFinalizers, nil},
	}
	for i, s := range steps {
		// Just before the step is due nothing happens.
		if s.after > 0 {
			early := Decide(in(now.Add(s.after-time.Second), n, rec, p))
			if len(early.Actions) != 0 || early.RequeueAfter != time.Second {
				t.Fatalf("step %d acted %v (requeue %v) before its step timeout", i, early.Actions, early.RequeueAfter)
			}
			now = now.Add(s.after)
		}
		r := Decide(in(now, n, rec, p))
		if len(r.Actions) != 1 || r.Actions[0].Step != s.want || !reflect.DeepEqual(r.Actions[0].GracePeriod, s.grace) || r.Actions[0].UID != "db-db-0" {
			t.Fatalf("step %d: actions %+v, want %s grace %v", i, r.Actions, s.want, s.grace)
		}
		if !r.Blocked || r.Record.BlockingPods[0].Step != s.want || !r.Record.BlockingPods[0].StepTime.Time.Equal(now) {
			t.Fatalf("step %d: record %+v", i, r.Record.BlockingPods)
		}
		if s.want == commonv1alpha1.DrainStepDelete {
			p.DeletionTimestamp = &metav1.Time{Time: now} // the API marks it terminating
		}
		rec = r.Record
	}
	if rec.ForcedPods != 1 {
		t.Fatalf("forcedPods %d, want 1 (one pod)", rec.ForcedPods)
	}
	r := Decide(in(now.Add(2*time.Minute), n, rec, p))
	if len(r.Actions) != 0 || !reflect.DeepEqual(r.Stuck, []string{"db/db-0"}) {
		t.Fatalf("after every step: actions %v stuck %v", r.Actions, r.Stuck)
	}
}

func TestTerminatingPodWithoutFinalizersSkipsGracefulDelete(t *testing.T) {
	n := drainingNode("drain-rendered-x", "")
	p := pod("web", "web-0", nil, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} })
	rec := &commonv1alpha1.DrainRecord{Request: "drain-rendered-x", StartTime: metav1.NewTime(t0)}
	r := Decide(in(t0.Add(time.Hour), n, rec, p))
	if len(r.Actions) != 1 || r.Actions[0].Step != commonv1alpha1.DrainStepForceDelete {
		t.Fatalf("actions %+v", r.Actions)
	}
	r2 := Decide(in(t0.Add(time.Hour+2*time.Minute), n, r.Record, p))
	if len(r2.Actions) != 0 || len(r2.Stuck) != 1 {
		t.Fatalf("no finalizer to remove: actions %+v stuck %v", r2.Actions, r2.Stuck)
	}
}

func TestReplacedPodStartsOver(t *testing.T) {
	n := drainingNode("drain-rendered-x", "")
	p := pod("db", "db-0", nil)
	rec := &commonv1alpha1.DrainRecord{Request: "drain-rendered-x", StartTime: metav1.NewTime(t0),
		BlockingPods: []commonv1alpha1.BlockingPod{{Namespace: "db", Name: "db-0", UID: "old", Step: commonv1alpha1.DrainStepForceDelete, StepTime: &metav1.Time{Time: t0.Add(time.Hour)}}}}
	r := Decide(in(t0.Add(time.Hour+time.Minute), n, rec, p))
	if len(r.Actions) != 1 || r.Actions[0].Step != commonv1alpha1.DrainStepDelete || r.Actions[0].UID != "db-db-0" {
		t.Fatalf("a new pod of the same name must start with a graceful delete: %+v", r.Actions)
	}
}

func TestWhichPodsBlock(t *testing.T) {
	n := drainingNode("drain-rendered-x", "")
	ds := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: new(bool)}}
		*p.OwnerReferences[0].Controller = true
	}
	x := in(t0.Add(time.Hour), n, &commonv1alpha1.DrainRecord{Request: "drain-rendered-x", StartTime: metav1.NewTime(t0)},
		pod("web", "web-0", nil),
		pod("web", "done", nil, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod("web", "failed", nil, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
		pod("web", "elsewhere", nil, func(p *corev1.Pod) { p.Spec.NodeName = "w2" }),
		pod("openshift-dns", "dns", nil, ds),
		pod("kube-system", "static", nil, func(p *corev1.Pod) { p.Annotations = map[string]string{MirrorPodAnnotation: "x"} }),
		pod("openshift-monitoring", "prom", nil),
		pod("openshift", "keep-not-ignored", nil),
	)
	var err error
	x.Ignored, err = CompilePatterns("ignored", []string{"openshift-.*"})
	if err != nil {
		t.Fatal(err)
	}
	r := Decide(x)
	var got []string
	for _, a := range r.Actions {
		got = append(got, a.Namespace+"/"+a.Name)
	}
	// "openshift" does not match the anchored "openshift-.*".
	if want := []string{"openshift/keep-not-ignored", "web/web-0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("forced %v, want %v", got, want)
	}
	if _, err := CompilePatterns("ignored", []string{"("}); err == nil {
		t.Fatal("a bad pattern compiled")
	}
}

// A drain first looked at after the MCD moved on to the node's uncordon
// (its acknowledgement of the drain already replaced) is closed too, with
// what it forced; a record of an unacknowledged request of the same drain
// stays open.
func TestCompletionSeenLate(t *testing.T) {
	rec := &commonv1alpha1.DrainRecord{Request: "drain-rendered-x", StartTime: metav1.NewTime(t0), ForcedPods: 2}
	n := drainingNode("uncordon-rendered-x", "uncordon-rendered-x")
	r := Decide(in(t0.Add(time.Hour), n, rec))
	if !r.Completed || r.Record.CompletionTime == nil || r.Record.ForcedPods != 2 {
		t.Fatalf("late completion: %+v", r)
	}
	open := drainingNode("drain-rendered-x", "uncordon-rendered-old")
	if r := Decide(in(t0.Add(time.Hour), open, rec)); r.Completed || r.Record.CompletionTime != nil {
		t.Fatalf("closed while still draining: %+v", r)
	}
}

func TestCompletion(t *testing.T) {
	rec := &commonv1alpha1.DrainRecord{Request: "drain-rendered-x", StartTime: metav1.NewTime(t0), ForcedPods: 2,
		BlockingPods: []commonv1alpha1.BlockingPod{{Namespace: "db", Name: "db-0"}}}
	n := drainingNode("uncordon-rendered-x", "drain-rendered-x")
	n.Annotations[mcostate.DesiredDrain] = "drain-rendered-x"
	r := Decide(in(t0.Add(time.Hour), n, rec, pod("db", "db-0", nil)))
	if !r.Completed || r.Record.CompletionTime == nil || len(r.Record.BlockingPods) != 0 || r.Record.ForcedPods != 2 || len(r.Actions) != 0 {
		t.Fatalf("completion: %+v", r)
	}
	// Done once: the next pass keeps the record as it is.
	r2 := Decide(in(t0.Add(2*time.Hour), n, r.Record))
	if r2.Completed || !r2.Record.CompletionTime.Time.Equal(t0.Add(time.Hour)) {
		t.Fatalf("second pass: %+v", r2)
	}
}

// TestPDBMatching: selector semantics in the pod's namespace, unlike MUO,
// which matched any single matchLabels pair of any PDB of any namespace.
func TestPDBMatching(t *testing.T) {
	p := pod("db", "db-0", map[string]string{"app": "db", "tier": "data"})
	cases := []struct {
		name string
		pdb  policyv1.PodDisruptionBudget
		want bool
	}{
		{"all labels match", pdb("db", "a", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}), true},
		{"one pair of two matches (MUO's false positive)", pdb("db", "b", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db", "tier": "web"}}), false},
		{"other namespace (MUO's false positive)", pdb("other", "c", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}), false},
		{"matchExpressions (MUO ignored them)", pdb("db", "d", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"data"}}}}), true},
		{"matchExpressions not matching", pdb("db", "e", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"data"}}}}), false},
		{"empty selector: every pod of the namespace", pdb("db", "f", &metav1.LabelSelector{}), true},
		{"nil selector: none", pdb("db", "g", nil), false},
	}
	for _, c := range cases {
		got := len(MatchingPDBs(&p, []policyv1.PodDisruptionBudget{c.pdb})) == 1
		if got != c.want {
			t.Errorf("%s: matched %v, want %v", c.name, got, c.want)
		}
	}
}

// TestNeverBeforeTimeoutNorFasterThanSteps drives random pass times and pod
// churn and steps that randomly fail: no pod is acted on before the drain's
// timeout, no pod gets two steps within one step timeout, steps only go
// forward, and a delete is repeated exactly while the pod shows no effect.
func TestNeverBeforeTimeoutNorFasterThanSteps(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for round := 0; round < 200; round++ {
		n := drainingNode("drain-rendered-x", "")
		pods := []corev1.Pod{
			pod("db", "db-0", map[string]string{"app": "db"}, func(p *corev1.Pod) { p.Finalizers = []string{"f"} }),
			pod("web", "web-0", nil),
		}
		var rec *commonv1alpha1.DrainRecord
		now := t0
		last := map[string]time.Time{}
		order := map[commonv1alpha1.DrainStep]int{"": 0, commonv1alpha1.DrainStepDelete: 1, commonv1alpha1.DrainStepForceDelete: 2, commonv1alpha1.DrainStepRemoveFinalizers: 3}
		lastStep := map[string]commonv1alpha1.DrainStep{}
		failed := map[string]bool{}
		for pass := 0; pass < 40; pass++ {
			now = now.Add(time.Duration(rng.Intn(20)) * time.Minute)
			if rng.Intn(8) == 0 && len(pods) > 0 {
				pods = pods[1:] // a pod went away
			}
			r := Decide(in(now, n, rec, pods...))
			for _, a := range r.Actions {
				if now.Sub(t0) < time.Hour {
					t.Fatalf("round %d: acted at %s, before the timeout", round, now.Sub(t0))
				}
				if l, ok := last[a.Name]; ok && now.Sub(l) < 2*time.Minute {
					t.Fatalf("round %d: two steps on %s within the step timeout", round, a.Name)
				}
				terminating := false
				for _, p := range pods {
					terminating = terminating || (p.Name == a.Name && p.DeletionTimestamp != nil)
				}
				// A delete that failed (the pod not terminating) is taken
				// again, never escalated; one that worked is never repeated.
				if lastStep[a.Name] == commonv1alpha1.DrainStepDelete || (lastStep[a.Name] == commonv1alpha1.DrainStepForceDelete && a.Step == commonv1alpha1.DrainStepForceDelete) {
					if (a.Step == lastStep[a.Name]) != !terminating {
						t.Fatalf("round %d: %s after %q (terminating %v, failed %v): %q", round, a.Name, lastStep[a.Name], terminating, failed[a.Name], a.Step)
					}
				}
				if a.Step == lastStep[a.Name] && terminating {
					t.Fatalf("round %d: %s repeated %q though it took effect", round, a.Name, a.Step)
				}
				if a.Step != lastStep[a.Name] && order[a.Step] != order[lastStep[a.Name]]+1 && !(lastStep[a.Name] == "" && a.Step == commonv1alpha1.DrainStepForceDelete) {
					t.Fatalf("round %d: %s went from %q to %q", round, a.Name, lastStep[a.Name], a.Step)
				}
				last[a.Name], lastStep[a.Name] = now, a.Step
				if rng.Intn(3) == 0 {
					failed[a.Name] = true // the step never reached the API
					continue
				}
				failed[a.Name] = false
				for i := range pods {
					if pods[i].Name == a.Name && (a.Step == commonv1alpha1.DrainStepDelete || a.Step == commonv1alpha1.DrainStepForceDelete) && pods[i].DeletionTimestamp == nil {
						pods[i].DeletionTimestamp = &metav1.Time{Time: now}
					}
				}
			}
			rec = r.Record
		}
	}
}

// TestFailedStepRepeatedNotEscalated: the status records a step before it is
// taken, so a step that failed (or was never sent) looks taken. A delete the
// pod shows no sign of is taken again after the step timeout, never
// followed by the next, harsher one.
func TestFailedStepRepeatedNotEscalated(t *testing.T) {
	n := drainingNode("drain-rendered-x", "")
	for _, tc := range []struct {
		name string
		last commonv1alpha1.DrainStep
		// pod as seen after the step
		terminating bool
		finalizers  bool
		want        commonv1alpha1.DrainStep
		wantGrace   *int64
	}{
		{"delete failed", commonv1alpha1.DrainStepDelete, false, false, commonv1alpha1.DrainStepDelete, nil},
		{"delete worked", commonv1alpha1.DrainStepDelete, true, false, commonv1alpha1.DrainStepForceDelete, new(int64)},
		{"force delete failed", commonv1alpha1.DrainStepForceDelete, false, true, commonv1alpha1.DrainStepForceDelete, new(int64)},
		{"force delete failed, no finalizers", commonv1alpha1.DrainStepForceDelete, false, false, commonv1alpha1.DrainStepForceDelete, new(int64)},
		{"force delete worked, finalizers hold it", commonv1alpha1.DrainStepForceDelete, true, true, commonv1alpha1.DrainStepRemoveFinalizers, nil},
		{"force delete worked, nothing left", commonv1alpha1.DrainStepForceDelete, true, false, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod("db", "db-0", map[string]string{"app": "db"}, func(p *corev1.Pod) {
				if tc.terminating {
					p.DeletionTimestamp = &metav1.Time{Time: t0}
				}
				if tc.finalizers {
					p.Finalizers = []string{"example.com/keep"}
				}
			})
			stepAt := t0.Add(time.Hour)
			prev := &commonv1alpha1.DrainRecord{Request: "drain-rendered-x", StartTime: metav1.NewTime(t0), ForcedPods: 1,
				BlockingPods: []commonv1alpha1.BlockingPod{{Namespace: "db", Name: "db-0", UID: "db-db-0", Step: tc.last, StepTime: &metav1.Time{Time: stepAt}}}}
			// Within the step timeout nothing happens, repeat or not.
			if r := Decide(in(stepAt.Add(time.Minute), n, prev, p)); len(r.Actions) != 0 {
				t.Fatalf("acted within the step timeout: %+v", r.Actions)
			}
			now := stepAt.Add(2 * time.Minute)
			r := Decide(in(now, n, prev, p))
			if tc.want == "" {
				if len(r.Actions) != 0 || len(r.Stuck) != 1 {
					t.Fatalf("want stuck, got actions %+v stuck %v", r.Actions, r.Stuck)
				}
				return
			}
			if len(r.Actions) != 1 || r.Actions[0].Step != tc.want || !reflect.DeepEqual(r.Actions[0].GracePeriod, tc.wantGrace) {
				t.Fatalf("actions %+v, want %s grace %v", r.Actions, tc.want, tc.wantGrace)
			}
			b := r.Record.BlockingPods[0]
			if b.Step != tc.want || !b.StepTime.Time.Equal(now) || r.Record.ForcedPods != 1 {
				t.Fatalf("record %+v forced %d", b, r.Record.ForcedPods)
			}
		})
	}
}
