package system

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/services/nodegate/plan"
)

// One writer per field on the platform's objects. The UpgradeConfig's
// status has its own table (framework.MisownedStatusFields); on the objects
// OpenShift owns, an Upshift component may own only the few fields the
// architecture's table gives it, each to one component, and nothing else.
// A field owned by a component outside its row is a second writer beside
// the platform's own.

// components are Upshift's field managers: a component's requests carry its
// name as their user agent, and its server-side applies a manager named
// after it ("aro-monitor-config").
var components = []string{"aro-monitor", "cpms-controller", "mcp-tracker", "node-gate", "update-status-controller", "upgrade-scheduler"}

func upshiftManager(manager string) bool {
	return slices.ContainsFunc(components, func(c string) bool { return manager == c || strings.HasPrefix(manager, c+"-") })
}

// platformFields are the paths of each kind a component may own.
var platformFields = map[string]map[string][]*regexp.Regexp{
	// node-gate pauses a pool, bounds its maxUnavailable to the run's limit
	// and keeps its held nodes out of its selector; it gives each back.
	"MachineConfigPool": {"node-gate": {regexp.MustCompile(`^\.spec\.(paused|maxUnavailable|nodeSelector)(\.|$)`)}},
	// The scheduler requests the update (and the channel it is in).
	"ClusterVersion": {"upgrade-scheduler": {regexp.MustCompile(`^\.spec\.(desiredUpdate|channel)(\.|$)`)}},
	// node-gate's hold label and release mark.
	"Node": {"node-gate": {regexp.MustCompile(`^\.metadata\.(labels|annotations)\.nodegate\.upshift\.io/`)}},
}

// misownedPlatformFields lists every path of o, of the platform's kind,
// that a component owns outside platformFields. A gate pool is node-gate's
// own object (it creates and deletes it), all of it.
func misownedPlatformFields(kind string, o client.Object) ([]string, error) {
	if kind == "MachineConfigPool" && o.GetLabels()[plan.GatePoolLabel] != "" {
		return nil, nil
	}
	var out []string
	// No component writes the platform's status.
	for _, sub := range []string{"", "status"} {
		owned, err := framework.OwnedPaths(o, sub, upshiftManager)
		if err != nil {
			return nil, err
		}
		for manager, paths := range owned {
			for _, path := range paths {
				if sub != "" || !slices.ContainsFunc(platformFields[kind][manager], func(re *regexp.Regexp) bool { return re.MatchString(path) }) {
					out = append(out, fmt.Sprintf("%s owns %s of %s %s", manager, path, kind, o.GetName()))
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// checkWriters checks one revision of a kind with a writers' table.
func (rep *report) checkWriters(rev revision) {
	const inv = "one writer per field"
	var misowned []string
	var err error
	switch o := rev.obj.(type) {
	case nil:
		return
	case *upgradev1alpha1.UpgradeConfig:
		misowned, err = framework.MisownedStatusFields(o)
	default:
		if platformFields[rev.kind] == nil {
			return
		}
		misowned, err = misownedPlatformFields(rev.kind, o)
	}
	rep.checked[inv]++
	if err != nil {
		rep.violate(rev.rv, "%s %s: %v", rev.kind, rev.key, err)
	}
	for _, m := range misowned {
		rep.violate(rev.rv, "%s", m)
	}
}
