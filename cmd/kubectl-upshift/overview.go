package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/upshift-io/upshift/services/updatestatus/overview"
	"github.com/upshift-io/upshift/services/updatestatus/overview/command"
)

func newOverviewCommand(kubeFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	opts := command.Options{Out: streams.Out, RESTConfig: kubeFlags.ToRESTConfig}
	cmd := &cobra.Command{
		Use:   "overview",
		Short: "Show on one screen what every Upshift component knows about the upgrade, and what each waits for",
		Long: fmt.Sprintf(`Show on one screen everything Upshift knows about the upgrade: what the
upgrade-scheduler has scheduled (UpgradeConfigs: version, start, maintenance
windows, deadlines, health checks, steps), the cluster update (ClusterVersion,
and the update-status-controller's assessment when it runs), the mcp-tracker's
pools, node-gate's runs and the nodes between their hooks, the control-plane
rollout (ControlPlaneMachineSet) and aro-monitor's findings. The first table
says in one line per component what it is waiting for.

It is named "overview" because it spans the components: "status" prints the
cluster update alone, as "oc adm upgrade status" does.

A component whose CRD is not installed is shown as "not installed"; a read
your permissions refuse is named, and the rest is shown. It only reads.

With --exit-status the exit code is the verdict, for scripts:
  %d  not updating: nothing scheduled, scheduled but not started, or completed
  1  the command failed (as without the flag)
  %d  updating, and nothing reports it blocked
  %d  blocked: a component reports it cannot go on (a failed or failing step, a
     passed deadline, an "Update Stalled" health insight, a degraded pool,
     a failed hook, a degraded control-plane rollout)
  %d  unknown: the ClusterVersion could not be read
Without it the exit code is 0 whenever the view was printed.`,
			overview.ExitNotUpdating, overview.ExitUpdating, overview.ExitBlocked, overview.ExitUnknown),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("width") {
				opts.Width = terminalWidth(streams.Out)
			}
			return command.Run(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.ExitStatus, "exit-status", false,
		fmt.Sprintf("Exit with the verdict: 0 not updating, %d updating, %d blocked, %d unknown (1 stays a command error)",
			overview.ExitUpdating, overview.ExitBlocked, overview.ExitUnknown))
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "Print the view's model as json instead of the text")
	cmd.Flags().IntVar(&opts.Width, "width", 0, "Cut the view's lines to this many columns; unset, the terminal's width (120 into a pipe or a file)")
	return cmd
}

// exitCode is the process's exit code for the error a command returned,
// printed to stderr in one line, so scripts and people see the reason at
// once. A verdict asked for with --exit-status is an exit code, not an
// error: the view already said it all, so nothing is printed.
func exitCode(err error, stderr io.Writer) int {
	var verdict interface{ ExitCode() int }
	if errors.As(err, &verdict) {
		return verdict.ExitCode()
	}
	fmt.Fprintf(stderr, "error: %v\n", err)
	return 1
}

// terminalWidth is the width of the terminal w writes to, so that no line
// of the view wraps; DefaultWidth into a pipe or a file.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !isTerminal(w) {
		return overview.DefaultWidth
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil || width < 40 {
		return overview.DefaultWidth
	}
	return width
}
