// Command upshift-demo is `make demo`: it starts a local simulated OpenShift
// cluster (a real kube-apiserver with kube-controller-manager, kube-scheduler
// and kwok, and ocpsim playing the OpenShift operators), runs the Upshift
// controllers that exist as their charts' ServiceAccounts, schedules an
// update a few seconds ahead as an upgrade policy in a local OCM (which the
// upgrade-scheduler turns into an UpgradeConfig, as MUO's OCM provider
// does), and prints the policy's states and service logs, the
// UpgradeConfig's progress (as `kubectl get upgrade` shows it) and
// `kubectl upshift status` every few seconds until it completes, with one
// progress line per MachineConfigPool from the mcp-tracker's status.pools
// and, from node-gate's MutexRunConfig, each worker's gate phase (a one-hook
// rule runs a Job before every worker is released to the MCO).
// A second act changes the instance type of the control-plane machines in
// the ControlPlaneMachineSet (OnDelete) and prints one line per step while
// the cpms-controller orchestrates OpenShift's control-plane-machine-set
// operator (played by ocpsim): it deletes one outdated master at a time, the
// operator replaces it.
// It stops every process it started, and exits non-zero if the update or the
// rollout does not complete in time.
//
// With DEMO_ARO=1 (or --aro) it runs the ARO act instead: aro-monitor's
// checks on a simulated Azure Red Hat OpenShift cluster (see aro.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocmsim"
	"github.com/upshift-io/upshift/tools/ocpsim"
)

type options struct {
	binDir    string
	masters   int
	workers   int
	from, to  string
	timeScale float64
	interval  time.Duration
	startIn   time.Duration
	timeout   time.Duration
	// instanceType is what the second act changes the masters to.
	instanceType string
	// aro runs the ARO act instead of the update and rollout.
	aro bool
}

func main() {
	var o options
	flag.StringVar(&o.binDir, "bin-dir", "bin", "Folder with the built update-status-controller, upgrade-scheduler, mcp-tracker, cpms-controller and kubectl-upshift.")
	flag.IntVar(&o.masters, "masters", 3, "Control-plane nodes.")
	flag.IntVar(&o.workers, "workers", 6, "Worker nodes.")
	flag.StringVar(&o.from, "from", "4.16.1", "Version the cluster runs.")
	flag.StringVar(&o.to, "to", "4.16.2", "Version to update to.")
	flag.Float64Var(&o.timeScale, "time-scale", 240, "Simulated seconds per wall second.")
	flag.DurationVar(&o.interval, "interval", 4*time.Second, "How often to print the status.")
	flag.DurationVar(&o.startIn, "start-in", 8*time.Second, "How far ahead the UpgradeConfig schedules the update (spec.upgradeAt).")
	flag.DurationVar(&o.timeout, "timeout", 150*time.Second, "Give up if the update has not completed by then.")
	flag.StringVar(&o.instanceType, "instance-type", "m6i.2xlarge", "Instance type the second act rolls the control-plane machines to.")
	flag.BoolVar(&o.aro, "aro", os.Getenv("DEMO_ARO") == "1",
		"Run the ARO act instead (default: $DEMO_ARO=1): aro-monitor's checks on a simulated Azure Red Hat OpenShift cluster against a local Azure Resource Manager.")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	act := run
	if o.aro {
		act = runARO
	}
	err := act(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) {
	fmt.Printf("\n>>> "+format+"\n", args...)
}

func run(ctx context.Context, o options) (err error) {
	start := time.Now()
	// The simulator narrates in the logs; the demo shows the status instead.
	ctrl.SetLogger(logr.Discard())
	usc, err := filepath.Abs(filepath.Join(o.binDir, "update-status-controller"))
	if err != nil {
		return err
	}
	cli := filepath.Join(filepath.Dir(usc), "kubectl-upshift")
	scheduler := filepath.Join(filepath.Dir(usc), "upgrade-scheduler")
	mcpTracker := filepath.Join(filepath.Dir(usc), "mcp-tracker")
	cpmsController := filepath.Join(filepath.Dir(usc), "cpms-controller")
	nodeGate := filepath.Join(filepath.Dir(usc), "node-gate")
	for _, b := range []string{usc, scheduler, mcpTracker, nodeGate, cpmsController, cli} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("%s not found: run `make build` first", b)
		}
	}

	// The apiserver calls the cpms-controller's webhook as its chart
	// registers it, so the cpms-controller starts before the cluster is
	// seeded.
	var ocm *ocmsim.Server
	defer func() {
		if ocm != nil {
			ocm.Close()
		}
	}()
	cluster, err := framework.StartCluster(ctx, framework.ClusterOptions{
		ControlPlane: testenv.Options{ControllerManager: true, Scheduler: true, Kwok: true},
		// As on every OpenShift 4.12+ IPI cluster, the payload runs the
		// control-plane-machine-set operator and its webhook (ocpsim plays
		// both): the cpms-controller orchestrates it.
		Seed: &ocpsim.Topology{Version: o.from, Masters: o.masters, Workers: o.workers, Graph: []string{o.from, o.to}, CPMSOperator: true},
		Sim:  &ocpsim.Options{TimeScale: o.timeScale, PayloadWebhook: true},
		Components: []framework.ComponentOptions{
			{Chart: "cpms-controller", Release: "cpms", Namespace: cpmsNamespace, Scraper: "prometheus-cpms",
				Binary: cpmsController, LeaderElect: true, Webhook: true},
			{Chart: "update-status-controller", Release: "usc", Namespace: namespace, Scraper: "prometheus-usc",
				Binary: usc, LeaderElect: true},
			{Chart: "upgrade-scheduler", Release: "sched", Namespace: namespace, Set: []string{"ocm.enabled=true"}, Scraper: "prometheus-sched",
				Binary: scheduler, LeaderElect: true, Args: []string{"--ocm=true", "--ocm-timeout=5s", "--ocm-sync-interval=1s"}},
			// At this time scale the chart's 5s between status writes is 20
			// simulated minutes: write at most once a second instead.
			{Chart: "mcp-tracker", Release: "mcpt", Namespace: namespace, Scraper: "prometheus-mcpt",
				Binary: mcpTracker, LeaderElect: true, Args: []string{"--min-write-interval=1s"}},
			{Chart: "node-gate", Release: "ngate", Namespace: namespace, Scraper: "prometheus-ngate",
				Binary: nodeGate, LeaderElect: true},
		},
		// The local OCM knows the cluster by its ClusterVersion's ID, so it
		// starts once the cluster is seeded, before the scheduler.
		Prepare: func(ctx context.Context, c *framework.Cluster) (err error) {
			ocm, err = framework.StartOCM(ctx, c.Client)
			return err
		},
		Progress: func(s framework.Stage) {
			switch s {
			case framework.StageControlPlane:
				say("Starting a local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok")
			case framework.StageWebhooks:
				say("Running the cpms-controller as its chart's ServiceAccount in %s; it serves the ControlPlaneMachineSet webhook, so it starts before the cluster is seeded", cpmsNamespace)
			case framework.StageSeed:
				say("Seeding an OpenShift %s cluster: %d control-plane and %d worker nodes", o.from, o.masters, o.workers)
			case framework.StageComponents:
				say("Installing the update-status-controller's, the upgrade-scheduler's, the mcp-tracker's and node-gate's ServiceAccounts and RBAC from their charts, and running each as its ServiceAccount")
			}
		},
	})
	if err != nil {
		return err
	}
	defer cluster.StopInto(&err)
	env := cluster.Env
	running := func(release string) (*framework.Component, *framework.Scraper, string) {
		c := cluster.Components[release]
		return c.Running.Component, c.Scraper, c.Running.MetricsURL
	}
	cpms, cpmsScraper, cpmsMetricsURL := running("cpms")
	controller, scraper, metricsURL := running("usc")
	sched, schedScraper, schedMetricsURL := running("sched")
	tracker, trackScraper, trackMetricsURL := running("mcpt")
	gate, gateScraper, gateMetricsURL := running("ngate")
	// Each component's error comes with its logs; the last started stops
	// first.
	for _, c := range []struct {
		name string
		c    *framework.Component
	}{{"cpms-controller", cpms}, {"update-status-controller", controller}, {"upgrade-scheduler", sched}, {"mcp-tracker", tracker}, {"node-gate", gate}} {
		defer func() {
			if stopErr := c.c.Stop(10 * time.Second); err == nil && stopErr != nil {
				err = fmt.Errorf("%s: %w\n%s", c.name, stopErr, c.c.Logs())
			}
		}()
	}
	say("Gating the workers with node-gate: a MutexRule with one pre-update hook Job, a MutexTarget on pool worker, a MutexRunConfig")
	if err := createGate(ctx, env.Client); err != nil {
		return err
	}
	if err := framework.LabelMachinePools(ctx, env.Client); err != nil {
		return err
	}
	if err := framework.WaitFor(ctx, time.Minute, func() bool { return statusReady(ctx, env.Client) }); err != nil {
		return fmt.Errorf("the update-status-controller published no status: %w\n%s", err, controller.Logs())
	}
	if err := printStatus(ctx, cli, env.KubeconfigPath, os.Stdout); err != nil {
		return err
	}

	upgradeAt := time.Now().Add(o.startIn).Truncate(time.Second)
	say("Scheduling the update to %s at %s as an upgrade policy in a local OCM; the upgrade-scheduler turns it into the UpgradeConfig (OSD steps, capacity reservation), starts it, and tells OCM each state and service log",
		o.to, upgradeAt.UTC().Format(time.RFC3339))
	if err := framework.ScheduleInOCM(ctx, env.Client, ocm, namespace, framework.OSDConfig(ocm.URL(), ""), o.to, upgradeAt); err != nil {
		return err
	}
	updateStart := time.Now()
	deadline := time.After(o.timeout)
	tick := time.NewTicker(o.interval)
	defer tick.Stop()
	sawUpdating := false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("the update did not complete within %s", o.timeout)
		case <-tick.C:
		}
		say("kubectl get upgrade; kubectl upshift status   (%s after scheduling)", time.Since(updateStart).Round(time.Second))
		phase, err := printUpgradeConfig(ctx, env.Client, os.Stdout)
		if err != nil {
			return err
		}
		if phase == "Failed" {
			return fmt.Errorf("the UpgradeConfig failed\n%s", sched.Logs())
		}
		printOCM(ocm, os.Stdout)
		if err := printPools(ctx, env.Client, os.Stdout); err != nil {
			return err
		}
		if err := printGate(ctx, env.Client, os.Stdout); err != nil {
			return err
		}
		if err := printStatus(ctx, cli, env.KubeconfigPath, os.Stdout); err != nil {
			return err
		}
		updating, done, err := progress(ctx, env.Client, o.to)
		if err != nil {
			return err
		}
		sawUpdating = sawUpdating || updating
		if sawUpdating && done && phase == "Upgraded" && gateCompleted(ctx, env.Client) {
			break
		}
	}
	updateTook := time.Since(updateStart)

	rolloutTook, err := rollControlPlane(ctx, env.Client, o.instanceType, o.timeout)
	if err != nil {
		return fmt.Errorf("%w\n%s", err, cpms.Logs())
	}

	say("The controllers' metrics, scraped over HTTPS as ServiceAccounts bound to each chart's metrics-reader ClusterRole")
	for _, m := range []struct {
		s   *framework.Scraper
		url string
	}{{scraper, metricsURL}, {schedScraper, schedMetricsURL}, {trackScraper, trackMetricsURL}, {gateScraper, gateMetricsURL}, {cpmsScraper, cpmsMetricsURL}} {
		body, err := m.s.Scrape(m.url)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(body, "\n") {
			// The gauges; histograms and the controller-runtime series are long.
			if (strings.HasPrefix(line, "upshift_") || strings.HasPrefix(line, "upgradeoperator_")) &&
				!strings.Contains(line, "_bucket") && !strings.Contains(line, "_sum") && !strings.Contains(line, "_count") {
				fmt.Println(line)
			}
		}
	}
	say("The update to %s completed in %s of wall time, the control-plane rollout in %s; the demo took %s. Stopping everything.",
		o.to, updateTook.Round(time.Second), rolloutTook.Round(100*time.Millisecond), time.Since(start).Round(time.Second))
	return nil
}

// namespace is where the demo installs the components, and where the
// UpgradeConfig and its ConfigMap live.
const namespace = "upshift"

func statusReady(ctx context.Context, c client.Client) bool {
	us := &updatev1alpha1.UpgradeStatus{}
	return c.Get(ctx, client.ObjectKey{Name: updatev1alpha1.UpgradeStatusName}, us) == nil &&
		meta.IsStatusConditionTrue(us.Status.Conditions, updatev1alpha1.ConditionStatusAvailable)
}

// printUpgradeConfig prints the UpgradeConfig as `kubectl get upgrade` does
// (MUO's columns, from the newest history entry) and returns its phase.
func printUpgradeConfig(ctx context.Context, c client.Client, out io.Writer) (string, error) {
	uc := &upgradev1alpha1.UpgradeConfig{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "managed-upgrade-config"}, uc); err != nil {
		return "", err
	}
	phase, stage, status, reason, message := "", "", "", "", ""
	if len(uc.Status.History) > 0 {
		h := uc.Status.History[0]
		phase = string(h.Phase)
		if len(h.Conditions) > 0 {
			c := h.Conditions[0]
			stage, status, reason, message = string(c.Type), string(c.Status), c.Reason, c.Message
		}
	}
	tw := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDESIRED_VERSION\tPHASE\tSTAGE\tSTATUS\tREASON\tMESSAGE")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", uc.Name, uc.Spec.Desired.Version, phase, stage, status, reason, message)
	if err := tw.Flush(); err != nil {
		return "", err
	}
	if uc.Status.CurrentStep != "" {
		fmt.Fprintf(out, "current step: %s\n", uc.Status.CurrentStep)
	}
	return phase, nil
}

// printPools prints one line per MachineConfigPool from the mcp-tracker's
// status.pools of the UpgradeConfig: nodes by state, start and completion.
func printPools(ctx context.Context, c client.Client, out io.Writer) error {
	uc := &upgradev1alpha1.UpgradeConfig{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "managed-upgrade-config"}, uc); err != nil {
		return err
	}
	if len(uc.Status.Pools) == 0 {
		fmt.Fprintln(out, "pools: not tracked yet")
		return nil
	}
	hms := func(t *metav1.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format("15:04:05")
	}
	for _, p := range uc.Status.Pools {
		n := p.Nodes
		line := fmt.Sprintf("pool %-7s %d/%d done  pending %d draining %d updating %d rebooting %d degraded %d  started %s completed %s",
			p.Name, n.Done, p.MachineCount, n.Pending, n.Draining, n.Updating, n.Rebooting, n.Degraded, hms(p.StartTime), hms(p.CompleteTime))
		if p.SlowestNode != nil && p.CompleteTime == nil {
			line += fmt.Sprintf("  slowest %s (%s since %s)", p.SlowestNode.Name, p.SlowestNode.State, hms(&p.SlowestNode.Since))
		}
		fmt.Fprintln(out, line)
	}
	return nil
}

// progress reads the published status: is anything updating, and is the
// whole cluster — control plane and every worker pool — at the target.
func progress(ctx context.Context, c client.Client, target string) (updating, done bool, err error) {
	us := &updatev1alpha1.UpgradeStatus{}
	if err := c.Get(ctx, client.ObjectKey{Name: updatev1alpha1.UpgradeStatusName}, us); err != nil {
		return false, false, err
	}
	cp := us.Status.ControlPlane
	if cp == nil || cp.ClusterVersion == nil {
		return false, false, nil
	}
	updating = meta.IsStatusConditionTrue(cp.Conditions, updatev1alpha1.ConditionUpdating)
	done = !updating && cp.ClusterVersion.Versions.Target.Version == target
	for _, p := range us.Status.WorkerPools {
		if meta.IsStatusConditionTrue(p.Conditions, updatev1alpha1.ConditionUpdating) {
			updating = true
		}
		if p.Pool.Assessment != updatev1alpha1.PoolCompleted {
			done = false
		}
	}
	return updating, done, nil
}

func printStatus(ctx context.Context, cli, kubeconfig string, out io.Writer) error {
	cmd := exec.CommandContext(ctx, cli, "status", "--kubeconfig="+kubeconfig)
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl upshift status: %w", err)
	}
	return nil
}

// createGate creates node-gate's objects in the demo's namespace (where the
// chart lets node-gate run hook Jobs): one rule whose jobSpec runs before
// each worker is released, the worker pool as target, and the run.
func createGate(ctx context.Context, c client.Client) error {
	rule, target, run := framework.OneHookGate(namespace)
	objs := []client.Object{rule, target, run}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

func getGate(ctx context.Context, c client.Client) (*nodegatev1alpha1.MutexRunConfig, error) {
	run := &nodegatev1alpha1.MutexRunConfig{}
	return run, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "workers"}, run)
}

// printGate prints the run's phase and progress, then every gated node's
// phase and hooks (or, once it completed, the time it took), as
// `kubectl get mutexrunconfig -o yaml` holds them.
func printGate(ctx context.Context, c client.Client, out io.Writer) error {
	run, err := getGate(ctx, c)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "node-gate run %s: phase %s, %s nodes passed\n", run.Name, run.Status.Phase, orDash(run.Status.Progress))
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, n := range run.Status.Nodes {
		var hooks []string
		for _, h := range n.Hooks {
			hooks = append(hooks, fmt.Sprintf("%s:%s", h.Name, h.Phase))
		}
		// A completed node's record keeps its times, not its hook runs, and
		// once it carries no release label (a canary's) neither.
		switch {
		case len(hooks) > 0:
		case n.StartTime != nil && n.CompletionTime != nil:
			hooks = append(hooks, fmt.Sprintf("passed in %s", n.CompletionTime.Sub(n.StartTime.Time).Round(time.Second)))
		case n.Phase == nodegatev1alpha1.NodeCompleted:
			hooks = append(hooks, "passed")
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", n.Name, n.Phase, strings.Join(hooks, ","), n.LastError)
	}
	return w.Flush()
}

// gateCompleted: the run gated every worker and restored the pool.
func gateCompleted(ctx context.Context, c client.Client) bool {
	run, err := getGate(ctx, c)
	return err == nil && run.Status.Phase == nodegatev1alpha1.RunCompleted
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
