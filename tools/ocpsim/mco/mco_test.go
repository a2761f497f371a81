package mco

import (
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/tools/ocpsim/timescale"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type nodeOpt func(*corev1.Node)

func node(name, zone string, ageMin int, cfg string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""},
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Duration(ageMin) * time.Minute)),
			Annotations:       map[string]string{CurrentConfigAnnotation: cfg, DesiredConfigAnnotation: cfg, StateAnnotation: StateDone},
		},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	if zone != "" {
		n.Labels[mcostate.ZoneLabel] = zone
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func desired(c string) nodeOpt {
	return func(n *corev1.Node) { n.Annotations[DesiredConfigAnnotation] = c }
}
func state(s string) nodeOpt  { return func(n *corev1.Node) { n.Annotations[StateAnnotation] = s } }
func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }
func notReady(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
func withLabels(kv ...string) nodeOpt {
	return func(n *corev1.Node) {
		for i := 0; i < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

func pool(name, target string, maxU *intstr.IntOrString) *mcfgv1.MachineConfigPool {
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.Configuration.Name = target
	p.Spec.MaxUnavailable = maxU
	p.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}}
	return p
}

func names(ns []*corev1.Node) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.Name)
	}
	return strings.Join(s, ",")
}

func TestCandidates(t *testing.T) {
	two := intstr.FromInt32(2)
	half := intstr.FromString("50%")
	cases := []struct {
		name  string
		maxU  *intstr.IntOrString
		nodes []*corev1.Node
		want  string
	}{
		{"zone first then oldest", &two, []*corev1.Node{
			node("c", "zone-b", 100, "old"), node("a", "zone-a", 1, "old"), node("b", "zone-a", 50, "old"), node("d", "", 500, "old"),
		}, "b,a"},
		{"no zone label last", intstr.ValueOrDefault(nil, intstr.FromInt32(4)), []*corev1.Node{
			node("nozone", "", 500, "old"), node("z", "zone-c", 1, "old"),
		}, "z,nozone"},
		{"default maxUnavailable is 1", nil, []*corev1.Node{node("a", "z", 1, "old"), node("b", "z", 2, "old")}, "b"},
		{"never a cordoned node, which also uses capacity", &two, []*corev1.Node{
			node("a", "z", 9, "old", cordoned), node("b", "z", 1, "old"), node("c", "z", 2, "old"),
		}, "c"},
		{"not-ready nodes are not candidates and use capacity", &two, []*corev1.Node{
			node("a", "z", 9, "old", notReady), node("b", "z", 1, "old"),
		}, "b"},
		{"node in progress uses capacity", nil, []*corev1.Node{
			node("a", "z", 9, "old", desired("new"), state(StateWorking)), node("b", "z", 1, "old"),
		}, ""},
		{"failing node on target counts against capacity", &two, []*corev1.Node{
			node("a", "z", 9, "old", desired("new"), state(StateDegraded)), node("b", "z", 1, "old"), node("c", "z", 2, "old"),
		}, "c"},
		{"all updated", nil, []*corev1.Node{node("a", "z", 1, "new")}, ""},
		{"percent rounds down but at least one", &half, []*corev1.Node{
			node("a", "z", 1, "old"), node("b", "z", 2, "old"), node("c", "z", 3, "old"),
		}, "c"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := names(Candidates(pool("worker", "new", c.maxU), c.nodes)); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
	paused := pool("worker", "new", nil)
	paused.Spec.Paused = true
	if got := Candidates(paused, []*corev1.Node{node("a", "z", 1, "old")}); len(got) != 0 {
		t.Errorf("paused pool targeted %s", names(got))
	}
}

func TestUnavailableReason(t *testing.T) {
	cases := map[string]struct {
		n    *corev1.Node
		want string
	}{
		"done":           {node("a", "", 0, "x"), ""},
		"not ready":      {node("a", "", 0, "x", notReady), "Not ready"},
		"cordoned":       {node("a", "", 0, "x", cordoned), "Node is marked unschedulable"},
		"working":        {node("a", "", 0, "x", desired("y"), state(StateWorking)), "Machine Config Daemon is processing the node"},
		"degraded":       {node("a", "", 0, "x", desired("y"), state(StateDegraded)), ""},
		"unreconcilable": {node("a", "", 0, "x", desired("y"), state(StateUnreconcilable)), ""},
	}
	for name, c := range cases {
		if got := UnavailableReason(c.n); got != c.want {
			t.Errorf("%s: got %q want %q", name, got, c.want)
		}
	}
}

func TestPoolFor(t *testing.T) {
	pools := []*mcfgv1.MachineConfigPool{pool("master", "", nil), pool("worker", "", nil), pool("infra", "", nil), pool("gpu", "", nil)}
	cases := []struct {
		labels []string
		want   string
		err    bool
	}{
		{[]string{}, "worker", false},
		{[]string{"node-role.kubernetes.io/infra", ""}, "infra", false},
		{[]string{"node-role.kubernetes.io/master", "", "node-role.kubernetes.io/infra", ""}, "master", false},
		{[]string{"node-role.kubernetes.io/gpu", "", "node-role.kubernetes.io/infra", ""}, "", true},
	}
	for _, c := range cases {
		n := node("n", "", 0, "x", withLabels(c.labels...))
		got, err := PoolFor(n, pools)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("labels %v: got %q, %v", c.labels, got, err)
		}
	}
	n := node("n", "", 0, "x")
	n.Labels = map[string]string{}
	if got, _ := PoolFor(n, pools); got != "" {
		t.Errorf("unlabelled node in pool %q", got)
	}
}

func TestPoolsOfNodes(t *testing.T) {
	pools := []*mcfgv1.MachineConfigPool{pool("master", "", nil), pool("worker", "", nil), pool("infra", "", nil), pool("gpu", "", nil)}
	infra := node("n", "", 0, "x", withLabels("node-role.kubernetes.io/infra", ""))
	worker := node("n", "", 0, "x")
	master := node("n", "", 0, "x", withLabels("node-role.kubernetes.io/master", ""))
	twoCustom := node("n", "", 0, "x", withLabels("node-role.kubernetes.io/gpu", "", "node-role.kubernetes.io/infra", ""))
	none := node("n", "", 0, "x")
	none.Labels = map[string]string{}
	cases := []struct {
		name  string
		nodes []*corev1.Node
		want  []string
	}{
		{"a change within the worker pool syncs it alone", []*corev1.Node{worker, worker}, []string{"worker"}},
		{"a node moved by its labels syncs the pool it left and the one it joined", []*corev1.Node{infra, worker}, []string{"infra", "worker"}},
		{"a master syncs the master pool only", []*corev1.Node{master}, []string{"master"}},
		{"a node in no pool syncs none", []*corev1.Node{none, none}, nil},
		{"a node of two custom pools syncs every pool", []*corev1.Node{worker, twoCustom}, []string{"master", "worker", "infra", "gpu"}},
	}
	for _, c := range cases {
		if got := PoolsOfNodes(pools, c.nodes...); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSelectorChanged(t *testing.T) {
	a := pool("infra", "", nil)
	b := a.DeepCopy()
	b.Status.MachineCount = 3
	b.Spec.Paused = true
	if SelectorChanged(a, b) {
		t.Error("a status or pause change reported as a selector change")
	}
	b.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"example.com/x": ""}}
	if !SelectorChanged(a, b) {
		t.Error("a new node selector not reported")
	}
}

func TestPoolStatus(t *testing.T) {
	now := metav1.NewTime(t0)
	p := pool("worker", "new", nil)
	p.Status.Configuration.Name = "old"
	st := PoolStatus(p, []*corev1.Node{
		node("a", "", 0, "new"),
		node("b", "", 0, "old", desired("new"), state(StateWorking), cordoned),
		node("c", "", 0, "old", desired("new"), state(StateDegraded), func(n *corev1.Node) { n.Annotations[ReasonAnnotation] = "boom" }),
	}, now)
	if st.MachineCount != 3 || st.UpdatedMachineCount != 1 || st.ReadyMachineCount != 1 || st.UnavailableMachineCount != 1 || st.DegradedMachineCount != 1 {
		t.Fatalf("counts wrong: %+v", st)
	}
	if c := PoolCondition(&st, mcfgv1.MachineConfigPoolUpdating); c.Status != corev1.ConditionTrue || c.Message != "All nodes are updating to MachineConfig new" {
		t.Errorf("Updating = %+v", c)
	}
	if c := PoolCondition(&st, mcfgv1.MachineConfigPoolNodeDegraded); c.Status != corev1.ConditionTrue || c.Reason != "1 nodes are reporting degraded status on sync" || c.Message != `Node c is reporting: "boom"` {
		t.Errorf("NodeDegraded = %+v", c)
	}
	if c := PoolCondition(&st, mcfgv1.MachineConfigPoolDegraded); c.Status != corev1.ConditionTrue {
		t.Errorf("Degraded = %+v", c)
	}
	if st.Configuration.Name != "old" {
		t.Errorf("status.configuration moved before the pool finished: %q", st.Configuration.Name)
	}

	p.Status = st
	later := metav1.NewTime(t0.Add(time.Minute))
	st2 := PoolStatus(p, []*corev1.Node{node("a", "", 0, "new"), node("b", "", 0, "new"), node("c", "", 0, "new")}, later)
	if c := PoolCondition(&st2, mcfgv1.MachineConfigPoolUpdated); c.Status != corev1.ConditionTrue || c.Message != "All nodes are updated with MachineConfig new" || !c.LastTransitionTime.Equal(&later) {
		t.Errorf("Updated = %+v", c)
	}
	if st2.Configuration.Name != "new" || st2.DegradedMachineCount != 0 {
		t.Errorf("final status wrong: %+v", st2)
	}
	st3 := PoolStatus(&mcfgv1.MachineConfigPool{ObjectMeta: p.ObjectMeta, Spec: p.Spec, Status: st2}, []*corev1.Node{node("a", "", 0, "new")}, metav1.NewTime(t0.Add(time.Hour)))
	if c := PoolCondition(&st3, mcfgv1.MachineConfigPoolUpdated); !c.LastTransitionTime.Equal(&later) {
		t.Errorf("lastTransitionTime moved without a transition")
	}

	paused := pool("worker", "new", nil)
	paused.Spec.Paused = true
	st4 := PoolStatus(paused, []*corev1.Node{node("a", "", 0, "old")}, now)
	if c := PoolCondition(&st4, mcfgv1.MachineConfigPoolUpdating); c.Status != corev1.ConditionFalse || c.Message != "Pool is paused; will not update to new" {
		t.Errorf("paused Updating = %+v", c)
	}
}

func TestRender(t *testing.T) {
	var all []*mcfgv1.MachineConfig
	for _, r := range []string{"master", "worker"} {
		all = append(all, BaseConfigs(r, "4.16.1")...)
		all = append(all, UserConfigs(r)...)
	}
	worker := pool("worker", "", nil)
	worker.Spec.MachineConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{RoleLabel: "worker"}}
	infra := pool("infra", "", nil)
	infra.Spec.MachineConfigSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: RoleLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"worker", "infra"}}}}
	master := pool("master", "", nil)
	master.Spec.MachineConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{RoleLabel: "master"}}

	w, err := Render(worker, all, "4.16.1")
	if err != nil {
		t.Fatal(err)
	}
	i, _ := Render(infra, all, "4.16.1")
	m, _ := Render(master, all, "4.16.1")
	if !strings.HasPrefix(w.Name, "rendered-worker-") || !strings.HasPrefix(i.Name, "rendered-infra-") {
		t.Fatalf("names %s %s", w.Name, i.Name)
	}
	if !SameContent(w.Name, i.Name) {
		t.Errorf("worker and infra select the same sources but differ: %s %s", w.Name, i.Name)
	}
	if SameContent(w.Name, m.Name) {
		t.Errorf("master and worker render equal content")
	}
	if w.Annotations[ReleaseImageVersionAnnot] != "4.16.1" {
		t.Errorf("release annotation %v", w.Annotations)
	}
	w2, _ := Render(worker, all, "")
	if w2.Annotations[ReleaseImageVersionAnnot] != "4.16.1" {
		t.Errorf("release not derived from sources: %v", w2.Annotations)
	}
	if w2.Name != w.Name {
		t.Errorf("render not deterministic")
	}
	next := append(BaseConfigs("worker", "4.16.2"), UserConfigs("worker")...)
	w3, _ := Render(worker, next, "4.16.2")
	if w3.Name == w.Name {
		t.Errorf("a new release did not change the rendered config")
	}
	empty := pool("gpu", "", nil)
	empty.Spec.MachineConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{RoleLabel: "gpu"}}
	if _, err := Render(empty, all, "4.16.1"); err == nil {
		t.Errorf("rendering a pool without sources succeeded")
	}
}

func TestNextStepRebootSequence(t *testing.T) {
	const old, nu = "rendered-worker-aaa", "rendered-worker-bbb"
	v := DaemonView{Current: old, Desired: old, State: StateDone, DesiredDrain: "uncordon-" + old, LastAppliedDrain: "uncordon-" + old, Ready: true}
	if s := NextStep(v); s != StepNone {
		t.Fatalf("idle node: %v", s)
	}
	v.Desired = nu
	// Walk the whole sequence, applying what each actor would write.
	want := []Step{StepWorking, StepRequestDrain, StepWaitDrain, StepReboot, StepWaitReboot, StepBooted, StepRequestUncordon, StepWaitUncordon, StepDone, StepNone}
	for i, w := range want {
		got := NextStep(v)
		if got != w {
			t.Fatalf("step %d: got %v want %v (view %+v)", i, got, w, v)
		}
		switch got {
		case StepWorking:
			v.State = StateWorking
		case StepRequestDrain:
			v.DesiredDrain = "drain-" + nu
		case StepWaitDrain:
			v.LastAppliedDrain = "drain-" + nu // drain controller
		case StepReboot:
			v.PostConfig, v.OnDisk, v.Ready = PostConfigRebooting, nu, false
		case StepWaitReboot:
			v.Ready = true // kubelet back
		case StepBooted:
			v.PostConfig = ""
		case StepRequestUncordon:
			v.DesiredDrain = "uncordon-" + nu
		case StepWaitUncordon:
			v.LastAppliedDrain = "uncordon-" + nu
		case StepDone:
			v.Current, v.State = nu, StateDone
		}
	}
}

func TestNextStepRebootless(t *testing.T) {
	const from, to = "rendered-worker-samehash", "rendered-infra-samehash"
	v := DaemonView{Current: from, Desired: to, State: StateDone, DesiredDrain: "uncordon-" + from, LastAppliedDrain: "uncordon-" + from, Ready: true}
	want := []Step{StepWorking, StepRequestUncordon, StepWaitUncordon, StepDone}
	for i, w := range want {
		got := NextStep(v)
		if got != w {
			t.Fatalf("step %d: got %v want %v", i, got, w)
		}
		switch got {
		case StepWorking:
			v.State = StateWorking
		case StepRequestUncordon:
			v.DesiredDrain = "uncordon-" + to
		case StepWaitUncordon:
			v.LastAppliedDrain = "uncordon-" + to
		case StepDone:
			v.Current, v.State = to, StateDone
		}
	}
}

func TestNextStepFailures(t *testing.T) {
	base := DaemonView{Current: "rendered-w-a", Desired: "rendered-w-b", State: StateDone, Ready: true}
	u := base
	u.Unreconcilable = true
	if s := NextStep(u); s != StepUnreconcilable {
		t.Errorf("unreconcilable: %v", s)
	}
	u.State = StateUnreconcilable
	if s := NextStep(u); s != StepNone {
		t.Errorf("unreconcilable twice: %v", s)
	}
	// A node degraded by a failed drain continues once the drain goes through.
	d := base
	d.State, d.DesiredDrain, d.LastAppliedDrain = StateDegraded, "drain-rendered-w-b", "drain-rendered-w-b"
	if s := NextStep(d); s != StepReboot {
		t.Errorf("degraded then drained: %v", s)
	}
	d.LastAppliedDrain = "uncordon-rendered-w-a"
	if s := NextStep(d); s != StepWaitDrain {
		t.Errorf("degraded, still draining: %v", s)
	}
	if s := NextStep(DaemonView{}); s != StepNone {
		t.Errorf("unmanaged node: %v", s)
	}
}

// TestPoolSyncWaitsTheMCOsUpdateDelay: a pool's sync is queued PoolSyncDelay
// after the event that asks for it, and a later event meanwhile does not
// push it back (the MCO's enqueueDefault on a delaying queue).
func TestPoolSyncWaitsTheMCOsUpdateDelay(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Clock: clk})
	defer q.ShutDown()
	worker := reconcile.Request{NamespacedName: types.NamespacedName{Name: "worker"}}
	s := &sim{o: Options{Scale: timescale.New(1), Durations: Durations{PoolSyncDelay: 5 * time.Second}}}

	s.queuePoolSync(q, worker)
	clk.Step(2 * time.Second)
	s.queuePoolSync(q, worker)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d syncs queued before the delay passed", n)
	}
	clk.Step(3 * time.Second)
	// The delaying queue moves a due item on its own goroutine.
	for deadline := time.Now().Add(10 * time.Second); q.Len() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no sync queued 5 s after the first event: the second pushed it back")
		}
		runtime.Gosched()
	}

	now := &sim{o: Options{Scale: timescale.New(1)}}
	q2 := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q2.ShutDown()
	now.queuePoolSync(q2, worker)
	if q2.Len() != 1 {
		t.Fatal("without a delay the sync is not queued at once")
	}
}
