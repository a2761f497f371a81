package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/render"
)

// Values of --output.
const (
	outputJSON = "json"
	outputYAML = "yaml"
)

// objectList is a `v1 List`, as `kubectl get -o yaml` prints objects of
// several kinds: the UpgradeStatus first, then the node insights by name.
type objectList struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Items      []any  `json:"items"`
}

func newList(status *updatev1alpha1.UpgradeStatus, nodes []*updatev1alpha1.NodeProgressInsight) objectList {
	l := objectList{APIVersion: "v1", Kind: "List", Items: make([]any, 0, 1+len(nodes))}
	s := status.DeepCopy()
	s.TypeMeta = metav1.TypeMeta{APIVersion: updatev1alpha1.GroupVersion.String(), Kind: "UpgradeStatus"}
	s.ManagedFields = nil // as kubectl shows objects
	l.Items = append(l.Items, s)
	for _, n := range nodes {
		c := n.DeepCopy()
		c.TypeMeta = metav1.TypeMeta{APIVersion: updatev1alpha1.GroupVersion.String(), Kind: "NodeProgressInsight"}
		c.ManagedFields = nil
		l.Items = append(l.Items, c)
	}
	return l
}

// objectsOf is the offline assessment in the objects the controller would
// publish for it.
func objectsOf(r assess.Result) objectList {
	status := &updatev1alpha1.UpgradeStatus{ObjectMeta: metav1.ObjectMeta{Name: updatev1alpha1.UpgradeStatusName}, Status: r.Status}
	nodes := make([]*updatev1alpha1.NodeProgressInsight, 0, len(r.Nodes))
	for _, n := range r.Nodes {
		nodes = append(nodes, &updatev1alpha1.NodeProgressInsight{ObjectMeta: metav1.ObjectMeta{Name: n.Name}, Status: n})
	}
	return newList(status, nodes)
}

func writeObjects(w io.Writer, format string, l objectList) error {
	var data []byte
	var err error
	if format == outputYAML {
		data, err = yaml.Marshal(l)
	} else {
		data, err = json.MarshalIndent(l, "", "    ")
		data = append(data, '\n')
	}
	if err != nil {
		return fmt.Errorf("cannot encode the update status as %s: %w", format, err)
	}
	_, err = w.Write(data)
	return err
}

// staleAfter is how old the controller's heartbeat may get while the cluster
// updates: it refreshes it at least once a minute then, so three minutes
// without one means it stopped.
const staleAfter = 3 * time.Minute

// stalenessWarning is a one-line warning when the status says the cluster
// updates but the controller has not refreshed it for longer than
// staleAfter; empty otherwise. The controller writes no heartbeat while the
// cluster is idle, so then nothing is stale.
func stalenessWarning(us *updatev1alpha1.UpgradeStatus, now time.Time) string {
	if !render.IsUpdating(us.Status) {
		return ""
	}
	hb := meta.FindStatusCondition(us.Status.Conditions, updatev1alpha1.ConditionHeartbeat)
	if hb == nil {
		return "Warning: the update status has never been refreshed during this update (no Heartbeat condition); " +
			"the update-status-controller may not be running.\n"
	}
	age := now.Sub(hb.LastTransitionTime.Time)
	if age <= staleAfter {
		return ""
	}
	return fmt.Sprintf("Warning: the update status was last refreshed %s ago (%s); the update-status-controller may not be running.\n",
		render.ShortDuration(age), hb.LastTransitionTime.UTC().Format(time.RFC3339))
}

// staleAt is when the status turns stale if nothing refreshes it; zero when
// it cannot (not updating) or already is.
func staleAt(us *updatev1alpha1.UpgradeStatus, now time.Time) time.Time {
	if us == nil || !render.IsUpdating(us.Status) {
		return time.Time{}
	}
	hb := meta.FindStatusCondition(us.Status.Conditions, updatev1alpha1.ConditionHeartbeat)
	if hb == nil {
		return time.Time{}
	}
	if at := hb.LastTransitionTime.Add(staleAfter + time.Second); at.After(now) {
		return at
	}
	return time.Time{}
}

// clearScreen moves the cursor home and clears the terminal.
const clearScreen = "\033[H\033[2J"

// printer prints one frame: the report (or the objects) of a cluster state.
type printer struct {
	o       StatusOptions
	details render.Details
	frames  int
}

func (p *printer) now() time.Time {
	if p.o.Now != nil {
		return p.o.Now()
	}
	return time.Now()
}

func (p *printer) print(st clusterState) error {
	if p.frames > 0 {
		switch {
		case p.o.ClearScreen:
			fmt.Fprint(p.o.Out, clearScreen)
		case p.o.Output == outputYAML:
			fmt.Fprint(p.o.Out, "---\n")
		case p.o.Output == "":
			fmt.Fprint(p.o.Out, "\n")
		}
	} else if p.o.ClearScreen && p.o.Watch {
		// Only a watch redraws; a one-time report, like oc's, leaves the
		// terminal's earlier output alone.
		fmt.Fprint(p.o.Out, clearScreen)
	}
	p.frames++
	now := p.now()
	if w := stalenessWarning(st.status, now); w != "" && p.o.ErrOut != nil {
		fmt.Fprint(p.o.ErrOut, w)
	}
	if p.o.Output != "" {
		return writeObjects(p.o.Out, p.o.Output, newList(st.status, st.sortedNodes()))
	}
	return render.Render(p.o.Out, st.input(), render.Options{Details: p.details, Now: now})
}
