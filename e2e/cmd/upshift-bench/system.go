package main

// The whole-system bench (system): what Upshift costs an upgrade. A
// simulated cluster of 3 masters and --workers workers (maxUnavailable
// --max-unavailable on the worker pool and the node-gate run) is updated at
// one ocpsim time scale, alternating (--pairs of each):
//
//   - without Upshift: the bench sets ClusterVersion's desired update, the
//     way an administrator would, and ocpsim's CVO and MCO do the rest;
//   - with Upshift: the upgrade-scheduler (an OSD UpgradeConfig with
//     capacity reservation, MUO's steps), node-gate (a run with one no-op
//     pre-update hook and --lookahead), the mcp-tracker and the
//     update-status-controller, each as its chart's ServiceAccount with the
//     chart's defaults, started before the update and stopped after it; the
//     update starts at the UpgradeConfig's upgradeAt.
//
// The cpms-controller serves the ControlPlaneMachineSet webhook, so it runs
// through both (idle: no change is requested). Each update is timed from
// its start (the request, or upgradeAt) until ClusterVersion completed and
// every pool is updated and unpaused with every node on its target — and,
// with Upshift, the UpgradeConfig is Upgraded and the run Completed. The
// ratio reported is the median of the pairs' ratios; the time Upshift adds
// is attributed to the scheduler's steps before the request, the control
// plane, the workers and the steps after.

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocpsim"
)

// systemComponents are the controllers started around each update with
// Upshift, with the flags the bench adds to their charts'.
var systemComponents = []struct{ chart, binary, release string }{
	{"upgrade-scheduler", "upgrade-scheduler", "sched"},
	{"node-gate", "node-gate", "ngate"},
	{"mcp-tracker", "mcp-tracker", "mcpt"},
	{"update-status-controller", "update-status-controller", "usc"},
}

// leftOut parses --leave-out: the charts of the components not started.
// The upgrade-scheduler cannot be left out: it requests the update.
func leftOut(flag string) (map[string]bool, error) {
	out := map[string]bool{}
	if flag == "" {
		return out, nil
	}
	for _, name := range strings.Split(flag, ",") {
		known := false
		for _, sc := range systemComponents {
			known = known || sc.chart == name && name != "upgrade-scheduler"
		}
		if !known {
			return nil, fmt.Errorf("--leave-out: %q is not one of node-gate, mcp-tracker, update-status-controller", name)
		}
		out[name] = true
	}
	return out, nil
}

// systemTimes is one update, from its start (the request without
// Upshift, upgradeAt with it).
type systemTimes struct {
	whole time.Duration
	// requested: ClusterVersion's desired update set (0 without Upshift);
	// cvDone: ClusterVersion completed; settled: the cluster done (every
	// pool updated and unpaused).
	requested, cvDone, settled time.Duration
	// workersStarted: the MCO first moved a worker (told it to run a
	// configuration it does not run yet). Not one of the additive parts:
	// the workers start while the control plane updates.
	workersStarted time.Duration
	// steps are the UpgradeConfig's history conditions: each step's time.
	steps []string
	// capacityAsked: when the temporary machines were requested, from
	// upgradeAt (negative: ahead of it, with --capacity-lead).
	capacityAsked time.Duration
	// cpu is what each program used over the update, api what the
	// apiserver served.
	cpu cpuUse
	api apiTraffic
	// from and to bound the update in wall time (the audit log's).
	from, to time.Time
}

func runSystem(ctx context.Context, o options) (err error) {
	start := time.Now()
	ctrl.SetLogger(logr.Discard())
	if o.pairs < 1 {
		return fmt.Errorf("--pairs must be at least 1")
	}
	skip, err := leftOut(o.leaveOut)
	if err != nil {
		return err
	}
	bins := map[string]string{}
	for _, c := range append(systemComponents, struct{ chart, binary, release string }{"cpms-controller", "cpms-controller", "cpms"}) {
		if bins[c.release], err = filepath.Abs(filepath.Join(o.binDir, c.binary)); err != nil {
			return err
		}
	}
	graph := pairGraph(o.pairs)
	components := []framework.ComponentOptions{{Chart: "cpms-controller", Release: "cpms", Namespace: "openshift-machine-api",
		Binary: bins["cpms"], LeaderElect: true, Webhook: true}}
	for _, c := range systemComponents {
		components = append(components, framework.ComponentOptions{Chart: c.chart, Release: c.release, Namespace: gateNamespace})
	}
	cluster, err := framework.StartCluster(ctx, framework.ClusterOptions{
		ControlPlane: testenv.Options{ControllerManager: true, Scheduler: true, Kwok: true, KwokNodeLeases: true, Alertmanager: true, AuditLog: o.audit},
		Seed: &ocpsim.Topology{Version: "4.16.1", Channel: "stable-4.16", Masters: 3, Workers: o.workers,
			WorkerMaxUnavailable: o.maxUnavailable, Graph: graph},
		Sim:        &ocpsim.Options{TimeScale: o.timeScale, Graph: graph},
		Components: components,
		Progress: func(s framework.Stage) {
			switch s {
			case framework.StageSeed:
				step(start, "control plane up (with kube-controller-manager, kube-scheduler, kwok, Alertmanager); cpms-controller serving its webhook")
			case framework.StageComponents:
				step(start, "seeded %d nodes (3 master, %d worker)", o.workers+3, o.workers)
			}
		},
	})
	if err != nil {
		return err
	}
	defer cluster.StopInto(&err)
	env := cluster.Env
	watchCache, stopWatches, err := startWatches(ctx, env.Config, cache.Options{Scheme: env.Client.Scheme()}, func(cache.Cache) error { return nil })
	if err != nil {
		return err
	}
	defer stopWatches()

	// What stays between updates: the rule, MUO's ConfigMap, the machine
	// pools capacity reservation copies.
	if err := createGateRule(ctx, env.Client, o.lookahead); err != nil {
		return err
	}
	// LocalConfig ends in its scale section: the lead time goes there.
	if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-operator-config", Namespace: gateNamespace},
		Data: map[string]string{"config.yaml": framework.LocalConfig + fmt.Sprintf("  leadTime: %d\n", o.capacityLead)}}); err != nil {
		return err
	}
	if err := framework.LabelMachinePools(ctx, env.Client); err != nil {
		return err
	}

	var ratios []float64
	var lines []string
	var last, lastNone systemTimes
	for i := 0; i < o.pairs; i++ {
		none, err := updateWithout(ctx, env.Client, env.Config, watchCache, o, start, graph[1+2*i])
		if err != nil {
			return fmt.Errorf("update %d without Upshift: %w", i+1, err)
		}
		with, err := updateWith(ctx, cluster, watchCache, bins, skip, o, start, graph[2+2*i])
		if err != nil {
			return fmt.Errorf("update %d with Upshift: %w", i+1, err)
		}
		rt := ratio(with.whole, none.whole)
		ratios = append(ratios, rt)
		lines = append(lines, fmt.Sprintf("pair %d: without %s, with %s: %.3f", i+1, none.whole.Round(time.Second), with.whole.Round(time.Second), rt))
		last, lastNone = with, none
	}

	fmt.Println()
	fmt.Printf("nodes:                 %d (3 master, %d worker), maxUnavailable %s (pool and run), time scale %.0f\n",
		o.workers+3, o.workers, o.maxUnavailable, o.timeScale)
	fmt.Printf("with Upshift:          upgrade-scheduler (OSD, capacity reservation), node-gate (one no-op hook, lookahead %d), mcp-tracker, update-status-controller; cpms-controller idle in both\n", o.lookahead)
	if o.leaveOut != "" {
		fmt.Printf("left out:              %s\n", o.leaveOut)
	}
	fmt.Printf("(the attribution is the last pair's)\n")
	row := func(name string, without, with time.Duration, what string) {
		fmt.Printf("  %-26s %8s %8s %+7.0fs  %s\n", name, without.Round(time.Second), with.Round(time.Second), (with - without).Seconds(), what)
	}
	fmt.Printf("  %-26s %8s %8s %8s\n", "", "without", "with", "added")
	row("before the request", 0, last.requested, "the scheduler's steps from upgradeAt until it sets ClusterVersion's desired update")
	row("control plane", lastNone.cvDone, last.cvDone-last.requested, "the request until ClusterVersion completed")
	row("workers after that", lastNone.settled-lastNone.cvDone, last.settled-last.cvDone, "until every pool is updated and unpaused (node-gate's holds and hooks)")
	row("after the cluster is done", 0, last.whole-last.settled, "until the UpgradeConfig is Upgraded and the run Completed (capacity removal, post checks)")
	row("whole", lastNone.whole, last.whole, "")
	fmt.Printf("  the first worker moved %s after the request without Upshift, %s with; the workers' rollout from then took %s without, %s with\n",
		lastNone.workersStarted.Round(time.Second), (last.workersStarted - last.requested).Round(time.Second),
		(lastNone.settled - lastNone.workersStarted).Round(time.Second), (last.settled - last.workersStarted).Round(time.Second))
	fmt.Printf("  the UpgradeConfig's steps: %s\n", strings.Join(last.steps, "; "))
	when := fmt.Sprintf("%s after", last.capacityAsked.Round(time.Second))
	if last.capacityAsked < 0 {
		when = fmt.Sprintf("%s before", (-last.capacityAsked).Round(time.Second))
	}
	fmt.Printf("  the temporary machines were requested %s upgradeAt (scale.leadTime %d min; a request before upgradeAt is outside the measured time)\n",
		when, o.capacityLead)
	printCPUTable(lastNone.cpu, last.cpu, lastNone.whole, last.whole, runtime.NumCPU())
	printAPITable(lastNone.api, last.api, 12)
	if o.audit {
		without, err := countWrites(env, lastNone.from, lastNone.to)
		if err != nil {
			return err
		}
		with, err := countWrites(env, last.from, last.to)
		if err != nil {
			return err
		}
		printWrites(without, with, 20)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
	step(start, "bench done")
	fmt.Printf("system: with/without Upshift %.3f over %d interleaved pairs\n", median(ratios), len(ratios))
	return nil
}

// updateWithout sets ClusterVersion's desired update and waits until the
// cluster is done.
func updateWithout(ctx context.Context, c client.Client, cfg *rest.Config, cc cache.Cache, o options, start time.Time, target string) (systemTimes, error) {
	var t systemTimes
	before, err := readMachineUse(ctx, cfg)
	if err != nil {
		return t, err
	}
	if err := requestUpdate(ctx, c, target); err != nil {
		return t, err
	}
	requested := time.Now()
	t.from = requested
	step(start, "update to %s without Upshift requested", target)
	if err := framework.WaitFor(ctx, o.updateTimeout, func() bool {
		if t.workersStarted == 0 && workerMoving(ctx, cc) {
			t.workersStarted = time.Since(requested)
		}
		if t.cvDone == 0 && cvCompleted(ctx, cc, target) {
			t.cvDone = time.Since(requested)
		}
		return updateSettled(ctx, cc, target, o.workers)
	}); err != nil {
		return t, err
	}
	t.whole = time.Since(requested)
	t.settled = t.whole
	t.to = time.Now()
	after, err := readMachineUse(ctx, cfg)
	if err != nil {
		return t, err
	}
	used := after.since(before)
	t.cpu, t.api = used.cpu, used.api
	step(start, "update to %s without Upshift done in %s", target, t.whole.Round(time.Second))
	return t, nil
}

// systemProfileLength is how much of an update with Upshift --profile-dir
// profiles: from upgradeAt, the control plane and most of the workers.
const systemProfileLength = 5 * time.Minute

// profileSystem takes a CPU profile of each component (chart name -> its
// pprof address) and of the apiserver over systemProfileLength from
// upgradeAt, into prefix-<program>.cpu.pprof. A profile that fails is
// reported, not fatal: the update's times do not depend on it.
func profileSystem(ctx context.Context, cfg *rest.Config, addrs map[string]string, upgradeAt time.Time, prefix string, start time.Time) (*sync.WaitGroup, error) {
	apiserver, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("profile?seconds=%d", int(systemProfileLength.Seconds()))
	var wg sync.WaitGroup
	profile := func(name string, hc *http.Client, base string) {
		wg.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(upgradeAt)):
			}
			if err := fetchProfile(ctx, hc, base, what, prefix+"-"+name+".cpu.pprof"); err != nil {
				step(start, "CPU profile of %s: %v", name, err)
			}
		})
	}
	for name, addr := range addrs {
		profile(name, http.DefaultClient, "http://"+addr)
	}
	profile("kube-apiserver", apiserver, strings.TrimSuffix(cfg.Host, "/"))
	return &wg, nil
}

// workerMoving: the MCO told some worker to run a configuration it does not
// run yet. A node moved into a paused gate pool is not told anything, so
// node-gate's holds do not count; a released node does.
func workerMoving(ctx context.Context, cc cache.Cache) bool {
	var nodes corev1.NodeList
	if cc.List(ctx, &nodes) != nil {
		return false
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if _, master := n.Labels[masterRole]; master {
			continue
		}
		if desired := n.Annotations[mcostate.DesiredConfig]; desired != "" && desired != n.Annotations[mcostate.CurrentConfig] {
			return true
		}
	}
	return false
}

// cvCompleted: ClusterVersion completed target.
func cvCompleted(ctx context.Context, cc cache.Cache, target string) bool {
	cv := &configv1.ClusterVersion{}
	return cc.Get(ctx, client.ObjectKey{Name: "version"}, cv) == nil && len(cv.Status.History) > 0 &&
		cv.Status.History[0].Version == target && cv.Status.History[0].State == configv1.CompletedUpdate
}

// updateWith starts the components (those not in skip), schedules the
// update in an UpgradeConfig a little ahead (the components' caches must be
// synced and the run Idle by then), waits until everything is done, then
// removes the UpgradeConfig and the run (the components restore what they
// changed) and stops the components.
func updateWith(ctx context.Context, cluster *framework.Cluster, cc cache.Cache, bins map[string]string, skip map[string]bool, o options, start time.Time, target string) (_ systemTimes, err error) {
	c := cluster.Client
	var running []*framework.Running
	defer func() {
		for _, r := range running {
			_ = r.Stop(10 * time.Second)
		}
	}()
	// With --profile-dir, where each component serves /debug/pprof.
	pprofAddrs := map[string]string{}
	gated := !skip["node-gate"]
	var started []string
	for _, sc := range systemComponents {
		if skip[sc.chart] {
			continue
		}
		started = append(started, sc.chart)
		var extra []string
		switch sc.release {
		case "sched":
			extra = []string{"--alertmanager-url=" + cluster.Env.Alertmanager.URL}
		case "ngate":
			extra = []string{"--job-namespaces=" + gateNamespace}
		}
		if o.profileDir != "" {
			addr, err := testenv.FreeAddr()
			if err != nil {
				return systemTimes{}, err
			}
			extra = append(extra, "--pprof-bind-address="+addr)
			pprofAddrs[sc.chart] = addr
		}
		r, err := framework.StartAsIdentity(bins[sc.release], cluster.Components[sc.release].Identity, gateNamespace, true, extra...)
		if err != nil {
			return systemTimes{}, err
		}
		running = append(running, r)
	}
	for i, r := range running {
		if err := framework.WaitReady(ctx, r, 2*time.Minute); err != nil {
			return systemTimes{}, fmt.Errorf("%s not ready: %w\n%s", started[i], err, r.Logs())
		}
	}
	if gated {
		if err := createGateRun(ctx, c, o.maxUnavailable); err != nil {
			return systemTimes{}, err
		}
		if err := framework.WaitFor(ctx, 5*time.Minute, func() bool {
			run := &nodegatev1alpha1.MutexRunConfig{}
			return c.Get(ctx, benchRun, run) == nil && run.Status.Phase == nodegatev1alpha1.RunIdle
		}); err != nil {
			return systemTimes{}, fmt.Errorf("waiting for the run to be Idle: %w", err)
		}
	}
	// Far enough ahead for the components' caches, and for the temporary
	// machines requested scale.leadTime before it.
	upgradeAt := time.Now().Add(max(10*time.Second, time.Duration(o.capacityLead)*time.Minute)).Truncate(time.Second).Add(time.Second)
	uc := &upgradev1alpha1.UpgradeConfig{ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-config", Namespace: gateNamespace},
		Spec: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: target, Channel: "stable-4.16"},
			UpgradeAt: upgradeAt.UTC().Format(time.RFC3339), Type: upgradev1alpha1.OSD, PDBForceDrainTimeout: 60, CapacityReservation: true}}
	if err := c.Create(ctx, uc); err != nil {
		return systemTimes{}, err
	}
	step(start, "update to %s with Upshift scheduled at %s", target, upgradeAt.Format(time.TimeOnly))
	if o.profileDir != "" {
		profiled, err := profileSystem(ctx, cluster.Env.Config, pprofAddrs, upgradeAt, filepath.Join(o.profileDir, target), start)
		if err != nil {
			return systemTimes{}, err
		}
		// Before the components stop (the deferred calls run last first).
		defer profiled.Wait()
	}
	var t systemTimes
	var cpuBefore cpuUse
	var apiBefore *apiTraffic
	lastReport := time.Now()
	// Everything is read from the bench's watches: polling the apiserver
	// the update runs on would add to what is measured.
	err = framework.WaitFor(ctx, o.updateTimeout+time.Until(upgradeAt), func() bool {
		since := time.Since(upgradeAt)
		if cpuBefore == nil && since >= 0 {
			cpuBefore, _ = readCPU() // a failure leaves it nil: the next poll reads again
		}
		if apiBefore == nil && since >= 0 {
			if a, err := readAPITraffic(ctx, cluster.Env.Config); err == nil {
				apiBefore = &a
			}
		}
		if time.Since(lastReport) > 15*time.Second {
			lastReport = time.Now()
			step(start, "with Upshift: %s", ucPhase(ctx, cc))
		}
		if t.requested == 0 && desiredIs(ctx, cc, target) {
			t.requested = since
		}
		if t.requested != 0 && t.workersStarted == 0 && workerMoving(ctx, cc) {
			t.workersStarted = since
		}
		if t.cvDone == 0 && cvCompleted(ctx, cc, target) {
			t.cvDone = since
		}
		if t.settled == 0 && updateSettled(ctx, cc, target, o.workers) {
			t.settled = since
		}
		run := &nodegatev1alpha1.MutexRunConfig{}
		return t.settled > 0 && ucPhase(ctx, cc) == string(upgradev1alpha1.UpgradePhaseUpgraded) &&
			(!gated || cc.Get(ctx, benchRun, run) == nil && run.Status.Phase == nodegatev1alpha1.RunCompleted)
	})
	if err != nil {
		logs := ""
		for i, r := range running {
			logs += fmt.Sprintf("--- %s\n%s", started[i], tail(r.Logs(), 30))
		}
		return t, fmt.Errorf("%w (%s)\n%s", err, ucPhase(ctx, cc), logs)
	}
	t.whole = time.Since(upgradeAt)
	t.from, t.to = upgradeAt, time.Now()
	cpuAfter, err := readCPU()
	if err != nil {
		return t, err
	}
	t.cpu = cpuAfter.since(cpuBefore)
	apiAfter, err := readAPITraffic(ctx, cluster.Env.Config)
	if err != nil {
		return t, err
	}
	if apiBefore != nil {
		t.api = apiAfter.since(*apiBefore)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(uc), uc); err != nil {
		return t, err
	}
	t.steps = framework.StepTimings(uc)
	if cr := uc.Status.CapacityReservation; cr != nil && cr.StartTime != nil {
		t.capacityAsked = cr.StartTime.Sub(upgradeAt)
	}
	step(start, "update to %s with Upshift done in %s", target, t.whole.Round(time.Second))

	// Let the components clean up after themselves before they stop.
	if err := c.Delete(ctx, uc); err != nil {
		return t, err
	}
	if err := framework.WaitFor(ctx, 5*time.Minute, func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(uc), &upgradev1alpha1.UpgradeConfig{}))
	}); err != nil {
		return t, fmt.Errorf("waiting for the UpgradeConfig to go: %w", err)
	}
	if gated {
		if err := deleteGateRun(ctx, c); err != nil {
			return t, err
		}
	}
	return t, nil
}

// desiredIs: ClusterVersion's desired update is target.
func desiredIs(ctx context.Context, cc cache.Cache, target string) bool {
	cv := &configv1.ClusterVersion{}
	return cc.Get(ctx, client.ObjectKey{Name: "version"}, cv) == nil && cv.Spec.DesiredUpdate != nil && cv.Spec.DesiredUpdate.Version == target
}

// ucPhase is the UpgradeConfig's phase and current step.
func ucPhase(ctx context.Context, c client.Reader) string {
	uc := &upgradev1alpha1.UpgradeConfig{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: gateNamespace, Name: "managed-upgrade-config"}, uc); err != nil || len(uc.Status.History) == 0 {
		return "not started"
	}
	if uc.Status.CurrentStep != "" {
		return string(uc.Status.History[0].Phase) + ", " + uc.Status.CurrentStep
	}
	return string(uc.Status.History[0].Phase)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}
