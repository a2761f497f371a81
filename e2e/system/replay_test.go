package system

import (
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/services/nodegate/plan"
	"github.com/upshift-io/upshift/tools/ocpsim/etcd"
	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
)

// The replay's checks must be able to fail: each case below is a history
// that breaks one invariant (or, for contrast, keeps it), replayed without
// a cluster.

func node(name string, master, ready bool, desired, current, state string, labels map[string]string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{
		mcostate.DesiredConfig: desired, mcostate.CurrentConfig: current, mcostate.State: state}}}
	if master {
		n.Labels["node-role.kubernetes.io/master"] = ""
	}
	for k, v := range labels {
		n.Labels[k] = v
	}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
	return n
}

func hookJob(name, nodeName string, complete bool) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(name)}}
	j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "hook", Env: []corev1.EnvVar{
		{Name: plan.EnvNodeName, Value: nodeName}, {Name: plan.EnvRunID, Value: "round-1"}}}}
	if complete {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	}
	return j
}

func runInRound(round string) *nodegatev1alpha1.MutexRunConfig {
	r := &nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Name: "workers", Namespace: namespace}}
	r.Status.RunID = round
	return r
}

func rev(kind string, rv int64, o client.Object) revision {
	return revision{kind: kind, key: keyOf(o), rv: rv, obj: o}
}

func masters() []revision {
	var out []revision
	for i, name := range []string{"m0", "m1", "m2"} {
		out = append(out, rev("Node", int64(i+1), node(name, true, true, "c1", "c1", "Done", nil)))
	}
	return out
}

func TestReplayWorkersUnavailable(t *testing.T) {
	revs := masters()
	for i := range maxUnavailable + 1 {
		name := "w" + string(rune('a'+i))
		revs = append(revs, rev("Node", int64(10+i), node(name, false, true, "c1", "c1", "Done", nil)))
	}
	// Updating maxUnavailable workers is within the limit; one more is not.
	for i := range maxUnavailable {
		name := "w" + string(rune('a'+i))
		revs = append(revs, rev("Node", int64(100+i), node(name, false, true, "c2", "c1", "Working", nil)))
	}
	if rep := replay(recording{revs: revs}, 50); len(rep.violations) != 0 {
		t.Fatalf("within the limit, got %v", rep.violations)
	}
	name := "w" + string(rune('a'+maxUnavailable))
	revs = append(revs, rev("Node", 200, node(name, false, true, "c2", "c1", "Working", nil)))
	rep := replay(recording{revs: revs}, 50)
	if len(rep.violations) != 1 || !strings.Contains(rep.violations[0], "workers unavailable") {
		t.Fatalf("one over the limit, got %v", rep.violations)
	}
}

func TestReplayReleasedAfterItsHook(t *testing.T) {
	// Released: the hold label the node carried (revision 10) is gone.
	released := map[string]string{}
	for _, tc := range []struct {
		name      string
		revs      []revision
		violation bool
	}{
		{"hook completed before the release", []revision{
			rev("Job", 60, hookJob("j", "w1", true)),
			rev("Node", 61, node("w1", false, true, "c1", "c1", "Done", released)),
		}, false},
		{"no hook at all", []revision{
			rev("Node", 61, node("w1", false, true, "c1", "c1", "Done", released)),
		}, true},
		{"hook still running", []revision{
			rev("Job", 60, hookJob("j", "w1", false)),
			rev("Node", 61, node("w1", false, true, "c1", "c1", "Done", released)),
		}, true},
		{"hook completed only after the release", []revision{
			rev("Node", 61, node("w1", false, true, "c1", "c1", "Done", released)),
			rev("Job", 62, hookJob("j", "w1", true)),
		}, true},
		{"a hook of another round", []revision{
			rev("MutexRunConfig", 59, runInRound("round-2")),
			rev("Job", 60, hookJob("j", "w1", true)),
			rev("Node", 61, node("w1", false, true, "c1", "c1", "Done", released)),
		}, true},
		{"another node's hook", []revision{
			rev("Job", 60, hookJob("j", "w2", true)),
			rev("Node", 61, node("w1", false, true, "c1", "c1", "Done", released)),
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			revs := append(masters(), rev("Node", 10, node("w1", false, true, "c1", "c1", "Done", map[string]string{plan.HoldLabel: "worker"})),
				rev("MutexRunConfig", 11, runInRound("round-1")))
			// Out of order on purpose: the replay orders by revision.
			for i := len(tc.revs) - 1; i >= 0; i-- {
				revs = append(revs, tc.revs[i])
			}
			rec := &recorder{revs: revs}
			rep := replay(rec.ordered(), 50)
			if got := len(rep.violations) > 0; got != tc.violation {
				t.Fatalf("violation %t, want %t: %v", got, tc.violation, rep.violations)
			}
		})
	}
}

// A release whose run or hook Job may be in revisions the recorder missed
// (a relist after an expired watch) is undecided; once the window closes,
// the check applies again.
func TestReplayBlindWindow(t *testing.T) {
	revs := append(masters(),
		rev("Node", 10, node("w1", false, true, "c1", "c1", "Done", map[string]string{plan.HoldLabel: "worker"})),
		rev("Node", 11, node("w2", false, true, "c1", "c1", "Done", map[string]string{plan.HoldLabel: "worker"})),
		// The run as the relist brought it, at its last revision.
		rev("MutexRunConfig", 70, runInRound("round-1")),
		rev("Job", 71, hookJob("j1", "w1", true)),
		rev("Job", 72, hookJob("j2", "w2", true)),
		// Released inside the window, before the run's recorded revision.
		rev("Node", 65, node("w1", false, true, "c1", "c1", "Done", nil)),
		// Released after it, with its hook done.
		rev("Node", 80, node("w2", false, true, "c1", "c1", "Done", nil)))
	rec := &recorder{revs: revs, blinds: []blind{{kind: "MutexRunConfig", from: 60, to: 70}}}
	rep := replay(rec.ordered(), 50)
	if len(rep.violations) != 0 || rep.undecided["released after its hook"] != 1 || rep.checked["released after its hook"] != 1 {
		t.Fatalf("violations %v, undecided %v, checked %v", rep.violations, rep.undecided, rep.checked)
	}
	// Without the window, the first release is a violation.
	rep = replay(recording{revs: rec.ordered().revs}, 50)
	if len(rep.violations) != 1 || !strings.Contains(rep.violations[0], "node w1 released") {
		t.Fatalf("want w1's release reported, got %v", rep.violations)
	}
}

func TestReplayEtcdQuorum(t *testing.T) {
	machine := func(name, nodeName string, deleting, hook bool) *machinev1beta1.Machine {
		m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cpmsNamespace}}
		m.Status.NodeRef = &corev1.ObjectReference{Name: nodeName}
		if deleting {
			m.DeletionTimestamp = &metav1.Time{}
		}
		if hook {
			m.Spec.LifecycleHooks.PreDrain = []machinev1beta1.LifecycleHook{{Name: etcd.HookName, Owner: etcd.HookOwner}}
		}
		return m
	}
	revs := append(masters(),
		rev("Machine", 4, machine("mm0", "m0", false, true)),
		// One master rebooting: two of three vote.
		rev("Node", 60, node("m1", true, false, "c2", "c1", "Rebooting", nil)),
		// A deletion still held by the etcd hook keeps its member.
		rev("Machine", 61, machine("mm0", "m0", true, true)))
	if rep := replay(recording{revs: revs}, 50); len(rep.violations) != 0 {
		t.Fatalf("two members, got %v", rep.violations)
	}
	// The hook released while another master reboots: one member left.
	revs = append(revs, rev("Machine", 62, machine("mm0", "m0", true, false)))
	rep := replay(recording{revs: revs}, 50)
	if len(rep.violations) != 1 || !strings.Contains(rep.violations[0], "1 etcd members") {
		t.Fatalf("want a quorum violation, got %v", rep.violations)
	}
	// The rebooting master last seen before a relist of the Nodes: its
	// return may be in revisions the recorder missed.
	rep = replay(recording{revs: revs, blinds: []blind{{kind: "Node", from: 60, to: 70}}}, 50)
	if len(rep.violations) != 0 || rep.undecided["etcd quorum"] != 1 {
		t.Fatalf("quorum in a blind window: violations %v, undecided %v", rep.violations, rep.undecided)
	}
}

func TestReplayStalledAndDuplicates(t *testing.T) {
	us := &updatev1alpha1.UpgradeStatus{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	us.Status.Health = []updatev1alpha1.HealthInsight{{Impact: updatev1alpha1.InsightImpact{Type: updatev1alpha1.UpdateStalledImpactType}}}
	revs := append(masters(),
		rev("UpgradeStatus", 60, us),
		rev("Job", 61, hookJob("first", "w1", true)),
		rev("Job", 62, hookJob("second", "w1", true)))
	rep := replay(recording{revs: revs}, 50)
	if len(rep.violations) != 1 || !strings.Contains(rep.violations[0], "Update Stalled") {
		t.Fatalf("want the Stalled report, got %v", rep.violations)
	}
	if got := rep.hookJobs[hookRound{node: "w1", round: "round-1"}]; len(got) != 2 {
		t.Fatalf("want both hook Jobs of w1 counted, got %v", rep.hookJobs)
	}
}

// A control-plane Machine deleted and created again under its name (the
// CPMS's names are deterministic) is two creations to the duplicate check.
func TestReplayCountsAMachineCreatedAgain(t *testing.T) {
	m := func(uid types.UID) *machinev1beta1.Machine {
		return &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "cp-0", Namespace: cpmsNamespace, UID: uid,
			Labels: map[string]string{machineapi.RoleLabel: "master"}}}
	}
	first := rev("Machine", 60, m("a"))
	revs := append(masters(), first, revision{kind: "Machine", key: first.key, rv: 61}, rev("Machine", 62, m("b")))
	if got := replay(recording{revs: revs}, 50).masterMachines["cp-0"]; len(got) != 2 {
		t.Fatalf("want both creations of cp-0 counted, got %v", got)
	}
}

func TestReplayControlPlaneWaitsForTheUpdate(t *testing.T) {
	cv := func(state configv1.UpdateState) *configv1.ClusterVersion {
		v := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}}
		v.Status.History = []configv1.UpdateHistory{{Version: to, State: state}}
		return v
	}
	master := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "new-master", Namespace: cpmsNamespace,
		Labels: map[string]string{machineapi.RoleLabel: "master"}}}
	during := append(masters(), rev("ClusterVersion", 5, cv(configv1.PartialUpdate)), rev("Machine", 60, master))
	rep := replay(recording{revs: during}, 50)
	if len(rep.violations) != 1 || !strings.Contains(rep.violations[0], "not Completed") {
		t.Fatalf("a replacement during the update, got %v", rep.violations)
	}
	after := append(masters(), rev("ClusterVersion", 5, cv(configv1.PartialUpdate)),
		rev("ClusterVersion", 59, cv(configv1.CompletedUpdate)), rev("Machine", 60, master))
	if rep := replay(recording{revs: after}, 50); len(rep.violations) != 0 {
		t.Fatalf("a replacement after the update, got %v", rep.violations)
	}
	// A master the recorder last saw moving, its Done missed in a blind
	// window after a relist: the replacement is undecided, not a violation.
	moving := append(masters(), rev("Node", 40, node("m2", true, true, "c2", "c1", "Working", nil)), rev("Machine", 60, master))
	rep = replay(recording{revs: moving, blinds: []blind{{kind: "Node", from: 50, to: 70}}}, 30)
	if len(rep.violations) != 0 || rep.undecided["no control-plane replacement during the cluster update"] != 1 {
		t.Fatalf("a replacement in a blind window: violations %v, undecided %v", rep.violations, rep.undecided)
	}
	// Seen moving with no blind window, it is a violation.
	rep = replay(recording{revs: moving}, 30)
	if len(rep.violations) != 1 || !strings.Contains(rep.violations[0], "updates master m2") {
		t.Fatalf("a replacement while a master updates, got %v", rep.violations)
	}
}

func TestReplayGatePoolNeverAPool(t *testing.T) {
	uc := &upgradev1alpha1.UpgradeConfig{ObjectMeta: metav1.ObjectMeta{Name: "managed-upgrade-config", Namespace: namespace}}
	uc.Status.Pools = []upgradev1alpha1.PoolUpdate{{Name: "worker"}, {Name: "worker" + plan.GatePoolSuffix}}
	rep := replay(recording{revs: append(masters(), rev("UpgradeConfig", 60, uc))}, 50)
	if len(rep.violations) != 1 || !strings.Contains(rep.violations[0], "worker-gate") {
		t.Fatalf("want the gate pool reported, got %v", rep.violations)
	}
}

// Each component owns only its row of the platform's fields: node-gate its
// label and a pool's pause, the scheduler ClusterVersion's request; any
// other path a component owns, or any status field, is a second writer. A
// gate pool is node-gate's own, and the platform's managers are not checked.
func TestReplayOneWriterPerField(t *testing.T) {
	owns := func(o client.Object, manager, subresource, fields string) client.Object {
		o.SetManagedFields(append(o.GetManagedFields(), metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields), Subresource: subresource}))
		return o
	}
	pool := func(name string, labels map[string]string) *mcfgv1.MachineConfigPool {
		return &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	const (
		holdLabel = `{"f:metadata":{"f:labels":{"f:nodegate.upshift.io/held-from":{}}}}`
		roleLabel = `{"f:metadata":{"f:labels":{"f:node-role.kubernetes.io/infra":{}}}}`
		paused    = `{"f:spec":{"f:paused":{}}}`
		desired   = `{"f:spec":{"f:desiredUpdate":{".":{},"f:version":{},"f:image":{}}}}`
	)
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}}
	for _, tc := range []struct {
		name string
		rev  revision
		want string
	}{
		{"node-gate's hold label", rev("Node", 60, owns(node("w1", false, true, "c1", "c1", "Done", nil), "node-gate", "", holdLabel)), ""},
		{"a role label by node-gate", rev("Node", 60, owns(node("w1", false, true, "c1", "c1", "Done", nil), "node-gate", "", roleLabel)),
			"node-gate owns .metadata.labels.node-role.kubernetes.io/infra of Node w1"},
		{"the hold label by the scheduler", rev("Node", 60, owns(node("w1", false, true, "c1", "c1", "Done", nil), "upgrade-scheduler", "", holdLabel)),
			"upgrade-scheduler owns .metadata.labels.nodegate.upshift.io/held-from"},
		{"a node's status by the tracker", rev("Node", 60, owns(node("w1", false, true, "c1", "c1", "Done", nil), "mcp-tracker", "status", `{"f:status":{"f:phase":{}}}`)),
			"mcp-tracker owns .status.phase"},
		{"the platform's own managers", rev("Node", 60, owns(node("w1", false, true, "c1", "c1", "Done", nil), "machine-config-daemon", "", roleLabel)), ""},
		{"a pool paused by node-gate", rev("MachineConfigPool", 60, owns(pool("worker", nil), "node-gate", "", paused)), ""},
		{"a pool paused by the scheduler", rev("MachineConfigPool", 60, owns(pool("worker", nil), "upgrade-scheduler", "", paused)),
			"upgrade-scheduler owns .spec.paused of MachineConfigPool worker"},
		{"a gate pool, node-gate's own", rev("MachineConfigPool", 60, owns(pool("worker-gate", map[string]string{plan.GatePoolLabel: "worker"}),
			"node-gate", "", `{"f:spec":{"f:machineConfigSelector":{}}}`)), ""},
		{"the update requested by the scheduler", rev("ClusterVersion", 60, owns(cv.DeepCopy(), "upgrade-scheduler", "", desired)), ""},
		{"the update requested by the cpms-controller", rev("ClusterVersion", 60, owns(cv.DeepCopy(), "cpms-controller", "", desired)),
			"cpms-controller owns .spec.desiredUpdate"},
		{"UpgradeConfig pools by the scheduler", rev("UpgradeConfig", 60, owns(&upgradev1alpha1.UpgradeConfig{ObjectMeta: metav1.ObjectMeta{Name: "uc", Namespace: namespace}},
			"upgrade-scheduler", "status", `{"f:status":{"f:pools":{}}}`)), "upgrade-scheduler owns .status.pools, which is mcp-tracker's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := replay(recording{revs: append(masters(), tc.rev)}, 50)
			if rep.checked["one writer per field"] == 0 {
				t.Fatal("never checked")
			}
			switch {
			case tc.want == "" && len(rep.violations) != 0:
				t.Fatalf("want no violation, got %v", rep.violations)
			case tc.want != "" && !strings.Contains(strings.Join(rep.violations, "\n"), tc.want):
				t.Fatalf("want a violation with %q, got %v", tc.want, rep.violations)
			}
		})
	}
}

// A component may say the workers are done only at a revision where every
// worker is at the worker pool's new target and none is held; what it said
// before the run is not a new claim.
func TestReplayWorkersDoneOnlyWhenDone(t *testing.T) {
	workerPool := func(target string) *mcfgv1.MachineConfigPool {
		p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}
		p.Spec.Configuration.Name = target
		return p
	}
	doneStep := func() *upgradev1alpha1.UpgradeConfig {
		uc := &upgradev1alpha1.UpgradeConfig{ObjectMeta: metav1.ObjectMeta{Name: "uc", Namespace: namespace}}
		uc.Status.History = []upgradev1alpha1.UpgradeHistory{{Version: to, Conditions: []upgradev1alpha1.UpgradeCondition{
			{Type: "WorkerNodesUpgraded", Status: corev1.ConditionTrue}}}}
		return uc
	}
	completed := &updatev1alpha1.UpgradeStatus{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	completed.Status.WorkerPools = []updatev1alpha1.Pool{{Name: "worker"}}
	completed.Status.WorkerPools[0].Pool.Assessment = updatev1alpha1.PoolCompleted
	before := append(masters(), rev("MachineConfigPool", 10, workerPool("c1")),
		rev("Node", 11, node("w1", false, true, "c1", "c1", "Done", nil)),
		rev("Node", 12, node("w2", false, true, "c1", "c1", "Done", nil)))
	retarget := rev("MachineConfigPool", 60, workerPool("c2"))
	w1 := rev("Node", 61, node("w1", false, true, "c2", "c2", "Done", nil))
	w2held := rev("Node", 62, node("w2", false, true, "c1", "c1", "Done", map[string]string{plan.HoldLabel: "worker"}))
	w2 := rev("Node", 63, node("w2", false, true, "c2", "c2", "Done", nil))
	for _, tc := range []struct {
		name string
		revs []revision
		want string
	}{
		{"the scheduler's step before the pool has its target", []revision{rev("UpgradeConfig", 60, doneStep())},
			"the scheduler's WorkerNodesUpgraded step says the workers are done, but the worker pool still targets c1"},
		{"the report says Completed while a worker is not at the target", []revision{retarget, w1, rev("UpgradeStatus", 64, completed)},
			"the update-status report's worker pool says the workers are done, but 1 workers are not at c2: w2"},
		{"the scheduler's step while a worker is held", []revision{retarget, w1, w2held, rev("UpgradeConfig", 64, doneStep())},
			"the scheduler's WorkerNodesUpgraded step says the workers are done, but 1 workers are not at c2: w2"},
		{"every claim once every worker is at the target", []revision{retarget, w1, w2, rev("UpgradeConfig", 64, doneStep()), rev("UpgradeStatus", 65, completed)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := replay(recording{revs: append(append([]revision{}, before...), tc.revs...)}, 50)
			switch {
			case tc.want == "" && (len(rep.violations) != 0 || rep.checked["workers done only when done"] != 2):
				t.Fatalf("want two claims checked and no violation, got %v, %v", rep.violations, rep.checked)
			case tc.want != "" && (len(rep.violations) != 1 || !strings.Contains(rep.violations[0], tc.want)):
				t.Fatalf("want one violation with %q, got %v", tc.want, rep.violations)
			}
		})
	}
	// A claim the cluster already had before the run is not made anew; the
	// pools settled on their target before the update are settled.
	rep := replay(recording{revs: append(append([]revision{}, before...), rev("UpgradeStatus", 20, completed), retarget)}, 50)
	if len(rep.violations) != 0 {
		t.Fatalf("a claim from before the run: %v", rep.violations)
	}
	rep = replay(recording{revs: append(append([]revision{}, before...), rev("UpgradeStatus", 60, completed))}, 50)
	if len(rep.violations) != 0 || rep.checked["workers done only when done"] != 1 {
		t.Fatalf("settled before the update: %v, %v", rep.violations, rep.checked)
	}
}
