package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/upshift-io/upshift/libs/mcostate"
)

// rollCheck settles the world while checking, after every step, the rules a
// rolling update must keep: never more than replicas+1 machines, never two
// indexes with more than one machine, and every index keeps a machine.
func (w *world) rollCheck(maxSteps int) {
	w.t.Helper()
	for i := 0; i < maxSteps; i++ {
		before := w.fingerprint()
		out := w.plan()
		w.apply(out.Action)
		w.checkShape()
		w.mao()
		w.ceo()
		w.now = w.now.Add(time.Minute)
		if out.Action == nil && w.fingerprint() == before {
			return
		}
	}
	w.t.Fatalf("did not settle:\n%s", w.tail())
}

func (w *world) checkShape() {
	w.t.Helper()
	replicas := int(*w.cpms.Spec.Replicas)
	if len(w.machines) > replicas+1 {
		w.t.Fatalf("%d machines, more than replicas+1\n%s", len(w.machines), w.tail())
	}
	multi := 0
	for i := 0; i < 10; i++ {
		if len(w.inIndex(i)) > 1 {
			multi++
		}
	}
	if multi > 1 {
		w.t.Fatalf("%d indexes in flight\n%s", multi, w.tail())
	}
}

func (w *world) allNew(t *testing.T) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(w.machines)) {
		m := w.machines[name]
		if !strings.Contains(string(m.Spec.ProviderSpec.Value.Raw), "m6i.2xlarge") || m.DeletionTimestamp != nil {
			t.Fatalf("machine %s not replaced: %s\n%s", name, w.summary(), w.tail())
		}
	}
	if len(w.machines) != int(*w.cpms.Spec.Replicas) {
		t.Fatalf("%d machines after the rollout: %s", len(w.machines), w.summary())
	}
}

// The scenario catalogue: one row per scenario a control-plane machine set
// must get right.
func TestScenarios(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"activating a set that matches its machines adopts them and replaces nothing", func(t *testing.T) {
			w := newWorld(t, inactive)
			for _, m := range w.machines {
				m.OwnerReferences = nil
			}
			out := w.plan()
			if out.Action != nil {
				t.Fatalf("inactive set acted: %s", describe(out.Action))
			}
			w.expectCond(ConditionProgressing, metav1.ConditionFalse, ReasonInactive)
			if w.cpms.Status.UpdatedReplicas != 3 || w.cpms.Status.ReadyReplicas != 3 || w.cpms.Status.Replicas != 3 {
				t.Fatalf("status %+v", w.cpms.Status)
			}
			w.cpms.Spec.State = machinev1.ControlPlaneMachineSetStateActive
			out = w.plan()
			if out.Action == nil || out.Action.Kind != Adopt || len(out.Action.Adopt) != 3 {
				t.Fatalf("want adoption of 3 machines, got %s", describe(out.Action))
			}
			w.apply(out.Action)
			w.settle()
			if w.summary() != "c1-master-0:Running c1-master-1:Running c1-master-2:Running" {
				t.Fatalf("activation changed machines: %s", w.summary())
			}
			w.expectCond(ConditionProgressing, metav1.ConditionFalse, ReasonAllReplicasUpdated)
			w.expectCond(ConditionAvailable, metav1.ConditionTrue, ReasonAllReplicasAvailable)
			w.expectCond(ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected)
		}},
		{"a template change replaces indexes one at a time, in order, within one surge", func(t *testing.T) {
			w := newWorld(t)
			w.setInstanceType("m6i.2xlarge")
			out := w.plan()
			if out.Action == nil || out.Action.Kind != CreateMachine || !strings.HasSuffix(out.Action.Machine.Name, "-0") {
				t.Fatalf("first action %s", describe(out.Action))
			}
			if !strings.Contains(out.Action.Event.Note, `instanceType: "m6i.xlarge" -> "m6i.2xlarge"`) {
				t.Fatalf("the Event must carry the diff: %s", out.Action.Event.Note)
			}
			if !strings.HasPrefix(out.Action.Machine.Name, "c1-master-") || out.Action.Machine.OwnerReferences[0].UID != "cpms-uid" {
				t.Fatalf("machine %s owner %v", out.Action.Machine.Name, out.Action.Machine.OwnerReferences)
			}
			w.expectCond(ConditionProgressing, metav1.ConditionTrue, ReasonNeedsUpdateReplicas)
			// Order of replacement: the index whose old machine is deleted first.
			var deleted []string
			for i := 0; i < 200; i++ {
				before := w.fingerprint()
				out := w.plan()
				if out.Action != nil && out.Action.Kind == DeleteMachine {
					deleted = append(deleted, out.Action.Target.Name)
				}
				w.apply(out.Action)
				w.checkShape()
				w.mao()
				w.ceo()
				w.now = w.now.Add(time.Minute)
				if out.Action == nil && before == w.fingerprint() {
					break
				}
			}
			if strings.Join(deleted, ",") != "c1-master-0,c1-master-1,c1-master-2" {
				t.Fatalf("deleted %v, want index order", deleted)
			}
			w.allNew(t)
			w.expectCond(ConditionProgressing, metav1.ConditionFalse, ReasonAllReplicasUpdated)
			if w.cpms.Status.UpdatedReplicas != 3 || w.cpms.Status.ObservedGeneration != 2 {
				t.Fatalf("status %+v", w.cpms.Status)
			}
		}},
		{"a machine deleted without a spec change is replaced in its index and zone", func(t *testing.T) {
			w := newWorld(t)
			w.userDelete("c1-master-1")
			out := w.plan()
			if out.Action == nil || out.Action.Kind != CreateMachine || !strings.HasSuffix(out.Action.Machine.Name, "-1") {
				t.Fatalf("action %s", describe(out.Action))
			}
			if !strings.Contains(string(out.Action.Machine.Spec.ProviderSpec.Value.Raw), `"us-east-1b"`) {
				t.Fatalf("replacement not in index 1's zone: %s", out.Action.Machine.Spec.ProviderSpec.Value.Raw)
			}
			w.apply(out.Action)
			w.rollCheck(50)
			if len(w.machines) != 3 || w.machines["c1-master-1"] != nil {
				t.Fatalf("after: %s", w.summary())
			}
		}},
		{"on-delete waits for a person, replaces what was deleted, and all at once one by one", func(t *testing.T) {
			w := newWorld(t, onDelete)
			w.setInstanceType("m6i.2xlarge")
			w.settle()
			if len(w.machines) != 3 || w.cpms.Status.UpdatedReplicas != 0 {
				t.Fatalf("on-delete replaced without a deletion: %s", w.summary())
			}
			w.expectCond(ConditionProgressing, metav1.ConditionFalse, ReasonWaitingForUserDeletion)
			if c := w.cond(ConditionProgressing); !strings.Contains(c.Message, "delete machine c1-master-0") {
				t.Fatalf("message %q", c.Message)
			}
			w.userDelete("c1-master-2")
			w.rollCheck(50)
			if len(w.inIndex(2)) != 1 || w.machines["c1-master-2"] != nil || w.cpms.Status.UpdatedReplicas != 1 {
				t.Fatalf("index 2 not replaced: %s", w.summary())
			}
			w.expectCond(ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected)
			w.userDelete("c1-master-0")
			w.userDelete("c1-master-1")
			w.rollCheck(100)
			w.allNew(t)
			w.expectCond(ConditionProgressing, metav1.ConditionFalse, ReasonAllReplicasUpdated)
		}},
		{"non-standard indexes are kept, under both strategies", func(t *testing.T) {
			for _, layout := range [][]string{{"0a", "1b", "3c"}, {"2a", "3b", "4c"}, {"3a", "4b", "5c"}} {
				for _, strategy := range []machinev1.ControlPlaneMachineSetStrategyType{machinev1.RollingUpdate, machinev1.OnDelete} {
					t.Run(fmt.Sprint(layout, strategy), func(t *testing.T) {
						w := newWorld(t, machinesAt(layout...))
						w.cpms.Spec.Strategy.Type = strategy
						w.settle()
						if len(w.machines) != 3 {
							t.Fatalf("settled layout changed: %s", w.summary())
						}
						w.setInstanceType("m6i.2xlarge")
						if strategy == machinev1.OnDelete {
							for _, s := range layout {
								w.userDelete("c1-master-" + s[:1])
							}
						}
						w.rollCheck(150)
						w.allNew(t)
						for _, s := range layout {
							if got := w.inIndex(int(s[0] - '0')); len(got) != 1 {
								t.Fatalf("index %c: %v", s[0], got)
							}
						}
					})
				}
			}
		}},
		{"machines piled in one zone are spread over the declared zones", func(t *testing.T) {
			w := newWorld(t, machinesAt("0a", "1a", "2a"))
			out := w.plan()
			if out.Action == nil || out.Action.Kind != CreateMachine || !strings.HasSuffix(out.Action.Machine.Name, "-1") ||
				!strings.Contains(string(out.Action.Machine.Spec.ProviderSpec.Value.Raw), "us-east-1b") {
				t.Fatalf("first move: %s", describe(out.Action))
			}
			w.apply(out.Action)
			w.rollCheck(100)
			zones := map[string]bool{}
			for _, m := range w.machines {
				for _, z := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
					if strings.Contains(string(m.Spec.ProviderSpec.Value.Raw), `"`+z+`"`) {
						zones[z] = true
					}
				}
			}
			if len(zones) != 3 || w.machines["c1-master-0"] == nil {
				t.Fatalf("zones %v, machines %s (index 0 must stay)", zones, w.summary())
			}

			// On-delete rebalances only what a person deletes.
			w = newWorld(t, onDelete, machinesAt("0a", "1a", "2a"))
			w.settle()
			if len(w.machines) != 3 {
				t.Fatalf("on-delete moved a machine by itself: %s", w.summary())
			}
			w.userDelete("c1-master-2")
			w.rollCheck(50)
			m := w.machines[w.inIndex(2)[0]]
			if !strings.Contains(string(m.Spec.ProviderSpec.Value.Raw), "us-east-1c") {
				t.Fatalf("deleted index 2 not moved to the free zone: %s", m.Spec.ProviderSpec.Value.Raw)
			}
		}},
		{"a faulty spec degrades the set; rolling it back removes the broken replacement and resumes", func(t *testing.T) {
			w := newWorld(t)
			w.setInstanceType("bad")
			w.rollCheck(20)
			w.expectCond(ConditionDegraded, metav1.ConditionTrue, ReasonFailedReplacement)
			if c := w.cond(ConditionDegraded); !strings.Contains(c.Message, "instance type bad does not exist") {
				t.Fatalf("Degraded must carry the machine's errorMessage: %q", c.Message)
			}
			if len(w.machines) != 4 {
				t.Fatalf("want the old three and one failed replacement: %s", w.summary())
			}
			w.setInstanceType("m6i.xlarge")
			w.rollCheck(30)
			if w.summary() != "c1-master-0:Running c1-master-1:Running c1-master-2:Running" {
				t.Fatalf("after rollback: %s", w.summary())
			}
			w.expectCond(ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected)
			w.setInstanceType("m6i.2xlarge")
			w.rollCheck(200)
			w.allNew(t)
		}},
		{"a replacement stuck in provisioning trips the progress deadline; remediation retries within its budget", func(t *testing.T) {
			w := newWorld(t)
			w.cfg.ProgressDeadline = 30 * time.Minute
			w.setInstanceType("m6i.2xlarge")
			out := w.plan()
			w.apply(out.Action)
			stuck := out.Action.Machine.Name
			w.setPhase(stuck, machinev1beta1.PhaseProvisioned)
			w.now = w.now.Add(10 * time.Minute)
			out = w.plan()
			if out.Action != nil || out.RequeueAfter != 20*time.Minute {
				t.Fatalf("before the deadline: action %s requeue %v", describe(out.Action), out.RequeueAfter)
			}
			w.now = w.now.Add(20 * time.Minute)
			out = w.plan()
			w.expectCond(ConditionDegraded, metav1.ConditionTrue, ReasonReplacementTimedOut)
			if c := w.cond(ConditionDegraded); !strings.Contains(c.Message, stuck) || out.Action != nil {
				t.Fatalf("Degraded must name %s and nothing happens without remediation: %q %s", stuck, c.Message, describe(out.Action))
			}
			if !w.hasEvent(ReasonReplacementTimedOut, stuck) {
				t.Fatalf("no Event for the block: %+v", w.events)
			}
			// Opt in: two retries allowed.
			w.cfg.Remediation = Remediation{Enabled: true, MaxRetries: 2, RetryPeriod: 5 * time.Minute}
			for retry := 1; retry <= 2; retry++ {
				out = w.plan()
				if out.Action == nil || out.Action.Kind != Remediate || out.Action.Target.Name != stuck {
					t.Fatalf("retry %d: action %s", retry, describe(out.Action))
				}
				w.apply(out.Action)
				w.ceo()
				w.mao() // the stuck machine has a hook only if the etcd operator put one; it is a learner at most
				w.ceo()
				w.mao()
				if w.machines[stuck] != nil {
					t.Fatalf("remediated machine not gone: %s", w.summary())
				}
				out = w.plan()
				if out.Action != nil {
					t.Fatalf("retry %d started before the retry period: %s", retry, describe(out.Action))
				}
				w.now = w.now.Add(5 * time.Minute)
				out = w.plan()
				if out.Action == nil || out.Action.Kind != CreateMachine || out.Action.Machine.Name == stuck {
					t.Fatalf("retry %d: want a fresh replacement, got %s", retry, describe(out.Action))
				}
				w.apply(out.Action)
				stuck = out.Action.Machine.Name
				w.setPhase(stuck, machinev1beta1.PhaseProvisioning)
				w.now = w.now.Add(31 * time.Minute)
			}
			out = w.plan()
			if out.Action != nil {
				t.Fatalf("budget exhausted, yet %s", describe(out.Action))
			}
			if c := w.cond(ConditionDegraded); !strings.Contains(c.Message, "retries exhausted (2 of 2)") {
				t.Fatalf("Degraded %q", c.Message)
			}
			// Fixing the spec starts a fresh budget: the person's change is a new attempt.
			w.setInstanceType("m6i.4xlarge")
			out = w.plan()
			if out.Action == nil || out.Action.Kind != DeleteMachine || out.Action.Target.Name != stuck {
				t.Fatalf("after the fix the stale replacement is outdated and broken... got %s", describe(out.Action))
			}
		}},
		{"a hand-made extra index degrades the set; a surplus updated machine is removed, or reported under on-delete", func(t *testing.T) {
			w := newWorld(t)
			w.addRunning("c1-master-3", "m6i.xlarge", "a")
			out := w.plan()
			w.expectCond(ConditionDegraded, metav1.ConditionTrue, ReasonExcessIndexes)
			if out.Action != nil {
				t.Fatalf("acted while degraded: %s", describe(out.Action))
			}
			w = newWorld(t)
			w.addRunning("c1-master-extra-1", "m6i.xlarge", "b")
			w.machines["c1-master-extra-1"].CreationTimestamp = metav1.NewTime(t0)
			out = w.plan()
			if out.Action == nil || out.Action.Kind != DeleteMachine || out.Action.Target.Name != "c1-master-extra-1" {
				t.Fatalf("surplus: %s", describe(out.Action))
			}
			w = newWorld(t, onDelete)
			w.addRunning("c1-master-extra-1", "m6i.xlarge", "b")
			out = w.plan()
			w.expectCond(ConditionDegraded, metav1.ConditionTrue, ReasonExcessUpdatedReplicas)
			if out.Action != nil {
				t.Fatalf("on-delete deleted: %s", describe(out.Action))
			}
		}},
		{"a control-plane node no machine owns halts the set", func(t *testing.T) {
			w := newWorld(t)
			w.setInstanceType("m6i.2xlarge")
			w.nodes["stray"] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "stray", Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}}}
			out := w.plan()
			w.expectCond(ConditionDegraded, metav1.ConditionTrue, ReasonUnmanagedNodes)
			w.expectCond(ConditionProgressing, metav1.ConditionFalse, ReasonOperatorDegraded)
			if out.Action != nil {
				t.Fatalf("acted: %s", describe(out.Action))
			}
			// A node a new machine will own (same providerID, nodeRef not yet set) is not a stray.
			delete(w.nodes, "stray")
			w.addRunning("c1-master-x-0", "m6i.2xlarge", "a")
			w.machines["c1-master-x-0"].Status.NodeRef = nil
			w.machines["c1-master-x-0"].CreationTimestamp = metav1.NewTime(w.now)
			w.plan()
			w.expectCond(ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected)
		}},
		{"a node rebooting within the grace period keeps the set available; beyond it, not", func(t *testing.T) {
			w := newWorld(t)
			w.setNodeReady("c1-master-1", corev1.ConditionUnknown, w.now.Add(-5*time.Minute))
			out := w.plan()
			w.expectCond(ConditionAvailable, metav1.ConditionTrue, ReasonAllReplicasAvailable)
			if out.RequeueAfter != 15*time.Minute {
				t.Fatalf("requeue %v, want the end of the grace period", out.RequeueAfter)
			}
			w.now = w.now.Add(15 * time.Minute)
			w.plan()
			w.expectCond(ConditionAvailable, metav1.ConditionFalse, ReasonUnavailableReplicas)
			if w.cpms.Status.UnavailableReplicas != 1 || w.cpms.Status.ReadyReplicas != 2 {
				t.Fatalf("status %+v", w.cpms.Status)
			}
			if r := w.plan().Indexes[1]; r.State != Blocked || !strings.Contains(r.Reason, "c1-master-1 is Running but its Node is not Ready") {
				t.Fatalf("index 1 %+v", r)
			}
			// And a rollout does not start while a node is not Ready.
			w.setInstanceType("m6i.2xlarge")
			out = w.plan()
			if out.Action != nil {
				t.Fatalf("started with a NotReady node: %s", describe(out.Action))
			}
		}},
		{"a restart or a lagging cache never doubles a replacement", func(t *testing.T) {
			w := newWorld(t)
			w.setInstanceType("m6i.2xlarge")
			stale := w.input()
			first := Plan(stale)
			w.apply(first.Action)
			// The next pass still sees the old snapshot: same decision, same name.
			again := Plan(stale)
			if again.Action == nil || again.Action.Machine.Name != first.Action.Machine.Name {
				t.Fatalf("second decision %s, first %s", describe(again.Action), describe(first.Action))
			}
			w.apply(again.Action)
			if len(w.machines) != 4 {
				t.Fatalf("a repeated create must be AlreadyExists: %s", w.summary())
			}
			// A fresh planner (restart) mid-rollout picks up where things are.
			w.mao()
			out := w.plan()
			if out.Action != nil {
				t.Fatalf("restart acted on a provisioning replacement: %s", describe(out.Action))
			}
		}},
		{"the set being deleted mutates nothing", func(t *testing.T) {
			w := newWorld(t)
			w.setInstanceType("m6i.2xlarge")
			w.cpms.DeletionTimestamp = ptr(metav1.NewTime(w.now))
			if out := w.plan(); out.Action != nil {
				t.Fatalf("acted: %s", describe(out.Action))
			}
		}},
		{"an etcd operator that never releases holds the old machine, and the next index waits", func(t *testing.T) {
			w := newWorld(t)
			w.setInstanceType("m6i.2xlarge")
			w.ceo()
			w.ceoStalled = true
			for i := 0; i < 30; i++ {
				out := w.plan()
				w.apply(out.Action)
				w.checkShape()
				w.mao()
				// a stalled etcd operator still puts its hook on new machines
				for _, m := range w.machines {
					if m.DeletionTimestamp == nil {
						w.addHook(m)
					}
				}
				w.now = w.now.Add(time.Minute)
			}
			if w.machines["c1-master-0"] == nil || w.machines["c1-master-0"].DeletionTimestamp == nil {
				t.Fatalf("old index 0 should be held deleting: %s", w.summary())
			}
			if len(w.inIndex(1)) != 1 || len(w.inIndex(2)) != 1 {
				t.Fatalf("next index started while index 0's old machine is held: %s", w.summary())
			}
			out := w.plan()
			var r0 IndexReport
			for _, r := range out.Indexes {
				if r.Index == 0 {
					r0 = r
				}
			}
			if r0.State != OldDeleting || !r0.HeldByEtcdHook || r0.DeletingSince == nil {
				t.Fatalf("index 0 report %+v", r0)
			}
		}},
		{"removing the etcd hook by hand lets the old machine go and the rollout continue", func(t *testing.T) {
			w := newWorld(t)
			w.setInstanceType("m6i.2xlarge")
			w.ceo()
			w.ceoStalled = true
			for i := 0; i < 10; i++ {
				out := w.plan()
				w.apply(out.Action)
				w.mao()
				for _, m := range w.machines {
					if m.DeletionTimestamp == nil {
						w.addHook(m)
					}
				}
			}
			w.machines["c1-master-0"].Spec.LifecycleHooks.PreDrain = nil
			w.ceoStalled = false
			w.rollCheck(200)
			w.allNew(t)
		}},
		{"pre-flight: a degraded etcd or kube-apiserver operator stops a new replacement, each with its reason", func(t *testing.T) {
			for _, co := range []struct{ name, reason string }{{"etcd", ReasonEtcdDegraded}, {"kube-apiserver", ReasonKubeAPIServerDegraded}} {
				w := newWorld(t)
				w.degradeOperator(co.name, true)
				w.setInstanceType("m6i.2xlarge")
				out := w.plan()
				if out.Action != nil {
					t.Fatalf("%s degraded, yet %s", co.name, describe(out.Action))
				}
				w.expectCond(ConditionProgressing, metav1.ConditionTrue, co.reason)
				if !w.hasEvent(co.reason, "clusteroperator/"+co.name+" is Degraded") {
					t.Fatalf("no block Event: %+v", w.events)
				}
				if out.Indexes[0].State != Blocked {
					t.Fatalf("index 0: %+v", out.Indexes[0])
				}
				w.degradeOperator(co.name, false)
				if out := w.plan(); out.Action == nil || out.Action.Kind != CreateMachine {
					t.Fatalf("after recovery: %s", describe(out.Action))
				}
			}
		}},
		{"a cluster update holds the next replacement, without blocking the index, and the rollout resumes after it", func(t *testing.T) {
			w := newWorld(t)
			w.cv = &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}}
			w.cv.Status.Conditions = []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorProgressing,
				Status: configv1.ConditionTrue, Message: "Working towards 4.16.2: 700 of 900 done (77% complete)"}}
			w.setInstanceType("m6i.2xlarge")
			out := w.plan()
			if out.Action != nil {
				t.Fatalf("cluster updating, yet %s", describe(out.Action))
			}
			w.expectCond(ConditionProgressing, metav1.ConditionTrue, ReasonClusterUpdating)
			if !w.hasEvent(ReasonClusterUpdating, "Working towards 4.16.2") {
				t.Fatalf("no Event naming the update: %+v", w.events)
			}
			if out.Indexes[0].State == Blocked {
				t.Fatalf("an update is not a fault: %+v", out.Indexes[0])
			}
			// The update is done with the control plane, but the MCO is
			// still rebooting a master: still held.
			w.cv.Status.Conditions[0].Status = configv1.ConditionFalse
			for _, n := range w.nodes {
				n.Annotations = map[string]string{mcostate.CurrentConfig: "rendered-master-a", mcostate.DesiredConfig: "rendered-master-a", mcostate.State: mcostate.StateDone}
			}
			w.nodes["c1-master-2"].Annotations[mcostate.DesiredConfig] = "rendered-master-b"
			w.nodes["c1-master-2"].Annotations[mcostate.State] = mcostate.StateWorking
			if out := w.plan(); out.Action != nil {
				t.Fatalf("a master updating, yet %s", describe(out.Action))
			}
			w.expectCond(ConditionProgressing, metav1.ConditionTrue, ReasonMastersUpdating)
			if !w.hasEvent(ReasonMastersUpdating, "c1-master-2") {
				t.Fatalf("no Event naming the node: %+v", w.events)
			}
			w.nodes["c1-master-2"].Annotations[mcostate.CurrentConfig] = "rendered-master-b"
			w.nodes["c1-master-2"].Annotations[mcostate.State] = mcostate.StateDone
			if out := w.plan(); out.Action == nil || out.Action.Kind != CreateMachine {
				t.Fatalf("after the update: %s", describe(out.Action))
			}
			w.rollCheck(200)
			w.allNew(t)
		}},
		{"the pause annotation freezes mutations but not the status", func(t *testing.T) {
			w := newWorld(t)
			w.cpms.Annotations = map[string]string{PausedAnnotation: "true"}
			w.setInstanceType("m6i.2xlarge")
			out := w.plan()
			if out.Action != nil {
				t.Fatalf("paused, yet %s", describe(out.Action))
			}
			w.expectCond(ConditionProgressing, metav1.ConditionFalse, ReasonPaused)
			if w.cpms.Status.UpdatedReplicas != 0 || w.cpms.Status.ObservedGeneration != 2 {
				t.Fatalf("status not kept current: %+v", w.cpms.Status)
			}
			delete(w.cpms.Annotations, PausedAnnotation)
			if out := w.plan(); out.Action == nil {
				t.Fatal("unpaused, nothing happens")
			}
		}},
		{"a missing index is restored before outdated indexes are replaced", func(t *testing.T) {
			w := newWorld(t, machinesAt("0a", "1b"))
			w.setInstanceType("m6i.2xlarge")
			out := w.plan()
			if out.Action == nil || out.Action.Kind != CreateMachine || !strings.HasSuffix(out.Action.Machine.Name, "-2") {
				t.Fatalf("first: %s", describe(out.Action))
			}
			w.apply(out.Action)
			w.rollCheck(200)
			w.allNew(t)
		}},
		{"a machine whose instance vanished is replaced in its index, then removed", func(t *testing.T) {
			w := newWorld(t)
			w.fail("c1-master-1", "instance i-0abc no longer exists")
			w.setNodeReady("c1-master-1", corev1.ConditionFalse, w.now.Add(-time.Hour))
			out := w.plan()
			if out.Action == nil || out.Action.Kind != CreateMachine || !strings.HasSuffix(out.Action.Machine.Name, "-1") {
				t.Fatalf("first: %s", describe(out.Action))
			}
			w.apply(out.Action)
			w.rollCheck(50)
			if w.machines["c1-master-1"] != nil || len(w.inIndex(1)) != 1 {
				t.Fatalf("after: %s", w.summary())
			}
			w.expectCond(ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected)
			w.expectCond(ConditionAvailable, metav1.ConditionTrue, ReasonAllReplicasAvailable)
		}},
		{"a deleting replacement never stands in for the old machine", func(t *testing.T) {
			w := newWorld(t)
			w.setInstanceType("m6i.2xlarge")
			out := w.plan()
			w.apply(out.Action)
			w.mao()
			w.mao()
			w.ceo()
			w.userDelete(out.Action.Machine.Name)
			for i := 0; i < 3; i++ {
				o := w.plan()
				if o.Action != nil && o.Action.Kind == DeleteMachine && o.Action.Target.Name == "c1-master-0" {
					t.Fatal("deleted the old machine on the strength of a deleting replacement")
				}
			}
		}},
	}
	for _, s := range scenarios {
		t.Run(s.name, s.run)
	}
}
