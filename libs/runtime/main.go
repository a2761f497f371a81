package runtime

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/upshift-io/upshift/libs/buildinfo"
)

// Component describes a binary to Main.
type Component struct {
	// Name is the component name: logs, metrics, the Lease and --version use it.
	Name string
	// Flags adds the component's own flags, if any.
	Flags func(*flag.FlagSet)
	// Options returns the manager options once flags are parsed.
	Options func() Options
	// Setup registers the component's controllers with the manager.
	Setup func(ctx context.Context, mgr manager.Manager, log logr.Logger) error
}

// Exit codes of Main.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// Main runs a component until SIGTERM/SIGINT and returns the process exit
// code. stdout receives --version and --help output, stderr the logs and
// usage errors.
func Main(ctx context.Context, c Component, args []string, stdout, stderr io.Writer) int {
	f, err := ParseFlags(c.Name, args, stdout, c.Flags)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.Name, err)
		return ExitUsage
	}
	if f.Version {
		fmt.Fprintln(stdout, buildinfo.String(c.Name))
		return ExitOK
	}
	log, err := NewLogger(c.Name, f, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.Name, err)
		return ExitUsage
	}
	ctrl.SetLogger(log)
	klog.SetLogger(log.WithName("client-go"))

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := Run(ctx, c, f, log); err != nil {
		log.Error(err, "exiting")
		return ExitError
	}
	log.Info("stopped")
	return ExitOK
}

// Run builds the manager, lets the component register itself, and runs the
// manager until ctx is done.
func Run(ctx context.Context, c Component, f *Flags, log logr.Logger) error {
	var opts Options
	if c.Options != nil {
		opts = c.Options()
	}
	mgr, err := NewManager(c.Name, f, opts)
	if err != nil {
		return err
	}
	if c.Setup != nil {
		if err := c.Setup(ctx, mgr, log); err != nil {
			return fmt.Errorf("setting up %s: %w", c.Name, err)
		}
	}
	log.Info("starting", "version", buildinfo.Version(), "leaderElect", f.LeaderElect)
	return mgr.Start(ctx)
}

// MainProcess is Main for a real process: os.Args, stdout, stderr, os.Exit.
func MainProcess(c Component) {
	os.Exit(Main(context.Background(), c, os.Args[1:], os.Stdout, os.Stderr))
}
