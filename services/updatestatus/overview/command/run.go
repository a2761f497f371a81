// Package command runs `kubectl upshift overview`: it reads, with the
// user's credentials, the objects every Upshift component publishes, hands
// them to package overview, and prints the view (or, with -o json, the
// model). It only reads.
//
// The command wiring (flags, kubeconfig) lives in cmd/kubectl-upshift.
package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/services/updatestatus/overview"
)

// defaultRequestTimeout bounds every read when the user gave no
// --request-timeout: a view that hangs on an unreachable server helps nobody.
const defaultRequestTimeout = 30 * time.Second

// Options are the inputs of the command.
type Options struct {
	// RESTConfig returns the cluster's client config.
	RESTConfig func() (*rest.Config, error)
	// Now is the wall clock; nil means time.Now.
	Now func() time.Time
	// Output is "" for the view or "json" for the model.
	Output string
	// ExitStatus makes the verdict the exit code (overview.ExitStatus).
	ExitStatus bool
	// Width cuts the view's lines; 0 means overview.DefaultWidth.
	Width int
	// Out receives the view.
	Out io.Writer
}

// Run prints the view. With ExitStatus, a verdict other than NotUpdating is
// returned as an overview.ExitStatus once the view is printed; any other
// error means nothing (or not everything) was printed.
func Run(ctx context.Context, o Options) error {
	if o.Output != "" && o.Output != "json" {
		return fmt.Errorf("invalid --output value %q: must be json", o.Output)
	}
	if o.RESTConfig == nil {
		return errors.New("no cluster configuration: pass --kubeconfig")
	}
	cfg, err := o.RESTConfig()
	if err != nil {
		return fmt.Errorf("cannot load the cluster configuration: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultRequestTimeout
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme, Mapper: mapper()})
	if err != nil {
		return fmt.Errorf("cannot create a client for %s: %w", cfg.Host, err)
	}
	in, err := readAll(ctx, c)
	if err != nil {
		return explain(err, cfg.Host)
	}
	in.Now = time.Now()
	if o.Now != nil {
		in.Now = o.Now()
	}
	m := overview.Build(in)
	if o.Output == "json" {
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		err = enc.Encode(m)
	} else {
		err = overview.Render(o.Out, m, o.Width)
	}
	if err != nil {
		return err
	}
	if o.ExitStatus && m.Verdict.ExitCode() != overview.ExitNotUpdating {
		return overview.ExitStatus{Verdict: m.Verdict}
	}
	return nil
}

// explain says why the cluster could not be read at all.
func explain(err error, server string) error {
	var urlErr *url.Error
	var netErr net.Error
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("not authorized by %s: check your credentials (%w)", server, err)
	case errors.As(err, &urlErr), errors.As(err, &netErr):
		return fmt.Errorf("cannot reach the cluster at %s: %w", server, err)
	}
	return fmt.Errorf("cannot read the cluster at %s: %w", server, err)
}
