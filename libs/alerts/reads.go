package alerts

import (
	"cmp"
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// FreshRead is how long a good read of the alerts serves a Reads.
const FreshRead = 5 * time.Second

// Reads keeps a reader's last read of the alerts (and whatever it derives
// from them) for a while. Controllers plan on every event, events come in
// bursts (a rollout changes some Node every few milliseconds), and alerts
// have no watch: reading them on every plan would put an HTTP round trip,
// up to the client's timeout, in every plan, and one request per plan on
// the alerts API. A good read serves for Fresh; a failed one for Failed,
// so that an unreachable source costs one read per Failed rather than a
// timeout per plan (the reader fails closed meanwhile, and looks again
// after Recheck). Callers that come during a read wait for it instead of
// sending their own.
//
// The zero value keeps a good read for FreshRead and a failed one for
// Recheck.
type Reads[T any] struct {
	// Fresh is how long a good read serves (FreshRead when zero): firing
	// alerts must show within seconds. Failed is how long a failed one
	// does (Recheck when zero).
	Fresh, Failed time.Duration

	mu   sync.Mutex
	have bool
	at   time.Time
	key  any
	val  T
	err  error
}

// Get returns the kept read if it was made for key (what the read depends
// on besides the alerts, such as a configuration; nil if nothing) and is
// still young enough, else reads with read and keeps the result, timed from
// when the read ended.
func (r *Reads[T]) Get(ctx context.Context, clk clock.PassiveClock, key any, read func(context.Context) (T, error)) (T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	keep := cmp.Or(r.Fresh, FreshRead)
	if r.err != nil {
		keep = cmp.Or(r.Failed, Recheck)
	}
	if r.have && r.key == key && clk.Since(r.at) < keep {
		return r.val, r.err
	}
	r.val, r.err = read(ctx)
	r.have, r.at, r.key = true, clk.Now(), key
	return r.val, r.err
}
