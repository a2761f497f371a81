package runtime

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
)

// A leader that stops for a while (a long GC pause, a frozen VM, SIGSTOP)
// wakes up believing it still leads: client-go notices the lost Lease only
// at its next renewal, and meanwhile the controllers go on with what they
// had queued. Another replica may have taken the Lease in between, so two
// leaders would write at once — the split brain leader election exists to
// prevent. The fence closes that window: a replica writes only while its
// own last renewal of the Lease is younger than the renew deadline. Nobody
// else can take the Lease before that renewal is a lease duration old
// (they count from when they saw it), so a write allowed by the fence
// reaches the apiserver while the Lease is still this replica's, with the
// lease duration minus the renew deadline as the margin for the request in
// flight. A refused write fails like any API error and is retried by the
// controller, which by then has either renewed or exited.

// ErrNotLeading is returned for a write attempted while this replica's
// leadership is not confirmed.
var ErrNotLeading = errors.New("not writing: this replica has not renewed its leader-election Lease within the renew deadline (another replica may lead)")

// fence records this replica's Lease renewals and tells whether writing is
// safe.
type fence struct {
	resourcelock.Interface
	renewDeadline time.Duration

	mu sync.Mutex
	// renewed is when the last successful write of the Lease by this
	// replica, as holder, started (time.Now carries the monotonic clock,
	// which runs on while the process is stopped).
	renewed time.Time
}

func newFence(lock resourcelock.Interface, renewDeadline time.Duration) *fence {
	return &fence{Interface: lock, renewDeadline: renewDeadline}
}

func (f *fence) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return f.write(rec, func() error { return f.Interface.Create(ctx, rec) })
}

func (f *fence) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return f.write(rec, func() error { return f.Interface.Update(ctx, rec) })
}

func (f *fence) write(rec resourcelock.LeaderElectionRecord, do func() error) error {
	start := time.Now()
	err := do()
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case rec.HolderIdentity != f.Identity():
		// Released (or written for someone else): not leading.
		f.renewed = time.Time{}
	case err == nil:
		f.renewed = start
	}
	return err
}

// leading reports whether this replica renewed its Lease within the renew
// deadline.
func (f *fence) leading() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.renewed.IsZero() && time.Since(f.renewed) < f.renewDeadline
}

// wrap refuses the requests that change the cluster while not leading.
// Reads pass, as do the writes that change nothing others rely on: Events,
// and the reviews that authenticate and authorize the callers of the
// metrics endpoint, which every replica serves. The Lease itself is written
// by a client of its own, outside the fence.
func (f *fence) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if changes(req) && !f.leading() {
			return nil, ErrNotLeading
		}
		return rt.RoundTrip(req)
	})
}

// changes: the request writes something a stale leader must not write.
func changes(req *http.Request) bool {
	if read(req) {
		return false
	}
	p := req.URL.Path
	if strings.HasPrefix(p, "/apis/authentication.k8s.io/") || strings.HasPrefix(p, "/apis/authorization.k8s.io/") {
		return false
	}
	return !isEvent(p)
}

// isEvent: the path is a namespaced Event (core or events.k8s.io) or their
// collection: .../namespaces/<ns>/events[/<name>].
func isEvent(p string) bool {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "namespaces" && parts[i+2] == "events" {
			return true
		}
	}
	return false
}

// processFence is the fence of the process's manager (a process has one),
// for the clients of services outside the cluster.
var processFence atomic.Pointer[fence]

// Fenced wraps rt, a transport to a service outside the cluster (OCM,
// Alertmanager), in the process's leader-election fence: a request that is
// not a read is refused with ErrNotLeading while this replica's leadership
// is not confirmed, so that a stale leader neither posts a notice nor
// creates a silence. Without leader election requests pass. A nil rt is
// http.DefaultTransport.
func Fenced(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if f := processFence.Load(); f != nil && !read(req) && !f.leading() {
			return nil, ErrNotLeading
		}
		return rt.RoundTrip(req)
	})
}

func read(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// fencedLeaderElection builds the Lease lock controller-runtime would build
// (same defaults, a client of its own outside the fence), wrapped to record
// the renewals, and fences cfg's writes with it. The Lease's Events ("<id>
// became leader") go through the manager's recorder once setRecorder gives
// it.
func fencedLeaderElection(cfg *rest.Config, f *Flags, leaseName string) (*fence, *leaseEvents, error) {
	events := &leaseEvents{}
	lock, err := leaderelection.NewResourceLock(rest.CopyConfig(cfg), events, leaderelection.Options{
		LeaderElection:          true,
		LeaderElectionID:        leaseName,
		LeaderElectionNamespace: f.LeaderElectionNamespace,
		RenewDeadline:           renewDeadline(f),
	})
	if err != nil {
		return nil, nil, err
	}
	fc := newFence(lock, renewDeadline(f))
	cfg.Wrap(fc.wrap)
	processFence.Store(fc)
	return fc, events, nil
}

// renewDeadline is --leader-elect-renew-deadline, or controller-runtime's
// default when unset.
func renewDeadline(f *Flags) time.Duration {
	if f.RenewDeadline > 0 {
		return f.RenewDeadline
	}
	return 10 * time.Second
}

// leaseEvents is the recorder.Provider the Lease lock is built with, before
// the manager (and its recorder) exists: it forwards to the manager's.
type leaseEvents struct {
	mu  sync.Mutex
	get func(name string) record.EventRecorder
}

func (l *leaseEvents) setRecorder(get func(name string) record.EventRecorder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.get = get
}

func (l *leaseEvents) GetEventRecorderFor(name string) record.EventRecorder {
	return lazyRecorder{l: l, name: name}
}

func (l *leaseEvents) GetEventRecorder(string) events.EventRecorder { return nil }

func (l *leaseEvents) recorder(name string) record.EventRecorder {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.get == nil {
		return nil
	}
	return l.get(name)
}

// lazyRecorder forwards to the manager's recorder, and drops what comes
// before the manager exists (nothing: the Lease is first taken after).
type lazyRecorder struct {
	l    *leaseEvents
	name string
}

func (r lazyRecorder) Event(o runtime.Object, eventtype, reason, message string) {
	if rec := r.l.recorder(r.name); rec != nil {
		rec.Event(o, eventtype, reason, message)
	}
}

func (r lazyRecorder) Eventf(o runtime.Object, eventtype, reason, format string, args ...any) {
	if rec := r.l.recorder(r.name); rec != nil {
		rec.Eventf(o, eventtype, reason, format, args...)
	}
}

func (r lazyRecorder) AnnotatedEventf(o runtime.Object, ann map[string]string, eventtype, reason, format string, args ...any) {
	if rec := r.l.recorder(r.name); rec != nil {
		rec.AnnotatedEventf(o, ann, eventtype, reason, format, args...)
	}
}
