package main

// The node-gate bench (node-gate): a simulated cluster of 3
// masters and --workers workers (maxUnavailable --max-unavailable on both
// the worker pool and the run) on a control plane with
// kube-controller-manager, kube-scheduler and kwok, so hook Jobs really run;
// node-gate runs as its chart's ServiceAccount. Cluster updates at the same
// ocpsim time scale, alternating (--pairs of each): one with no
// MutexRunConfig, the MCO rolling the worker pool on its own, then one gated
// by a run whose one rule has a no-op pre-update hook (a Job that kwok
// completes at once) and --lookahead. The run is deleted (restoring
// everything) before each ungated update. The ratio reported is the median
// of the pairs' gated/ungated wall times.
//
// A reference reactor stands for the fastest controller possible on this
// machine: on every worker Done the bench itself patches a ConfigMap, and
// records when its informer sees the patch. node-gate's added reaction is,
// per Done after the initial fill, the release it answers with (the k-th
// release after the first Done) seen minus the reference seen. A release is
// a Node write, which the API server handles and fans out on a busier path
// than a ConfigMap's; with --node-reference the reactor also annotates the
// Done node at the same instant, and the bench reports the added reaction
// over that write too: what node-gate adds to the fastest Node write.
//
// Every time is when the bench's own informers saw the write. The reaction
// is measured slot by slot: a gated node turning Done (MCD state Done,
// current == desired, Ready, schedulable) frees a slot; node-gate then
// starts the next node (creates its hook Job), the Job runs, and node-gate
// releases the node (removes its nodegate.upshift.io/held-from label, which
// kept it in the paused gate pool: the node is back in its pool, which the
// MCO updates). The k-th Done is paired with the k-th start after the
// initial fill. node-gate's share is the two hops it owns (Done -> Job
// created, Job Complete -> release); the Job's run between them is the Job
// controller's, the scheduler's and kwok's.
//
// A slot's cycle is a worker's own update (targeted -> Done) and the Done ->
// next worker targeted that follows it; the bench reports both for each
// update, and the CPU every process used over it, so that what the gated
// rollout adds is attributed to node-gate, the MCO or the machine.

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/nodegate/plan"
	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
)

const (
	gateNamespace = "upshift-gate"
	workerRole    = "node-role.kubernetes.io/worker"
	// reactionTarget is node-gate's share of the Done -> next release
	// reaction the bench checks p99 against.
	reactionTarget = 100 * time.Millisecond
)

func runNodeGate(ctx context.Context, o options) (err error) {
	start := time.Now()
	ctrl.SetLogger(logr.Discard())
	binary, err := filepath.Abs(filepath.Join(o.binDir, "node-gate"))
	if err != nil {
		return err
	}
	if o.pairs < 1 {
		return fmt.Errorf("--pairs must be at least 1")
	}
	graph := pairGraph(o.pairs)
	cluster, m, id, err := startCluster(ctx, start, benchCluster{
		controlPlane: testenv.Options{ControllerManager: true, Scheduler: true, Kwok: true, KwokNodeLeases: true, AuditLog: o.audit},
		seed: ocpsim.Topology{Version: "4.16.1", Channel: "stable-4.16", Masters: 3, Workers: o.workers,
			WorkerMaxUnavailable: o.maxUnavailable, Graph: graph},
		sim:   ocpsim.Options{TimeScale: o.timeScale, Graph: graph},
		chart: "node-gate", release: "ngate", namespace: gateNamespace,
		controlPlaneUp: "control plane up (with kube-controller-manager, kube-scheduler, kwok)",
		seededNodes:    fmt.Sprintf("seeded %d nodes (3 master, %d worker)", o.workers+3, o.workers),
	})
	if err != nil {
		return err
	}
	defer cluster.StopInto(&err)
	env := cluster.Env

	obs := &gateObserver{}
	watchCache, stopWatches, err := startWatches(ctx, env.Config, cache.Options{Scheme: env.Client.Scheme(), ByObject: map[client.Object]cache.ByObject{
		&batchv1.Job{}: {Namespaces: map[string]cache.Config{gateNamespace: {}}},
	}}, func(c cache.Cache) error { return obs.watch(ctx, c) })
	if err != nil {
		return err
	}
	defer stopWatches()

	args := []string{"--job-namespaces=" + gateNamespace, fmt.Sprintf("--kube-api-qps=%d", o.qps), fmt.Sprintf("--kube-api-burst=%d", 2*o.qps)}
	if o.profileDir != "" {
		if o.pprofAddr, err = testenv.FreeAddr(); err != nil {
			return err
		}
		args = append(args, "--pprof-bind-address="+o.pprofAddr)
	}
	gate, err := framework.StartAsIdentity(binary, id, gateNamespace, true, args...)
	if err != nil {
		return err
	}
	defer func() { _ = gate.Stop(10 * time.Second) }()
	pid := gate.Pid()
	m.url = gate.MetricsURL

	if err := createGateRule(ctx, env.Client, o.lookahead); err != nil {
		return err
	}
	var (
		ratios         []float64
		added          []time.Duration
		ungated, gated updateTimes
		before, after  framework.Metrics
		floor          [3]time.Duration
		cpuUsed        float64
		gatedWall      time.Duration
		pairLines      []string
		r              reactionStats // the last gated update's
		split          addedSplit    // the last gated update's
	)
	for i := 0; i < o.pairs; i++ {
		if i > 0 {
			if err := deleteGateRun(ctx, env.Client); err != nil {
				return err
			}
			step(start, "MutexRunConfig deleted (pools restored)")
		}
		// The bench's own instruments, the write probe and the reference
		// reactor, are API writes too (a Done's answer, four probes a
		// second): they run through the ungated update as through the gated
		// one, so that the ratio compares like with like.
		reference, err := referenceReactor(ctx, env.Client, o.nodeReference)
		if err != nil {
			return err
		}
		probe, err := startWriteProbe(ctx, env.Client, gateNamespace, 250*time.Millisecond)
		if err != nil {
			return err
		}
		obs.setReference(reference)
		ungated, err = obs.update(ctx, env.Client, env.Config, watchCache, o, start, graph[1+2*i], false, pid)
		obs.setReference(nil)
		probe.finish()
		if err != nil {
			return fmt.Errorf("ungated update %d: %w", i+1, err)
		}
		if err := createGateRun(ctx, env.Client, o.maxUnavailable); err != nil {
			return err
		}
		if err := framework.WaitFor(ctx, 5*time.Minute, func() bool { return obs.runPhase() == nodegatev1alpha1.RunIdle }); err != nil {
			return fmt.Errorf("waiting for the run to be Idle (node-gate up and caches synced): %w", err)
		}
		step(start, "MutexRunConfig Idle (RSS %s)", rss(pid))
		if before, err = m.metrics(); err != nil {
			return err
		}
		if probe, err = startWriteProbe(ctx, env.Client, gateNamespace, 250*time.Millisecond); err != nil {
			return err
		}
		cpuBefore, gatedStart := cpuSeconds(pid), time.Now()
		obs.setReference(reference)
		o.profileFile = ""
		if o.profileDir != "" {
			o.profileFile = filepath.Join(o.profileDir, fmt.Sprintf("%d-cpu.pprof", i+1))
		}
		gated, err = obs.update(ctx, env.Client, env.Config, watchCache, o, start, graph[2+2*i], true, pid)
		obs.setReference(nil)
		if err != nil {
			return fmt.Errorf("gated update %d: %w", i+1, err)
		}
		cpuUsed, gatedWall = cpuSeconds(pid)-cpuBefore, time.Since(gatedStart)
		floor = probe.finish()
		if after, err = m.metrics(); err != nil {
			return err
		}
		rt := ratio(gated.whole, ungated.whole)
		ratios = append(ratios, rt)
		pairAdded, overNode := obs.addedReactions(), obs.addedOverNodeWrites()
		added = append(added, pairAdded...)
		p, pn := percentiles(pairAdded), percentiles(overNode)
		line := fmt.Sprintf("pair %d: ungated %s, gated %s: %.3f; added reaction p50 %s p99 %s over %d releases",
			i+1, ungated.whole.Round(time.Second), gated.whole.Round(time.Second), rt, p[0], p[1], len(pairAdded))
		if o.nodeReference {
			line += fmt.Sprintf("; over the reference's Node write p50 %s p99 %s (%d over %s) over %d", pn[0], pn[1], countOver(overNode, reactionTarget), reactionTarget, len(overNode))
		}
		pairLines = append(pairLines, line)
		r = obs.reactions()
		split = obs.addedSplit()
	}
	nodegate := map[string]string{"controller": "nodegate"}
	passes := after.Sum("controller_runtime_reconcile_total", nodegate) - before.Sum("controller_runtime_reconcile_total", nodegate)
	passSeconds := after.Sum("controller_runtime_reconcile_time_seconds_sum", nodegate) - before.Sum("controller_runtime_reconcile_time_seconds_sum", nodegate)
	writes := writeRequests(after) - writeRequests(before)

	// slots is the run's (and the pool's) maxUnavailable as a node count;
	// with lookahead more nodes than that start at once.
	mu := intstr.Parse(o.maxUnavailable)
	slots := mcostate.MaxUnavailable(&mcfgv1.MachineConfigPool{Spec: mcfgv1.MachineConfigPoolSpec{MaxUnavailable: &mu}}, o.workers)
	fmt.Println()
	fmt.Printf("nodes:                              %d (3 master, %d worker), maxUnavailable %s (pool and run), time scale %.0f, node-gate QPS %d\n",
		o.workers+3, o.workers, o.maxUnavailable, o.timeScale, o.qps)
	fmt.Printf("gated run:                          one rule, lookahead %d, one no-op pre-update hook Job per node; %d nodes started at once, %d reactions paired\n", o.lookahead, gated.initialStarts, r.n)
	fmt.Printf("(the figures below are the last pair's; each pair's ratio and added reaction follow them)\n")
	fmt.Printf("Done -> next release (end to end):  p50 %s  p99 %s  max %s\n", r.total[0], r.total[1], r.total[2])
	fmt.Printf("  node-gate share (both hops):      p50 %s  p99 %s  max %s  (target p99 <= %s: %s)\n", r.gate[0], r.gate[1], r.gate[2], reactionTarget, verdict(r.gate[1] <= reactionTarget && r.n > 0))
	fmt.Printf("    Done -> hook Job created:       p50 %s  p99 %s  max %s\n", r.start[0], r.start[1], r.start[2])
	fmt.Printf("      Done -> status shows it started:  p50 %s  p99 %s  max %s\n", r.startDecide[0], r.startDecide[1], r.startDecide[2])
	fmt.Printf("      that status -> Job created:       p50 %s  p99 %s  max %s\n", r.startAct[0], r.startAct[1], r.startAct[2])
	fmt.Printf("    Job Complete -> release:        p50 %s  p99 %s  max %s\n", r.release[0], r.release[1], r.release[2])
	fmt.Printf("      Complete -> status shows it released: p50 %s  p99 %s  max %s\n", r.releaseDecide[0], r.releaseDecide[1], r.releaseDecide[2])
	fmt.Printf("      that status -> label:                 p50 %s  p99 %s  max %s\n", r.releaseAct[0], r.releaseAct[1], r.releaseAct[2])
	fmt.Printf("    hops whose Job or label was seen before the status that records it (one write on the critical path): %d of %d\n", r.oneWrite, r.hops)
	fmt.Printf("added reaction, split: %d of %d over %s; %d released nodes' hook Jobs Complete only after the reference's answer (%d of them over); the others (hooks ready) p50 %s p99 %s max %s; the reference's own Done -> patch seen p50 %s p99 %s max %s\n",
		split.overTarget, split.n, reactionTarget, split.hookLate, split.hookLateOver, split.own[0], split.own[1], split.own[2], split.reference[0], split.reference[1], split.reference[2])
	if len(split.over) > 0 {
		fmt.Printf("  those over %s, at (from the first paired Done): %s\n", reactionTarget, strings.Join(split.over, ", "))
	}
	if o.audit {
		if err := printReleaseRequests(env, obs, "system:serviceaccount:"+gateNamespace+":"+id.ServiceAccount); err != nil {
			return err
		}
	}
	if o.nodeReference {
		fmt.Printf("  the reference's own Done -> its Node annotation seen: p50 %s p99 %s max %s\n", split.nodeReference[0], split.nodeReference[1], split.nodeReference[2])
	}
	fmt.Printf("  one API write meanwhile:          p50 %s  p99 %s  max %s  (a ConfigMap patch every 250ms: each hop is a status write, then a Job create or a label patch)\n", floor[0], floor[1], floor[2])
	fmt.Printf("  hook Job, created -> Complete:    p50 %s  p99 %s  max %s  (Job controller, scheduler, kwok)\n", r.job[0], r.job[1], r.job[2])
	fmt.Printf("update wall time, ungated:          %s  (workers %s, first worker targeted %s after the request)\n",
		ungated.whole.Round(time.Second), ungated.workers.Round(time.Second), ungated.firstMoved.Round(time.Second))
	fmt.Printf("update wall time, gated:            %s  (workers %s, first worker targeted %s after the request; run Completed at %s)\n",
		gated.whole.Round(time.Second), gated.workers.Round(time.Second), gated.firstMoved.Round(time.Second), gated.runCompleted.Round(time.Second))
	fmt.Printf("a worker's update, targeted -> Done: ungated p50 %s p99 %s mean %s; gated p50 %s p99 %s mean %s\n",
		ungated.perNode[0], ungated.perNode[1], ungated.perNode[3], gated.perNode[0], gated.perNode[1], gated.perNode[3])
	fmt.Printf("a worker Done -> the next targeted (k-th with k-th): ungated p50 %s p99 %s mean %s; gated p50 %s p99 %s mean %s\n",
		ungated.doneToNext[0], ungated.doneToNext[1], ungated.doneToNext[3], gated.doneToNext[0], gated.doneToNext[1], gated.doneToNext[3])
	fmt.Printf("  of which, gated, released by node-gate -> targeted by the MCO: p50 %s p99 %s max %s mean %s\n",
		gated.pickup[0], gated.pickup[1], gated.pickup[2], gated.pickup[3])
	obs.mu.Lock()
	unavail := append([]int(nil), obs.unavailAtRelease...)
	obs.mu.Unlock()
	sort.Ints(unavail)
	atLimit := 0
	for _, u := range unavail {
		if u >= slots {
			atLimit++
		}
	}
	if len(unavail) > 0 {
		fmt.Printf("  the worker pool's unavailable nodes at each release: p50 %d, max %d; %d of %d releases found the pool at its limit (%d), waiting for the MCO's capacity\n",
			unavail[len(unavail)/2], unavail[len(unavail)-1], atLimit, len(unavail), slots)
	}
	fmt.Printf("gated / ungated:                    whole update %.3f (target <= 1.05: %s), worker rollout %.3f\n",
		ratio(gated.whole, ungated.whole), verdict(ratio(gated.whole, ungated.whole) <= 1.05), ratio(gated.workers, ungated.workers))
	extra := gated.whole - ungated.whole
	cpWait := gated.firstMoved - ungated.firstMoved
	tail := (gated.whole - gated.firstMoved - gated.workers) - (ungated.whole - ungated.firstMoved - ungated.workers)
	cycles := float64(o.workers) / float64(slots)
	// A slot's cycle is a worker's update and the Done -> next targeted
	// after it; the gated cycle's excess, times the cycles per slot,
	// accounts for the longer rollout.
	slower := gated.perNode[3] - ungated.perNode[3]
	later := gated.doneToNext[3] - ungated.doneToNext[3]
	fmt.Printf("the gated update's extra %s:\n", extra.Round(time.Second))
	fmt.Printf("  workers held until the control plane finished: %s\n", cpWait.Round(time.Second))
	fmt.Printf("  worker rollout longer by:                      %s; ~%.0f cycles per slot x (each worker's update %+v, Done -> next targeted %+v) = %s\n",
		(gated.workers - ungated.workers).Round(time.Second), cycles, slower, later,
		time.Duration(cycles*float64(slower+later)).Round(time.Second))
	fmt.Printf("  after the last worker was Done:                %s longer (the run's restore: the pool's paused and maxUnavailable given back, the gate pool deleted)\n", tail.Round(time.Second))
	fmt.Printf("the machine (\"without\": the ungated update, \"with\": the gated one):\n")
	printCPUTable(ungated.use.cpu, gated.use.cpu, ungated.whole, gated.whole, runtime.NumCPU())
	printQueueTable(ungated.use.queues, gated.use.queues)
	printAPITable(ungated.use.api, gated.use.api, 10)
	fmt.Printf("run status, largest seen:           %.1f KiB of JSON (each hop writes it whole)\n", float64(obs.largestStatus())/1024)
	fmt.Printf("node-gate peak RSS (VmHWM):         %s\n", peakRSS(pid))
	fmt.Printf("node-gate CPU (gated update):       %.1f s in %s of wall time (%.0f%% of one core; the machine has %d)\n",
		cpuUsed, gatedWall.Round(time.Second), 100*cpuUsed/gatedWall.Seconds(), runtime.NumCPU())
	fmt.Printf("node-gate passes (gated update):    %.0f, mean %s each; %.0f write requests\n", passes,
		(time.Duration(passSeconds / max(passes, 1) * float64(time.Second))).Round(100*time.Microsecond), writes)
	fmt.Printf("  passes longer than 25/50/100 ms:  %s\n", slowPasses(before, after, "0.025", "0.05", "0.1"))
	fmt.Printf("  passes queued longer than 10/100 ms before they started: %s\n",
		overBounds(before, after, "workqueue_queue_duration_seconds_bucket", map[string]string{"name": "nodegate"}, "0.01", "0.1"))
	var results []string
	for _, res := range []string{"success", "requeue", "requeue_after", "error"} {
		k := map[string]string{"controller": "nodegate", "result": res}
		results = append(results, fmt.Sprintf("%s %.0f", res, after.Sum("controller_runtime_reconcile_total", k)-before.Sum("controller_runtime_reconcile_total", k)))
	}
	fmt.Printf("  by result:                        %s (requeue_after: a status write lost to a newer one)\n", strings.Join(results, ", "))
	for _, l := range pairLines {
		fmt.Println(l)
	}
	fmt.Printf("node-gate: gated/ungated %.3f over %d interleaved pairs; added reaction p99 %s\n", median(ratios), len(ratios), percentiles(added)[1])
	return nil
}

// median of the ratios (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// slowPasses counts node-gate's passes longer than each bound, from its
// reconcile time histogram (the bounds must be bucket bounds).
func slowPasses(before, after framework.Metrics, bounds ...string) string {
	return overBounds(before, after, "controller_runtime_reconcile_time_seconds_bucket", map[string]string{"controller": "nodegate"}, bounds...)
}

// overBounds counts, per bound, the observations of histogram hist (the
// series with labels) over it between before and after.
func overBounds(before, after framework.Metrics, hist string, labels map[string]string, bounds ...string) string {
	bucket := func(ms framework.Metrics, le string) float64 {
		l := map[string]string{"le": le}
		for k, v := range labels {
			l[k] = v
		}
		return ms.Sum(hist, l)
	}
	total := bucket(after, "+Inf") - bucket(before, "+Inf")
	var out []string
	for _, b := range bounds {
		out = append(out, fmt.Sprintf("%.0f", total-(bucket(after, b)-bucket(before, b))))
	}
	return strings.Join(out, " / ")
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// createGateRun creates a rule with one no-op pre-update hook, a target on
// the worker pool and the run.
// createGateRule creates the gated run's rule (one no-op pre-update hook)
// and target (the worker pool).
func createGateRule(ctx context.Context, c client.Client, lookahead int) error {
	objs := []client.Object{
		&nodegatev1alpha1.MutexRule{ObjectMeta: metav1.ObjectMeta{Name: "noop", Namespace: gateNamespace},
			Spec: nodegatev1alpha1.MutexRuleSpec{JobName: "noop", JobNamespace: gateNamespace, Type: nodegatev1alpha1.RuleTypeKubernetes,
				Lookahead: int32(lookahead),
				JobSpec: &batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "noop", Image: "registry.example.com/noop:1"}},
				}}}}},
		&nodegatev1alpha1.MutexTarget{ObjectMeta: metav1.ObjectMeta{Name: "workers", Namespace: gateNamespace},
			Spec: nodegatev1alpha1.MutexTargetSpec{MachineConfigPools: []string{"worker"}}},
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

var benchRun = client.ObjectKey{Namespace: gateNamespace, Name: "bench"}

func createGateRun(ctx context.Context, c client.Client, maxUnavailable string) error {
	mu := intstr.Parse(maxUnavailable)
	return c.Create(ctx, &nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Name: benchRun.Name, Namespace: benchRun.Namespace},
		Spec: nodegatev1alpha1.MutexRunConfigSpec{
			MutexRules:     []nodegatev1alpha1.ObjectReference{{Name: "noop"}},
			MutexTargets:   []nodegatev1alpha1.ObjectReference{{Name: "workers"}},
			MaxUnavailable: &mu,
		}})
}

// deleteGateRun deletes the run and waits until node-gate has restored
// everything and let it go (its finalizer).
func deleteGateRun(ctx context.Context, c client.Client) error {
	if err := c.Delete(ctx, &nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Name: benchRun.Name, Namespace: benchRun.Namespace}}); err != nil {
		return err
	}
	return framework.WaitFor(ctx, 5*time.Minute, func() bool {
		return apierrors.IsNotFound(c.Get(ctx, benchRun, &nodegatev1alpha1.MutexRunConfig{}))
	})
}

// gateProfileLength is how much of a gated rollout --profile-dir profiles.
const gateProfileLength = 2 * time.Minute

// referenceConfigMap is what the reference reactor patches.
const referenceConfigMap = "bench-reference"

// referenceAnnotation is the annotation the reference reactor writes on a
// Done node (no component reads it).
const referenceAnnotation = "bench.upshift.io/reference"

// referenceReactor returns the bench's own reaction to a worker's Done: a
// merge patch of one ConfigMap key named for the node and, with onNode, at
// the same instant a merge patch of referenceAnnotation on the node, sent
// at once.
func referenceReactor(ctx context.Context, c client.Client, onNode bool) (func(node string), error) {
	cm, err := ensureConfigMap(ctx, c, gateNamespace, referenceConfigMap)
	if err != nil {
		return nil, err
	}
	return func(node string) {
		now := time.Now().Format(time.RFC3339Nano)
		go func() {
			patch := []byte(fmt.Sprintf(`{"data":{%q:%q}}`, node, now))
			_ = c.Patch(ctx, cm.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
		}()
		if !onNode {
			return
		}
		go func() {
			patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, referenceAnnotation, now))
			_ = c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, patch))
		}()
	}, nil
}

// gateObserver is the bench's record of one update at a time, from its own
// informers: worker MCO annotations and hold labels, hook Jobs, the run
// and the ClusterVersion.
type gateObserver struct {
	mu sync.Mutex
	c  cache.Cache

	// Per update; reset by begin.
	initialDesired map[string]string
	moved, done    map[string]time.Time
	released       map[string]time.Time
	jobCreated     map[string]time.Time // node -> its pre-hook Job's creation
	jobComplete    map[string]time.Time
	// When the run's status was first seen with the node started (past
	// Pending) and released: the status write each hop makes before its
	// Job or label.
	recordStarted, recordReleased map[string]time.Time
	phase                         nodegatev1alpha1.RunPhase
	completedAt                   time.Time
	// statusBytes is the largest run status seen, as JSON: every status
	// write carries it whole.
	statusBytes int
	// reference is called on every worker Done (the reference reactor);
	// refSeen is when its ConfigMap answer to each node was seen,
	// nodeRefSeen its Node answer.
	reference            func(node string)
	refSeen, nodeRefSeen map[string]time.Time
	// unavailAtRelease: at each release, how many of the worker pool's
	// nodes (not held) the MCO counts unavailable.
	unavailAtRelease []int
}

// poolUnavailable counts the not-held workers the MCO counts unavailable.
func (g *gateObserver) poolUnavailable() int {
	var nodes corev1.NodeList
	if err := g.c.List(context.Background(), &nodes, client.HasLabels{workerRole}, client.UnsafeDisableDeepCopy); err != nil {
		return -1
	}
	n := 0
	for i := range nodes.Items {
		if nodes.Items[i].Labels[plan.HoldLabel] == "" && mco.IsUnavailable(&nodes.Items[i]) {
			n++
		}
	}
	return n
}

func (g *gateObserver) setReference(f func(node string)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reference = f
}

func (g *gateObserver) watch(ctx context.Context, c cache.Cache) error {
	g.c = c
	g.begin(nil)
	ni, err := c.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return err
	}
	if _, err := ni.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
		now := time.Now()
		o, n := oldObj.(*corev1.Node), newObj.(*corev1.Node)
		if _, worker := n.Labels[workerRole]; !worker {
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.initialDesired == nil {
			return
		}
		if v := n.Annotations[referenceAnnotation]; v != "" && v != o.Annotations[referenceAnnotation] {
			if _, seen := g.nodeRefSeen[n.Name]; !seen {
				g.nodeRefSeen[n.Name] = now
			}
		}
		if o.Labels[plan.HoldLabel] != "" && n.Labels[plan.HoldLabel] == "" {
			if _, seen := g.released[n.Name]; !seen {
				g.released[n.Name] = now
				g.unavailAtRelease = append(g.unavailAtRelease, g.poolUnavailable())
			}
		}
		desired := n.Annotations[mcostate.DesiredConfig]
		if desired == g.initialDesired[n.Name] {
			return
		}
		if _, seen := g.moved[n.Name]; !seen {
			g.moved[n.Name] = now
		}
		if _, seen := g.done[n.Name]; !seen && mcostate.UpdatedTo(n, desired) {
			g.done[n.Name] = now
			if g.reference != nil {
				g.reference(n.Name)
			}
		}
	}}); err != nil {
		return err
	}
	ci, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		return err
	}
	if _, err := ci.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
		now := time.Now()
		o, n := oldObj.(*corev1.ConfigMap), newObj.(*corev1.ConfigMap)
		if n.Name != referenceConfigMap {
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		for k, v := range n.Data {
			// A key of an earlier pair gets a new value: its node again.
			if o.Data[k] != v {
				if _, seen := g.refSeen[k]; !seen {
					g.refSeen[k] = now
				}
			}
		}
	}}); err != nil {
		return err
	}
	ji, err := c.GetInformer(ctx, &batchv1.Job{})
	if err != nil {
		return err
	}
	jobNode := func(j *batchv1.Job) string {
		if j.Labels[plan.RunLabel] == "" || len(j.Spec.Template.Spec.Containers) == 0 {
			return ""
		}
		for _, e := range j.Spec.Template.Spec.Containers[0].Env {
			if e.Name == plan.EnvNodeName {
				return e.Value
			}
		}
		return ""
	}
	if _, err := ji.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			now := time.Now()
			node := jobNode(obj.(*batchv1.Job))
			g.mu.Lock()
			defer g.mu.Unlock()
			if _, seen := g.jobCreated[node]; node != "" && !seen && g.initialDesired != nil {
				g.jobCreated[node] = now
			}
		},
		UpdateFunc: func(_, newObj any) {
			now := time.Now()
			j := newObj.(*batchv1.Job)
			if jobEnd(j) != string(batchv1.JobComplete) {
				return
			}
			node := jobNode(j)
			g.mu.Lock()
			defer g.mu.Unlock()
			if _, seen := g.jobComplete[node]; node != "" && !seen && g.initialDesired != nil {
				g.jobComplete[node] = now
			}
		},
	}); err != nil {
		return err
	}
	ri, err := c.GetInformer(ctx, &nodegatev1alpha1.MutexRunConfig{})
	if err != nil {
		return err
	}
	record := func(obj any) {
		now := time.Now()
		run := obj.(*nodegatev1alpha1.MutexRunConfig)
		g.mu.Lock()
		defer g.mu.Unlock()
		if run.Status.Phase == nodegatev1alpha1.RunCompleted && g.phase != nodegatev1alpha1.RunCompleted && g.completedAt.IsZero() {
			g.completedAt = now
		}
		g.phase = run.Status.Phase
		if g.initialDesired == nil {
			return
		}
		if b, err := json.Marshal(&run.Status); err == nil && len(b) > g.statusBytes {
			g.statusBytes = len(b)
		}
		for _, rec := range run.Status.Nodes {
			switch rec.Phase {
			case nodegatev1alpha1.NodePending, nodegatev1alpha1.NodeSkipped, nodegatev1alpha1.NodeFailed:
				continue
			case nodegatev1alpha1.NodePreHooks:
			default:
				if _, seen := g.recordReleased[rec.Name]; !seen {
					g.recordReleased[rec.Name] = now
				}
			}
			if _, seen := g.recordStarted[rec.Name]; !seen {
				g.recordStarted[rec.Name] = now
			}
		}
	}
	if _, err := ri.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, n any) { record(n) }}); err != nil {
		return err
	}
	for _, obj := range []client.Object{&mcfgv1.MachineConfigPool{}, &configv1.ClusterVersion{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// largestStatus is the size of the largest run status seen, in bytes of
// JSON.
func (g *gateObserver) largestStatus() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.statusBytes
}

func jobEnd(j *batchv1.Job) string {
	for _, c := range j.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
			return string(c.Type)
		}
	}
	return ""
}

// begin starts recording an update from the workers' current desired
// configs (nil: record nothing).
func (g *gateObserver) begin(initial map[string]string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.initialDesired = initial
	g.moved, g.done, g.released = map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	g.jobCreated, g.jobComplete = map[string]time.Time{}, map[string]time.Time{}
	g.recordStarted, g.recordReleased = map[string]time.Time{}, map[string]time.Time{}
	g.refSeen, g.nodeRefSeen = map[string]time.Time{}, map[string]time.Time{}
	g.unavailAtRelease = nil
	g.completedAt = time.Time{}
	g.statusBytes = 0
}

func (g *gateObserver) runPhase() nodegatev1alpha1.RunPhase {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.phase
}

// updateTimes is what one update measured, every time from the request.
type updateTimes struct {
	// whole: until the ClusterVersion completed and every worker is Done on
	// its pool's target (and, gated, the run Completed).
	whole time.Duration
	// firstMoved: the first worker the MCO targeted; workers: from then to
	// the last worker's first Done on its new config.
	firstMoved, workers time.Duration
	runCompleted        time.Duration
	initialStarts       int
	// perNode: each worker's update, targeted by the MCO -> Done (p50,
	// p99, mean); pickup, gated only: released by node-gate -> targeted by
	// the MCO; doneToNext: the k-th worker Done -> the k-th worker targeted
	// after the first Done (each Done frees the slot the next target
	// fills), ungated the MCO's own reaction, gated node-gate's and the
	// MCO's. With a fixed number of slots a slot's cycle is perNode plus
	// doneToNext.
	perNode, pickup, doneToNext [4]time.Duration
	// use: what the machine spent on the update (every process the bench
	// started, the simulator's queues, the API server).
	use machineUse
}

// update requests target and waits until it is done.
func (g *gateObserver) update(ctx context.Context, c client.Client, cfg *rest.Config, cc cache.Cache, o options, start time.Time, target string, gated bool, pid int) (updateTimes, error) {
	var r updateTimes
	var nodes corev1.NodeList
	if err := cc.List(ctx, &nodes, client.HasLabels{workerRole}); err != nil {
		return r, err
	}
	initial := map[string]string{}
	for _, n := range nodes.Items {
		initial[n.Name] = n.Annotations[mcostate.DesiredConfig]
	}
	g.begin(initial)
	if err := requestUpdate(ctx, c, target); err != nil {
		return r, err
	}
	before, err := readMachineUse(ctx, cfg)
	if err != nil {
		return r, err
	}
	requested := time.Now()
	kind := "ungated"
	if gated {
		kind = "gated"
	}
	step(start, "%s update to %s requested", kind, target)
	lastReport := time.Now()
	// With --profile-dir, node-gate's CPU profile of the gated rollout.
	var profiled chan struct{}
	defer func() {
		if profiled != nil {
			<-profiled
		}
	}()
	if err := framework.WaitFor(ctx, o.updateTimeout, func() bool {
		if time.Since(lastReport) > 15*time.Second {
			lastReport = time.Now()
			moved, done, released := g.counts()
			step(start, "%d workers targeted, %d Done, %d released by node-gate; node-gate RSS %s", moved, done, released, rss(pid))
		}
		if gated && o.profileFile != "" && profiled == nil {
			if moved, _, _ := g.counts(); moved > 0 {
				profiled = make(chan struct{})
				go func() {
					defer close(profiled)
					if err := saveProfile(ctx, o.pprofAddr, fmt.Sprintf("profile?seconds=%d", int(gateProfileLength.Seconds())), o.profileFile); err != nil {
						step(start, "CPU profile: %v", err)
					}
				}()
			}
		}
		return updateSettled(ctx, cc, target, len(initial)) && (!gated || g.runPhase() == nodegatev1alpha1.RunCompleted)
	}); err != nil {
		return r, err
	}
	r.whole = time.Since(requested)
	after, err := readMachineUse(ctx, cfg)
	if err != nil {
		return r, err
	}
	r.use = after.since(before)
	g.mu.Lock()
	defer g.mu.Unlock()
	var first, last time.Time
	for _, t := range g.moved {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	for _, t := range g.done {
		if t.After(last) {
			last = t
		}
	}
	r.firstMoved, r.workers = first.Sub(requested), last.Sub(first)
	if !g.completedAt.IsZero() {
		r.runCompleted = g.completedAt.Sub(requested)
	}
	var perNode, pickup []time.Duration
	for n, d := range g.done {
		if m, ok := g.moved[n]; ok {
			perNode = append(perNode, d.Sub(m))
		}
		if rel, ok := g.released[n]; ok {
			if m, ok := g.moved[n]; ok {
				pickup = append(pickup, m.Sub(rel))
			}
		}
	}
	r.perNode, r.pickup = withMean(perNode), withMean(pickup)
	if dones := inOrder(g.done, time.Time{}); len(dones) > 0 {
		moves := inOrder(g.moved, dones[0].t)
		var next []time.Duration
		for k := 0; k < len(dones) && k < len(moves); k++ {
			next = append(next, moves[k].t.Sub(dones[k].t))
		}
		r.doneToNext = withMean(next)
	}
	firstDone := last
	for _, t := range g.done {
		if t.Before(firstDone) {
			firstDone = t
		}
	}
	for _, t := range g.jobCreated {
		if t.Before(firstDone) {
			r.initialStarts++
		}
	}
	step(start, "%s update to %s done in %s", kind, target, r.whole.Round(time.Second))
	return r, nil
}

// withMean is p50, p99, max and the mean.
func withMean(ds []time.Duration) [4]time.Duration {
	p := percentiles(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return [4]time.Duration{p[0], p[1], p[2], (sum / time.Duration(max(len(ds), 1))).Round(time.Millisecond)}
}

func (g *gateObserver) counts() (moved, done, released int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.moved), len(g.done), len(g.released)
}

// updateSettled: the ClusterVersion completed target, and every pool is
// Updated with every node Done on its target.
func updateSettled(ctx context.Context, c cache.Cache, target string, workers int) bool {
	cv := &configv1.ClusterVersion{}
	if c.Get(ctx, client.ObjectKey{Name: "version"}, cv) != nil || len(cv.Status.History) == 0 ||
		cv.Status.History[0].Version != target || cv.Status.History[0].State != configv1.CompletedUpdate {
		return false
	}
	var pools mcfgv1.MachineConfigPoolList
	if c.List(ctx, &pools) != nil {
		return false
	}
	var nodes corev1.NodeList
	if c.List(ctx, &nodes) != nil {
		return false
	}
	seen := 0
	for _, p := range pools.Items {
		if strings.HasSuffix(p.Name, plan.GatePoolSuffix) || !poolUpdated(&p) || p.Spec.Paused {
			return false
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector)
		if err != nil {
			return false
		}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			if !sel.Matches(labels.Set(n.Labels)) || (p.Name == "worker" && n.Labels[masterRole] != "") {
				continue
			}
			if !mcostate.UpdatedTo(n, p.Spec.Configuration.Name) {
				return false
			}
			if p.Name == "worker" {
				seen++
			}
		}
	}
	return seen == workers
}

// reactionStats are the paired Done -> next release reactions.
type reactionStats struct {
	n                                int
	total, gate, start, release, job [3]time.Duration
	// Each hop split at the status write that precedes its action: the
	// trigger until the status showing the decision was seen, and from
	// then until the Job or the label was seen.
	startDecide, startAct, releaseDecide, releaseAct [3]time.Duration
	// hops and oneWrite: see reactions.
	hops, oneWrite int
}

// nodeTime is when something was seen for a node.
type nodeTime struct {
	node string
	t    time.Time
}

// inOrder is m's times from from on, earliest first: the pairings below
// match the k-th of one kind with the k-th of another.
func inOrder(m map[string]time.Time, from time.Time) []nodeTime {
	var out []nodeTime
	for n, t := range m {
		if !t.Before(from) {
			out = append(out, nodeTime{n, t})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].t.Before(out[j].t) })
	return out
}

// releasePair is the k-th worker Done, when the reference reactor's answer
// to it was seen, and the release of the k-th worker the MCO targeted after
// the first Done (each Done frees one slot, which the next node the MCO
// targets fills). Without releases ahead that node is the k-th released
// after the first Done; released ahead (lookahead) it may have been
// released before the Done, and node-gate then added nothing to the slot.
type releasePair struct {
	done, release nodeTime
	// ref and nodeRef: when the reference's ConfigMap and Node answers
	// were seen (nodeRef zero when not seen).
	ref, nodeRef time.Time
}

// releasePairs pairs the Dones the reference answered with the releases of
// the nodes that took their slots; g.mu is held.
func (g *gateObserver) releasePairs() []releasePair {
	dones := inOrder(g.done, time.Time{})
	if len(dones) == 0 {
		return nil
	}
	targeted := inOrder(g.moved, dones[0].t)
	var out []releasePair
	for k := 0; k < len(dones) && k < len(targeted); k++ {
		rel, released := g.released[targeted[k].node]
		if ref, ok := g.refSeen[dones[k].node]; ok && released {
			out = append(out, releasePair{done: dones[k], release: nodeTime{targeted[k].node, rel}, ref: ref, nodeRef: g.nodeRefSeen[dones[k].node]})
		}
	}
	return out
}

// added is what node-gate added to the reference's reaction: the release
// seen minus the reference seen, none when the release came first (a node
// released ahead, waiting for its slot in the pool).
func added(release, reference time.Time) time.Duration { return max(release.Sub(reference), 0) }

// addedReactions returns, per paired release, the release seen minus the
// reference reactor's answer to its Done seen: what node-gate adds to the
// fastest reaction this machine gives.
func (g *gateObserver) addedReactions() []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []time.Duration
	for _, p := range g.releasePairs() {
		out = append(out, added(p.release.t, p.ref))
	}
	return out
}

// addedOverNodeWrites returns, per paired release whose Done the reference
// also answered with a Node write, the release seen minus that write seen:
// what node-gate adds to the fastest Node write.
func (g *gateObserver) addedOverNodeWrites() []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []time.Duration
	for _, p := range g.releasePairs() {
		if !p.nodeRef.IsZero() {
			out = append(out, added(p.release.t, p.nodeRef))
		}
	}
	return out
}

// addedSplit sorts the paired reactions of addedReactions by what the
// release waited for: the released node's hook Job Complete seen after the
// reference's answer (the Job pipeline held it) or before it (the release
// waited for node-gate alone). own is the added reaction of the latter
// only; reference is the reference reactor's own Done -> patch seen, whose
// tail the added reaction subtracts, and nodeReference its Done -> Node
// annotation seen.
type addedSplit struct {
	n, overTarget, hookLate, hookLateOver int
	own, reference, nodeReference         [3]time.Duration
	// over lists the reactions over the target: when their Done was seen,
	// from the first Done, and the added reaction.
	over []string
}

func (g *gateObserver) addedSplit() addedSplit {
	g.mu.Lock()
	defer g.mu.Unlock()
	var s addedSplit
	var own, reference, nodeReference []time.Duration
	pairs := g.releasePairs()
	for _, p := range pairs {
		s.n++
		if !p.nodeRef.IsZero() {
			nodeReference = append(nodeReference, p.nodeRef.Sub(p.done.t))
		}
		add := added(p.release.t, p.ref)
		over := add > reactionTarget
		if over {
			s.overTarget++
			s.over = append(s.over, fmt.Sprintf("%s: +%s", p.done.t.Sub(pairs[0].done.t).Round(100*time.Millisecond), add.Round(time.Millisecond)))
		}
		reference = append(reference, p.ref.Sub(p.done.t))
		if c, ok := g.jobComplete[p.release.node]; ok && c.After(p.ref) {
			s.hookLate++
			if over {
				s.hookLateOver++
			}
			continue
		}
		own = append(own, add)
	}
	s.own, s.reference, s.nodeReference = percentiles(own), percentiles(reference), percentiles(nodeReference)
	return s
}

// reactions pairs the k-th Done with the k-th node started after the
// initial fill (the nodes started before any node was Done).
func (g *gateObserver) reactions() reactionStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	dones := inOrder(g.done, time.Time{})
	var starts []nodeTime
	if len(dones) > 0 {
		starts = inOrder(g.jobCreated, dones[0].t)
	}
	var total, gate, hop1, hop2, job, decide1, act1, decide2, act2 []time.Duration
	// hops counts the hops whose status write was seen; oneWrite those in
	// which the Job or the label was seen before it: the hop's one write
	// on the critical path.
	hops, oneWrite := 0, 0
	for k := 0; k < len(starts) && k < len(dones); k++ {
		b := starts[k]
		rel, ok1 := g.released[b.node]
		done, ok2 := g.jobComplete[b.node]
		if !ok1 || !ok2 {
			continue
		}
		h1, h2 := b.t.Sub(dones[k].t), rel.Sub(done)
		total = append(total, rel.Sub(dones[k].t))
		hop1, hop2 = append(hop1, h1), append(hop2, h2)
		gate = append(gate, h1+h2)
		job = append(job, done.Sub(b.t))
		if st, ok := g.recordStarted[b.node]; ok {
			decide1, act1 = append(decide1, st.Sub(dones[k].t)), append(act1, b.t.Sub(st))
			hops++
			if b.t.Before(st) {
				oneWrite++
			}
		}
		if rs, ok := g.recordReleased[b.node]; ok {
			decide2, act2 = append(decide2, rs.Sub(done)), append(act2, rel.Sub(rs))
			hops++
			if rel.Before(rs) {
				oneWrite++
			}
		}
	}
	return reactionStats{n: len(total), total: percentiles(total), gate: percentiles(gate), start: percentiles(hop1),
		release: percentiles(hop2), job: percentiles(job),
		startDecide: percentiles(decide1), startAct: percentiles(act1), releaseDecide: percentiles(decide2), releaseAct: percentiles(act2),
		hops: hops, oneWrite: oneWrite}
}
