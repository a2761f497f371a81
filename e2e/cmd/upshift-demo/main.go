// Command upshift-demo is `make demo`: it starts a local simulated OpenShift
// cluster (a real kube-apiserver with kube-controller-manager, kube-scheduler
// and kwok, and ocpsim playing the OpenShift operators), runs the Upshift
// controllers that exist as their charts' ServiceAccounts, starts an update,
// and prints `kubectl upshift status` every few seconds until it completes.
// It stops every process it started, and exits non-zero if the update does
// not complete in time.
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
	"time"

	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocpsim"
)

type options struct {
	binDir    string
	masters   int
	workers   int
	from, to  string
	timeScale float64
	interval  time.Duration
	timeout   time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.binDir, "bin-dir", "bin", "Folder with the built update-status-controller and kubectl-upshift.")
	flag.IntVar(&o.masters, "masters", 3, "Control-plane nodes.")
	flag.IntVar(&o.workers, "workers", 6, "Worker nodes.")
	flag.StringVar(&o.from, "from", "4.16.1", "Version the cluster runs.")
	flag.StringVar(&o.to, "to", "4.16.2", "Version to update to.")
	flag.Float64Var(&o.timeScale, "time-scale", 240, "Simulated seconds per wall second.")
	flag.DurationVar(&o.interval, "interval", 4*time.Second, "How often to print the status.")
	flag.DurationVar(&o.timeout, "timeout", 150*time.Second, "Give up if the update has not completed by then.")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, o)
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
	for _, b := range []string{usc, cli} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("%s not found: run `make build` first", b)
		}
	}

	say("Starting a local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok")
	env, err := testenv.Start(ctx, testenv.Options{ControllerManager: true, Scheduler: true, Kwok: true})
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := env.Stop(); err == nil {
			err = stopErr
		}
	}()

	say("Seeding an OpenShift %s cluster: %d control-plane and %d worker nodes", o.from, o.masters, o.workers)
	if _, err := ocpsim.Seed(ctx, env.Client, ocpsim.Topology{
		Version: o.from, Masters: o.masters, Workers: o.workers, Graph: []string{o.from, o.to},
	}); err != nil {
		return err
	}
	sim, err := ocpsim.New(env.Config, ocpsim.Options{TimeScale: o.timeScale})
	if err != nil {
		return err
	}
	stopSim := sim.Start(ctx)
	defer func() { _ = stopSim() }()

	say("Installing the update-status-controller's ServiceAccount and RBAC from its chart, and running it as that ServiceAccount")
	controller, scraper, metricsURL, err := startController(ctx, env, usc)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := controller.Stop(10 * time.Second); err == nil && stopErr != nil {
			err = fmt.Errorf("update-status-controller: %w\n%s", stopErr, controller.Logs())
		}
	}()
	if err := framework.WaitFor(ctx, time.Minute, func() bool { return statusReady(ctx, env.Client) }); err != nil {
		return fmt.Errorf("the update-status-controller published no status: %w\n%s", err, controller.Logs())
	}
	if err := printStatus(ctx, cli, env.KubeconfigPath, os.Stdout); err != nil {
		return err
	}

	say("Requesting the update to %s (ClusterVersion spec.desiredUpdate)", o.to)
	if err := requestUpdate(ctx, env.Client, o.to); err != nil {
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
		say("kubectl upshift status   (%s into the update)", time.Since(updateStart).Round(time.Second))
		if err := printStatus(ctx, cli, env.KubeconfigPath, os.Stdout); err != nil {
			return err
		}
		updating, done, err := progress(ctx, env.Client, o.to)
		if err != nil {
			return err
		}
		sawUpdating = sawUpdating || updating
		if sawUpdating && done {
			break
		}
	}
	say("The controller's metrics, scraped over HTTPS as a ServiceAccount bound to the chart's metrics-reader ClusterRole")
	body, err := scraper.Scrape(metricsURL)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(body, "\n") {
		// The gauges; histograms and the controller-runtime series are long.
		if strings.HasPrefix(line, "upshift_") && !strings.Contains(line, "_bucket") {
			fmt.Println(line)
		}
	}
	say("The update to %s completed in %s of wall time; the demo took %s. Stopping everything.",
		o.to, time.Since(updateStart).Round(time.Second), time.Since(start).Round(time.Second))
	return nil
}

// startController runs the controller as its chart's ServiceAccount, and
// returns it with a scraper for its metrics (a ServiceAccount bound to the
// chart's metrics-reader ClusterRole) and their URL.
func startController(ctx context.Context, env *testenv.Env, binary string) (*framework.Component, *framework.Scraper, string, error) {
	const namespace = "upshift"
	id, err := framework.InstallChartIdentity(ctx, env, "update-status-controller", "usc", namespace)
	if err != nil {
		return nil, nil, "", err
	}
	if err := env.CreateNamespace(ctx, "monitoring"); err != nil {
		return nil, nil, "", err
	}
	scraper, err := framework.InstallMetricsScraper(ctx, env, id.Chart, "monitoring", "prometheus")
	if err != nil {
		return nil, nil, "", err
	}
	metricsAddr, err := testenv.FreeAddr()
	if err != nil {
		return nil, nil, "", err
	}
	c, err := framework.StartComponent(binary, "--kubeconfig="+id.Kubeconfig, "--leader-election-namespace="+namespace,
		"--namespace="+namespace, "--metrics-bind-address="+metricsAddr, "--health-probe-bind-address=0")
	return c, scraper, "https://" + metricsAddr + "/metrics", err
}

func statusReady(ctx context.Context, c client.Client) bool {
	us := &updatev1alpha1.UpgradeStatus{}
	return c.Get(ctx, client.ObjectKey{Name: updatev1alpha1.UpgradeStatusName}, us) == nil &&
		meta.IsStatusConditionTrue(us.Status.Conditions, updatev1alpha1.ConditionStatusAvailable)
}

func requestUpdate(ctx context.Context, c client.Client, version string) error {
	cv := &configv1.ClusterVersion{}
	if err := c.Get(ctx, client.ObjectKey{Name: "version"}, cv); err != nil {
		return err
	}
	patch := client.MergeFrom(cv.DeepCopy())
	cv.Spec.DesiredUpdate = &configv1.Update{Version: version}
	return c.Patch(ctx, cv, patch)
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
