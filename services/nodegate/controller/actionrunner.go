package controller

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/services/nodegate/plan"
)

// The actions of a pass that acts first (plan's ActionsFirst: hook Jobs and
// hold labels, nothing else) go out in the background, through the
// actionRunner, and the pass ends without waiting for them. In a rollout the
// Dones come in bunches, and passes run one at a time: a pass that waited
// for its own writes held the next Done's pass for a write's round trip
// (hundreds of milliseconds at the p99 of a loaded API server): most of
// node-gate's slow reactions (docs/benchmarks/node-gate.md).
//
// Such actions may be in flight while the next pass plans because the
// planner is level-based: a release it recorded and the cache does not show
// yet is asked for again, and a hook Job missing from the cache is created
// again under its deterministic name, just as when the cache lags a write
// that has completed (and, the status being the pass's, as when a crash
// lost it). The runner keeps that cheap and ordered:
//
//   - an action the same as the last one decided for its object, and not
//     yet ended, is not sent again; nor is one the same as an action on its
//     object that succeeded after the pass read its input (GoReadAt): the
//     pass decided from a cache older than the write, and asks for what is
//     done already;
//   - the actions on one object go out in the order they were decided (a
//     hold decided after a release lands after it);
//   - a pass that acts otherwise (pools, a canary, a restore, a forced drain
//     step) first waits until nothing is in flight (Idle), so the orders the
//     planner relies on between nodes and pools hold;
//   - an action that fails wakes its run, whose next pass decides again and
//     returns the failure, so retries back off as a failed pass's do;
//   - a release waiting for a write slot gets the next one before any other
//     action, and two slots are kept for releases (writeSlots).
type actionRunner struct {
	// do carries out one action (Reconciler.execute).
	do func(context.Context, plan.Action) error
	// ctx is what the actions run under: the runner's, not a pass's.
	ctx    context.Context
	cancel context.CancelFunc
	// slots bounds the writes in flight at once.
	slots *writeSlots
	// wakes enqueues a run whose action failed (a source of the controller).
	wakes chan event.GenericEvent

	mu sync.Mutex
	// objects holds, per object with an action in flight, that action and
	// those queued behind it.
	objects map[string]*objectActions
	// pending counts the actions in flight or queued; idle is closed when
	// it falls to zero (and made anew when it rises from it).
	pending int
	idle    chan struct{}
	// failed are the failures not yet returned by a pass of their run.
	failed map[types.NamespacedName][]error
	// succeeded holds, per object, the last action that succeeded and
	// when, until a pass that read its input after that asks (GoReadAt).
	succeeded map[string]doneAction
	wg        sync.WaitGroup
}

// runAction is an action and the run it is for.
type runAction struct {
	run    types.NamespacedName
	action plan.Action
}

// doneAction is an action that succeeded, and when.
type doneAction struct {
	action plan.Action
	at     time.Time
}

// objectActions is the action in flight on one object and those decided
// after it, in order.
type objectActions struct {
	current runAction
	queued  []runAction
}

// last is the last action decided for the object.
func (o *objectActions) last() plan.Action {
	if n := len(o.queued); n > 0 {
		return o.queued[n-1].action
	}
	return o.current.action
}

func newActionRunner(do func(context.Context, plan.Action) error) *actionRunner {
	ctx, cancel := context.WithCancel(context.Background())
	idle := make(chan struct{})
	close(idle)
	return &actionRunner{
		do: do, ctx: ctx, cancel: cancel,
		slots:     newWriteSlots(parallelWrites),
		wakes:     make(chan event.GenericEvent, 64),
		objects:   map[string]*objectActions{},
		idle:      idle,
		failed:    map[types.NamespacedName][]error{},
		succeeded: map[string]doneAction{},
	}
}

// objectOf names the object an action writes.
func objectOf(a plan.Action) string {
	if a.Kind == plan.CreateJob {
		return "job/" + a.Job.Namespace + "/" + a.Job.Name
	}
	return "node/" + a.Node
}

// sameAction: b asks for what a asks for.
func sameAction(a, b plan.Action) bool {
	if a.Kind != b.Kind {
		return false
	}
	if a.Kind == plan.CreateJob {
		return true // same object, same name: the same Job
	}
	return a.Label == b.Label && a.Pool == b.Pool && a.ReleaseMark == b.ReleaseMark
}

// Go starts run's actions (hook Jobs and node labels), or queues them
// behind an earlier action on the same object, and returns at once.
func (r *actionRunner) Go(run types.NamespacedName, actions []plan.Action) {
	r.GoReadAt(run, actions, time.Time{})
}

// GoReadAt is Go for a pass that read its input at read: an action the
// same as one that succeeded on its object since then is done already.
// What succeeded before read is forgotten: the pass saw it, or the cache
// did not show it yet and ownwrite substitutes it.
func (r *actionRunner) GoReadAt(run types.NamespacedName, actions []plan.Action, read time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx.Err() != nil {
		return // stopping: see Start
	}
	if !read.IsZero() {
		for obj, d := range r.succeeded {
			if !d.at.After(read) {
				delete(r.succeeded, obj)
			}
		}
	}
	for _, a := range actions {
		obj := objectOf(a)
		o := r.objects[obj]
		if o != nil && sameAction(o.last(), a) {
			continue
		}
		if d, ok := r.succeeded[obj]; ok && o == nil && !read.IsZero() && sameAction(d.action, a) {
			continue
		}
		if r.pending == 0 {
			r.idle = make(chan struct{})
		}
		r.pending++
		ra := runAction{run: run, action: a}
		if o != nil {
			o.queued = append(o.queued, ra)
			continue
		}
		r.objects[obj] = &objectActions{current: ra}
		r.wg.Add(1)
		go r.fly(obj, ra)
	}
}

// queued is how many actions on obj wait behind the one in flight.
func (r *actionRunner) queued(obj string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.objects[obj]; o != nil {
		return len(o.queued)
	}
	return 0
}

// fly carries out ra, then each action queued behind it on obj.
func (r *actionRunner) fly(obj string, ra runAction) {
	defer r.wg.Done()
	for {
		u := urgent(ra.action)
		r.slots.take(u)
		err := r.do(r.ctx, ra.action)
		r.slots.give(u)
		failed := err != nil && r.ctx.Err() == nil
		r.mu.Lock()
		if failed {
			r.failed[ra.run] = append(r.failed[ra.run], actionError(ra.action, err))
		}
		if err == nil {
			r.succeeded[obj] = doneAction{action: ra.action, at: time.Now()}
		} else {
			delete(r.succeeded, obj)
		}
		r.pending--
		if r.pending == 0 {
			close(r.idle)
		}
		o := r.objects[obj]
		next, more := runAction{}, len(o.queued) > 0
		if more {
			next, o.queued = o.queued[0], o.queued[1:]
			o.current = next
		} else {
			delete(r.objects, obj)
		}
		r.mu.Unlock()
		if failed {
			r.wake(ra.run)
		}
		if !more {
			return
		}
		ra = next
	}
}

// urgent: the action is a release, which the MCO waits for to fill the
// slot a Done node freed. The hook Jobs the same Dones start are for nodes
// whose turn is later (lookahead), or, without lookahead, whose release
// waits for them anyway.
func urgent(a plan.Action) bool {
	return a.Kind == plan.UnlabelNode && a.ReleaseMark != ""
}

// writeSlots bounds the actions in flight, and keeps releases ahead of the
// rest: a slot given back goes to the release waiting longest, else to the
// other action waiting longest, and the other actions never hold the last
// releaseSlots slots. When the Dones of a wave come together, each brings
// a release and the next node's hook Job: served in arrival order, a
// release waited behind the Jobs decided before it, and with every slot
// taken by Jobs, for the first of them to end (docs/benchmarks/node-gate.md,
// 2026-12-05).
type writeSlots struct {
	mu sync.Mutex
	// n slots; inFlight of them taken, others of those by other actions.
	n, inFlight, others int
	// waiting holds the waiters' wake-up channels: [0] releases, [1] the
	// others, each in the order they asked.
	waiting [2][]chan struct{}
}

// releaseSlots is how many slots only releases may take.
const releaseSlots = 2

func newWriteSlots(n int) *writeSlots { return &writeSlots{n: n} }

// mayTake: a slot is free for an action of that class.
func (s *writeSlots) mayTake(urgent bool) bool {
	return s.inFlight < s.n && (urgent || s.others < s.n-releaseSlots)
}

func (s *writeSlots) taken(urgent bool) {
	s.inFlight++
	if !urgent {
		s.others++
	}
}

// take waits for a slot.
func (s *writeSlots) take(urgent bool) {
	s.mu.Lock()
	if s.mayTake(urgent) {
		s.taken(urgent)
		s.mu.Unlock()
		return
	}
	class := 1
	if urgent {
		class = 0
	}
	ch := make(chan struct{})
	s.waiting[class] = append(s.waiting[class], ch)
	s.mu.Unlock()
	<-ch // the slot was taken for it by give
}

// give hands a slot back, and takes it for the first waiter it may go to.
func (s *writeSlots) give(urgent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	if !urgent {
		s.others--
	}
	for class, u := range []bool{true, false} {
		if q := s.waiting[class]; len(q) > 0 && s.mayTake(u) {
			s.taken(u)
			s.waiting[class] = q[1:]
			close(q[0])
			return
		}
	}
}

// wake has the controller pass run again.
func (r *actionRunner) wake(run types.NamespacedName) {
	obj := &nodegatev1alpha1.MutexRunConfig{}
	obj.Namespace, obj.Name = run.Namespace, run.Name
	select {
	case r.wakes <- event.GenericEvent{Object: obj}:
	default: // full: passes are queued already
	}
}

// Idle waits until no action is in flight.
func (r *actionRunner) Idle(ctx context.Context) error {
	r.mu.Lock()
	idle := r.idle
	r.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Failures returns, and forgets, run's failed actions since the last call.
func (r *actionRunner) Failures(run types.NamespacedName) []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := r.failed[run]
	delete(r.failed, run)
	return errs
}

// Start waits for the manager to stop, then ends what is in flight and
// takes nothing more (a pass may still be running): the next leader
// decides it again from the Jobs and labels, as after a crash.
func (r *actionRunner) Start(ctx context.Context) error {
	<-ctx.Done()
	// Cancelled under the lock Go holds, so that no Go adds to wg once
	// Wait may have begun (a WaitGroup must not be added to from zero
	// while it is waited on): Go drops what it is handed after this.
	r.mu.Lock()
	r.cancel()
	r.mu.Unlock()
	r.wg.Wait()
	return nil
}

// NeedLeaderElection: it acts for the leader's passes only.
func (r *actionRunner) NeedLeaderElection() bool { return true }
