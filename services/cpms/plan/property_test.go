package plan

import (
	"fmt"
	"maps"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	libnodes "github.com/upshift-io/upshift/libs/nodes"
)

// TestPlannerProperties plays random histories: template changes (good and
// faulty), replacements that fail or never finish, machines a person deletes,
// nodes that flap, operators that degrade, pauses, clock jumps, and a
// planner that often sees a cache lagging up to three steps behind (though
// always containing its own writes, as the reconciler's expectations
// ensure).
// After every action:
//
//   - never more than replicas+1 machines exist (one surge);
//   - never more than one index holds more than one machine;
//   - a machine is deleted only if its index keeps another machine, and
//     unless it has failed, another live machine that is Running with a
//     Ready Node and carries the etcd quorum hook (so the set never drops
//     an index below a serving member: never below quorum on our account);
//   - a healthy machine is deleted only while no other machine is deleting;
//   - the etcd members voting never fall below quorum.
//
// Then the cluster cooperates, and the rollout must finish: every index one
// up-to-date, ready machine and the conditions saying so.
//
// Each seed is a subtest: `go test -run 'TestPlannerProperties/^17$'`
// replays seed 17. CPMS_PROPERTY_RUNS sets the number of seeds (default 300).
func TestPlannerProperties(t *testing.T) {
	runs := 300
	if v, err := strconv.Atoi(os.Getenv("CPMS_PROPERTY_RUNS")); err == nil && v > 0 {
		runs = v
	}
	stats = map[string]int{}
	for seed := int64(0); seed < int64(runs); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { randomHistory(t, seed) })
	}
	t.Logf("%d histories: %d plans, %d on a lagging cache; actions: %d creates, %d deletes, %d remediations, %d adoptions; %d deletes checked against the safety rules",
		runs, stats["plans"], stats["lagging"], stats[string(CreateMachine)], stats[string(DeleteMachine)], stats[string(Remediate)], stats[string(Adopt)], stats["checked"])
}

// stats counts what the histories exercised, so a change that makes them
// vacuous (no deletes, no lag) shows in -v output.
var stats map[string]int

type state struct {
	machines map[string]*machinev1beta1.Machine
	nodes    map[string]*corev1.Node
}

func (w *world) snapshot() state {
	s := state{machines: map[string]*machinev1beta1.Machine{}, nodes: map[string]*corev1.Node{}}
	for k, m := range w.machines {
		s.machines[k] = m.DeepCopy()
	}
	for k, n := range w.nodes {
		s.nodes[k] = n.DeepCopy()
	}
	return s
}

// view is what a lagging cache shows: an old state, plus the planner's own
// writes since.
// deleted is keyed by UID: a deterministic name can come back on a new machine.
func (w *world) view(old state, created, deleted map[string]bool) Input {
	in := Input{CPMS: w.cpms.DeepCopy(), Config: w.cfg, Now: w.now, ClusterOperators: w.cos}
	ms := map[string]*machinev1beta1.Machine{}
	for k, m := range old.machines {
		ms[k] = m
	}
	for name := range created {
		if _, ok := ms[name]; !ok && w.machines[name] != nil {
			ms[name] = w.machines[name]
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ms)) {
		m := *ms[name].DeepCopy()
		if deleted[string(m.UID)] && m.DeletionTimestamp == nil {
			m.DeletionTimestamp = ptr(metav1.NewTime(w.now))
		}
		in.Machines = append(in.Machines, m)
	}
	for _, name := range slices.Sorted(maps.Keys(old.nodes)) {
		in.Nodes = append(in.Nodes, *old.nodes[name].DeepCopy())
	}
	return in
}

func randomHistory(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	replicas := []int{3, 3, 5}[rng.Intn(3)]
	var layout []string
	base := []int{0, 0, 2, 3}[rng.Intn(4)]
	zs := "abc"
	for i := 0; i < replicas; i++ {
		layout = append(layout, fmt.Sprintf("%d%c", base+i, zs[rng.Intn(3)]))
	}
	w := newWorld(t, machinesAt(layout...))
	w.cpms.Spec.Replicas = ptr(int32(replicas))
	if rng.Intn(2) == 0 {
		onDelete(w)
	}
	w.cfg.ProgressDeadline = 30 * time.Minute
	if rng.Intn(2) == 0 {
		w.cfg.Remediation = Remediation{Enabled: true, MaxRetries: rng.Intn(4), RetryPeriod: time.Duration(rng.Intn(10)) * time.Minute}
	}
	quorum := replicas/2 + 1
	types := []string{"m6i.xlarge", "m6i.2xlarge", "m6i.4xlarge"}
	created, deleted := map[string]bool{}, map[string]bool{}
	history := []state{w.snapshot()}
	fatal := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d (%s, %d replicas, remediation %+v): %s\n%s", seed, w.cpms.Spec.Strategy.Type, replicas, w.cfg.Remediation, fmt.Sprintf(format, args...), w.tail())
	}

	step := func(lag int) {
		t.Helper()
		if lag >= len(history) {
			lag = len(history) - 1
		}
		in := w.view(history[len(history)-1-lag], created, deleted)
		out := Plan(in)
		stats["plans"]++
		if lag > 0 {
			stats["lagging"]++
		}
		w.cpms.Status = out.Status
		w.trace = append(w.trace, fmt.Sprintf("%s plan(lag %d): %s | %s", w.now.Format("Jan2 15:04"), lag, describe(out.Action), w.summary()))
		a := out.Action
		if a == nil {
			return
		}
		stats[string(a.Kind)]++
		if a.Kind == DeleteMachine || a.Kind == Remediate {
			checkDelete(in, a, fatal)
			stats["checked"]++
		}
		w.apply(a)
		switch a.Kind {
		case CreateMachine:
			created[a.Machine.Name] = true
		case DeleteMachine, Remediate:
			deleted[string(a.Target.UID)] = true
		}
		if n := len(w.machines); n > replicas+1 {
			fatal("%d machines after %s", n, describe(a))
		}
		multi := map[int]int{}
		for name := range w.machines {
			i, _ := strconv.Atoi(name[strings.LastIndex(name, "-")+1:])
			multi[i]++
		}
		inFlight := 0
		for _, n := range multi {
			if n > 1 {
				inFlight++
			}
		}
		if inFlight > 1 {
			fatal("%d indexes hold more than one machine after %s", inFlight, describe(a))
		}
	}

	for i := 0; i < 150; i++ {
		switch r := rng.Intn(20); {
		case r < 7:
			lag := 0
			if rng.Intn(3) == 0 {
				lag = 1 + rng.Intn(3)
			}
			step(lag)
		case r < 10:
			w.mao()
		case r < 12:
			w.ceo()
		case r == 12:
			// The template changes; now and then to a spec that cannot provision.
			if rng.Intn(4) == 0 {
				w.setInstanceType("bad")
			} else {
				w.setInstanceType(types[rng.Intn(len(types))])
			}
		case r == 13:
			// A machine fails: a replacement rejected, or an instance vanished.
			if name := pick(rng, w.machines); name != "" && w.machines[name].DeletionTimestamp == nil {
				if p := w.machines[name].Status.Phase; p == nil || *p != machinev1beta1.PhaseRunning || rng.Intn(4) == 0 {
					w.fail(name, "chaos")
				}
			}
		case r == 14:
			// A node flaps, recently or long ago.
			if name := pick(rng, w.nodes); name != "" {
				s := corev1.ConditionTrue
				if w.nodes[name].Status.Conditions[0].Status == corev1.ConditionTrue {
					s = []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionUnknown}[rng.Intn(2)]
				}
				w.setNodeReady(name, s, w.now.Add(-time.Duration(rng.Intn(40))*time.Minute))
			}
		case r == 15:
			if rng.Intn(3) == 0 {
				if name := pick(rng, w.machines); name != "" {
					w.userDelete(name)
				}
			}
		case r == 16:
			w.degradeOperator([]string{"etcd", "kube-apiserver"}[rng.Intn(2)], rng.Intn(2) == 0)
		case r == 17:
			if rng.Intn(3) == 0 {
				if w.cpms.Annotations == nil {
					w.cpms.Annotations = map[string]string{}
				}
				if w.cpms.Annotations[PausedAnnotation] == "true" {
					delete(w.cpms.Annotations, PausedAnnotation)
				} else {
					w.cpms.Annotations[PausedAnnotation] = "true"
				}
			}
		default:
			w.now = w.now.Add(time.Duration(rng.Intn(45)) * time.Minute)
		}
		if v := w.voting(); v < quorum {
			fatal("%d voting etcd members, quorum is %d", v, quorum)
		}
		w.now = w.now.Add(time.Minute)
		history = append(history, w.snapshot())
	}

	// The cluster cooperates: a good template, healthy nodes and operators,
	// no pause, and a person who deletes what the set leaves to people
	// (failed machines without remediation, outdated ones under OnDelete).
	w.setInstanceType("m6i.8xlarge")
	delete(w.cpms.Annotations, PausedAnnotation)
	w.degradeOperator("etcd", false)
	w.degradeOperator("kube-apiserver", false)
	for i := 0; i < 600; i++ {
		for name, n := range w.nodes {
			if n.Status.Conditions[0].Status != corev1.ConditionTrue {
				w.setNodeReady(name, corev1.ConditionTrue, w.now)
			}
		}
		if i%5 == 4 {
			person(w)
		}
		step(0)
		history = append(history, w.snapshot())
		w.mao()
		w.ceo()
		w.now = w.now.Add(time.Minute)
		if done(w) {
			break
		}
	}
	if !done(w) {
		fatal("the rollout never finished: %s; conditions %v", w.summary(), w.cpms.Status.Conditions)
	}
}

func pick[T any](rng *rand.Rand, m map[string]T) string {
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) == 0 {
		return ""
	}
	return keys[rng.Intn(len(keys))]
}

// person deletes machines the set will not: failed ones and, under OnDelete,
// outdated ones (one per visit).
func person(w *world) {
	for _, name := range slices.Sorted(maps.Keys(w.machines)) {
		m := w.machines[name]
		if m.DeletionTimestamp != nil {
			continue
		}
		failed := m.Status.Phase != nil && *m.Status.Phase == machinev1beta1.PhaseFailed
		outdated := !strings.Contains(string(m.Spec.ProviderSpec.Value.Raw), "m6i.8xlarge")
		stuck := m.Status.Phase != nil && *m.Status.Phase != machinev1beta1.PhaseRunning && !strings.Contains(string(m.Spec.ProviderSpec.Value.Raw), "m6i.8xlarge")
		if failed || stuck || (outdated && w.cpms.Spec.Strategy.Type == machinev1.OnDelete) {
			w.userDelete(name)
			return
		}
	}
}

func done(w *world) bool {
	replicas := int(*w.cpms.Spec.Replicas)
	if len(w.machines) != replicas {
		return false
	}
	for _, m := range w.machines {
		if m.DeletionTimestamp != nil || m.Status.Phase == nil || *m.Status.Phase != machinev1beta1.PhaseRunning ||
			!strings.Contains(string(m.Spec.ProviderSpec.Value.Raw), "m6i.8xlarge") {
			return false
		}
	}
	st := w.cpms.Status
	for _, c := range []struct {
		t string
		s metav1.ConditionStatus
	}{{ConditionAvailable, metav1.ConditionTrue}, {ConditionDegraded, metav1.ConditionFalse}, {ConditionProgressing, metav1.ConditionFalse}} {
		if cond := w.cond(c.t); cond == nil || cond.Status != c.s {
			return false
		}
	}
	return st.UpdatedReplicas == int32(replicas) && st.ReadyReplicas == int32(replicas) && st.UnavailableReplicas == 0
}

// checkDelete holds a delete to the safety rules, against the snapshot the
// planner decided on.
func checkDelete(in Input, a *Action, fatal func(string, ...any)) {
	var target *machinev1beta1.Machine
	for i := range in.Machines {
		if in.Machines[i].Name == a.Target.Name {
			target = &in.Machines[i]
		}
	}
	if target == nil {
		fatal("deleting %s, which the planner cannot see", a.Target.Name)
		return
	}
	if target.DeletionTimestamp != nil {
		fatal("deleting %s again", target.Name)
	}
	idx := target.Name[strings.LastIndex(target.Name, "-"):]
	nodes := map[string]*corev1.Node{}
	for i := range in.Nodes {
		nodes[in.Nodes[i].Name] = &in.Nodes[i]
	}
	others, keepers := 0, 0
	for _, m := range in.Machines {
		if m.Name == target.Name {
			continue
		}
		if m.DeletionTimestamp != nil && a.Kind == DeleteMachine && !(target.Status.Phase != nil && *target.Status.Phase == machinev1beta1.PhaseFailed) {
			fatal("deleting healthy %s while %s is deleting", target.Name, m.Name)
		}
		if !strings.HasSuffix(m.Name, idx) {
			continue
		}
		others++
		n := nodes[m.Name]
		if m.DeletionTimestamp == nil && m.Status.Phase != nil && *m.Status.Phase == machinev1beta1.PhaseRunning && hasEtcdHook(&m) &&
			n != nil && libnodes.Ready(n) {
			keepers++
		}
	}
	if others == 0 {
		fatal("deleting %s, the only machine of its index", target.Name)
	}
	broken := target.Status.Phase == nil || *target.Status.Phase != machinev1beta1.PhaseRunning
	if !broken && keepers == 0 {
		fatal("deleting %s (phase Running) without a Running, Ready, etcd-hooked machine left in its index", target.Name)
	}
}
