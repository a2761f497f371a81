package framework

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"
)

// Replicas are the pods of one component's Deployment, played by processes:
// n copies of the binary, each as the chart's ServiceAccount with leader
// election on, and a supervisor that starts a copy again whenever one ends
// (a crash, SIGKILL, a lost leader election), as the kubelet restarts a
// container. Faults are injected through Kill, Freeze and Thaw.
type Replicas struct {
	// Name names the component in messages.
	Name    string
	lease   string
	scraper *Scraper
	start   func(i int) (*Running, error)

	mu       sync.Mutex
	procs    []*Running
	frozen   []bool
	restarts int
	stopping bool
	startErr error
	wg       sync.WaitGroup
}

// StartReplicas starts n replicas; start(i) starts replica i (the same
// arguments every time: a restarted replica is the same pod spec). lease is
// the component's leader-election Lease name, as its leader_election_master_status
// series is labelled; scraper reads that series.
func StartReplicas(name, lease string, n int, scraper *Scraper, start func(i int) (*Running, error)) (*Replicas, error) {
	r := &Replicas{Name: name, lease: lease, scraper: scraper, start: start, procs: make([]*Running, n), frozen: make([]bool, n)}
	for i := range n {
		p, err := start(i)
		if err != nil {
			_ = r.Stop(5 * time.Second)
			return nil, fmt.Errorf("%s replica %d: %w", name, i, err)
		}
		r.procs[i] = p
		r.wg.Add(1)
		go r.supervise(i, p)
	}
	return r, nil
}

// supervise starts replica i again each time its process ends, until Stop.
func (r *Replicas) supervise(i int, p *Running) {
	defer r.wg.Done()
	for {
		<-p.Exited()
		r.mu.Lock()
		if r.stopping {
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		// The kubelet's first restart comes at once; a short pause keeps a
		// binary that fails at start from spinning.
		time.Sleep(200 * time.Millisecond)
		next, err := r.start(i)
		r.mu.Lock()
		if err != nil || r.stopping {
			if err != nil && r.startErr == nil {
				r.startErr = fmt.Errorf("%s replica %d could not be started again: %w", r.Name, i, err)
			}
			r.mu.Unlock()
			if next != nil {
				_ = next.Stop(5 * time.Second)
			}
			return
		}
		r.procs[i], r.frozen[i] = next, false
		r.restarts++
		r.mu.Unlock()
		p = next
	}
}

// Len is the number of replicas.
func (r *Replicas) Len() int { return len(r.procs) }

// LeaseName is the component's leader-election Lease, in the namespace its
// replicas run in.
func (r *Replicas) LeaseName() string { return r.lease }

// Replica is replica i's current process.
func (r *Replicas) Replica(i int) *Running {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.procs[i]
}

// Restarts counts the processes started again since StartReplicas.
func (r *Replicas) Restarts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.restarts
}

// Err is the first failure to start a replica again.
func (r *Replicas) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.startErr
}

// Leader is the replica whose process reports itself the Lease's holder
// (controller-runtime's leader_election_master_status is 1), and the
// process; ok is false while none does. A frozen replica is not asked: it
// cannot answer, and what it believes is the point of freezing it.
func (r *Replicas) Leader() (i int, p *Running, ok bool) {
	for i, p := range r.unfrozen() {
		if p == nil {
			continue
		}
		ms, err := r.scraper.Metrics(p.MetricsURL)
		if err != nil {
			continue
		}
		if v, found := ms.Value("leader_election_master_status", map[string]string{"name": r.lease}); found && v == 1 {
			return i, p, true
		}
	}
	return 0, nil, false
}

// unfrozen is each replica's current process, nil for a frozen one: it
// cannot answer a scrape, and what it believes is the point of freezing it.
func (r *Replicas) unfrozen() []*Running {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Running, len(r.procs))
	for i, p := range r.procs {
		if !r.frozen[i] {
			out[i] = p
		}
	}
	return out
}

// Sum is, for each replica's current process that answers a scrape (a
// frozen one is not asked), the sum of metric name's series. A process
// started again is a new key: its counters start from zero.
func (r *Replicas) Sum(name string) map[*Running]float64 {
	out := map[*Running]float64{}
	for _, p := range r.unfrozen() {
		if p == nil {
			continue
		}
		if ms, err := r.scraper.Metrics(p.MetricsURL); err == nil {
			out[p] = ms.Sum(name, nil)
		}
	}
	return out
}

// Kill SIGKILLs replica i; its supervisor starts it again.
func (r *Replicas) Kill(i int) {
	r.Replica(i).Kill()
}

// Freeze SIGSTOPs replica i: it holds its Lease until the Lease expires and
// then, when thawed, finds another holder.
func (r *Replicas) Freeze(i int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frozen[i] = true
	return r.procs[i].Signal(syscall.SIGSTOP)
}

// Thaw SIGCONTs replica i.
func (r *Replicas) Thaw(i int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frozen[i] = false
	return r.procs[i].Signal(syscall.SIGCONT)
}

// Logs are every current replica's output, for a failure message.
func (r *Replicas) Logs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := ""
	for i, p := range r.procs {
		out += fmt.Sprintf("--- %s replica %d\n%s", r.Name, i, p.Logs())
	}
	return out
}

// Stop stops every replica (SIGTERM, then SIGKILL after grace) and their
// supervisors.
func (r *Replicas) Stop(grace time.Duration) error {
	r.mu.Lock()
	r.stopping = true
	procs := append([]*Running(nil), r.procs...)
	frozen := append([]bool(nil), r.frozen...)
	r.mu.Unlock()
	var errs []error
	for i, p := range procs {
		if p == nil {
			continue
		}
		if frozen[i] {
			_ = p.Signal(syscall.SIGCONT)
		}
		select {
		case <-p.Exited():
			// Ended by a fault just now: nothing to stop, and its exit
			// status is the fault's.
			continue
		default:
		}
		if err := p.Stop(grace); err != nil {
			errs = append(errs, fmt.Errorf("%s replica %d: %w", r.Name, i, err))
		}
	}
	r.wg.Wait()
	return errors.Join(errs...)
}
