// Package cli is the logic of `kubectl upshift status`: it prints the update
// status the way `oc adm upgrade status` does, from one of two sources:
//
//   - cluster mode reads what the update-status-controller published (the
//     UpgradeStatus singleton and the NodeProgressInsights) and renders it;
//   - mock mode (--mock-clusterversion) loads a snapshot from files, assesses
//     it here with the controller's own assessment code, and renders it with
//     the same renderer.
//
// The command wiring (flags, kubeconfig) lives in cmd/kubectl-upshift; this
// package gets plain values so that it can be tested without a command line.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/render"
	"github.com/upshift-io/upshift/services/updatestatus/snapshot"
)

// chartName is the Helm chart that installs the CRDs and the controller.
const chartName = "update-status-controller"

// defaultRequestTimeout bounds every API request when the user gave no
// --request-timeout: a status command that hangs on an unreachable server
// helps nobody.
const defaultRequestTimeout = 30 * time.Second

// StatusOptions are the inputs of the status command.
type StatusOptions struct {
	// Details is the raw --details value; empty means none.
	Details string
	// MockClusterVersion is the --mock-clusterversion path; when set, the
	// cluster is not contacted at all.
	MockClusterVersion string
	// RESTConfig returns the cluster's client config. It is called only in
	// cluster mode, so mock mode works without any kubeconfig.
	RESTConfig func() (*rest.Config, error)
	// Now is the wall clock used in cluster mode; nil means time.Now.
	Now func() time.Time

	// Out receives the report, ErrOut notes that are not part of it.
	Out, ErrOut io.Writer
	// Notices receives what oc prints on its standard output outside its
	// report (the offline mode's alerts notice); nil means Out.
	Notices io.Writer
}

// RunStatus prints the update status.
func RunStatus(ctx context.Context, o StatusOptions) error {
	details, err := render.ParseDetails(orDefault(o.Details, string(render.DetailsNone)))
	if err != nil {
		return err
	}
	if o.MockClusterVersion != "" {
		return runMock(o, details)
	}
	return runCluster(ctx, o, details)
}

// runMock assesses a snapshot from files. With a nil Previous the assessment
// is exactly oc's, and the snapshot's own "now" makes the output reproducible.
func runMock(o StatusOptions, details render.Details) error {
	loaded, err := snapshot.Load(o.MockClusterVersion)
	if err != nil {
		return err
	}
	if loaded.AlertsNotice != "" {
		// oc prints this on its standard output, before the report.
		notices := o.Notices
		if notices == nil {
			notices = o.Out
		}
		fmt.Fprint(notices, loaded.AlertsNotice)
	}
	result, err := assess.AssessForDisplay(loaded.Snapshot)
	if err != nil {
		return fmt.Errorf("cannot assess snapshot %s: %w", o.MockClusterVersion, err)
	}
	return render.Render(o.Out, render.Input{Status: result.Status, Nodes: result.Nodes},
		render.Options{Details: details, Now: loaded.Snapshot.Now})
}

// runCluster renders what the controller published.
func runCluster(ctx context.Context, o StatusOptions, details render.Details) error {
	if o.RESTConfig == nil {
		return errors.New("no cluster configuration: pass --kubeconfig or --mock-clusterversion")
	}
	cfg, err := o.RESTConfig()
	if err != nil {
		return fmt.Errorf("cannot load the cluster configuration: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultRequestTimeout
	}
	// The client's REST mapper is lazy: creating it contacts nobody, so
	// every connection problem surfaces (and is explained) at the first read.
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return fmt.Errorf("cannot create a client for %s: %w", cfg.Host, err)
	}
	in, err := read(ctx, c, cfg.Host)
	if err != nil {
		return err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	return render.Render(o.Out, in, render.Options{Details: details, Now: now()})
}

// read fetches the UpgradeStatus singleton and every NodeProgressInsight.
func read(ctx context.Context, c client.Reader, server string) (render.Input, error) {
	var status updatev1alpha1.UpgradeStatus
	if err := c.Get(ctx, client.ObjectKey{Name: updatev1alpha1.UpgradeStatusName}, &status); err != nil {
		if apierrors.IsNotFound(err) {
			return render.Input{}, fmt.Errorf("UpgradeStatus %q not found on %s: the update-status-controller is not running or has not computed the update status yet",
				updatev1alpha1.UpgradeStatusName, server)
		}
		return render.Input{}, explain(err, "UpgradeStatus", server)
	}
	if cp := status.Status.ControlPlane; cp == nil || cp.ClusterVersion == nil {
		return render.Input{}, fmt.Errorf("UpgradeStatus %q on %s has no control plane status yet: the update-status-controller has not computed it%s",
			updatev1alpha1.UpgradeStatusName, server, controllerConditions(status.Status.Conditions))
	}

	var nodes updatev1alpha1.NodeProgressInsightList
	if err := c.List(ctx, &nodes); err != nil {
		return render.Input{}, explain(err, "NodeProgressInsight", server)
	}
	in := render.Input{Status: status.Status}
	for _, n := range nodes.Items {
		in.Nodes = append(in.Nodes, n.Status)
	}
	return in, nil
}

// explain turns a failed read of kind into an error that says what to do.
func explain(err error, kind, server string) error {
	var urlErr *url.Error
	var netErr net.Error
	switch {
	case meta.IsNoMatchError(err):
		return fmt.Errorf("the %s CRD (%s) is not installed on %s: install the %s Helm chart, which installs it",
			kind, updatev1alpha1.GroupVersion.String(), server, chartName)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("not authorized by %s: check your credentials (%w)", server, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("not allowed to read %ss on %s: %w", kind, server, err)
	case errors.As(err, &urlErr), errors.As(err, &netErr):
		return fmt.Errorf("cannot reach the cluster at %s: %w", server, err)
	}
	return fmt.Errorf("cannot read %ss from %s: %w", kind, server, err)
}

// controllerConditions summarizes the controller's own conditions, which say
// why it could not compute the status.
func controllerConditions(conds []metav1.Condition) string {
	var parts []string
	for _, c := range conds {
		part := fmt.Sprintf("%s=%s", c.Type, c.Status)
		if c.Reason != "" {
			part += " (" + c.Reason + ")"
		}
		if c.Message != "" {
			part += ": " + c.Message
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	return "; controller conditions: " + strings.Join(parts, "; ")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
