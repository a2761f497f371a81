// Command ocpsim plays the OpenShift operators Upshift does not own (CVO,
// MCO, machine-api, etcd quorum guard) against a kube-apiserver.
//
//	ocpsim seed --kubeconfig kc [--config topology.yaml] [--masters 3 --workers 6 --cpms-operator ...]
//	ocpsim run  --kubeconfig kc [--time-scale 600] [--fault node/NAME=NeverReady ...]
//	ocpsim fault --kubeconfig kc node/NAME=DrainStuck ...
//
// See tools/ocpsim/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/faults"
	"github.com/upshift-io/upshift/tools/ocpsim/seed"
	"github.com/upshift-io/upshift/tools/ocpsim/timescale"
)

// version is set with -ldflags "-X main.version=...".
var version = "dev"

const usage = `usage: ocpsim <command> [flags]

commands:
  seed     create a simulated OpenShift cluster (ClusterVersion, operators, pools, nodes, machines)
  run      run the simulated CVO, MCO, machine-api and etcd operator until interrupted
  fault    inject faults: ocpsim fault [--kubeconfig kc] KIND/NAME=FAULT ...
  version  print the version

run "ocpsim <command> -h" for the flags of a command
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(os.Stderr, "ocpsim: "+err.Error())
			stop()
			os.Exit(2)
		}
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "ocpsim: "+err.Error())
		stop()
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func badUsage(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return badUsage("missing command (seed, run, fault, version)")
	}
	switch args[0] {
	case "seed":
		return seedCmd(ctx, args[1:], stdout, stderr)
	case "run":
		return runCmd(ctx, args[1:], stderr)
	case "fault":
		return faultCmd(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "ocpsim "+version)
		return nil
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return badUsage("unknown command %q (want seed, run, fault or version)", args[0])
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("ocpsim "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parse parses flags and turns flag errors into one-line usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
		return err
	}
	if err != nil {
		return badUsage("%s: %v", strings.TrimPrefix(fs.Name(), "ocpsim "), err)
	}
	return nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig given and %w", err)
		}
		return withQPS(cfg), nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return withQPS(cfg), nil
}

// withQPS lifts client-go's default of 5 requests per second: seeding a
// 100-node cluster takes hundreds of requests.
func withQPS(cfg *rest.Config) *rest.Config {
	if cfg.QPS < 200 {
		cfg.QPS, cfg.Burst = 200, 400
	}
	return cfg
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func seedCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("seed", stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the target apiserver (default: $KUBECONFIG or in-cluster)")
	config := fs.String("config", "", "topology YAML file (fields as in seed.Topology); flags given explicitly override it")
	dryRun := fs.Bool("dry-run", false, "print the topology that would be seeded as YAML and create nothing")
	d := seed.Default()
	fs.StringVar(&d.Version, "version", d.Version, "current OpenShift version (x.y.z)")
	fs.StringVar(&d.Channel, "channel", "", "update channel (default stable-<x.y>)")
	graph := fs.String("graph", "", "comma-separated releases of the update graph (default: version and the next two z-streams)")
	fs.IntVar(&d.Masters, "masters", d.Masters, "control-plane nodes")
	fs.IntVar(&d.Workers, "workers", d.Workers, "worker nodes")
	zones := fs.String("zones", "", "comma-separated zones (default <region>a,b,c)")
	fs.StringVar(&d.Region, "region", "", "region (default us-east-1)")
	fs.StringVar(&d.InfraName, "infra-name", "", "infrastructure name, prefix of machine and node names (default ocp)")
	fs.StringVar(&d.WorkerMaxUnavailable, "worker-max-unavailable", "", "worker pool maxUnavailable, e.g. 1 or 10% (default 1)")
	fs.BoolVar(&d.CPMSOperator, "cpms-operator", d.CPMSOperator, "seed the control-plane-machine-set operator's Deployment: the simulated operator replaces deleted masters of an OnDelete set and reports its ClusterOperator")
	var pools, workloads listFlag
	fs.Var(&pools, "custom-pool", "extra pool NAME:NODES[:MAXUNAVAILABLE[:paused]] (repeatable)")
	fs.Var(&workloads, "workload", "workload NAME:REPLICAS[:PDB_MAX_UNAVAILABLE] on the workers (repeatable)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badUsage("seed: unexpected argument %q", fs.Arg(0))
	}
	t := d
	if *config != "" {
		var err error
		if t, err = seed.Load(*config); err != nil {
			return badUsage("seed: %v", err)
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		over := func(name string, apply func()) {
			if set[name] {
				apply()
			}
		}
		over("version", func() { t.Version = d.Version })
		over("channel", func() { t.Channel = d.Channel })
		over("masters", func() { t.Masters = d.Masters })
		over("workers", func() { t.Workers = d.Workers })
		over("region", func() { t.Region = d.Region })
		over("infra-name", func() { t.InfraName = d.InfraName })
		over("worker-max-unavailable", func() { t.WorkerMaxUnavailable = d.WorkerMaxUnavailable })
		over("cpms-operator", func() { t.CPMSOperator = d.CPMSOperator })
	}
	if *graph != "" {
		t.Graph = splitList(*graph)
	}
	if *zones != "" {
		t.Zones = splitList(*zones)
	}
	for _, p := range pools {
		cp, err := parseCustomPool(p)
		if err != nil {
			return badUsage("seed: --custom-pool %q: %v", p, err)
		}
		t.CustomPools = append(t.CustomPools, cp)
	}
	for _, w := range workloads {
		wl, err := parseWorkload(w)
		if err != nil {
			return badUsage("seed: --workload %q: %v", w, err)
		}
		t.Workloads = append(t.Workloads, wl)
	}
	if err := t.Validate(); err != nil {
		return badUsage("seed: %v", err)
	}
	t = t.WithDefaults()
	if *dryRun {
		b, err := yaml.Marshal(t)
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return err
	}
	o, err := ocpsim.Seed(ctx, c, t)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "seeded OpenShift %s (%s): %d cluster operators, %d pools, %d nodes (%d control plane), %d machines, %d machine sets, %d workloads\n",
		t.Version, t.Channel, len(o.ClusterOperators), len(o.Pools), len(o.Nodes), t.Masters, len(o.Machines), len(o.MachineSets), len(o.Deployments))
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func parseCustomPool(s string) (seed.CustomPool, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 4 {
		return seed.CustomPool{}, errors.New("want NAME:NODES[:MAXUNAVAILABLE[:paused]]")
	}
	p := seed.CustomPool{Name: parts[0]}
	if _, err := fmt.Sscanf(parts[1], "%d", &p.Nodes); err != nil {
		return p, fmt.Errorf("nodes %q is not a number", parts[1])
	}
	if len(parts) > 2 {
		p.MaxUnavailable = parts[2]
	}
	if len(parts) > 3 {
		if parts[3] != "paused" {
			return p, fmt.Errorf("fourth field must be \"paused\", got %q", parts[3])
		}
		p.Paused = true
	}
	return p, nil
}

func parseWorkload(s string) (seed.Workload, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return seed.Workload{}, errors.New("want NAME:REPLICAS[:PDB_MAX_UNAVAILABLE]")
	}
	w := seed.Workload{Name: parts[0]}
	if _, err := fmt.Sscanf(parts[1], "%d", &w.Replicas); err != nil {
		return w, fmt.Errorf("replicas %q is not a number", parts[1])
	}
	if len(parts) == 3 {
		w.PDBMaxUnavailable = parts[2]
	}
	return w, nil
}

func runCmd(ctx context.Context, args []string, stderr io.Writer) error {
	fs := newFlagSet("run", stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the target apiserver (default: $KUBECONFIG or in-cluster)")
	scale := fs.String("time-scale", "120", "simulated time per wall time: a factor (600) or SIMULATED:WALL (90m:45s)")
	graph := fs.String("graph", "", "comma-separated releases of the update graph, each in every channel (default: the graph seeded with the cluster, else what the ClusterVersion already lists)")
	logFormat := fs.String("log-format", "console", "console or json")
	var fs2 listFlag
	fs.Var(&fs2, "fault", "inject a fault at start: KIND/NAME=FAULT, e.g. node/ocp-worker-us-east-1a-0=NeverReady (repeatable)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badUsage("run: unexpected argument %q", fs.Arg(0))
	}
	factor, err := timescale.Parse(*scale)
	if err != nil {
		return badUsage("run: --time-scale: %v", err)
	}
	if *logFormat != "console" && *logFormat != "json" {
		return badUsage("run: --log-format %q: want console or json", *logFormat)
	}
	var reqs []faults.Request
	for _, f := range fs2 {
		r, err := faults.ParseRequest(f)
		if err != nil {
			return badUsage("run: --%v", err)
		}
		reqs = append(reqs, r)
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(*logFormat == "console"), zap.WriteTo(stderr)))
	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		return err
	}
	if len(reqs) > 0 {
		c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
		if err != nil {
			return err
		}
		for _, r := range reqs {
			if err := ocpsim.InjectFault(ctx, c, r); err != nil {
				return err
			}
		}
	}
	sim, err := ocpsim.New(cfg, ocpsim.Options{TimeScale: factor, Graph: splitList(*graph)})
	if err != nil {
		return err
	}
	ctrl.Log.WithName("ocpsim").Info(fmt.Sprintf("simulating cluster-version-operator, machine-config-operator, machine-api and etcd-operator at %gx", factor), "version", version)
	return sim.Run(ctx)
}

func faultCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("fault", stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the target apiserver (default: $KUBECONFIG or in-cluster)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return badUsage("fault: want at least one KIND/NAME=FAULT, e.g. clusteroperator/kube-apiserver=Degraded")
	}
	var reqs []faults.Request
	for _, a := range fs.Args() {
		r, err := faults.ParseRequest(a)
		if err != nil {
			return badUsage("fault: %v", err)
		}
		reqs = append(reqs, r)
	}
	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return err
	}
	for _, r := range reqs {
		if err := ocpsim.InjectFault(ctx, c, r); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s/%s: fault %s requested\n", r.Kind, r.Name, r.Fault)
	}
	return nil
}
