package main

// The mcp-tracker bench (mcp-tracker): a simulated cluster of
// three pools (3 masters, workers, a custom infra pool) updated by ocpsim,
// with the tracker running as its chart's ServiceAccount. While ocpsim rolls
// the pools, the bench probes the tracker's reaction: one at a time, it turns
// an updated node's machine-config state to Degraded and back, and times
// each change until the tracker's metric shows it (scraped as Prometheus
// would, every scrapeEvery) and until the UpgradeConfig's status.pools does
// (the bench's own watch). Degraded is a state ocpsim never produces, so the
// pool's degraded count is the probe's alone, even in the middle of the
// update. It also reports the tracker's peak RSS and its status writes per
// node transition.

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocpsim"
)

const (
	trackerNamespace = "upshift-upgrade"
	infraPool        = "infra"
	infraRole        = "node-role.kubernetes.io/infra"
	masterRole       = "node-role.kubernetes.io/master"
	// scrapeEvery is how often a pending probe reads the tracker's metrics:
	// the metric latency's resolution.
	scrapeEvery = 20 * time.Millisecond
	// probeGap separates probes, so that they sample the whole update.
	probeGap = 500 * time.Millisecond
)

func runTracker(ctx context.Context, o options) (err error) {
	start := time.Now()
	ctrl.SetLogger(logr.Discard())
	binary, err := filepath.Abs(filepath.Join(o.binDir, "mcp-tracker"))
	if err != nil {
		return err
	}
	if o.infra <= 0 || o.infra >= o.workers {
		return fmt.Errorf("--infra-nodes must be between 1 and --workers-1")
	}
	graph := []string{"4.16.1", "4.16.2"}
	nodes := o.workers + 3
	cluster, m, id, err := startCluster(ctx, start, benchCluster{
		controlPlane: testenv.Options{Kwok: true},
		seed: ocpsim.Topology{Version: "4.16.1", Masters: 3, Workers: o.workers - o.infra, WorkerMaxUnavailable: o.maxUnavailable, Graph: graph,
			CustomPools: []ocpsim.CustomPool{{Name: infraPool, Nodes: o.infra, MaxUnavailable: o.maxUnavailable}}},
		sim:   ocpsim.Options{TimeScale: o.timeScale, Graph: graph},
		chart: "mcp-tracker", release: "mcpt", namespace: trackerNamespace,
		controlPlaneUp: "control plane up",
		seededNodes:    fmt.Sprintf("seeded %d nodes: 3 master, %d worker, %d infra", nodes, o.workers-o.infra, o.infra),
	})
	if err != nil {
		return err
	}
	defer cluster.StopInto(&err)
	env := cluster.Env

	// The UpgradeConfig, with the history entry the upgrade-scheduler would
	// write as the upgrade starts.
	uc := &upgradev1alpha1.UpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: trackerNamespace, Name: "managed-upgrade-config"},
		Spec: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: graph[1], Channel: "stable-4.16"},
			UpgradeAt: time.Now().UTC().Format(time.RFC3339), PDBForceDrainTimeout: 60, Type: upgradev1alpha1.OSD},
	}
	if err := env.Client.Create(ctx, uc); err != nil {
		return err
	}
	now := metav1.Now()
	uc.Status.History = []upgradev1alpha1.UpgradeHistory{{Version: graph[1], Phase: upgradev1alpha1.UpgradePhaseUpgrading, StartTime: &now}}
	if err := env.Client.Status().Update(ctx, uc); err != nil {
		return err
	}

	// The bench's own view: nodes (MCO annotation changes), pools and the
	// UpgradeConfig (status.pools as written).
	obs := newTrackerObserver()
	_, stopWatches, err := startWatches(ctx, env.Config, cache.Options{Scheme: env.Client.Scheme()},
		func(c cache.Cache) error { return obs.watch(ctx, c) })
	if err != nil {
		return err
	}
	defer stopWatches()

	trackerStart := time.Now()
	tracker, err := framework.StartAsIdentity(binary, id, trackerNamespace, true,
		"--stuck-after=1h", "--min-write-interval="+o.minWriteInterval.String(), fmt.Sprintf("--kube-api-qps=%d", o.qps), fmt.Sprintf("--kube-api-burst=%d", 2*o.qps))
	if err != nil {
		return err
	}
	defer func() { _ = tracker.Stop(10 * time.Second) }()
	pid := tracker.Pid()
	m.url = tracker.MetricsURL

	// First pass: every node counted in the metrics, every pool in status.
	if err := framework.WaitFor(ctx, 10*time.Minute, func() bool {
		ms, err := m.metrics()
		return err == nil && int(ms.Sum("upshift_mcp_tracker_nodes", nil)) == nodes && obs.poolsInStatus() == 3
	}); err != nil {
		return fmt.Errorf("waiting for the tracker's first pass: %w", err)
	}
	firstPass := time.Since(trackerStart)
	step(start, "tracker counted %d nodes in 3 pools and wrote status.pools in %s (RSS %s)", nodes, firstPass.Round(100*time.Millisecond), rss(pid))

	before, err := m.metrics()
	if err != nil {
		return err
	}
	obs.resetTransitions()

	targets, err := poolTargets(ctx, env.Client)
	if err != nil {
		return err
	}
	if err := requestUpdate(ctx, env.Client, graph[1]); err != nil {
		return err
	}
	updateStart := time.Now()
	step(start, "update to %s requested", graph[1])

	pr := &prober{c: env.Client, m: m, obs: obs, oldTargets: targets}
	probeCtx, stopProbes := context.WithCancel(ctx)
	probesDone := make(chan error, 1)
	go func() { probesDone <- pr.run(probeCtx) }()

	lastReport := time.Now()
	waitErr := framework.WaitFor(ctx, o.updateTimeout, func() bool {
		if time.Since(lastReport) > 15*time.Second {
			lastReport = time.Now()
			step(start, "%d node transitions, %d probes so far, RSS %s", obs.transitions(), pr.count(), rss(pid))
		}
		return obs.updateDone(ctx, env.Client, targets)
	})
	stopProbes()
	if err := <-probesDone; err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	// updateDone saw every pool complete in status: the last write is in.
	// Past --update-timeout the figures cover the part of the update done.
	took := time.Since(updateStart)
	finished := waitErr == nil
	after, err := m.metrics()
	if err != nil {
		return err
	}
	writesBefore, writesAfter := int(writeRequests(before)), int(writeRequests(after))
	applies := int(after.Sum("upshift_mcp_tracker_status_writes_total", nil) - before.Sum("upshift_mcp_tracker_status_writes_total", nil))
	reconciles := map[string]string{"controller": "mcptracker"}
	passes := int(after.Sum("controller_runtime_reconcile_total", reconciles) - before.Sum("controller_runtime_reconcile_total", reconciles))
	transitions, probeTransitions := obs.transitions(), pr.transitions()
	natural := transitions - probeTransitions

	metricP, statusP := percentiles(pr.metricLat), percentiles(pr.statusLat)
	fmt.Println()
	fmt.Printf("nodes:                           %d (3 master, %d worker, %d infra; maxUnavailable %s), time scale %.0f, tracker QPS %d, min write interval %s\n",
		nodes, o.workers-o.infra, o.infra, o.maxUnavailable, o.timeScale, o.qps, o.minWriteInterval)
	fmt.Printf("first pass (metrics + status):   %s from the tracker's start\n", firstPass.Round(100*time.Millisecond))
	if finished {
		fmt.Printf("update wall time:                %s\n", took.Round(time.Second))
	} else {
		fmt.Printf("update NOT finished:             stopped after %s (--update-timeout); the figures cover that part\n", took.Round(time.Second))
	}
	fmt.Printf("tracker peak RSS (VmHWM):        %s\n", peakRSS(pid))
	fmt.Printf("node MCO-annotation changes:     %d (%d from ocpsim, %d from %d probes)\n", transitions, natural, probeTransitions, pr.count())
	fmt.Printf("state change -> metric:          p50 %s  p99 %s  max %s  (n=%d, scraped every %s)\n", metricP[0], metricP[1], metricP[2], len(pr.metricLat), scrapeEvery)
	fmt.Printf("state change -> status.pools:    p50 %s  p99 %s  max %s  (n=%d)\n", statusP[0], statusP[1], statusP[2], len(pr.statusLat))
	if pr.missed > 0 {
		fmt.Printf("probe changes never shown:       %d (within a minute)\n", pr.missed)
	}
	fmt.Printf("tracker passes:                  %d during the update\n", passes)
	fmt.Printf("UpgradeConfig status applies:    %d = %.4f per node transition\n", applies, float64(applies)/float64(max(transitions, 1)))
	fmt.Printf("tracker write requests (all):    %d (status, Events, Lease) = %.4f per node transition\n",
		writesAfter-writesBefore, float64(writesAfter-writesBefore)/float64(max(transitions, 1)))
	return nil
}

func poolTargets(ctx context.Context, c client.Client) (map[string]string, error) {
	var pools mcfgv1.MachineConfigPoolList
	if err := c.List(ctx, &pools); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range pools.Items {
		out[p.Name] = p.Spec.Configuration.Name
	}
	return out, nil
}

// trackerObserver is the bench's record of node transitions and of the
// UpgradeConfig's status.pools, each status version stamped when seen.
type trackerObserver struct {
	mu        sync.Mutex
	changes   int
	statuses  []statusSeen
	lastPools []upgradev1alpha1.PoolUpdate
	nodes     cache.Cache
}

type statusSeen struct {
	at       time.Time
	degraded map[string]int32
}

func newTrackerObserver() *trackerObserver { return &trackerObserver{} }

func (o *trackerObserver) watch(ctx context.Context, c cache.Cache) error {
	o.nodes = c
	ni, err := c.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return err
	}
	if _, err := ni.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
		a, b := oldObj.(*corev1.Node).Annotations, newObj.(*corev1.Node).Annotations
		for k := range mergeKeys(a, b) {
			if mcostate.IsAnnotation(k) && a[k] != b[k] {
				o.mu.Lock()
				o.changes++
				o.mu.Unlock()
				return
			}
		}
	}}); err != nil {
		return err
	}
	if _, err := c.GetInformer(ctx, &mcfgv1.MachineConfigPool{}); err != nil {
		return err
	}
	ui, err := c.GetInformer(ctx, &upgradev1alpha1.UpgradeConfig{})
	if err != nil {
		return err
	}
	record := func(obj any) {
		uc, ok := obj.(*upgradev1alpha1.UpgradeConfig)
		if !ok {
			return
		}
		s := statusSeen{at: time.Now(), degraded: map[string]int32{}}
		for _, p := range uc.Status.Pools {
			s.degraded[p.Name] = p.Nodes.Degraded
		}
		o.mu.Lock()
		o.statuses = append(o.statuses, s)
		o.lastPools = uc.Status.Pools
		o.mu.Unlock()
	}
	_, err = ui.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, n any) { record(n) }})
	return err
}

func mergeKeys(a, b map[string]string) map[string]struct{} {
	out := map[string]struct{}{}
	for k := range a {
		out[k] = struct{}{}
	}
	for k := range b {
		out[k] = struct{}{}
	}
	return out
}

func (o *trackerObserver) transitions() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changes
}

func (o *trackerObserver) resetTransitions() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.changes = 0
}

func (o *trackerObserver) poolsInStatus() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.lastPools)
}

// statusShows is when the status first showed pool's degraded count as want,
// at or after since; false if it has not yet.
func (o *trackerObserver) statusShows(pool string, want int32, since time.Time) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.statuses {
		if !s.at.Before(since) && s.degraded[pool] == want {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// updateDone: every pool moved off its old target, reports Updated, and is
// recorded in status.pools as complete on its new target.
func (o *trackerObserver) updateDone(ctx context.Context, c client.Client, old map[string]string) bool {
	var pools mcfgv1.MachineConfigPoolList
	if err := o.nodes.List(ctx, &pools); err != nil || len(pools.Items) != len(old) {
		return false
	}
	o.mu.Lock()
	status := map[string]upgradev1alpha1.PoolUpdate{}
	for _, p := range o.lastPools {
		status[p.Name] = p
	}
	o.mu.Unlock()
	for _, p := range pools.Items {
		t := p.Spec.Configuration.Name
		if t == old[p.Name] || !poolUpdated(&p) {
			return false
		}
		s, ok := status[p.Name]
		if !ok || s.TargetConfig != t || s.CompleteTime == nil {
			return false
		}
	}
	return true
}

func poolUpdated(p *mcfgv1.MachineConfigPool) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == mcfgv1.MachineConfigPoolUpdated {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// prober turns one updated node at a time Degraded and back, timing each
// change to the metric and to the status.
type prober struct {
	c          client.Client
	m          endpoint
	obs        *trackerObserver
	oldTargets map[string]string

	mu                   sync.Mutex
	probes, changes      int
	missed               int
	metricLat, statusLat []time.Duration
}

func (p *prober) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.probes
}

func (p *prober) transitions() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changes
}

func (p *prober) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(probeGap):
		}
		name, pool, ok := p.pick(ctx)
		if !ok {
			continue
		}
		// Turned Degraded, then back: each change is a sample, unless the
		// update finished (ctx) while waiting. The node is restored even then.
		for _, state := range []string{mcostate.StateDegraded, mcostate.StateDone} {
			want := int32(0)
			if state == mcostate.StateDegraded {
				want = 1
			}
			at, err := p.setState(name, state)
			if err != nil {
				return err
			}
			p.mu.Lock()
			p.changes++
			p.mu.Unlock()
			if ctx.Err() != nil {
				continue
			}
			metric, status, ok := p.await(ctx, pool, want, at)
			if !ok {
				if ctx.Err() == nil {
					p.mu.Lock()
					p.missed++
					p.mu.Unlock()
				}
				continue
			}
			p.mu.Lock()
			p.metricLat = append(p.metricLat, metric)
			p.statusLat = append(p.statusLat, status)
			p.mu.Unlock()
		}
		p.mu.Lock()
		p.probes++
		p.mu.Unlock()
	}
}

// pick returns a worker or infra node already on its pool's new target and
// Done: the MCO has nothing more to do with it, so the probe's state is left
// alone.
func (p *prober) pick(ctx context.Context) (string, string, bool) {
	var pools mcfgv1.MachineConfigPoolList
	if err := p.obs.nodes.List(ctx, &pools); err != nil {
		return "", "", false
	}
	targets := map[string]string{}
	for _, mcp := range pools.Items {
		if t := mcp.Spec.Configuration.Name; t != p.oldTargets[mcp.Name] {
			targets[mcp.Name] = t
		}
	}
	var nodes corev1.NodeList
	if err := p.obs.nodes.List(ctx, &nodes); err != nil {
		return "", "", false
	}
	// Alternate pools, so both are probed.
	want := "worker"
	if p.count()%2 == 1 {
		want = infraPool
	}
	for _, n := range nodes.Items {
		if _, master := n.Labels[masterRole]; master {
			continue
		}
		pool := "worker"
		if _, infra := n.Labels[infraRole]; infra {
			pool = infraPool
		}
		a := n.Annotations
		if pool == want && targets[pool] != "" && a[mcostate.CurrentConfig] == targets[pool] &&
			a[mcostate.DesiredConfig] == targets[pool] && a[mcostate.State] == mcostate.StateDone {
			return n.Name, pool, true
		}
	}
	return "", "", false
}

func (p *prober) setState(node, state string) (time.Time, error) {
	var at time.Time
	err := retry.OnError(retry.DefaultBackoff, func(error) bool { return true }, func() error {
		body := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, mcostate.State, state)
		at = time.Now()
		// The bench's own context may be cancelled: the restore still runs.
		return p.c.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}},
			client.RawPatch(types.MergePatchType, []byte(body)))
	})
	return at, err
}

// await waits until the metric and the status show pool's degraded count as
// want, and returns how long after at each did.
func (p *prober) await(ctx context.Context, pool string, want int32, at time.Time) (metric, status time.Duration, ok bool) {
	series := map[string]string{"pool": pool, "state": "degraded"}
	deadline := time.Now().Add(time.Minute)
	var metricSeen bool
	for time.Now().Before(deadline) {
		if !metricSeen {
			// A series not exposed yet counts as none.
			if ms, err := p.m.metrics(); err == nil && ms.Sum("upshift_mcp_tracker_nodes", series) == float64(want) {
				metric, metricSeen = time.Since(at), true
			}
		}
		if metricSeen {
			if seen, found := p.obs.statusShows(pool, want, at); found {
				return metric, seen.Sub(at), true
			}
		}
		select {
		case <-ctx.Done():
			return 0, 0, false
		case <-time.After(scrapeEvery):
		}
	}
	return 0, 0, false
}
