// Package assess interprets a snapshot of cluster state into update status
// insights, the way `oc adm upgrade status` does. It is pure:
// no clients, no clocks, no I/O. The same code serves the controller (which
// feeds it from informer caches) and the CLI's offline mode (which feeds it
// from files), so both agree on every cluster.
//
// # Stable identity across recomputations
//
// Every call recomputes everything from the snapshot. To keep insight
// identities and times stable across calls (and controller restarts), the
// caller passes what it published last time in Previous:
//
//   - Health insight UIDs are semantic (e.g. "co-etcd-degraded"), so the same
//     problem gets the same UID on every call without any state.
//   - A condition whose type and status did not change keeps the previous
//     lastTransitionTime (as meta.SetStatusCondition does).
//   - A health insight whose start time cannot be read from the cluster (oc
//     shows "-") keeps the startedAt it had in Previous; without Previous it
//     has none, exactly as oc.
//
// With a nil Previous the result is exactly what oc computes, which is how the
// CLI's offline mode reproduces oc byte for byte.
package assess

import (
	"errors"
	"maps"
	"sort"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// Snapshot is everything the assessment reads.
type Snapshot struct {
	// ClusterVersion is the cluster's ClusterVersion ("version"); required.
	ClusterVersion *configv1.ClusterVersion
	// ClusterOperators are all ClusterOperators; at least one is required.
	ClusterOperators []configv1.ClusterOperator
	// MachineConfigPools are all pools.
	MachineConfigPools []mcfgv1.MachineConfigPool
	// MachineConfigs need to contain at least the configs the nodes' currentConfig and
	// desiredConfig annotations name; they carry the release version of a node.
	MachineConfigs []mcfgv1.MachineConfig
	// Nodes are all nodes. Pointers, so that a controller can hand over its
	// informer's objects without copying thousands of Nodes per assessment;
	// the assessment never writes to them.
	Nodes []*corev1.Node
	// MCOImage is the image of the machine-config-operator container of the
	// machine-config-operator Deployment. The machine-config ClusterOperator
	// counts as updated only when the image it reports (its operator-image
	// version) is this one: that is how a multi-arch migration (same version,
	// new image) is followed. Empty and known is what oc assumes when it has
	// no Deployment (offline snapshots without the file): then a reported
	// operator-image never matches.
	MCOImage string
	// MCOImageUnknown says the Deployment could not be read (missing, or an
	// error): the image check is not made, and machine-config counts as
	// updated on its operator version alone, as every other operator does.
	// Unknown must not read as "outdated": on a cluster where the image cannot
	// be read the control plane would otherwise never reach 100 % and drift
	// to Stalled.
	MCOImageUnknown bool
	// NodeGateRuns are node-gate's MutexRunConfigs; nil when node-gate is not
	// installed. Pools a run paused and its gate pools are reported as gated
	// by it (gates.go).
	NodeGateRuns []nodegatev1alpha1.MutexRunConfig
	// Alerts are the firing (and pending) alerts; nil when not available.
	Alerts []Alert
	// Now is the time of the assessment.
	Now time.Time
	// WallClock, when set, is what a node's unavailability is measured
	// against to tell whether it is serious: oc uses the real clock there,
	// even offline, where Now is the snapshot's time. Zero means Now.
	WallClock time.Time
}

func (s Snapshot) seriousNow() time.Time {
	if s.WallClock.IsZero() {
		return s.Now
	}
	return s.WallClock
}

// Alert is one alert as returned by the Prometheus/Thanos alerts API.
type Alert struct {
	Labels      map[string]string
	Annotations map[string]string
	State       string
	ActiveAt    time.Time
}

// Equal: the same alert in the same state since the same time. apimachinery's
// semantic DeepEqual cannot compare a time.Time (it panics on its unexported
// fields), and reflect.DeepEqual would tell apart one instant in two
// locations.
func (a Alert) Equal(b Alert) bool {
	return a.State == b.State && a.ActiveAt.Equal(b.ActiveAt) &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations)
}

// Previous is what the caller published last time; see the package doc.
type Previous struct {
	Status *updatev1alpha1.UpgradeStatusStatus
	// Nodes maps node name to the node's last published insight (read,
	// never written).
	Nodes map[string]*updatev1alpha1.NodeStatusInsight
}

// Result is the full insight set.
type Result struct {
	// Status holds controlPlane, workerPools and health. Status.Conditions (the
	// controller's own operational conditions) are left to the caller.
	Status updatev1alpha1.UpgradeStatusStatus
	// Nodes holds one insight per node that belongs to a pool, sorted by pool then name.
	Nodes []updatev1alpha1.NodeStatusInsight
	// NextCheck is the earliest time after Snapshot.Now at which the result
	// would change with the same objects (a health threshold passes, the
	// control plane becomes Slow or Stalled, the estimate moves); zero when
	// nothing depends on the time. The controller recomputes then, and
	// otherwise only when an object changes.
	NextCheck time.Time
}

// Errors for snapshots oc refuses to assess.
var (
	ErrNoClusterVersion    = errors.New("no cluster version information available")
	ErrNoClusterOperators  = errors.New("no cluster operator information available")
	ErrNoProgressingStatus = errors.New("no current Progressing info in ClusterVersion status")
)

// Pool names with a special meaning.
const (
	masterPool = "master"
	workerPool = "worker"
)

// Assess computes the insight set of the snapshot, fit for the API: texts
// are cut to the fields' limits and health insights bounded. prev may be nil.
func Assess(s Snapshot, prev *Previous) (Result, error) {
	return assess(s, prev, true)
}

// AssessForDisplay computes the insight set exactly as oc shows it: nothing is
// cut or left out, so it may exceed the API's limits. It serves the offline
// mode, which prints and never writes.
func AssessForDisplay(s Snapshot) (Result, error) {
	return assess(s, nil, false)
}

func assess(s Snapshot, prev *Previous, forAPI bool) (Result, error) {
	cv := s.ClusterVersion
	if cv == nil {
		return Result{}, ErrNoClusterVersion
	}
	if len(s.ClusterOperators) == 0 {
		return Result{}, ErrNoClusterOperators
	}
	progressing := findCVCondition(cv, configv1.OperatorProgressing)
	if progressing == nil {
		return Result{}, ErrNoProgressingStatus
	}

	hist := newHistory(cv)
	cp := assessControlPlane(s, hist, progressing)

	var result Result
	result.Status.ControlPlane = &updatev1alpha1.ControlPlane{
		Conditions:       []metav1.Condition{cp.updating},
		ClusterVersion:   &cp.cvInsight,
		ClusterOperators: cp.coInsights,
	}

	// Nodes by pool, then every pool with its nodes.
	versions := machineConfigVersions(s.MachineConfigs)
	byPool := nodesByPool(s.MachineConfigPools, s.Nodes)
	migrating := hist.multiArch && progressing.Status == configv1.ConditionTrue
	pools := sortedPools(s.MachineConfigPools)
	next := nextCheck{now: s.Now}
	operatorThresholds(cp.ops, &next)
	healthOfPool := map[string][]updatev1alpha1.HealthInsight{}
	// Sized once: grown by appends, the node lists allocated and copied
	// about twice what they hold on every recomputation. Left nil without
	// nodes, as before.
	if len(s.Nodes) > 0 {
		result.Nodes = make([]updatev1alpha1.NodeStatusInsight, 0, len(s.Nodes))
	}
	// Every node is assessed against the pool it is in; a gate pool's nodes
	// are then reported in their source pool, counted once, and the gate
	// pool itself is not listed.
	gates := newGating(s.NodeGateRuns)
	exists := map[string]bool{}
	for i := range pools {
		exists[pools[i].Name] = true
	}
	statesOf := map[string][]nodeState{}
	folded := map[string]bool{}
	for i := range pools {
		pool := &pools[i]
		shown := gates.displayPool(pool, exists)
		if shown != pool.Name && len(byPool[pool.Name]) > 0 {
			folded[shown] = true
		}
		if statesOf[shown] == nil {
			statesOf[shown] = make([]nodeState, 0, len(byPool[pool.Name]))
		}
		for _, node := range byPool[pool.Name] {
			statesOf[shown] = append(statesOf[shown], assessNode(node, pool, versions, hist.target, migrating, gates))
		}
	}
	for i := range pools {
		pool := &pools[i]
		if gates.displayPool(pool, exists) != pool.Name {
			continue
		}
		states := statesOf[pool.Name]
		if folded[pool.Name] {
			sort.Slice(states, func(i, j int) bool { return states[i].node.Name < states[j].node.Name })
		}
		nodeThresholds(states, &next)
		poolInsight := assessPool(pool, states, s.Now)
		for _, st := range states {
			in := st.insight(pool.Name, s.Now)
			if forAPI {
				fitNode(&in, s.Now)
			}
			result.Nodes = append(result.Nodes, in)
			healthOfPool[pool.Name] = append(healthOfPool[pool.Name], nodeHealth(st, pool.Name, s.seriousNow())...)
		}
		if gates.heldBy(pool.Name) == nil {
			healthOfPool[pool.Name] = append(healthOfPool[pool.Name], pausedPoolHealth(pool, states)...)
		}
		if pool.Name == masterPool {
			result.Status.ControlPlane.Pool = &poolInsight
			continue
		}
		result.Status.WorkerPools = append(result.Status.WorkerPools, updatev1alpha1.Pool{
			Name:       pool.Name,
			Conditions: poolInsight.Conditions,
			Pool:       poolInsight,
		})
	}

	// Health insights in oc's order, which decides the display order of
	// insights that start at the same time: pools by name (each pool's
	// nodes, then the pool), alerts, then the control plane.
	var health []updatev1alpha1.HealthInsight
	for _, pool := range poolNamesSorted(pools) {
		health = append(health, healthOfPool[pool]...)
	}
	health = append(health, gateHealth(gates, hist.started, s.Now, &next)...)
	health = append(health, alertHealth(s.Alerts, hist.started)...)
	health = append(health, cp.health...)
	if forAPI {
		// What the API cannot hold is left out, and a health insight says so.
		var omitted []updatev1alpha1.HealthInsight
		result.Status.WorkerPools, omitted = boundWorkerPools(result.Status.WorkerPools)
		health = append(health, omitted...)
		result.Status.ControlPlane.ClusterOperators, omitted = boundOperators(result.Status.ControlPlane.ClusterOperators)
		health = append(health, omitted...)
	}
	result.Status.Health = dedupeHealth(health)
	if forAPI {
		result.Status.Health = cutToAPILimits(boundHealth(result.Status.Health))
		fitStatus(&result.Status, s.Now)
	}

	if prev != nil {
		keepStable(&result, prev, s.Now)
	}
	cvi := result.Status.ControlPlane.ClusterVersion
	next.at(estimateChange(cp.estimate, s.Now, string(cvi.Assessment), cvi.EstimatedCompletedAt))
	result.NextCheck = next.next
	return result, nil
}

// sortedPools orders pools deterministically: master, worker, then the custom
// pools by name (oc prints worker before custom pools).
func sortedPools(in []mcfgv1.MachineConfigPool) []mcfgv1.MachineConfigPool {
	pools := append([]mcfgv1.MachineConfigPool(nil), in...)
	rank := func(name string) int {
		switch name {
		case masterPool:
			return 0
		case workerPool:
			return 1
		}
		return 2
	}
	sort.SliceStable(pools, func(i, j int) bool {
		ri, rj := rank(pools[i].Name), rank(pools[j].Name)
		if ri != rj {
			return ri < rj
		}
		return pools[i].Name < pools[j].Name
	})
	return pools
}

func poolNamesSorted(pools []mcfgv1.MachineConfigPool) []string {
	names := make([]string, 0, len(pools))
	for _, p := range pools {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

// nodesByPool assigns every node to one pool, as oc does: master if its
// selector matches, else the first matching custom pool (by name, where oc's
// choice is random), else worker; nodes matching nothing are left out. Each
// pool's nodes are sorted by name.
func nodesByPool(pools []mcfgv1.MachineConfigPool, nodes []*corev1.Node) map[string][]*corev1.Node {
	type selPool struct {
		name string
		sel  labels.Selector
	}
	var ordered []selPool
	for _, p := range sortedPools(pools) {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector)
		if err != nil {
			continue // an invalid selector selects nothing
		}
		ordered = append(ordered, selPool{p.Name, sel})
	}
	// master first, custom pools next, worker last.
	sort.SliceStable(ordered, func(i, j int) bool {
		last := func(n string) bool { return n == workerPool }
		return !last(ordered[i].name) && last(ordered[j].name)
	})
	out := map[string][]*corev1.Node{}
	for _, n := range nodes {
		for _, p := range ordered {
			if p.sel.Matches(labels.Set(n.Labels)) {
				out[p.name] = append(out[p.name], n)
				break
			}
		}
	}
	// By name, as the API lists them (and oc reads them), whatever order
	// the caller's cache gave.
	for _, ns := range out {
		sort.Slice(ns, func(i, j int) bool { return ns[i].Name < ns[j].Name })
	}
	return out
}

// machineConfigVersions maps MachineConfig name to its release version.
func machineConfigVersions(mcs []mcfgv1.MachineConfig) map[string]string {
	out := make(map[string]string, len(mcs))
	for _, mc := range mcs {
		if v := mc.Annotations[annoReleaseImageVersion]; v != "" {
			out[mc.Name] = v
		}
	}
	return out
}

func findCVCondition(cv *configv1.ClusterVersion, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
	for i := range cv.Status.Conditions {
		if cv.Status.Conditions[i].Type == t {
			return &cv.Status.Conditions[i]
		}
	}
	return nil
}

func findCOCondition(co *configv1.ClusterOperator, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
	for i := range co.Status.Conditions {
		if co.Status.Conditions[i].Type == t {
			return &co.Status.Conditions[i]
		}
	}
	return nil
}

// condition builds a metav1.Condition.
func condition(t string, status metav1.ConditionStatus, reason, message string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(at)}
}

// ref helpers for the resources insights point at.
func cvRef(name string) updatev1alpha1.ResourceRef {
	return updatev1alpha1.ResourceRef{Group: configv1.GroupName, Resource: "clusterversions", Name: name}
}

func coRef(name string) updatev1alpha1.ResourceRef {
	return updatev1alpha1.ResourceRef{Group: configv1.GroupName, Resource: "clusteroperators", Name: name}
}

func nodeRef(name string) updatev1alpha1.ResourceRef {
	return updatev1alpha1.ResourceRef{Resource: "nodes", Name: name}
}

func poolRef(name string) updatev1alpha1.PoolResourceRef {
	return updatev1alpha1.PoolResourceRef{ResourceRef: updatev1alpha1.ResourceRef{
		Group: mcfgv1.GroupName, Resource: "machineconfigpools", Name: name,
	}}
}

func scopeOfPool(pool string) updatev1alpha1.ScopeType {
	if pool == masterPool {
		return updatev1alpha1.ScopeTypeControlPlane
	}
	return updatev1alpha1.ScopeTypeWorkerPool
}

// joinNonEmpty is a small helper for messages.
func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}
