// Command upshift-bench is `make bench`: the update-status-controller on a
// large simulated cluster (kwok nodes driven by ocpsim), running as its
// chart's ServiceAccount. It reports the controller's peak RSS, the latency
// from a node's machine-config state change to its NodeProgressInsight update,
// and the controller's write requests per node transition.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
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

type options struct {
	binDir         string
	workers        int
	maxUnavailable string
	timeScale      float64
	timeout        time.Duration
	qps            int
}

func main() {
	var o options
	flag.StringVar(&o.binDir, "bin-dir", "bin", "Folder with the built update-status-controller.")
	flag.IntVar(&o.workers, "workers", 2000, "Worker nodes (plus 3 control-plane nodes).")
	flag.StringVar(&o.maxUnavailable, "max-unavailable", "10%", "The worker pool's maxUnavailable.")
	flag.Float64Var(&o.timeScale, "time-scale", 3000, "Simulated seconds per wall second.")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "Give up after this long.")
	flag.IntVar(&o.qps, "controller-qps", 50, "The controller's --kube-api-qps (burst: twice that); 50 is the chart's default.")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	err := run(ctx, o)
	cancel()
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench failed:", err)
		os.Exit(1)
	}
}

func step(start time.Time, format string, args ...any) {
	fmt.Printf("[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, o options) (err error) {
	start := time.Now()
	ctrl.SetLogger(logr.Discard())
	binary, err := filepath.Abs(filepath.Join(o.binDir, "update-status-controller"))
	if err != nil {
		return err
	}
	env, err := testenv.Start(ctx, testenv.Options{Kwok: true})
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := env.Stop(); err == nil {
			err = stopErr
		}
	}()
	step(start, "control plane up")

	if _, err := ocpsim.Seed(ctx, env.Client, ocpsim.Topology{
		Version: "4.16.1", Masters: 3, Workers: o.workers, WorkerMaxUnavailable: o.maxUnavailable,
		Graph: []string{"4.16.1", "4.16.2"},
	}); err != nil {
		return err
	}
	nodes := o.workers + 3
	step(start, "seeded %d nodes", nodes)
	sim, err := ocpsim.New(env.Config, ocpsim.Options{TimeScale: o.timeScale})
	if err != nil {
		return err
	}
	stopSim := sim.Start(ctx)
	defer func() { _ = stopSim() }()

	const namespace = "upshift"
	id, err := framework.InstallChartIdentity(ctx, env, "update-status-controller", "usc", namespace)
	if err != nil {
		return err
	}
	metricsAddr, err := testenv.FreeAddr()
	if err != nil {
		return err
	}
	// Metrics are scraped as Prometheus would: a ServiceAccount bound to the
	// chart's metrics-reader ClusterRole.
	if err := env.CreateNamespace(ctx, "monitoring"); err != nil {
		return err
	}
	scraper, err := framework.InstallMetricsScraper(ctx, env, id.Chart, "monitoring", "prometheus")
	if err != nil {
		return err
	}
	metricsURL := "https://" + metricsAddr + "/metrics"
	controller, err := framework.StartComponent(binary, "--kubeconfig="+id.Kubeconfig,
		fmt.Sprintf("--kube-api-qps=%d", o.qps), fmt.Sprintf("--kube-api-burst=%d", 2*o.qps),
		"--leader-election-namespace="+namespace, "--namespace="+namespace,
		"--metrics-bind-address="+metricsAddr, "--health-probe-bind-address=0")
	if err != nil {
		return err
	}
	defer func() { _ = controller.Stop(10 * time.Second) }()
	pid := controller.Pid()

	// The bench's own view of the cluster: Node and insight watches.
	watchCache, err := cache.New(env.Config, cache.Options{Scheme: scheme.Scheme})
	if err != nil {
		return err
	}
	lat := newLatencies()
	if err := watchNodesAndInsights(ctx, watchCache, lat); err != nil {
		return err
	}
	// Stopped before the control plane, or the apiserver waits on its watches.
	watchCtx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	go func() { _ = watchCache.Start(watchCtx) }()
	if !watchCache.WaitForCacheSync(ctx) {
		return fmt.Errorf("bench watches did not sync")
	}

	if err := framework.WaitFor(ctx, 10*time.Minute, func() bool {
		npis := &updatev1alpha1.NodeProgressInsightList{}
		return watchCache.List(ctx, npis) == nil && len(npis.Items) == nodes
	}); err != nil {
		return fmt.Errorf("waiting for %d NodeProgressInsights: %w", nodes, err)
	}
	initial := time.Since(start)
	step(start, "controller published %d NodeProgressInsights (RSS %s)", nodes, rss(pid))

	writesBefore, err := writeRequests(scraper, metricsURL)
	if err != nil {
		return err
	}
	lat.reset()
	cv := &configv1.ClusterVersion{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv); err != nil {
		return err
	}
	patch := client.MergeFrom(cv.DeepCopy())
	cv.Spec.DesiredUpdate = &configv1.Update{Version: "4.16.2"}
	if err := env.Client.Patch(ctx, cv, patch); err != nil {
		return err
	}
	updateStart := time.Now()
	step(start, "update to 4.16.2 requested")
	lastReport := time.Now()
	if err := framework.WaitFor(ctx, o.timeout, func() bool {
		if time.Since(lastReport) > 15*time.Second {
			lastReport = time.Now()
			step(start, "%d node transitions so far, RSS %s", lat.transitions(), rss(pid))
		}
		return updateDone(ctx, env.Client, "4.16.2", nodes)
	}); err != nil {
		return fmt.Errorf("waiting for the update: %w", err)
	}
	updateTook := time.Since(updateStart)
	// Let the last insight writes land before reading the counters.
	_ = framework.WaitFor(ctx, 30*time.Second, func() bool { return lat.pendingCount() == 0 })
	writesAfter, err := writeRequests(scraper, metricsURL)
	if err != nil {
		return err
	}
	recomputations, recomputeSeconds, err := reconcileStats(scraper, metricsURL)
	if err != nil {
		return err
	}

	p := lat.percentiles()
	transitions := lat.transitions()
	fmt.Println()
	fmt.Printf("nodes:                           %d (%d workers, maxUnavailable %s), time scale %.0f, controller QPS %d\n",
		nodes, o.workers, o.maxUnavailable, o.timeScale, o.qps)
	fmt.Printf("initial publication:             %s from start (includes control-plane start and seeding)\n", initial.Round(time.Second))
	fmt.Printf("update wall time:                %s\n", updateTook.Round(time.Second))
	fmt.Printf("controller peak RSS (VmHWM):     %s\n", peakRSS(pid))
	fmt.Printf("node state transitions:          %d (unresolved: %d)\n", transitions, lat.pendingCount())
	fmt.Printf("state change -> insight latency: p50 %s  p99 %s  max %s  (n=%d)\n", p[0], p[1], p[2], lat.count())
	fmt.Printf("controller recomputations:       %d in all, mean %s each\n", recomputations,
		(time.Duration(recomputeSeconds / float64(max(recomputations, 1)) * float64(time.Second))).Round(time.Millisecond))
	fmt.Printf("controller write requests:       %d during the update = %.2f per node transition\n",
		writesAfter-writesBefore, float64(writesAfter-writesBefore)/float64(max(transitions, 1)))
	return nil
}

// latencies pairs each node state change (the machine-config daemon's state
// annotation) with the first update of the node's insight that shows that
// state or a later one: Updating=True shows Working or Rebooting, anything
// else shows Done. A change the controller folds into a write of a later
// state counts until that write.
type latencies struct {
	mu      sync.Mutex
	pending map[string][]change
	samples []time.Duration
	changes int
}

type change struct {
	state string
	at    time.Time
}

func newLatencies() *latencies { return &latencies{pending: map[string][]change{}} }

func (l *latencies) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending, l.samples, l.changes = map[string][]change{}, nil, 0
}

func (l *latencies) nodeChanged(name, state string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending[name] = append(l.pending[name], change{state, at})
	l.changes++
}

// insightChanged resolves the newest pending change the insight shows, and
// every older one with it.
func (l *latencies) insightChanged(name string, updating bool, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.pending[name]
	last := -1
	for i, c := range q {
		if (c.state == "Working" || c.state == "Rebooting") == updating {
			last = i
		}
	}
	for _, c := range q[:last+1] {
		l.samples = append(l.samples, at.Sub(c.at))
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

func (l *latencies) pendingCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, q := range l.pending {
		n += len(q)
	}
	return n
}

func (l *latencies) percentiles() [3]time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := append([]time.Duration(nil), l.samples...)
	if len(s) == 0 {
		return [3]time.Duration{}
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))].Round(time.Millisecond) }
	return [3]time.Duration{at(0.50), at(0.99), s[len(s)-1].Round(time.Millisecond)}
}

func watchNodesAndInsights(ctx context.Context, c cache.Cache, lat *latencies) error {
	nodes, err := c.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return err
	}
	if _, err := nodes.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
		o, n := oldObj.(*corev1.Node), newObj.(*corev1.Node)
		if o.Annotations[annoState] != n.Annotations[annoState] {
			lat.nodeChanged(n.Name, n.Annotations[annoState], time.Now())
		}
	}}); err != nil {
		return err
	}
	npis, err := c.GetInformer(ctx, &updatev1alpha1.NodeProgressInsight{})
	if err != nil {
		return err
	}
	_, err = npis.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, newObj any) {
		npi := newObj.(*updatev1alpha1.NodeProgressInsight)
		updating := meta.IsStatusConditionTrue(npi.Status.Conditions, updatev1alpha1.ConditionUpdating)
		lat.insightChanged(npi.Name, updating, time.Now())
	}})
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

// metrics fetches the controller's /metrics text.
func metrics(s *framework.Scraper, url string) ([]string, error) {
	body, err := s.Scrape(url)
	return strings.Split(body, "\n"), err
}

func sampleValue(line string) (float64, error) {
	f := strings.Fields(line)
	return strconv.ParseFloat(f[len(f)-1], 64)
}

// writeRequests sums the controller's client-go requests that write. They
// include the TokenReview and SubjectAccessReview that authenticate a scrape
// (at most two per scrape; the controller caches the answers for minutes),
// which is noise against thousands of insight writes.
func writeRequests(s *framework.Scraper, url string) (int, error) {
	lines, err := metrics(s, url)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, line := range lines {
		if !strings.HasPrefix(line, "rest_client_requests_total{") {
			continue
		}
		for _, m := range []string{`method="POST"`, `method="PUT"`, `method="PATCH"`, `method="DELETE"`} {
			if strings.Contains(line, m) {
				v, err := sampleValue(line)
				if err != nil {
					return 0, err
				}
				total += int(v)
			}
		}
	}
	return total, nil
}

// reconcileStats reads the count and total seconds of the controller's
// recomputations.
func reconcileStats(s *framework.Scraper, url string) (count int, seconds float64, err error) {
	lines, err := metrics(s, url)
	if err != nil {
		return 0, 0, err
	}
	for _, line := range lines {
		switch {
		case strings.HasPrefix(line, "upshift_update_status_reconcile_duration_seconds_count"):
			v, err := sampleValue(line)
			if err != nil {
				return 0, 0, err
			}
			count = int(v)
		case strings.HasPrefix(line, "upshift_update_status_reconcile_duration_seconds_sum"):
			if seconds, err = sampleValue(line); err != nil {
				return 0, 0, err
			}
		}
	}
	return count, seconds, nil
}

func procStatus(pid int, field string) string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func rss(pid int) string     { return procStatus(pid, "VmRSS") }
func peakRSS(pid int) string { return procStatus(pid, "VmHWM") }
