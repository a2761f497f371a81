package system

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/libs/nodes"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/services/nodegate/plan"
	schedplan "github.com/upshift-io/upshift/services/upgradescheduler/plan"
	"github.com/upshift-io/upshift/tools/ocpsim/etcd"
	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
)

// The invariants are checked from the objects' revisions as watches deliver
// them, replayed in resourceVersion order: etcd's revision orders every
// write across kinds, so "the hook Job completed before the node was
// released" is a comparison of two revisions, not of two moments a poller
// happened to look. A watch that breaks (the apiserver restarts) resumes,
// and one whose resourceVersion expired (410 Gone) lists again; the list's
// objects carry their own revisions, so they slot in where they belong. What
// a list cannot give is the revisions an object went through between the
// watch's last event and the list: for that stretch (a blind window, one
// per kind and relist) the replay's view of the kind may be behind the
// cluster's, and a check that needs it there is counted as undecided, not
// passed or failed. A deletion that happened while a watch was down is seen
// without its revision (gaps counts those).

// revision is one state of one object.
type revision struct {
	kind, key string
	rv        int64
	obj       client.Object // nil when deleted
}

// blind is a stretch of revisions (from, to] in which the recorder may have
// missed revisions of kind: its watch had ended, and the list that followed
// gave each object's last revision only.
type blind struct {
	kind     string
	from, to int64
}

// recorder collects every revision of the kinds the invariants read.
type recorder struct {
	mu   sync.Mutex
	seen map[string]bool
	revs []revision
	gaps int
	// blinds are the relists' blind windows; listed says which kinds were
	// listed once already, last the highest revision recorded by kind.
	blinds []blind
	listed map[string]bool
	last   map[string]int64
}

// recording is what the recorder saw, in resourceVersion order.
type recording struct {
	revs   []revision
	gaps   int
	blinds []blind
}

// recordedKinds are the kinds the invariants read.
var recordedKinds = map[string]client.Object{
	"Node":           &corev1.Node{},
	"Machine":        &machinev1beta1.Machine{},
	"MachineSet":     &machinev1beta1.MachineSet{},
	"Job":            &batchv1.Job{},
	"ClusterVersion": &configv1.ClusterVersion{},
	"UpgradeStatus":  &updatev1alpha1.UpgradeStatus{},
	"UpgradeConfig":  &upgradev1alpha1.UpgradeConfig{},
	"MutexRunConfig": &nodegatev1alpha1.MutexRunConfig{},
	// Read for its writers only (writers_test.go).
	"MachineConfigPool": &mcfgv1.MachineConfigPool{},
}

// startRecorder watches the recorded kinds as the cluster admin until ctx
// ends.
func startRecorder(ctx context.Context, cfg *rest.Config) (*recorder, error) {
	r := &recorder{seen: map[string]bool{}, listed: map[string]bool{}, last: map[string]int64{}}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme.New(),
		NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
			kind := reflect.TypeOf(obj).Elem().Name()
			return toolscache.NewSharedIndexInformer(&listWatcher{ListerWatcher: lw, kind: kind, rec: r}, obj, resync, idx)
		}})
	if err != nil {
		return nil, err
	}
	for kind, obj := range recordedKinds {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { r.record(kind, o, false) },
			UpdateFunc: func(_, o any) { r.record(kind, o, false) },
			DeleteFunc: func(o any) { r.record(kind, o, true) },
		})
		if err != nil {
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the recorder's informers did not sync")
	}
	return r, nil
}

func (r *recorder) record(kind string, o any, deleted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		// Deleted while the watch was down: the revision of the deletion
		// is unknown.
		r.gaps++
		if obj, ok := tomb.Obj.(client.Object); ok {
			r.revs = append(r.revs, revision{kind: kind, key: keyOf(obj), rv: -1})
		}
		return
	}
	obj := o.(client.Object)
	rv, err := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	id := fmt.Sprintf("%s/%s/%d/%t", kind, keyOf(obj), rv, deleted)
	if r.seen[id] {
		return // a relist delivers what the watch already had
	}
	r.seen[id] = true
	r.last[kind] = max(r.last[kind], rv)
	rev := revision{kind: kind, key: keyOf(obj), rv: rv}
	if !deleted {
		rev.obj = obj.DeepCopyObject().(client.Object)
	}
	r.revs = append(r.revs, rev)
}

// listWatcher is the recorder's informers' ListerWatcher: it tells the
// recorder of every list, so that a list after the first (a relist, after a
// watch expired) opens no gap unseen. It says it cannot stream lists (the
// watch-list protocol), so that the reflector lists with List, whose
// result carries the list's resourceVersion.
type listWatcher struct {
	toolscache.ListerWatcher
	kind string
	rec  *recorder
}

func (l *listWatcher) IsWatchListSemanticsUnSupported() bool { return true }

func (l *listWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *listWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	list, err := toolscache.ToListerWatcherWithContext(l.ListerWatcher).ListWithContext(ctx, opts)
	if err != nil || opts.Continue != "" {
		return list, err // a later page of the same list
	}
	if lm, err := meta.ListAccessor(list); err == nil {
		l.rec.listedAt(l.kind, opts.ResourceVersion, lm.GetResourceVersion())
	}
	return list, nil
}

func (l *listWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return toolscache.ToListerWatcherWithContext(l.ListerWatcher).WatchWithContext(ctx, opts)
}

// listedAt records a list of kind at resourceVersion to. After the first,
// a list is a relist: what kind went through since the reflector's last
// synced revision (from, which it lists from), or else since the last one
// recorded, is a blind window.
func (r *recorder) listedAt(kind, from, to string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.listed[kind] {
		r.listed[kind] = true
		return
	}
	end, err := strconv.ParseInt(to, 10, 64)
	if err != nil {
		return
	}
	begin, err := strconv.ParseInt(from, 10, 64)
	if err != nil || begin == 0 {
		begin = r.last[kind]
	}
	if end > begin {
		r.blinds = append(r.blinds, blind{kind: kind, from: begin, to: end})
	}
}

func keyOf(o client.Object) string {
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}.String()
}

// ordered returns what was recorded, the revisions in resourceVersion
// order; those without one (gaps) come last.
func (r *recorder) ordered() recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	blinds := append([]blind(nil), r.blinds...)
	out := append([]revision(nil), r.revs...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].rv, out[j].rv
		if a < 0 || b < 0 {
			return b < 0 && a >= 0
		}
		return a < b
	})
	return recording{revs: out, gaps: r.gaps, blinds: blinds}
}

// blindAt is the first blind window of one of kinds that holds rv: the
// recorded state of that kind at rv may be behind the cluster's.
func (rec recording) blindAt(rv int64, kinds ...string) *blind {
	for i, b := range rec.blinds {
		if rv > b.from && rv <= b.to && slices.Contains(kinds, b.kind) {
			return &rec.blinds[i]
		}
	}
	return nil
}

// world is the cluster as of one revision during the replay.
type world map[string]map[string]client.Object

func (w world) apply(rev revision) (prev client.Object) {
	objs := w[rev.kind]
	if objs == nil {
		objs = map[string]client.Object{}
		w[rev.kind] = objs
	}
	prev = objs[rev.key]
	if rev.obj == nil {
		delete(objs, rev.key)
	} else {
		objs[rev.key] = rev.obj
	}
	return prev
}

// report is what the replay found: violations, and how many revisions each
// invariant was checked at (a check that never ran proves nothing), or could
// not be decided at (the state it needs fell in a blind window).
type report struct {
	violations []string
	checked    map[string]int
	undecided  map[string]int
	// Side effects counted for the duplicate checks.
	hookJobs       map[hookRound][]types.UID
	masterMachines map[string][]types.UID // created during the run, by name
	surgeSets      map[string][]types.UID
	// temporaryNodes are the Nodes of the temporary MachineSets' Machines.
	temporaryNodes  map[string]bool
	desiredVersions []string // each change of ClusterVersion's spec.desiredUpdate
	revisions, gaps int
}

// decided counts a check whose state looks violated at rv: undecided when
// one of the kinds it reads was in a blind window there (the replay's view
// of it may be behind the cluster's), else checked, and then it is a
// violation.
func (rep *report) decided(rec recording, rv int64, inv string, kinds ...string) bool {
	if rec.blindAt(rv, kinds...) != nil {
		rep.undecided[inv]++
		return false
	}
	rep.checked[inv]++
	return true
}

func (rep *report) violate(rv int64, format string, args ...any) {
	if len(rep.violations) < 50 {
		rep.violations = append(rep.violations, fmt.Sprintf("at resourceVersion %d: ", rv)+fmt.Sprintf(format, args...))
	}
}

// replay checks every invariant at every revision, from the state before
// the run (the revisions up to start) on.
func replay(rec recording, start int64) *report {
	rep := &report{checked: map[string]int{}, undecided: map[string]int{}, hookJobs: map[hookRound][]types.UID{}, masterMachines: map[string][]types.UID{},
		surgeSets: map[string][]types.UID{}, temporaryNodes: map[string]bool{}, revisions: len(rec.revs), gaps: rec.gaps}
	w := world{}
	lastDesired, workerTarget := "", ""
	for _, rev := range rec.revs {
		prev := w.apply(rev)
		if rev.rv >= 0 && rev.rv <= start {
			// The cluster as it was before the run.
			if cv, ok := rev.obj.(*configv1.ClusterVersion); ok {
				lastDesired = desiredOf(cv)
			}
			if p, ok := rev.obj.(*mcfgv1.MachineConfigPool); ok && p.Name == "worker" {
				workerTarget = p.Spec.Configuration.Name
			}
			continue
		}
		rep.checkWriters(rev)
		for _, c := range newlyDone(prev, rev.obj) {
			const inv = "workers done only when done"
			if why := workersNotDone(w, workerTarget, c); why == "" {
				rep.checked[inv]++
			} else if rep.decided(rec, rev.rv, inv, "Node", "MachineConfigPool") {
				rep.violate(rev.rv, "%s says the workers are done, but %s", c.who, why)
			}
		}
		switch rev.kind {
		case "Node", "Machine":
			if n := etcdMembers(w); n >= 2 {
				rep.checked["etcd quorum"]++
			} else if rep.decided(rec, rev.rv, "etcd quorum", "Node", "Machine") {
				rep.violate(rev.rv, "%d etcd members, fewer than quorum (2 of 3), after %s %s changed", n, rev.kind, rev.key)
			}
		}
		switch rev.kind {
		case "Node":
			if names := unavailableWorkers(w); len(names) <= maxUnavailable {
				rep.checked["workers unavailable"]++
			} else if rep.decided(rec, rev.rv, "workers unavailable", "Node") {
				rep.violate(rev.rv, "%d workers unavailable, more than %d: %s", len(names), maxUnavailable, strings.Join(names, ", "))
			}
			if rev.obj != nil && prev != nil && held(prev) && !held(rev.obj) {
				if round := currentRound(w); hookCompleted(w, rev.obj.GetName(), round) {
					rep.checked["released after its hook"]++
				} else if rep.decided(rec, rev.rv, "released after its hook", "MutexRunConfig", "Job") {
					rep.violate(rev.rv, "node %s released with no completed hook Job of round %q (run as of this revision: %s; its record of the node: %s; the node's hook Jobs: %s; the node's writers: %s)",
						rev.obj.GetName(), round, runState(w), nodeRecord(w, rev.obj.GetName()), hookJobsOf(w, rev.obj.GetName()), writersOf(rev.obj))
				}
			}
		case "Job":
			if rev.obj != nil && prev == nil {
				node, round := hookOf(rev.obj.(*batchv1.Job))
				k := hookRound{node: node, round: round}
				rep.hookJobs[k] = append(rep.hookJobs[k], rev.obj.GetUID())
			}
		case "Machine":
			m, _ := rev.obj.(*machinev1beta1.Machine)
			if m != nil && strings.HasSuffix(m.Labels[machineapi.MachineSetLabel], surgeSuffix) && m.Status.NodeRef != nil {
				rep.temporaryNodes[m.Status.NodeRef.Name] = true
			}
			if m == nil || m.Labels[machineapi.RoleLabel] != "master" {
				break
			}
			if prev == nil {
				// A name created again (CPMS names are deterministic) is
				// a second creation, not the same Machine.
				rep.masterMachines[m.Name] = append(rep.masterMachines[m.Name], m.UID)
			}
			// A replacement starts with the new machine's creation or the
			// old one's deletion, whichever the controller does first.
			if prev == nil || (m.DeletionTimestamp != nil && prev.GetDeletionTimestamp() == nil) {
				const inv = "no control-plane replacement during the cluster update"
				if why := clusterUpdating(w); why == "" {
					rep.checked[inv]++
				} else if rep.decided(rec, rev.rv, inv, "ClusterVersion", "Node") {
					rep.violate(rev.rv, "control-plane machine %s %s while %s", m.Name,
						map[bool]string{true: "created", false: "deleted"}[prev == nil], why)
				}
			}
		case "MachineSet":
			if rev.obj != nil && prev == nil && strings.HasSuffix(rev.obj.GetName(), surgeSuffix) {
				rep.surgeSets[rev.obj.GetName()] = append(rep.surgeSets[rev.obj.GetName()], rev.obj.GetUID())
			}
		case "ClusterVersion":
			if cv, _ := rev.obj.(*configv1.ClusterVersion); cv != nil {
				if d := desiredOf(cv); d != lastDesired {
					rep.desiredVersions = append(rep.desiredVersions, d)
					lastDesired = d
				}
			}
		case "UpgradeStatus":
			if us, _ := rev.obj.(*updatev1alpha1.UpgradeStatus); us != nil {
				rep.checked["update-status never Stalled"]++
				if s := stalled(us); s != "" {
					rep.violate(rev.rv, "the update-status report says %s", s)
				}
				rep.checked["no gate pool reported as a pool"]++
				for _, p := range us.Status.WorkerPools {
					if strings.HasSuffix(p.Name, plan.GatePoolSuffix) {
						rep.violate(rev.rv, "the update-status report lists gate pool %s as a worker pool", p.Name)
					}
				}
			}
		case "UpgradeConfig":
			if uc, _ := rev.obj.(*upgradev1alpha1.UpgradeConfig); uc != nil {
				rep.checked["no gate pool reported as a pool"]++
				for _, p := range uc.Status.Pools {
					if strings.HasSuffix(p.Name, plan.GatePoolSuffix) {
						rep.violate(rev.rv, "the UpgradeConfig's status.pools lists gate pool %s", p.Name)
					}
				}
			}
		}
	}
	return rep
}

// claim is a component's word, in one object, that the workers are done:
// settled on their pool's target, or (ofTheUpdate) done with this update.
type claim struct {
	who         string
	ofTheUpdate bool
}

// newlyDone is what, in this revision of an object, newly says the workers
// are done: the scheduler's worker step and the mcp-tracker's worker time
// in the update's history entry (this update's), the mcp-tracker's
// WorkersUpgraded condition and worker pool, and the update-status
// report's worker pool (the pools settled).
func newlyDone(prev, cur client.Object) []claim {
	var out []claim
	before, after := doneClaims(prev), doneClaims(cur)
	for _, c := range after {
		if !slices.Contains(before, c) {
			out = append(out, c)
		}
	}
	return out
}

func doneClaims(o client.Object) []claim {
	var out []claim
	switch o := o.(type) {
	case *upgradev1alpha1.UpgradeConfig:
		if h := o.Status.History; len(h) > 0 {
			for _, c := range h[0].Conditions {
				if c.Type == "WorkerNodesUpgraded" && c.Status == corev1.ConditionTrue {
					out = append(out, claim{"the scheduler's WorkerNodesUpgraded step", true})
				}
			}
			if h[0].WorkerCompleteTime != nil {
				out = append(out, claim{"the mcp-tracker's workerCompleteTime", true})
			}
		}
		if meta.IsStatusConditionTrue(o.Status.Conditions, "WorkersUpgraded") {
			out = append(out, claim{"the mcp-tracker's WorkersUpgraded condition", false})
		}
		for _, p := range o.Status.Pools {
			if p.Name == "worker" && p.CompleteTime != nil {
				out = append(out, claim{"the mcp-tracker's worker pool", false})
			}
		}
	case *updatev1alpha1.UpgradeStatus:
		for _, p := range o.Status.WorkerPools {
			if p.Name == "worker" && p.Pool.Assessment == updatev1alpha1.PoolCompleted {
				out = append(out, claim{"the update-status report's worker pool", false})
			}
		}
	}
	return out
}

// workersNotDone says why the workers are not done as of this revision: a
// worker is not at the worker pool's target (not told to, still moving, or
// held by node-gate, wherever its pool), or, for a claim of the update, the
// pool has not been given a target other than before (its rendered
// configuration before the run). Nodes say it, not the pool's status, which
// follows them.
func workersNotDone(w world, before string, c claim) string {
	o := w["MachineConfigPool"][keyOf(&mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}})]
	pool, _ := o.(*mcfgv1.MachineConfigPool)
	if pool == nil {
		return "there is no worker pool"
	}
	want := pool.Spec.Configuration.Name
	if c.ofTheUpdate && want == before {
		return "the worker pool still targets " + before
	}
	var not []string
	for _, o := range w["Node"] {
		node := o.(*corev1.Node)
		if _, master := node.Labels["node-role.kubernetes.io/master"]; master {
			continue
		}
		if held(node) || node.Annotations[mcostate.CurrentConfig] != want || !mcostate.Done(node.Annotations) {
			not = append(not, node.Name)
		}
	}
	if len(not) > 0 {
		sort.Strings(not)
		return fmt.Sprintf("%d workers are not at %s: %s", len(not), want, strings.Join(not, ", "))
	}
	return ""
}

// surgeSuffix ends the name of each temporary MachineSet the scheduler
// creates for capacity reservation.
const surgeSuffix = schedplan.SurgeSuffix

// hookRound names a node's hooks in one round: the key of report.hookJobs.
type hookRound struct{ node, round string }

func (k hookRound) String() string { return k.node + " in round " + k.round }

// hooked says whether a hook Job ran for node, in any round.
func (rep *report) hooked(node string) bool {
	for k := range rep.hookJobs {
		if k.node == node {
			return true
		}
	}
	return false
}

// clusterUpdating says why a control-plane replacement must wait, as of
// this revision: ClusterVersion is Progressing or its latest update is not
// Completed, or a master is being updated by the machine-config operator.
func clusterUpdating(w world) string {
	for _, o := range w["ClusterVersion"] {
		cv := o.(*configv1.ClusterVersion)
		for _, c := range cv.Status.Conditions {
			if c.Type == configv1.OperatorProgressing && c.Status == configv1.ConditionTrue {
				return "ClusterVersion is Progressing"
			}
		}
		if h := cv.Status.History; len(h) > 0 && h[0].State != configv1.CompletedUpdate {
			return "ClusterVersion's update to " + h[0].Version + " is not Completed"
		}
	}
	for _, o := range w["Node"] {
		n := o.(*corev1.Node)
		if _, master := n.Labels["node-role.kubernetes.io/master"]; master && mcostate.Moving(n.Annotations) {
			return "the machine-config operator updates master " + n.Name
		}
	}
	return ""
}

// desiredOf is ClusterVersion's requested update as version@image.
func desiredOf(cv *configv1.ClusterVersion) string {
	if u := cv.Spec.DesiredUpdate; u != nil {
		return u.Version + "@" + u.Image
	}
	return ""
}

// etcdMembers counts the control-plane members that vote: a master Node
// that is Ready, unless its Machine is being deleted and the etcd operator
// released its hook (the member was removed).
func etcdMembers(w world) int {
	removed := map[string]bool{}
	for _, o := range w["Machine"] {
		m := o.(*machinev1beta1.Machine)
		if m.DeletionTimestamp == nil || m.Status.NodeRef == nil {
			continue
		}
		held := false
		for _, h := range m.Spec.LifecycleHooks.PreDrain {
			held = held || h.Name == etcd.HookName
		}
		if !held {
			removed[m.Status.NodeRef.Name] = true
		}
	}
	n := 0
	for _, o := range w["Node"] {
		node := o.(*corev1.Node)
		if _, master := node.Labels["node-role.kubernetes.io/master"]; master && nodes.Ready(node) && !removed[node.Name] {
			n++
		}
	}
	return n
}

// unavailableWorkers are the workers the machine-config operator is
// updating (told to move to a config and not done with it), sorted.
func unavailableWorkers(w world) []string {
	var out []string
	for _, o := range w["Node"] {
		node := o.(*corev1.Node)
		if _, master := node.Labels["node-role.kubernetes.io/master"]; master {
			continue
		}
		if node.Annotations[mcostate.DesiredConfig] != "" && !mcostate.Done(node.Annotations) {
			out = append(out, node.Name)
		}
	}
	sort.Strings(out)
	return out
}

// held: node-gate holds the node in its gate pool; removing the label
// releases it.
func held(o client.Object) bool {
	_, ok := o.GetLabels()[plan.HoldLabel]
	return ok
}

// hookOf is the node and round a hook Job ran for, from the environment
// node-gate gives every hook container.
func hookOf(j *batchv1.Job) (node, round string) {
	for _, c := range j.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			switch e.Name {
			case plan.EnvNodeName:
				node = e.Value
			case plan.EnvRunID:
				round = e.Value
			}
		}
	}
	return node, round
}

// runOf is the node-gate run as of this revision (the suite has one); nil
// before it exists.
func runOf(w world) *nodegatev1alpha1.MutexRunConfig {
	for _, o := range w["MutexRunConfig"] {
		return o.(*nodegatev1alpha1.MutexRunConfig)
	}
	return nil
}

// currentRound is the node-gate run's round (its status.runID) as of this
// revision; node-gate records it before it creates the round's Jobs or
// labels.
func currentRound(w world) string {
	if r := runOf(w); r != nil {
		return r.Status.RunID
	}
	return ""
}

// runState is the node-gate run as of this revision, for a violation's
// message.
func runState(w world) string {
	r := runOf(w)
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("resourceVersion %s, round %q, phase %q, %d node records", r.ResourceVersion, r.Status.RunID, r.Status.Phase, len(r.Status.Nodes))
}

// nodeRecord is the run's record of node as of this revision (a node the
// MCO moved before the run held it is Skipped, with the reason), for a
// violation's message.
func nodeRecord(w world, node string) string {
	if r := runOf(w); r != nil {
		for _, n := range r.Status.Nodes {
			if n.Name == node {
				return fmt.Sprintf("phase %q, last error %q", n.Phase, n.LastError)
			}
		}
	}
	return "none"
}

// hookJobsFor are node's hook Jobs as of this revision, by the round each
// ran for.
func hookJobsFor(w world, node string) map[*batchv1.Job]string {
	out := map[*batchv1.Job]string{}
	for _, o := range w["Job"] {
		j := o.(*batchv1.Job)
		if n, r := hookOf(j); n == node {
			out[j] = r
		}
	}
	return out
}

// hookJobsOf lists node's hook Jobs as of this revision, for a violation's
// message.
func hookJobsOf(w world, node string) string {
	var out []string
	for j, r := range hookJobsFor(w, node) {
		out = append(out, fmt.Sprintf("%s (round %q, resourceVersion %s, succeeded %d)", j.Name, r, j.ResourceVersion, j.Status.Succeeded))
	}
	if len(out) == 0 {
		return "none"
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// writersOf lists the field managers of o with their last write, for a
// violation's message.
func writersOf(o client.Object) string {
	var out []string
	for _, m := range o.GetManagedFields() {
		at := ""
		if m.Time != nil {
			at = m.Time.UTC().Format(time.RFC3339)
		}
		out = append(out, fmt.Sprintf("%s %s %s %s", m.Manager, m.Operation, m.Subresource, at))
	}
	return strings.Join(out, ", ")
}

// hookCompleted: a hook Job for node and round has completed, as of this
// revision.
func hookCompleted(w world, node, round string) bool {
	for j, r := range hookJobsFor(w, node) {
		if r != round {
			continue
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true
			}
		}
	}
	return false
}

// stalled is what in the report says the update is stalled: an insight
// with impact "Update Stalled", or the control plane assessed Stalled.
func stalled(us *updatev1alpha1.UpgradeStatus) string {
	b, _ := json.Marshal(us.Status)
	s := string(b)
	switch {
	case strings.Contains(s, `"`+string(updatev1alpha1.UpdateStalledImpactType)+`"`):
		return `"Update Stalled": ` + snippet(s, string(updatev1alpha1.UpdateStalledImpactType))
	case us.Status.ControlPlane != nil && us.Status.ControlPlane.ClusterVersion != nil &&
		us.Status.ControlPlane.ClusterVersion.Assessment == updatev1alpha1.ControlPlaneAssessmentStalled:
		return "the control plane is Stalled"
	}
	return ""
}

func snippet(s, at string) string {
	i := strings.Index(s, at)
	lo, hi := max(0, i-200), min(len(s), i+200)
	return s[lo:hi]
}
