// Command upshift-must-gather writes Upshift's diagnostics into /must-gather,
// as `oc adm must-gather --image=<its image>` expects: oc starts the image in
// a pod of its own with a cluster-admin ServiceAccount, runs /usr/bin/gather
// and copies /must-gather back. The archive is the one `kubectl upshift
// must-gather` writes (libs/mustgather), except that the components' metrics
// are read from their pods' IPs with the pod's ServiceAccount token, as
// Prometheus reads them: from inside the cluster the apiserver's proxy is not
// needed, and it would not pass a token on.
//
//	upshift-must-gather [--dest-dir /must-gather] [--namespace NS ...] [--scrape-pods-directly=true]
//
// Out of a cluster it takes the standard kubeconfig flags.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/upshift-io/upshift/libs/buildinfo"
	"github.com/upshift-io/upshift/libs/mustgather"
)

const binaryName = "upshift-must-gather"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	var (
		destDir    string
		namespaces []string
		direct     bool
	)
	// Only the connection flags: --namespace here names the components'
	// namespaces, not a default for requests.
	kubeFlags := genericclioptions.NewConfigFlags(false)
	kubeFlags.Namespace = nil
	cmd := &cobra.Command{
		Use:           binaryName,
		Short:         "Gather Upshift's diagnostics into a must-gather folder",
		Version:       buildinfo.String(binaryName),
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kubeFlags.ToRESTConfig()
			if err != nil {
				return err
			}
			sum, err := mustgather.Gather(cmd.Context(), mustgather.Options{
				Config: cfg, Dir: destDir, Namespaces: namespaces, ScrapePodsDirectly: direct, Progress: cmd.ErrOrStderr(),
			})
			if err != nil {
				return err
			}
			// OpenShift's must-gather images say what gathered the folder in
			// a file named version.
			if err := os.WriteFile(filepath.Join(destDir, "version"), []byte(buildinfo.String(binaryName)+"\n"), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d kinds of things gathered, %d not (see %s)\n",
				destDir, len(sum.Gathered), len(sum.Missing), mustgather.SummaryFile)
			return nil
		},
	}
	cmd.SetVersionTemplate("{{.Version}}\n")
	kubeFlags.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&destDir, "dest-dir", "/must-gather", "Folder to write into, new or empty (oc copies /must-gather back)")
	cmd.Flags().StringSliceVar(&namespaces, "namespace", nil, "Namespaces the components run in (default: those of the pods labelled "+mustgather.PartOfSelector+")")
	cmd.Flags().BoolVar(&direct, "scrape-pods-directly", true, "Read each component's metrics from its pod's IP with these credentials (in the cluster network); false: through the apiserver's pod proxy")
	return cmd
}
