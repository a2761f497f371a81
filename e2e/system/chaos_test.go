package system

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/testenv"
)

// faultKind is one kind of fault the suite injects.
type faultKind string

const (
	killLeader    faultKind = "SIGKILL leader"
	freezeLeader  faultKind = "SIGSTOP leader past its lease"
	restartAPI    faultKind = "restart kube-apiserver"
	restartAlerts faultKind = "restart Alertmanager"
)

// faultPlan is the profile's faults in an order drawn from the seed: the
// kills spread between the others, none first (the update is not under way
// yet).
func faultPlan() []faultKind {
	var special []faultKind
	for range prof.freezes {
		special = append(special, freezeLeader)
	}
	for range prof.apiRestarts {
		special = append(special, restartAPI)
	}
	for range prof.amRestarts {
		special = append(special, restartAlerts)
	}
	rng.Shuffle(len(special), func(i, j int) { special[i], special[j] = special[j], special[i] })
	plan := make([]faultKind, 0, prof.kills+len(special))
	for range prof.kills {
		plan = append(plan, killLeader)
	}
	for _, f := range special {
		at := 1 + rng.IntN(len(plan))
		plan = append(plan[:at], append([]faultKind{f}, plan[at:]...)...)
	}
	return plan
}

// chaos injects the faults and keeps their log.
type chaos struct {
	start time.Time
	mu    sync.Mutex
	log   []string
	count map[faultKind]int
	// expired410 counts the apiserver restarts after which a watch resumed
	// from a resourceVersion of before was refused as expired (410 Gone).
	expired410 int
	// failures are faults whose outcome was wrong (a frozen leader that
	// woke and kept leading).
	failures []string
	// thawed are the leaders frozen past their lease and woken.
	thawed []thawed
}

// thawed is a leader woken after another replica took its Lease: from at
// on, its requests (told apart by its pod name in the user agent) must
// change nothing.
type thawed struct {
	user, pod string
	at        time.Time
}

func (c *chaos) note(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	line := fmt.Sprintf("%7.1fs  ", time.Since(c.start).Seconds()) + fmt.Sprintf(format, args...)
	c.log = append(c.log, line)
	fmt.Fprintln(GinkgoWriter, "fault: "+line)
}

func (c *chaos) fail(format string, args ...any) {
	c.note("FAILED: "+format, args...)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, fmt.Sprintf(format, args...))
}

// run injects plan, one fault after another with pauses drawn from the
// seed, until done or ctx ends.
func (c *chaos) run(ctx context.Context, plan []faultKind) {
	for _, f := range plan {
		pause := prof.gap/4 + time.Duration(rng.Int64N(int64(prof.gap-prof.gap/4)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		switch f {
		case killLeader:
			c.kill(ctx)
		case freezeLeader:
			c.freeze(ctx)
		case restartAPI:
			c.restartAPIServer(ctx)
		case restartAlerts:
			c.note("restarting Alertmanager")
			if err := am.Restart(ctx); err != nil {
				c.fail("Alertmanager did not come back: %v", err)
				continue
			}
			c.count[f]++
		}
	}
}

// leaderOf waits (up to a lease and a bit) for one of component r's
// replicas to lead: right after a fault none may.
func (c *chaos) leaderOf(ctx context.Context, r int) (int, int, bool) {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if i, _, ok := replicas[r].Leader(); ok {
			return r, i, true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return r, 0, false
}

// minLead is how long a leader has led before the suite may kill it. A
// successor killed the moment it takes the Lease, again and again, keeps
// its component down for the whole update (at this time scale, 6 s is
// twelve minutes of a real cluster's; a control-plane update, about 30 s):
// a node-gate that never leads between the update's request and the
// workers' render cannot pause them, and the MCO updates them ungated, as
// the design says. Two replicas of a real deployment never see that; a
// component the suite kills has had the time to act.
const minLead = 6 * time.Second

// settledLeader waits (until ctx ends) for component r's leader to have led
// for minLead, by its Lease's acquireTime, and returns it.
func (c *chaos) settledLeader(ctx context.Context, r int) (int, bool) {
	for ctx.Err() == nil {
		_, i, ok := c.leaderOf(ctx, r)
		if !ok {
			return 0, false
		}
		var lease coordinationv1.Lease
		key := client.ObjectKey{Namespace: namespaces[r], Name: replicas[r].LeaseName()}
		if err := env.Client.Get(ctx, key, &lease); err != nil {
			c.note("%s: reading Lease %s: %v", replicas[r].Name, key, err)
			return 0, false
		}
		if lease.Spec.AcquireTime == nil {
			c.note("%s: Lease %s has no acquireTime", replicas[r].Name, key)
			return 0, false
		}
		wait := time.Until(lease.Spec.AcquireTime.Add(minLead))
		if wait <= 0 {
			return i, true
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	return 0, false
}

// kill SIGKILLs the leader of a component drawn at random (another one
// if that one has none), once it has led for minLead.
func (c *chaos) kill(ctx context.Context) {
	for range 5 {
		r := rng.IntN(len(replicas))
		i, ok := c.settledLeader(ctx, r)
		if !ok {
			c.note("%s: no leader to kill", replicas[r].Name)
			continue
		}
		replicas[r].Kill(i)
		c.count[killLeader]++
		c.note("SIGKILL %s leader (replica %d)", replicas[r].Name, i)
		return
	}
}

// freeze stops a leader until the other replica holds the Lease, then
// wakes it: it must notice it lost the Lease and exit (the supervisor
// starts it again as a standby), never go on acting as the leader.
//
// The first freeze is always the upgrade-scheduler's: it writes the most
// (the UpgradeConfig's status, ClusterVersion, OCM, Alertmanager), so a
// stale leader that acts is caught there first; the others draw a
// component.
func (c *chaos) freeze(ctx context.Context) {
	r := 0
	if len(c.thawed) > 0 {
		r = rng.IntN(len(replicas))
	}
	r, i, ok := c.leaderOf(ctx, r)
	if !ok {
		c.note("%s: no leader to freeze", replicas[r].Name)
		return
	}
	rs := replicas[r]
	frozen := rs.Replica(i)
	if err := rs.Freeze(i); err != nil {
		c.fail("SIGSTOP %s replica %d: %v", rs.Name, i, err)
		return
	}
	c.note("SIGSTOP %s leader (replica %d)", rs.Name, i)
	deadline := time.Now().Add(30 * time.Second)
	took := false
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if j, _, ok := rs.Leader(); ok && j != i {
			took = true
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.thawed = append(c.thawed, thawed{user: users[r], pod: frozen.Pod, at: time.Now()})
	if err := rs.Thaw(i); err != nil {
		c.fail("SIGCONT %s replica %d: %v", rs.Name, i, err)
		return
	}
	if !took {
		c.fail("%s: no standby took the Lease within 30s of its leader freezing", rs.Name)
		return
	}
	c.note("%s standby leads; SIGCONT the old leader", rs.Name)
	select {
	case <-frozen.Exited():
		c.count[freezeLeader]++
		c.note("%s old leader exited on waking (lost its Lease)", rs.Name)
	case <-time.After(40 * time.Second):
		c.fail("%s: the old leader woke and did not give up within 40s", rs.Name)
	}
}

// restartAPIServer kills kube-apiserver and starts it again, with etcd's
// history compacted while it was down (as a longer outage, past the
// apiserver's own five-minute compaction, would leave it), then resumes a
// watch from a resourceVersion of before the restart, as an informer
// would: it must be refused as expired (410 Gone). The components'
// informers go the same way, and count it
// (upshift_informer_watches_expired_total), when their first try after the
// restart finds the new apiserver's watch cache filled; one whose first
// try comes earlier is refused as not ready and lists again without a 410
// (on a loaded machine, every one of them did, 2026-12-07). Their counts
// are reported, not required.
func (c *chaos) restartAPIServer(ctx context.Context) {
	cs, err := env.Clientset()
	if err != nil {
		c.fail("clientset: %v", err)
		return
	}
	from, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		c.fail("listing nodes before the restart: %v", err)
		return
	}
	// A write after `from`, so that etcd's revision moves past it, as what
	// an informer that last heard at `from` missed while the apiserver was
	// away.
	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "apiserver-restart-"}}
	if err := env.Client.Create(ctx, marker); err != nil {
		c.fail("writing before the restart: %v", err)
		return
	}
	before := expiredWatches()
	c.note("restarting kube-apiserver")
	if err := env.RestartAPIServer(ctx, testenv.RestartOptions{Down: 2 * time.Second, CompactHistory: true}); err != nil {
		c.fail("kube-apiserver did not come back: %v", err)
		return
	}
	c.count[restartAPI]++
	expired, err := watchExpired(ctx, cs, from.ResourceVersion)
	if err != nil {
		c.fail("resuming a watch from before the restart: %v", err)
		return
	}
	if expired {
		c.expired410++
	}
	// The components' reflectors come back after their backoff; give them
	// a few seconds, not more: the count is reported, not required.
	var counted, lived []string
	for wait := time.Now().Add(15 * time.Second); ctx.Err() == nil; time.Sleep(500 * time.Millisecond) {
		if counted, lived = expiredSince(before); len(counted) == len(lived) || time.Now().After(wait) {
			break
		}
	}
	c.note("kube-apiserver back; a watch from before it resumed with %s; components that counted an expired watch: %d of the %d with a process from before (%s)",
		map[bool]string{true: "410 Gone", false: "its events"}[expired], len(counted), len(lived), strings.Join(counted, ", "))
}

// watchExpired resumes a watch of Nodes from rv and says whether it was
// refused as expired, when asked for or by its first event. A new
// apiserver whose watch cache is still filling may refuse it as not ready
// first (429 or 503): that is tried again, for 45 s at most.
func watchExpired(ctx context.Context, cs kubernetes.Interface, rv string) (bool, error) {
	deadline := time.Now().Add(45 * time.Second)
	for {
		w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err == nil {
			select {
			case ev, open := <-w.ResultChan():
				w.Stop()
				st, isStatus := ev.Object.(*metav1.Status)
				if open && !isStatus {
					return false, nil // it delivered an event: not expired
				}
				if isStatus {
					err = apierrors.FromObject(st)
				} else {
					err = fmt.Errorf("the watch ended without an event")
				}
			case <-time.After(10 * time.Second):
				w.Stop()
				return false, nil
			}
		}
		switch {
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			return true, nil
		case (apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err)) && time.Now().Before(deadline):
			time.Sleep(500 * time.Millisecond)
		default:
			return false, err
		}
	}
}

// expiredWatches reads each component's replicas' expired-watch counts.
func expiredWatches() []map[*framework.Running]float64 {
	out := make([]map[*framework.Running]float64, len(replicas))
	for r, rs := range replicas {
		out[r] = rs.Sum("upshift_informer_watches_expired_total")
	}
	return out
}

// expiredSince names the components with a process that was running at
// before and still is (lived), and those of them where such a process has
// counted an expired watch since (expired).
func expiredSince(before []map[*framework.Running]float64) (expired, lived []string) {
	now := expiredWatches()
	for r, rs := range replicas {
		alive, rose := false, false
		for p, n := range now[r] {
			if was, ok := before[r][p]; ok {
				alive = true
				rose = rose || n > was
			}
		}
		if alive {
			lived = append(lived, rs.Name)
		}
		if rose {
			expired = append(expired, rs.Name)
		}
	}
	return expired, lived
}

func (c *chaos) summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, f := range []faultKind{killLeader, freezeLeader, restartAPI, restartAlerts} {
		parts = append(parts, fmt.Sprintf("%s ×%d", f, c.count[f]))
	}
	return strings.Join(parts, ", ")
}
