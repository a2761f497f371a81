package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/upshift-io/upshift/services/nodegate/plan"
)

// gatedDo is an action executor whose every call blocks until the test
// lets it end, recording the order in which calls began.
type gatedDo struct {
	mu      sync.Mutex
	started []plan.Action
	begun   chan plan.Action
	release map[string]chan error // by objectOf
	// running counts the calls in progress per object; overlaps records a
	// call that began while another on its object was in progress.
	running  map[string]int
	overlaps []string
}

func newGatedDo() *gatedDo {
	return &gatedDo{begun: make(chan plan.Action, 100), release: map[string]chan error{}, running: map[string]int{}}
}

func (g *gatedDo) gate(obj string) chan error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.release[obj] == nil {
		g.release[obj] = make(chan error, 10)
	}
	return g.release[obj]
}

func (g *gatedDo) do(_ context.Context, a plan.Action) error {
	obj := objectOf(a)
	g.mu.Lock()
	g.started = append(g.started, a)
	if g.running[obj] > 0 {
		g.overlaps = append(g.overlaps, string(a.Kind)+" "+obj)
	}
	g.running[obj]++
	g.mu.Unlock()
	g.begun <- a
	err := <-g.gate(obj)
	g.mu.Lock()
	g.running[obj]--
	g.mu.Unlock()
	return err
}

func (g *gatedDo) calls() []plan.Action {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]plan.Action(nil), g.started...)
}

func waitBegun(t *testing.T, g *gatedDo) plan.Action {
	t.Helper()
	select {
	case a := <-g.begun:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no action began")
		return plan.Action{}
	}
}

// settle waits until every action handed to r has ended and checks how
// many calls were made so far.
func settle(t *testing.T, r *actionRunner, g *gatedDo, want int, why string) {
	t.Helper()
	if err := r.Idle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(g.calls()); n != want {
		t.Fatalf("%d calls, want %d%s: %+v", n, want, why, g.calls())
	}
}

var runKey = types.NamespacedName{Namespace: "ns", Name: "run"}

func release(node, mark string) plan.Action {
	return plan.Action{Kind: plan.UnlabelNode, Label: plan.HoldLabel, Node: node, Pool: "worker", ReleaseMark: mark}
}

func hold(node string) plan.Action {
	return plan.Action{Kind: plan.LabelNode, Label: plan.HoldLabel, Node: node, Pool: "worker"}
}

func hookJob(name string) plan.Action {
	return plan.Action{Kind: plan.CreateJob, Job: &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "hooks", Name: name}}}
}

func TestActionRunnerGoesOutAtOnceAndIdleWaitsForIt(t *testing.T) {
	g := newGatedDo()
	r := newActionRunner(g.do)
	r.Go(runKey, []plan.Action{release("a", "m"), hookJob("j")})
	// Both are in flight although neither has ended: the pass that handed
	// them over is not held by them.
	got := map[string]bool{objectOf(waitBegun(t, g)): true, objectOf(waitBegun(t, g)): true}
	if !got["node/a"] || !got["job/hooks/j"] {
		t.Fatalf("in flight: %v, want node/a and job/hooks/j", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := r.Idle(ctx); err == nil {
		t.Fatal("Idle returned while two actions were in flight")
	}
	g.gate("node/a") <- nil
	g.gate("job/hooks/j") <- nil
	if err := r.Idle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if errs := r.Failures(runKey); len(errs) != 0 {
		t.Fatalf("failures %v, want none", errs)
	}
}

func TestActionRunnerSendsAnActionInFlightOnce(t *testing.T) {
	g := newGatedDo()
	r := newActionRunner(g.do)
	r.Go(runKey, []plan.Action{release("a", "m")})
	waitBegun(t, g)
	// The next passes, planned before the cache shows the release, ask for
	// it again, and for the same Job twice.
	r.Go(runKey, []plan.Action{release("a", "m"), hookJob("j")})
	r.Go(runKey, []plan.Action{release("a", "m"), hookJob("j")})
	waitBegun(t, g)
	g.gate("node/a") <- nil
	g.gate("job/hooks/j") <- nil
	settle(t, r, g, 2, " (one release, one Job create)")
	// Once ended, asking again sends again (the cache may still lag, and
	// the write may have been undone since).
	r.Go(runKey, []plan.Action{release("a", "m")})
	waitBegun(t, g)
	g.gate("node/a") <- nil
	settle(t, r, g, 3, "")
}

// A pass that read its input before a release succeeded asks for it again
// (its cache did not show it): that is done already. A pass that read after
// the release asks for what its input shows, and is obeyed: a failed
// release, or one made before it read, is not remembered.
func TestActionRunnerSkipsWhatSucceededSinceThePassRead(t *testing.T) {
	g := newGatedDo()
	r := newActionRunner(g.do)
	before := time.Now()
	r.GoReadAt(runKey, []plan.Action{release("a", "m"), release("b", "m")}, before)
	waitBegun(t, g)
	waitBegun(t, g)
	g.gate("node/a") <- nil
	g.gate("node/b") <- errors.New("conflict")
	if err := r.Idle(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Read before both ended: a's release is done, b's failed. (Should a
	// go out again, it ends at once, and the count below says so.)
	g.gate("node/a") <- nil
	r.GoReadAt(runKey, []plan.Action{release("a", "m"), release("b", "m"), hold("c")}, before)
	waitBegun(t, g)
	waitBegun(t, g)
	g.gate("node/b") <- nil
	g.gate("node/c") <- nil
	settle(t, r, g, 4, " (a once, b twice, c)")
	// Read after a's release: what the pass asks for goes out (and ends on
	// the gate opened above).
	r.GoReadAt(runKey, []plan.Action{release("a", "m")}, time.Now())
	waitBegun(t, g)
	settle(t, r, g, 5, "")
}

func TestActionRunnerKeepsTheOrderOfOneObjectsActions(t *testing.T) {
	g := newGatedDo()
	r := newActionRunner(g.do)
	r.Go(runKey, []plan.Action{release("a", "m")})
	if a := waitBegun(t, g); a.Kind != plan.UnlabelNode {
		t.Fatalf("began %s, want the release", a.Kind)
	}
	// A hold decided after the release, then another node's release.
	r.Go(runKey, []plan.Action{hold("a"), release("b", "m")})
	if a := waitBegun(t, g); a.Node != "b" {
		t.Fatalf("began %s of %s, want b's release (a's hold waits for a's release)", a.Kind, a.Node)
	}
	if n := r.queued("node/a"); n != 1 {
		t.Fatalf("%d actions queued behind a's release, want its hold", n)
	}
	// Asked again while queued: still one hold.
	r.Go(runKey, []plan.Action{hold("a")})
	if n := r.queued("node/a"); n != 1 {
		t.Fatalf("%d actions queued behind a's release, want one hold", n)
	}
	g.gate("node/a") <- nil
	if a := waitBegun(t, g); a.Kind != plan.LabelNode || a.Node != "a" {
		t.Fatalf("began %s of %s, want a's hold after its release ended", a.Kind, a.Node)
	}
	g.gate("node/a") <- nil
	g.gate("node/b") <- nil
	if err := r.Idle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(g.overlaps) > 0 {
		t.Fatalf("began while an earlier action on the same object was in progress: %v", g.overlaps)
	}
}

func TestActionRunnerWakesARunWhoseActionFailed(t *testing.T) {
	g := newGatedDo()
	r := newActionRunner(g.do)
	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	r.Go(runKey, []plan.Action{release("a", "m")})
	r.Go(other, []plan.Action{release("b", "m")})
	waitBegun(t, g)
	waitBegun(t, g)
	g.gate("node/a") <- errors.New("the API server is away")
	g.gate("node/b") <- nil
	select {
	case ev := <-r.wakes:
		if ev.Object.GetName() != "run" || ev.Object.GetNamespace() != "ns" {
			t.Fatalf("woke %s/%s, want ns/run", ev.Object.GetNamespace(), ev.Object.GetName())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run whose action failed was not woken")
	}
	if err := r.Idle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if errs := r.Failures(other); len(errs) != 0 {
		t.Fatalf("the other run's failures: %v, want none", errs)
	}
	errs := r.Failures(runKey)
	if len(errs) != 1 {
		t.Fatalf("failures %v, want one", errs)
	}
	if want := "UnlabelNode node a: the API server is away"; errs[0].Error() != want {
		t.Fatalf("failure %q, want %q", errs[0], want)
	}
	if errs := r.Failures(runKey); len(errs) != 0 {
		t.Fatalf("failures returned twice: %v", errs)
	}
}

func TestActionRunnerKeepsSlotsForReleasesAndGivesThemAFreedSlotFirst(t *testing.T) {
	g := newGatedDo()
	r := newActionRunner(g.do)
	var jobs []plan.Action
	for i := 0; i < parallelWrites; i++ {
		jobs = append(jobs, hookJob(fmt.Sprintf("busy-%d", i)))
	}
	r.Go(runKey, jobs)
	// The Jobs' goroutines ask in any order: running are those that got
	// the others' share of the slots, the rest wait.
	others := parallelWrites - releaseSlots
	var running []string
	for i := 0; i < others; i++ {
		running = append(running, objectOf(waitBegun(t, g)))
	}
	waitQueued(t, r, releaseSlots)
	// Releases take the kept slots.
	r.Go(runKey, []plan.Action{release("a", "m"), release("b", "m")})
	got := map[string]bool{objectOf(waitBegun(t, g)): true, objectOf(waitBegun(t, g)): true}
	if !got["node/a"] || !got["node/b"] {
		t.Fatalf("the kept slots went to %v, want the releases of nodes a and b", got)
	}
	// Every slot is taken: a third release waits behind the two Jobs, and
	// the first slot given back is its.
	r.Go(runKey, []plan.Action{release("c", "m")})
	waitQueued(t, r, releaseSlots+1)
	g.gate(running[0]) <- nil
	if a := waitBegun(t, g); objectOf(a) != "node/c" {
		t.Fatalf("the freed slot went to %s, want the release of node/c", objectOf(a))
	}
	// A release's slot given back goes to a waiting Job while the others
	// are below their share (one of them ended), and not once they hold it.
	g.gate("node/a") <- nil
	if a := waitBegun(t, g); a.Kind != plan.CreateJob {
		t.Fatalf("began %s, want a waiting Job", objectOf(a))
	}
	g.gate("node/b") <- nil
	waitInFlight(t, r, parallelWrites-1)
	waitQueued(t, r, 1)
	g.gate(running[1]) <- nil
	if a := waitBegun(t, g); a.Kind != plan.CreateJob {
		t.Fatalf("began %s, want the last waiting Job", objectOf(a))
	}
	g.gate("node/c") <- nil
	for _, a := range jobs {
		if obj := objectOf(a); obj != running[0] && obj != running[1] {
			g.gate(obj) <- nil
		}
	}
	if err := r.Idle(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// waitInFlight waits until n actions hold a write slot.
func waitInFlight(t *testing.T, r *actionRunner, n int) {
	t.Helper()
	waitSlots(t, r, "hold a slot", n, func(s *writeSlots) int { return s.inFlight })
}

// waitQueued waits until n actions wait for a write slot.
func waitQueued(t *testing.T, r *actionRunner, n int) {
	t.Helper()
	waitSlots(t, r, "wait for a slot", n, func(s *writeSlots) int { return len(s.waiting[0]) + len(s.waiting[1]) })
}

// waitSlots waits until count of r's slots is n.
func waitSlots(t *testing.T, r *actionRunner, what string, n int, count func(*writeSlots) int) {
	t.Helper()
	NewWithT(t).Eventually(func() int {
		r.slots.mu.Lock()
		defer r.slots.mu.Unlock()
		return count(r.slots)
	}).WithTimeout(10*time.Second).WithPolling(time.Millisecond).Should(Equal(n), "actions that %s", what)
}

// A pass may still be running while the manager stops. What it hands over
// then is dropped: Start is waiting for the actions in flight, and the
// next leader decides the rest again.
func TestActionRunnerTakesNothingOnceStopping(t *testing.T) {
	g := newGatedDo()
	r := newActionRunner(g.do)
	ctx, stop := context.WithCancel(context.Background())
	started := make(chan error)
	go func() { started <- r.Start(ctx) }()
	r.Go(runKey, []plan.Action{release("a", "m")})
	waitBegun(t, g)
	stop()
	// Start waits for node/a's write, which the test holds; a pass hands
	// over another action meanwhile.
	NewWithT(t).Eventually(r.ctx.Err).WithTimeout(10 * time.Second).WithPolling(time.Millisecond).Should(MatchError(context.Canceled))
	r.Go(runKey, []plan.Action{release("b", "m"), hookJob("j")})
	g.gate("node/a") <- nil
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return: it waits for an action handed over while it stopped")
	}
	r.Go(runKey, []plan.Action{release("c", "m")})
	r.mu.Lock()
	pending, objects := r.pending, len(r.objects)
	r.mu.Unlock()
	if pending != 0 || objects != 0 {
		t.Fatalf("after Start returned: %d actions pending on %d objects, want none", pending, objects)
	}
	if calls := g.calls(); len(calls) != 1 {
		t.Fatalf("calls %v, want node/a's only", calls)
	}
}

// Passes handing over actions while the manager stops: under the race
// detector this fails if Go adds to the WaitGroup Start waits on.
func TestActionRunnerStopsWhilePassesHandOver(t *testing.T) {
	for range 20 {
		r := newActionRunner(func(ctx context.Context, _ plan.Action) error { return nil })
		ctx, stop := context.WithCancel(context.Background())
		started := make(chan error)
		go func() { started <- r.Start(ctx) }()
		var passes sync.WaitGroup
		passes.Add(1)
		go func() {
			defer passes.Done()
			for i := range 200 {
				r.Go(runKey, []plan.Action{release(fmt.Sprintf("n%d", i), "m")})
			}
		}()
		stop()
		if err := <-started; err != nil {
			t.Fatal(err)
		}
		passes.Wait()
	}
}
