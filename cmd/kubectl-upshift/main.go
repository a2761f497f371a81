// Command kubectl-upshift is Upshift's operator-facing CLI. Installed on the
// PATH it is a kubectl plugin:
//
//	kubectl upshift status [--details=none|all|nodes|health|operators] [--source=auto|controller|client] [-w] [-o json|yaml] [--mock-clusterversion=<dir>/<name>-cv.yaml]
//	kubectl upshift overview [--exit-status] [-o json] [--width N]
//	kubectl upshift cpms generate [-o yaml|json]
//	kubectl upshift must-gather [--dest-dir DIR] [-n NAMESPACE,...] [--archive]
//	kubectl upshift version
//
// It takes the standard kubeconfig flags (--kubeconfig, --context, ...). The
// logic lives in services/updatestatus/cli, services/cpms/generate and
// libs/mustgather; this file only wires flags.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/upshift-io/upshift/libs/buildinfo"
	"github.com/upshift-io/upshift/libs/mustgather"
	"github.com/upshift-io/upshift/services/cpms/generate"
	"github.com/upshift-io/upshift/services/updatestatus/cli"
)

const binaryName = "kubectl-upshift"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}).ExecuteContext(ctx)
	stop()
	if err != nil {
		os.Exit(exitCode(err, os.Stderr))
	}
}

// newRootCommand builds the command tree; tests run it with their own streams.
func newRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	root := &cobra.Command{
		// kubectl shows plugins as "kubectl upshift"; the annotation makes
		// cobra's usage lines say so too.
		Use:   "upshift",
		Short: "Upshift: safe, visible OpenShift cluster updates",
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl upshift",
		},
		Version: buildinfo.String(binaryName),
		// Errors are printed once, by main; usage is not an error report.
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)

	// The standard kubeconfig flags, shared by every subcommand.
	kubeFlags := genericclioptions.NewConfigFlags(true)
	kubeFlags.AddFlags(root.PersistentFlags())

	root.AddCommand(newStatusCommand(kubeFlags, streams), newCPMSCommand(kubeFlags, streams),
		newMustGatherCommand(kubeFlags, streams), newVersionCommand(streams))
	root.AddCommand(newOverviewCommand(kubeFlags, streams))
	return root
}

func newStatusCommand(kubeFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	opts := cli.StatusOptions{
		Out:        streams.Out,
		ErrOut:     streams.ErrOut,
		RESTConfig: kubeFlags.ToRESTConfig,
		// Watching on a terminal redraws in place; into a pipe or a file,
		// reports follow each other.
		ClearScreen: isTerminal(streams.Out),
	}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the progress and health of the cluster update, as `oc adm upgrade status` does",
		Long: `Show the progress and health of the cluster update, as "oc adm upgrade status" prints it.

--source says where the status comes from:

  controller  the UpgradeStatus and NodeProgressInsight objects the
              update-status-controller publishes.
  client      assessed here, as oc does, from the cluster's own objects: the
              ClusterVersion, ClusterOperators, MachineConfigPools,
              MachineConfigs, Nodes, the machine-config-operator Deployment,
              node-gate's runs when node-gate is installed, and the alerts of
              the Thanos querier in openshift-monitoring (read with your
              kubeconfig's bearer token; when they cannot be read, oc's
              notice says so and the report goes on without them). Works
              without Upshift installed.
  auto        (default) controller when it has published a status; client
              when the UpgradeStatus CRD is not installed, there is no
              UpgradeStatus or it has no control plane status yet, or you
              may not read it.

A line on stderr says which source was used; stdout carries only the report.

With --mock-clusterversion the status is instead assessed from a snapshot of
files (<name>-cv.yaml, -co.yaml, -mcp.yaml, -mc.yaml, -node.yaml and optionally
-alerts.json and -mco-deployment.yaml) without contacting any cluster.

With --watch the controller's status is printed again on every change of its
objects, until interrupted (Ctrl-C). While the cluster updates, a warning on
stderr says when the controller last refreshed the status if that was more than
three minutes ago. --watch needs the controller: assessed here, following every
change would mean polling the alerts, so it is refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cli.RunStatus(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Details, "details", "none",
		"Show detailed information: none, all, nodes, health or operators")
	cmd.Flags().StringVar(&opts.Source, "source", string(cli.SourceAuto),
		"Where the status comes from: auto, controller (the update-status-controller's objects) or client (assessed here from the cluster's objects)")
	cmd.Flags().StringVar(&opts.MockClusterVersion, "mock-clusterversion", "",
		"Assess the snapshot whose ClusterVersion is in this <dir>/<name>-cv.yaml file instead of reading the cluster")
	cmd.Flags().BoolVarP(&opts.Watch, "watch", "w", false,
		"After printing the status, print it again whenever it changes, until interrupted")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "",
		"Print the UpgradeStatus and NodeProgressInsights (assessed here: as the controller would publish them) as json or yaml instead of the report")
	return cmd
}

// newCPMSCommand groups the control-plane machine set commands.
func newCPMSCommand(kubeFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cpms",
		Short: "Control-plane machine set commands",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newCPMSGenerateCommand(kubeFlags, streams))
	return cmd
}

func newCPMSGenerateCommand(kubeFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	opts := generate.PrintOptions{Out: streams.Out, ErrOut: streams.ErrOut, RESTConfig: kubeFlags.ToRESTConfig}
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Print the ControlPlaneMachineSet generated from the control-plane machines, for review",
		Long: `Print the Inactive ControlPlaneMachineSet "cluster" that the cpms-controller's
generator (--generate-set), like the upstream operator's, builds from the
control-plane Machines of openshift-machine-api and the Infrastructure
"cluster": the newest machine's provider spec as template, the failure domains
the machines are in, RollingUpdate. Nothing is written to the cluster. When
the cluster has a set already, stderr says whether it differs.

Review it, then apply it (or let the generator create it) and set
spec.state to Active for the controller to manage the control plane.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return generate.Print(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "yaml", "Output format: yaml or json")
	return cmd
}

func newMustGatherCommand(kubeFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var destDir string
	var archive bool
	cmd := &cobra.Command{
		Use:   "must-gather",
		Short: "Write Upshift's objects, the platform objects it reads, its pods' logs, Events and metrics into a folder for diagnosis",
		Long: `Write what it takes to diagnose Upshift into a folder laid out as OpenShift's
must-gather archives are: every object of Upshift's APIs (UpgradeConfigs
included), the ClusterVersion, ClusterOperators, MachineConfigPools, Nodes,
Machines, MachineSets, the ControlPlaneMachineSet and ARO's Cluster, the
components' pods with their logs (and the logs before a restart), metrics and
Leases, and the Events of their namespaces and openshift-machine-api.
summary.txt says what was gathered, and what was not and why (a kind you may
not read is noted there, the rest is gathered all the same).

It reads with your credentials and never writes a Secret's value, a
MachineConfig, or a literal environment variable value.

The components' namespaces are found from their pods' label
app.kubernetes.io/part-of=upshift; -n names them instead (comma-separated).
The same archive comes from "oc adm must-gather --image=<the upshift-must-gather image>".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kubeFlags.ToRESTConfig()
			if err != nil {
				return err
			}
			if destDir == "" {
				destDir = "must-gather.upshift." + time.Now().UTC().Format("20060102-150405")
			}
			var namespaces []string
			if kubeFlags.Namespace != nil && *kubeFlags.Namespace != "" {
				for _, ns := range strings.Split(*kubeFlags.Namespace, ",") {
					if ns = strings.TrimSpace(ns); ns != "" {
						namespaces = append(namespaces, ns)
					}
				}
			}
			sum, err := mustgather.Gather(cmd.Context(), mustgather.Options{
				Config: cfg, Dir: destDir, Namespaces: namespaces, Progress: streams.ErrOut,
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(streams.Out, "wrote %s (%d kinds of things gathered, %d not: see %s)\n",
				destDir, len(sum.Gathered), len(sum.Missing), mustgather.SummaryFile)
			if archive {
				if err := mustgather.WriteTarGz(destDir, destDir+".tar.gz"); err != nil {
					return err
				}
				fmt.Fprintf(streams.Out, "wrote %s.tar.gz\n", destDir)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&destDir, "dest-dir", "", "Folder to write into, new or empty (default must-gather.upshift.<UTC time>)")
	cmd.Flags().BoolVar(&archive, "archive", false, "Also write <dest-dir>.tar.gz")
	return cmd
}

func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of kubectl-upshift",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(streams.Out, buildinfo.String(binaryName))
			return err
		},
	}
}

// isTerminal: w is a character device (a terminal), not a pipe or a file.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
