package main

// The update-status-controller bench (update-status): a simulated cluster
// (5,000 workers by default) updated by ocpsim, with the controller running
// as its chart's ServiceAccount. It reports the time the controller takes
// to create every NodeProgressInsight on its first start, its peak RSS, the
// latency from a node's machine-config state change to its
// NodeProgressInsight update, the controller's write requests per node
// transition and the wall time of `kubectl upshift status`; with --sweep it
// runs one more update per time scale and reports the highest at which the
// insight latency p99 stays within a second.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocpsim"
)

const annoState = "machineconfiguration.openshift.io/state"

// p99Target is the insight latency the time-scale sweep looks for.
const p99Target = time.Second

func parseSweep(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("--sweep: %q is not a positive time scale", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func runUpdateStatus(ctx context.Context, o options) (err error) {
	start := time.Now()
	ctrl.SetLogger(logr.Discard())
	sweep, err := parseSweep(o.sweep)
	if err != nil {
		return err
	}
	binary, err := filepath.Abs(filepath.Join(o.binDir, "update-status-controller"))
	if err != nil {
		return err
	}
	cli, err := filepath.Abs(filepath.Join(o.binDir, "kubectl-upshift"))
	if err != nil {
		return err
	}
	// One release per update: the first, then one per sweep step.
	graph := []string{"4.16.1"}
	for i := 0; i <= len(sweep); i++ {
		graph = append(graph, fmt.Sprintf("4.16.%d", i+2))
	}
	nodes := o.workers + 3
	const namespace = "upshift"
	cluster, metricsAt, id, err := startCluster(ctx, start, benchCluster{
		controlPlane: testenv.Options{Kwok: true},
		seed:         ocpsim.Topology{Version: "4.16.1", Masters: 3, Workers: o.workers, WorkerMaxUnavailable: o.maxUnavailable, Graph: graph},
		sim:          ocpsim.Options{TimeScale: o.timeScale, Graph: graph},
		chart:        "update-status-controller", release: "usc", namespace: namespace,
		controlPlaneUp: "control plane up", seededNodes: fmt.Sprintf("seeded %d nodes", nodes),
	})
	if err != nil {
		return err
	}
	defer cluster.StopInto(&err)
	env := cluster.Env

	// The bench's own view of the cluster: Node and insight watches, synced
	// before the controller starts so the first-start time is the
	// controller's alone.
	lat := newLatencies()
	watchCache, stopWatches, err := startWatches(ctx, env.Config, cache.Options{Scheme: scheme.Scheme},
		func(c cache.Cache) error { return watchNodesAndInsights(ctx, c, lat) })
	if err != nil {
		return err
	}
	defer stopWatches()

	args := []string{fmt.Sprintf("--kube-api-qps=%d", o.qps), fmt.Sprintf("--kube-api-burst=%d", 2*o.qps)}
	if o.profileDir != "" {
		if o.pprofAddr, err = testenv.FreeAddr(); err != nil {
			return err
		}
		args = append(args, "--pprof-bind-address="+o.pprofAddr)
	}
	controllerStart := time.Now()
	controller, err := framework.StartAsIdentity(binary, id, namespace, true, args...)
	if err != nil {
		return err
	}
	metricsAt.url = controller.MetricsURL
	defer func() { _ = controller.Stop(10 * time.Second) }()
	pid := controller.Pid()

	if err := framework.WaitFor(ctx, 10*time.Minute, func() bool {
		npis := &updatev1alpha1.NodeProgressInsightList{}
		return watchCache.List(ctx, npis) == nil && len(npis.Items) == nodes
	}); err != nil {
		return fmt.Errorf("waiting for %d NodeProgressInsights: %w", nodes, err)
	}
	firstStart := time.Since(controllerStart)
	step(start, "controller published %d NodeProgressInsights in %s (RSS %s)", nodes, firstStart.Round(100*time.Millisecond), rss(pid))
	cliIdle, err := timeCLI(ctx, cli, env.KubeconfigPath)
	if err != nil {
		return err
	}
	step(start, "kubectl upshift status rendered the idle cluster in %s", cliIdle)

	// The bench's own small write, timed while the updates run: the API
	// server's latency under every insight write (see waits.go).
	probe, err := startWriteProbe(ctx, env.Client, namespace, 250*time.Millisecond)
	if err != nil {
		return err
	}
	defer probe.finish()
	first, err := runUpdate(ctx, o, env.Client, metricsAt, probe, lat, pid, start, graph[1], nodes, cli, env.KubeconfigPath)
	if err != nil {
		return err
	}
	o.pprofAddr = "" // the sweep's updates are not profiled
	// The recomputations of the first start and the first update.
	recomputed, err := scrapeWaitPoint(metricsAt)
	if err != nil {
		return err
	}
	recomputations, recomputeSeconds := int(recomputed.recomputations), recomputed.recomputeSeconds

	var swept []sweepResult
	for i, scale := range sweep {
		if err := cluster.Restart(ocpsim.Options{TimeScale: scale, Graph: graph}); err != nil {
			return err
		}
		r, err := runUpdate(ctx, o, env.Client, metricsAt, probe, lat, pid, start, graph[i+2], nodes, "", "")
		if err != nil {
			return fmt.Errorf("time scale %.0f: %w", scale, err)
		}
		swept = append(swept, sweepResult{scale, r})
	}

	fmt.Println()
	fmt.Printf("nodes:                           %d (%d workers, maxUnavailable %s), time scale %.0f, controller QPS %d\n",
		nodes, o.workers, o.maxUnavailable, o.timeScale, o.qps)
	fmt.Printf("first start (all insights):      %s from the controller's start\n", firstStart.Round(100*time.Millisecond))
	fmt.Printf("update wall time:                %s\n", first.took.Round(time.Second))
	fmt.Printf("controller peak RSS (VmHWM):     %s\n", peakRSS(pid))
	fmt.Printf("node state transitions:          %d (unresolved: %d; shown before the bench saw them, by watch lag or as Draining before the MCD said Working: %d)\n",
		first.transitions, first.unresolved, first.early)
	fmt.Printf("state change -> insight latency: p50 %s  p99 %s  max %s  (n=%d)\n", first.p[0], first.p[1], first.p[2], first.samples)
	for m, p := range first.byMinute {
		if first.perMinute[m] > 0 {
			fmt.Printf("  changes in minute %2d:          p50 %s  p99 %s  max %s  (n=%d)\n", m+1, p[0], p[1], p[2], first.perMinute[m])
		}
	}
	fmt.Printf("controller recomputations:       %d in all, mean %s each\n", recomputations,
		(time.Duration(recomputeSeconds / float64(max(recomputations, 1)) * float64(time.Second))).Round(time.Millisecond))
	fmt.Printf("controller write requests:       %d during the update = %.2f per node transition\n",
		first.writes, float64(first.writes)/float64(max(first.transitions, 1)))
	fmt.Printf("controller failed writes:        %d during the update\n", first.writeErrors)
	fmt.Printf("pending insight writes:          %s\n", first.waits.pendingLine())
	fmt.Printf("recomputations and slow changes: %s\n", first.waits.recomputeLine())
	fmt.Printf("bench's own small write:         %s\n", first.waits.probeLine())
	fmt.Printf("kubectl upshift status:          %s idle, %s during the update (wall time of the built binary)\n",
		cliIdle, first.cli)
	if len(swept) > 0 {
		fmt.Println()
		fmt.Println("time scale  update wall time  insight p50  insight p99  writes/transition")
		best := 0.0
		for _, s := range swept {
			fmt.Printf("%10.0f  %16s  %11s  %11s  %17.2f\n", s.scale, s.r.took.Round(time.Second), s.r.p[0], s.r.p[1],
				float64(s.r.writes)/float64(max(s.r.transitions, 1)))
			if s.r.p[1] <= p99Target && s.r.samples > 0 && s.scale > best {
				best = s.scale
			}
		}
		if best > 0 {
			fmt.Printf("highest time scale with insight p99 <= %s: %.0f\n", p99Target, best)
		} else {
			fmt.Printf("no swept time scale kept insight p99 <= %s\n", p99Target)
		}
	}
	return nil
}

type sweepResult struct {
	scale float64
	r     updateResult
}

// updateResult is what one update measured.
type updateResult struct {
	took                                    time.Duration
	p                                       [3]time.Duration
	samples, transitions, unresolved, early int
	writes                                  int
	cli                                     cliTimes
	// waits says what happened while the changes slower than 1 s waited.
	waits waitSummary
	// writeErrors are the controller's failed writes during the update.
	writeErrors int
	// byMinute and perMinute: insight latency percentiles and counts of
	// the changes made in each minute of the update.
	byMinute  [][3]time.Duration
	perMinute []int
}

// runUpdate requests an update to target and waits until the update status
// says it is done. With a CLI path it also times one render mid-update.
func runUpdate(ctx context.Context, o options, c client.Client, metricsAt endpoint, probe *writeProbe, lat *latencies, pid int,
	start time.Time, target string, nodes int, cli, kubeconfig string) (updateResult, error) {
	var r updateResult
	writesBefore, errorsBefore, err := writeCounts(metricsAt)
	if err != nil {
		return r, err
	}
	lat.reset()
	sampler := &waitSampler{probe: probe}
	sampling, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() { defer close(sampled); sampler.run(sampling, metricsAt) }()
	defer func() { stopSampling(); <-sampled }()
	if err := requestUpdate(ctx, c, target); err != nil {
		return r, err
	}
	updateStart := time.Now()
	step(start, "update to %s requested", target)
	if o.pprofAddr != "" {
		profiled := make(chan struct{})
		go func() {
			defer close(profiled)
			if err := saveProfile(ctx, o.pprofAddr, fmt.Sprintf("profile?seconds=%d", int(profileLength.Seconds())),
				filepath.Join(o.profileDir, "cpu.pprof")); err != nil {
				step(start, "CPU profile: %v", err)
			}
		}()
		defer func() { <-profiled }()
	}
	lastReport, reported := time.Now(), 0
	if err := framework.WaitFor(ctx, o.timeout, func() bool {
		if time.Since(lastReport) > 15*time.Second {
			lastReport = time.Now()
			var slowest string
			slowest, reported = slowestSince(lat, sampler, reported)
			p := lat.percentiles()
			step(start, "%d node transitions so far (insight p50 %s, p99 %s), RSS %s%s", lat.transitions(), p[0], p[1], rss(pid), slowest)
		}
		// Mid-update, with nodes in every phase, is when rendering is the
		// most work.
		if cli != "" && r.cli == nil && lat.transitions() > nodes/2 {
			d, err := timeCLI(ctx, cli, kubeconfig)
			if err != nil {
				// Reported, and tried again at the next poll.
				step(start, "%v", err)
			} else {
				r.cli = d
				step(start, "kubectl upshift status rendered the updating cluster in %s", d)
			}
		}
		return updateDone(ctx, c, target, nodes)
	}); err != nil {
		return r, fmt.Errorf("waiting for the update: %w", err)
	}
	r.took = time.Since(updateStart)
	// Let the last insight writes land before reading the counters.
	_ = framework.WaitFor(ctx, 30*time.Second, func() bool { return lat.pendingCount() == 0 })
	if o.pprofAddr != "" {
		if err := saveProfile(ctx, o.pprofAddr, "heap", filepath.Join(o.profileDir, "heap.pprof")); err != nil {
			step(start, "heap profile: %v", err)
		}
	}
	writesAfter, errorsAfter, err := writeCounts(metricsAt)
	if err != nil {
		return r, err
	}
	r.writes, r.writeErrors = writesAfter-writesBefore, errorsAfter-errorsBefore
	r.waits = sampler.summary(lat.all(), time.Second, updateStart, time.Now())
	r.p = lat.percentiles()
	r.byMinute, r.perMinute = lat.byMinute(updateStart)
	r.samples, r.transitions, r.unresolved, r.early = lat.count(), lat.transitions(), lat.pendingCount(), lat.earlyCount()
	step(start, "update to %s done in %s: insight p50 %s p99 %s", target, r.took.Round(time.Second), r.p[0], r.p[1])
	return r, nil
}

// cliRuns is how many times timeCLI runs the command: one run on a loaded
// machine says little.
const cliRuns = 3

// cliTimes are the wall times of the runs of `kubectl upshift status`.
type cliTimes []time.Duration

func (t cliTimes) String() string {
	parts := make([]string, len(t))
	for i, d := range t {
		parts[i] = d.Round(time.Millisecond).String()
	}
	return strings.Join(parts, " / ")
}

// timeCLI runs `kubectl upshift status` cliRuns times, one after the other,
// and returns their wall times.
func timeCLI(ctx context.Context, cli, kubeconfig string) (cliTimes, error) {
	var times cliTimes
	for range cliRuns {
		var stderr strings.Builder
		cmd := exec.CommandContext(ctx, cli, "status", "--kubeconfig="+kubeconfig)
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		began := time.Now()
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("kubectl upshift status: %w after %s: %s", err, time.Since(began).Round(time.Millisecond), stderr.String())
		}
		times = append(times, time.Since(began))
	}
	return times, nil
}

// slowestSince describes, for the bench's progress lines, the slowest of
// the changes resolved since the previous call (index from on) if it took
// more than a second, with what waits.go sampled while it waited; it also
// returns how many are resolved now.
func slowestSince(lat *latencies, s *waitSampler, from int) (string, int) {
	all := lat.all()
	var worst *sample
	for i := from; i < len(all); i++ {
		if worst == nil || all[i].d > worst.d {
			worst = &all[i]
		}
	}
	if worst == nil || worst.d <= time.Second {
		return "", len(all)
	}
	d, ok := s.during(worst.at, worst.at.Add(worst.d))
	if !ok {
		return fmt.Sprintf("; slowest change since the last report %s", worst.d.Round(time.Millisecond)), len(all)
	}
	return fmt.Sprintf("; slowest change since the last report %s: %.0f insight writes pending at most, %.0f recomputations ended, the longest %s, bench write at most %s",
		worst.d.Round(time.Millisecond), d.pending, d.recomputations, d.longest.Round(time.Millisecond), d.slowestProbe.Round(time.Millisecond)), len(all)
}

// latencies pairs each node state change (the machine-config daemon's state
// annotation) with the first update of the node's insight that shows that
// state or a later one: Updating=True shows Working or Rebooting, anything
// else shows Done. A change the controller folds into a write of a later
// state counts until that write.
type latencies struct {
	mu      sync.Mutex
	pending map[string][]change
	samples []sample
	changes int
	// early counts changes whose insight the bench saw before the change
	// itself. Its two watches deliver independently, and a loaded Node
	// watch can lag the controller's whole reaction; and, as oc does, an
	// insight shows its node updating (Draining) as soon as the node's
	// desired config changes, while the MCD still says Done, so its write
	// races the MCD's turn to Working. Such a change has no latency to
	// measure, and waiting for another insight update would pair it with
	// the wrong one (the end of the drain, seconds later) or none.
	early int
	// shown is, per node, whether its insight last showed it updating.
	shown map[string]bool
}

// sample is one resolved node state change: when the node changed, and how
// long until its insight showed it.
type sample struct {
	at time.Time
	d  time.Duration
}

type change struct {
	state string
	at    time.Time
}

func newLatencies() *latencies {
	return &latencies{pending: map[string][]change{}, shown: map[string]bool{}}
}

func (l *latencies) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending, l.samples, l.changes, l.early = map[string][]change{}, nil, 0, 0
}

// nodeChanged records that the node's MCD state changed from old to state.
func (l *latencies) nodeChanged(name, old, state string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changes++
	updating := isUpdating(state)
	// No change of the node's is pending, so the insight showed its old
	// state; if the insight has moved on to this one since, it showed this
	// change before the bench saw it.
	if len(l.pending[name]) == 0 && isUpdating(old) != updating && l.shown[name] == updating {
		l.early++
		return
	}
	l.pending[name] = append(l.pending[name], change{state, at})
}

// isUpdating says whether the insight of a node in the MCD state shows
// Updating=True.
func isUpdating(state string) bool { return state == "Working" || state == "Rebooting" }

// insightSeen records what the insight shows when the bench first sees it.
func (l *latencies) insightSeen(name string, updating bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.shown[name] = updating
}

// insightChanged resolves the newest pending change the insight shows, and
// every older one with it.
func (l *latencies) insightChanged(name string, updating bool, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.shown[name] = updating
	q := l.pending[name]
	last := -1
	for i, c := range q {
		if isUpdating(c.state) == updating {
			last = i
		}
	}
	for _, c := range q[:last+1] {
		l.samples = append(l.samples, sample{c.at, at.Sub(c.at)})
	}
	l.pending[name] = q[last+1:]
}

func (l *latencies) transitions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changes
}

func (l *latencies) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.samples)
}

// earlyCount is how many changes the insight showed before the bench saw them.
func (l *latencies) earlyCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.early
}

func (l *latencies) pendingCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, q := range l.pending {
		n += len(q)
	}
	return n
}

// all are the resolved changes.
func (l *latencies) all() []sample {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sample(nil), l.samples...)
}

func (l *latencies) percentiles() [3]time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return percentiles(durations(l.samples))
}

// byMinute are the percentiles of the changes made in each minute after
// from (index 0: the first minute), with their counts: where in an update
// the slow insights are.
func (l *latencies) byMinute(from time.Time) ([][3]time.Duration, []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var groups [][]sample
	for _, s := range l.samples {
		m := max(0, int(s.at.Sub(from)/time.Minute))
		for len(groups) <= m {
			groups = append(groups, nil)
		}
		groups[m] = append(groups[m], s)
	}
	ps, ns := make([][3]time.Duration, len(groups)), make([]int, len(groups))
	for i, g := range groups {
		ps[i], ns[i] = percentiles(durations(g)), len(g)
	}
	return ps, ns
}

// durations are the samples' durations.
func durations(samples []sample) []time.Duration {
	out := make([]time.Duration, len(samples))
	for i := range samples {
		out[i] = samples[i].d
	}
	return out
}

func watchNodesAndInsights(ctx context.Context, c cache.Cache, lat *latencies) error {
	nodes, err := c.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return err
	}
	if _, err := nodes.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
		o, n := oldObj.(*corev1.Node), newObj.(*corev1.Node)
		if o.Annotations[annoState] != n.Annotations[annoState] {
			lat.nodeChanged(n.Name, o.Annotations[annoState], n.Annotations[annoState], time.Now())
		}
	}}); err != nil {
		return err
	}
	npis, err := c.GetInformer(ctx, &updatev1alpha1.NodeProgressInsight{})
	if err != nil {
		return err
	}
	updating := func(obj any) (string, bool) {
		npi := obj.(*updatev1alpha1.NodeProgressInsight)
		return npi.Name, meta.IsStatusConditionTrue(npi.Status.Conditions, updatev1alpha1.ConditionUpdating)
	}
	_, err = npis.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			lat.insightSeen(updating(obj))
		},
		UpdateFunc: func(_, newObj any) {
			name, u := updating(newObj)
			lat.insightChanged(name, u, time.Now())
		},
	})
	return err
}

func updateDone(ctx context.Context, c client.Client, target string, nodes int) bool {
	us := &updatev1alpha1.UpgradeStatus{}
	if c.Get(ctx, client.ObjectKey{Name: updatev1alpha1.UpgradeStatusName}, us) != nil {
		return false
	}
	cp := us.Status.ControlPlane
	if cp == nil || cp.ClusterVersion == nil || cp.ClusterVersion.Versions.Target.Version != target ||
		meta.IsStatusConditionTrue(cp.Conditions, updatev1alpha1.ConditionUpdating) {
		return false
	}
	for _, p := range us.Status.WorkerPools {
		if p.Pool.Assessment != updatev1alpha1.PoolCompleted {
			return false
		}
	}
	npis := &updatev1alpha1.NodeProgressInsightList{}
	if c.List(ctx, npis) != nil || len(npis.Items) != nodes {
		return false
	}
	for _, n := range npis.Items {
		if n.Status.Version != target {
			return false
		}
	}
	return true
}

// writeCounts are the controller's write requests and its failed writes, of
// every kind, so far.
func writeCounts(e endpoint) (writes, failed int, err error) {
	ms, err := e.metrics()
	if err != nil {
		return 0, 0, err
	}
	return int(writeRequests(ms)), int(ms.Sum("upshift_update_status_write_errors_total", nil)), nil
}

// profileLength is how much of the first update the CPU profile covers:
// the first wave and several minutes of the steady state after it.
const profileLength = 10 * time.Minute

// saveProfile writes the controller's /debug/pprof/<what> to file.
func saveProfile(ctx context.Context, addr, what, file string) error {
	return fetchProfile(ctx, http.DefaultClient, "http://"+addr, what, file)
}

// fetchProfile writes <base>/debug/pprof/<what> to file, through hc (the
// apiserver's needs its credentials).
func fetchProfile(ctx context.Context, hc *http.Client, base, what, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/debug/pprof/"+what, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", req.URL, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
