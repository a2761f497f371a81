// Command upshift-bench is `make bench`: one subcommand per component, each
// measuring it on a large simulated cluster (kwok nodes driven by ocpsim)
// with the component running as its chart's ServiceAccount.
//
//	upshift-bench update-status [flags]   the update-status-controller (updatestatus.go)
//	upshift-bench mcp-tracker [flags]     the mcp-tracker (mcptracker.go)
//	upshift-bench node-gate [flags]       node-gate (nodegate.go)
//	upshift-bench system [flags]          every component against none (system.go)
//
// Without a subcommand, --component=<update-status-controller|mcp-tracker|
// node-gate> picks one (default: the update-status-controller), as
// `make bench BENCH_FLAGS=--component=...` does. The cluster, the identity,
// the watches, the metrics and the process figures are bench.go's, shared
// by all three.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// options are the flags of every bench; each subcommand defines the ones
// it reads, with its own defaults.
type options struct {
	binDir         string
	workers        int
	maxUnavailable string
	timeScale      float64
	timeout        time.Duration
	qps            int

	// update-status
	sweep      string
	profileDir string
	// pprofAddr is where the measured controller serves /debug/pprof when
	// profileDir is set.
	pprofAddr string
	// profileFile: where node-gate's profile of the gated update goes.
	profileFile string

	// mcp-tracker
	infra            int
	minWriteInterval time.Duration
	// mcp-tracker, node-gate
	updateTimeout time.Duration
	// node-gate
	pairs     int
	lookahead int
	// nodeReference: the reference reactor also annotates each Done node.
	nodeReference bool
	// audit: the apiserver logs every request (node-gate, system).
	audit bool
	// system
	// capacityLead is the scheduler's scale.leadTime in minutes: how long
	// before upgradeAt the temporary machines are requested (0: in their
	// step, after upgradeAt, as MUO).
	capacityLead int
	// leaveOut are components the system bench does not start with Upshift
	// (chart names), to measure what each of the others adds.
	leaveOut string
}

// subcommand is one component's bench.
type subcommand struct {
	name string
	// component is the name --component takes for it.
	component string
	// defaults of the shared flags.
	workers   int
	timeScale float64
	qps       int
	flags     func(fs *flag.FlagSet, o *options)
	run       func(ctx context.Context, o options) error
}

var subcommands = []subcommand{
	{name: "update-status", component: "update-status-controller", workers: 5000, timeScale: 3000, qps: 150, run: runUpdateStatus,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.StringVar(&o.sweep, "sweep", "",
				"Comma-separated time scales, e.g. 10,30,100,300: after the first update, one more update at each, "+
					"to find the highest time scale at which insight latency p99 stays within 1 s.")
			fs.StringVar(&o.profileDir, "profile-dir", "",
				"Write the controller's CPU profile of the first update's first "+
					profileLength.String()+" (cpu.pprof; a shorter update waits for it) and its heap at the update's end (heap.pprof) into this folder.")
		}},
	{name: "mcp-tracker", component: "mcp-tracker", workers: 5000, timeScale: 3000, qps: 50, run: runTracker,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.IntVar(&o.infra, "infra-nodes", 500, "How many of --workers form the custom infra pool.")
			fs.DurationVar(&o.minWriteInterval, "min-write-interval", 5*time.Second, "The tracker's --min-write-interval (5s is the chart's default).")
			fs.DurationVar(&o.updateTimeout, "update-timeout", 40*time.Minute, "Report what was measured if the update has not finished by then.")
		}},
	// node-gate and system compare wall times of whole updates at time scale
	// 10, the lowest at which an update takes minutes on this machine. A
	// write's latency is real time at any scale, so the more the simulation
	// is compressed, the more the apiserver's fixed latencies weigh in each
	// simulated step; a lower scale is nearer a real cluster (scale 1). At
	// 30 the simulated MCO's serial pool sync, loaded by every write on the
	// two cores, paces both updates (docs/benchmarks/node-gate.md).
	{name: "node-gate", component: "node-gate", workers: 500, timeScale: 10, qps: 50, run: runNodeGate,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.DurationVar(&o.updateTimeout, "update-timeout", 40*time.Minute, "Fail if an update has not finished by then.")
			fs.IntVar(&o.pairs, "pairs", 2, "Ungated and gated updates, alternating: how many of each.")
			fs.IntVar(&o.lookahead, "lookahead", 1, "The gated run's rule's spec.lookahead (0: strict, a node's hooks start only in its turn).")
			fs.BoolVar(&o.nodeReference, "node-reference", false,
				"The reference reactor also annotates each Done node (a Node write beside its ConfigMap patch), and the bench reports node-gate's added reaction over that write too.")
			fs.BoolVar(&o.audit, "audit", false, "Log every request to the apiserver and split the added reactions at node-gate's release patch as the log records it: "+
				"node-gate's time to send it, the apiserver's to answer it, the watch's to show it (the log loads the apiserver: such a run's times do not compare with others).")
			fs.StringVar(&o.profileDir, "profile-dir", "",
				"Write node-gate's CPU profile over "+gateProfileLength.String()+" from the first gated worker targeted, in each pair "+
					"(<pair>-cpu.pprof; a shorter rollout waits for it), into this folder.")
		}},
	{name: "system", component: "system", workers: 500, timeScale: 10, qps: 0, run: runSystem,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.DurationVar(&o.updateTimeout, "update-timeout", 40*time.Minute, "Fail if an update has not finished by then.")
			fs.IntVar(&o.pairs, "pairs", 2, "Updates without and with Upshift, alternating: how many of each.")
			fs.IntVar(&o.lookahead, "lookahead", 1, "The node-gate run's rule's spec.lookahead.")
			fs.IntVar(&o.capacityLead, "capacity-lead", 1, "The scheduler's scale.leadTime in minutes: the temporary machines are requested that long "+
				"before upgradeAt, which is set that far ahead (0: requested in their step after upgradeAt, as MUO, which puts their provisioning in the measured time).")
			fs.StringVar(&o.leaveOut, "leave-out", "", "Components not started with Upshift, comma-separated: node-gate, mcp-tracker, "+
				"update-status-controller (the difference to a run with all of them is what they add).")
			fs.BoolVar(&o.audit, "audit", false, "Log every request to the apiserver and print the last pair's writes by client "+
				"(the log loads the apiserver: such a run's times do not compare with others).")
			fs.StringVar(&o.profileDir, "profile-dir", "",
				"Write a CPU profile of each component and of the apiserver over the first "+systemProfileLength.String()+
					" of each update with Upshift (<pair>-<program>.cpu.pprof; a shorter update waits for it) into this folder.")
		}},
}

const usage = `usage: upshift-bench <update-status|mcp-tracker|node-gate|system> [flags]
       upshift-bench [--component=update-status-controller|mcp-tracker|node-gate|system] [flags]
run "upshift-bench <subcommand> -h" for the flags of a subcommand
`

func main() {
	sub, args, err := pick(os.Args[1:])
	if err != nil {
		fmt.Fprint(os.Stderr, err.Error()+"\n"+usage)
		os.Exit(2)
	}
	fs := flag.NewFlagSet("upshift-bench "+sub.name, flag.ExitOnError)
	o := options{}
	fs.StringVar(&o.binDir, "bin-dir", "bin", "Folder with the built binaries (the component's; kubectl-upshift).")
	fs.IntVar(&o.workers, "workers", sub.workers, "Worker nodes (plus 3 control-plane nodes).")
	fs.StringVar(&o.maxUnavailable, "max-unavailable", "10%", "The worker pool's maxUnavailable.")
	fs.Float64Var(&o.timeScale, "time-scale", sub.timeScale, "Simulated seconds per wall second of the updates (update-status: of the first).")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Minute, "Give up after this long.")
	fs.IntVar(&o.qps, "controller-qps", sub.qps, "The component's --kube-api-qps (burst: twice that); the default is its chart's.")
	sub.flags(fs, &o)
	_ = fs.Parse(args) // ExitOnError
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	err = sub.run(ctx, o)
	cancel()
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench failed:", err)
		os.Exit(1)
	}
}

// pick finds the subcommand: the first argument, or else --component's
// value (taken out of the flags).
func pick(args []string) (subcommand, []string, error) {
	byName := func(match func(subcommand) bool, what string) (subcommand, error) {
		if i := slices.IndexFunc(subcommands, match); i >= 0 {
			return subcommands[i], nil
		}
		return subcommand{}, fmt.Errorf("%s is none of update-status, mcp-tracker, node-gate, system", what)
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		s, err := byName(func(s subcommand) bool { return s.name == args[0] }, fmt.Sprintf("%q", args[0]))
		return s, args[1:], err
	}
	component, rest := "update-status-controller", []string{}
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") || name != "component" {
			rest = append(rest, args[i])
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				return subcommand{}, nil, fmt.Errorf("--component needs a value")
			}
			i++
			value = args[i]
		}
		component = value
	}
	s, err := byName(func(s subcommand) bool { return s.component == component }, fmt.Sprintf("--component: %q", component))
	return s, rest, err
}

func step(start time.Time, format string, args ...any) {
	fmt.Printf("[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}
