package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/services/updatestatus/render"
)

// Source says where a cluster's report comes from (--source).
type Source string

const (
	// SourceAuto uses the controller's status when it has published one and
	// otherwise assesses here (see noControllerStatus for when that is).
	SourceAuto Source = "auto"
	// SourceController renders what the update-status-controller published,
	// and fails when it published nothing.
	SourceController Source = "controller"
	// SourceClient assesses here from the cluster's own OpenShift objects,
	// as `oc adm upgrade status` does, whether the controller runs or not.
	SourceClient Source = "client"
)

// Sources are the values of --source, the default first.
var Sources = []Source{SourceAuto, SourceController, SourceClient}

func parseSource(s string) (Source, error) {
	if s == "" {
		return SourceAuto, nil
	}
	for _, v := range Sources {
		if Source(s) == v {
			return v, nil
		}
	}
	names := make([]string, len(Sources))
	for i, v := range Sources {
		names[i] = string(v)
	}
	return "", fmt.Errorf("invalid --source value %q: must be one of %s", s, strings.Join(names, ", "))
}

// noControllerStatus is the error of a read of the controller's status when
// there is nothing to render: its CRD is not installed, the UpgradeStatus
// does not exist, it has no control plane status yet, or the user may not
// read it. With --source=controller it is the command's error; with
// --source=auto the report is assessed here instead, and why says so.
type noControllerStatus struct {
	why string // a short phrase for the source line
	err error  // the full explanation
}

func (e *noControllerStatus) Error() string { return e.err.Error() }
func (e *noControllerStatus) Unwrap() error { return e.err }

// fallBack says whether auto falls back to assessing here after err, and
// the reason to print.
func fallBack(err error) (string, bool) {
	var no *noControllerStatus
	if errors.As(err, &no) {
		return no.why, true
	}
	return "", false
}

// The source line is printed on stderr, once, before the report: stdout
// stays exactly oc's report.

func printSource(w io.Writer, line string) {
	if w != nil {
		fmt.Fprintln(w, line)
	}
}

// clientSourceLine names the client-side source and why it was used: asked
// for (why empty) or auto's fallback.
func clientSourceLine(why string) string {
	if why == "" {
		return "Source: assessed here from the cluster's objects (--source=client)"
	}
	return "Source: assessed here from the cluster's objects (no update-status-controller status: " + why + ")"
}

// controllerSourceLine names the controller's source and, while the cluster
// updates (the controller then refreshes the status at least once a
// minute), how old the status is. Idle, the controller writes only on
// changes, so no age is a sign of anything.
func controllerSourceLine(us *updatev1alpha1.UpgradeStatus, now time.Time) string {
	line := fmt.Sprintf("Source: update-status-controller (UpgradeStatus %q", us.Name)
	if hb := meta.FindStatusCondition(us.Status.Conditions, updatev1alpha1.ConditionHeartbeat); hb != nil &&
		hb.Status == metav1.ConditionTrue && render.IsUpdating(us.Status) {
		line += ", refreshed " + render.ShortDuration(now.Sub(hb.LastTransitionTime.Time).Round(time.Second)) + " ago"
	}
	return line + ")"
}

// errWatchClientSide refuses --watch when the report is assessed here.
func errWatchClientSide(why string) error {
	reason := "--source=client"
	if why != "" {
		reason = "no update-status-controller status: " + why
	}
	return fmt.Errorf("--watch needs the update-status-controller's status (%s): assessed here, every change would need "+
		"watches of the ClusterVersion, ClusterOperators, MachineConfigPools, MachineConfigs and Nodes, and the alerts, "+
		"which cannot be watched, polling; run without --watch, or install the %s Helm chart", reason, chartName)
}
