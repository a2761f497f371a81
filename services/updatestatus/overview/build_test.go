package overview

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	aromonitorv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

var now = time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }

// nothingInstalled is a cluster with ClusterVersion at 4.15.3 and none of
// Upshift's CRDs.
func nothingInstalled() Input {
	return Input{
		Now:                    now,
		ClusterVersion:         Read[*configv1.ClusterVersion]{Object: clusterVersion("4.15.3", "4.15.3", false), Outcome: Found},
		UpgradeStatus:          Read[*updatev1alpha1.UpgradeStatus]{Outcome: NotInstalled},
		UpgradeConfigs:         Read[[]upgradev1alpha1.UpgradeConfig]{Outcome: NotInstalled},
		MutexRuns:              Read[[]nodegatev1alpha1.MutexRunConfig]{Outcome: NotInstalled},
		ControlPlaneMachineSet: Read[*machinev1.ControlPlaneMachineSet]{Outcome: NotInstalled},
		MonitorConfig:          Read[*aromonitorv1alpha1.MonitorConfig]{Outcome: NotInstalled},
	}
}

func clusterVersion(current, desired string, progressing bool) *configv1.ClusterVersion {
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}}
	cv.Status.Desired.Version = desired
	cv.Status.History = []configv1.UpdateHistory{{Version: current, State: configv1.CompletedUpdate}}
	status, msg := configv1.ConditionFalse, "Cluster version is "+current
	if progressing {
		cv.Status.History = append([]configv1.UpdateHistory{{Version: desired, State: configv1.PartialUpdate}}, cv.Status.History...)
		status, msg = configv1.ConditionTrue, "Working towards "+desired+": 512 of 880 done (58% complete)"
	}
	cv.Status.Conditions = []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorProgressing, Status: status, Message: msg}}
	return cv
}

func upgradeConfig(phase upgradev1alpha1.UpgradePhase, mutate func(*upgradev1alpha1.UpgradeConfig)) upgradev1alpha1.UpgradeConfig {
	uc := upgradev1alpha1.UpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-managed-upgrade-operator", Name: "managed-upgrade-config", Generation: 1},
		Spec: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.16.2", Channel: "stable-4.16"},
			UpgradeAt: "2026-12-03T02:00:00Z", Type: upgradev1alpha1.OSD},
	}
	uc.Status.ObservedGeneration = 1
	if phase != "" {
		uc.Status.History = []upgradev1alpha1.UpgradeHistory{{Version: "4.16.2", Phase: phase}}
	}
	if mutate != nil {
		mutate(&uc)
	}
	return uc
}

func withCondition(conds *[]metav1.Condition, t string, s metav1.ConditionStatus, reason, msg string) {
	*conds = append(*conds, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg})
}

func run(phase nodegatev1alpha1.RunPhase, nodes ...nodegatev1alpha1.NodeRecord) nodegatev1alpha1.MutexRunConfig {
	r := nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "node-gate", Name: "workers"}}
	r.Status.Phase = phase
	r.Status.Nodes = nodes
	done := 0
	for _, n := range nodes {
		switch n.Phase {
		case nodegatev1alpha1.NodeCompleted, nodegatev1alpha1.NodeSkipped:
			done++
		case nodegatev1alpha1.NodePending:
			r.Status.Summary.Pending++
		default:
			r.Status.Summary.InProgress++
		}
	}
	r.Status.Progress = fmt.Sprintf("%d/%d", done, len(nodes))
	return r
}

func node(name string, phase nodegatev1alpha1.NodePhase, hooks ...nodegatev1alpha1.HookRecord) nodegatev1alpha1.NodeRecord {
	return nodegatev1alpha1.NodeRecord{Name: name, Pool: "worker", Phase: phase, Hooks: hooks}
}

func TestBuild(t *testing.T) {
	type want struct {
		verdict Verdict
		// states per component; a component left out is not checked.
		states map[string]State
		// waiting: substrings of a component's waiting line.
		waiting map[string]string
		// lines: substrings somewhere in the rendered view.
		lines []string
		// absent: substrings the rendered view must not hold.
		absent []string
	}
	for _, tc := range []struct {
		name string
		in   func() Input
		want want
	}{{
		name: "no Upshift component installed: every section says so, and the cluster is not updating",
		in:   nothingInstalled,
		want: want{
			verdict: VerdictNotUpdating,
			states: map[string]State{UpgradeScheduler: StateNotInstalled, MCPTracker: StateNotInstalled, NodeGate: StateNotInstalled,
				CPMSController: StateNotInstalled, AROMonitor: StateNotInstalled, ClusterUpdate: StateIdle},
			waiting: map[string]string{UpgradeScheduler: "not installed (the UpgradeConfig CRD is not served)",
				NodeGate: "not installed (the MutexRunConfig CRD is not served)", ClusterUpdate: "not updating: at 4.15.3"},
			lines: []string{"Not updating: at 4.15.3", "update-status-controller: its CRD is not installed; summary from ClusterVersion"},
		},
	}, {
		name: "RBAC refuses the runs: node-gate says so, the rest of the view goes on",
		in: func() Input {
			in := nothingInstalled()
			in.MutexRuns = Read[[]nodegatev1alpha1.MutexRunConfig]{Outcome: Forbidden, Err: "mutexrunconfigs is forbidden"}
			in.UpgradeConfigs = Read[[]upgradev1alpha1.UpgradeConfig]{Outcome: Found}
			return in
		},
		want: want{
			verdict: VerdictNotUpdating,
			states:  map[string]State{NodeGate: StateUnknown, UpgradeScheduler: StateIdle},
			waiting: map[string]string{NodeGate: "cannot read MutexRunConfig: forbidden by RBAC", UpgradeScheduler: "nothing scheduled"},
		},
	}, {
		name: "without the ClusterVersion the verdict is unknown",
		in: func() Input {
			in := nothingInstalled()
			in.ClusterVersion = Read[*configv1.ClusterVersion]{Outcome: Forbidden, Err: "forbidden"}
			return in
		},
		want: want{
			verdict: VerdictUnknown,
			states:  map[string]State{ClusterUpdate: StateUnknown},
			lines:   []string{"Unknown: cannot read the ClusterVersion (forbidden by RBAC)"},
		},
	}, {
		name: "scheduled but not started: waiting for the maintenance window, pre-checks advisory",
		in: func() Input {
			in := nothingInstalled()
			uc := upgradeConfig(upgradev1alpha1.UpgradePhasePending, func(uc *upgradev1alpha1.UpgradeConfig) {
				uc.Spec.MaintenanceWindows = []commonv1alpha1.MaintenanceWindow{{Days: []commonv1alpha1.Weekday{"Thursday"}, Start: "02:00", End: "06:00"}}
				uc.Spec.Deadlines = &upgradev1alpha1.Deadlines{Workers: &upgradev1alpha1.Deadline{Minutes: ptr.To[int32](480), Policy: upgradev1alpha1.DeadlinePause}}
				withCondition(&uc.Status.Conditions, "Progressing", metav1.ConditionFalse, "WaitingForMaintenanceWindow",
					"no maintenance window is open; the next opens at 2026-12-03T02:00:00Z")
				withCondition(&uc.Status.Conditions, "HealthChecksPassing", metav1.ConditionFalse, "ChecksFailing", "failing: PodDisruptionBudgets")
				uc.Status.Preflight = []upgradev1alpha1.PreflightCheck{{Check: "ClusterOperators", Passed: true},
					{Check: "PodDisruptionBudgets", Details: "pdb app/db allows no disruption"}}
			})
			in.UpgradeConfigs = Read[[]upgradev1alpha1.UpgradeConfig]{Object: []upgradev1alpha1.UpgradeConfig{uc}, Outcome: Found}
			return in
		},
		want: want{
			verdict: VerdictNotUpdating,
			states:  map[string]State{UpgradeScheduler: StateScheduled, MCPTracker: StateIdle},
			waiting: map[string]string{UpgradeScheduler: "waiting for the maintenance window for the upgrade to 4.16.2 at 2026-12-03 02:00 UTC (in 3h)"},
			lines: []string{"maintenance windows: Thu 02:00-06:00 UTC", "deadlines: workers 480m (pause)",
				"health checks: 1 passed, 1 failing", "failing PodDisruptionBudgets: pdb app/db allows no disruption",
				"Not updating: at 4.15.3; waiting for the maintenance window"},
		},
	}, {
		name: "updating: the scheduler at a step, ClusterVersion progressing, the controller's assessment",
		in: func() Input {
			in := nothingInstalled()
			in.ClusterVersion.Object = clusterVersion("4.15.3", "4.16.2", true)
			uc := upgradeConfig(upgradev1alpha1.UpgradePhaseUpgrading, func(uc *upgradev1alpha1.UpgradeConfig) {
				uc.Status.CurrentStep = "ControlPlaneUpgraded"
				uc.Spec.Deadlines = &upgradev1alpha1.Deadlines{ControlPlane: &upgradev1alpha1.Deadline{Minutes: ptr.To[int32](120), Policy: upgradev1alpha1.DeadlineAlert},
					Workers: &upgradev1alpha1.Deadline{Minutes: ptr.To[int32](480)}}
				uc.Status.History[0].Conditions = upgradev1alpha1.Conditions{
					{Type: "ControlPlaneUpgraded", Status: corev1.ConditionFalse, Message: "waiting for ClusterVersion", StartTime: at(-30 * time.Minute)},
					{Type: "UpgradeCommenced", Status: corev1.ConditionTrue, StartTime: at(-31 * time.Minute), CompleteTime: at(-30 * time.Minute)},
				}
			})
			in.UpgradeConfigs = Read[[]upgradev1alpha1.UpgradeConfig]{Object: []upgradev1alpha1.UpgradeConfig{uc}, Outcome: Found}
			in.UpgradeStatus = Read[*updatev1alpha1.UpgradeStatus]{Outcome: Found, Object: &updatev1alpha1.UpgradeStatus{Status: updatev1alpha1.UpgradeStatusStatus{
				ControlPlane: &updatev1alpha1.ControlPlane{ClusterVersion: &updatev1alpha1.ClusterVersionStatusInsight{
					Assessment: updatev1alpha1.ControlPlaneAssessmentProgressing, Completion: 58, EstimatedCompletedAt: at(40 * time.Minute),
					Versions: updatev1alpha1.ControlPlaneUpdateVersions{Previous: &updatev1alpha1.Version{Version: "4.15.3"}, Target: updatev1alpha1.Version{Version: "4.16.2"}}}},
			}}}
			return in
		},
		want: want{
			verdict: VerdictUpdating,
			states:  map[string]State{UpgradeScheduler: StateProgressing, ClusterUpdate: StateProgressing},
			waiting: map[string]string{UpgradeScheduler: "at step ControlPlaneUpgraded: waiting for ClusterVersion (since 22:30 UTC)",
				ClusterUpdate: "the control plane updates to 4.16.2: 58% (Progressing), estimated to finish at 23:40 UTC"},
			lines: []string{"Updating: 4.15.3 → 4.16.2", "control plane: Progressing, 58% (4.15.3 → 4.16.2)",
				"done     UpgradeCommenced", "running  ControlPlaneUpgraded",
				// Due two hours after commencement; the workers' has no anchor yet.
				"deadlines: controlPlane 120m due 2026-12-03 00:30 UTC (alert), workers 480m; others"},
		},
	}, {
		name: "a gated node waits for its hook; the finished nodes are only counted",
		in: func() Input {
			in := nothingInstalled()
			in.ClusterVersion.Object = clusterVersion("4.16.2", "4.16.2", false)
			nodes := []nodegatev1alpha1.NodeRecord{
				node("worker-0", nodegatev1alpha1.NodeCompleted),
				node("worker-1", nodegatev1alpha1.NodePreHooks, nodegatev1alpha1.HookRecord{Rule: "apps/db-failover", Name: "job",
					Stage: nodegatev1alpha1.StagePre, Phase: nodegatev1alpha1.HookRunning, Attempts: 2, StartTime: at(-5 * time.Minute)}),
			}
			for i := 2; i < 12; i++ {
				nodes = append(nodes, node(fmt.Sprintf("worker-%d", i), nodegatev1alpha1.NodeReleased))
			}
			in.MutexRuns = Read[[]nodegatev1alpha1.MutexRunConfig]{Outcome: Found, Object: []nodegatev1alpha1.MutexRunConfig{run(nodegatev1alpha1.RunProgressing, nodes...)}}
			return in
		},
		want: want{
			verdict: VerdictUpdating,
			states:  map[string]State{NodeGate: StateProgressing},
			waiting: map[string]string{NodeGate: "waiting for pre-hook job of apps/db-failover (Running, attempt 2) on node worker-1, since 22:55 UTC"},
			lines:   []string{"Updating: the control plane is at 4.16.2, the workers are not yet", "node-gate/workers: Progressing, 1/12 nodes through", "nodes: 1 Completed, 1 PreHooks, 10 Released", "and 6 more"},
			absent:  []string{"worker-0", "worker-7"},
		},
	}, {
		name: "several runs: the most pressing one speaks for node-gate, the first four are shown",
		in: func() Input {
			in := nothingInstalled()
			var runs []nodegatev1alpha1.MutexRunConfig
			for _, name := range []string{"a", "b", "c", "d"} {
				r := run(nodegatev1alpha1.RunCompleted, node(name+"-0", nodegatev1alpha1.NodeCompleted))
				r.Name = name
				runs = append(runs, r)
			}
			held := run(nodegatev1alpha1.RunWaiting, node("e-0", nodegatev1alpha1.NodePending))
			held.Name = "e"
			withCondition(&held.Status.Conditions, "Progressing", metav1.ConditionFalse, "OutsideMaintenanceWindow", "no maintenance window is open")
			in.MutexRuns = Read[[]nodegatev1alpha1.MutexRunConfig]{Outcome: Found, Object: append(runs, held)}
			return in
		},
		want: want{
			verdict: VerdictUpdating,
			states:  map[string]State{NodeGate: StateWaiting},
			waiting: map[string]string{NodeGate: "node-gate/e: held: no maintenance window is open"},
			lines:   []string{"node-gate/d: Completed, 1/1 nodes through", "and 1 more runs"},
			absent:  []string{"node-gate/e: Waiting"},
		},
	}, {
		name: "a failed hook pauses the run: blocked",
		in: func() Input {
			in := nothingInstalled()
			r := run(nodegatev1alpha1.RunPaused, node("worker-1", nodegatev1alpha1.NodePreHooks))
			withCondition(&r.Status.Conditions, "Paused", metav1.ConditionTrue, "HookFailed", "a hook failed; change the spec to resume")
			in.MutexRuns = Read[[]nodegatev1alpha1.MutexRunConfig]{Outcome: Found, Object: []nodegatev1alpha1.MutexRunConfig{r}}
			return in
		},
		want: want{
			verdict: VerdictBlocked,
			states:  map[string]State{NodeGate: StateBlocked},
			lines:   []string{"Blocked: node-gate: paused: HookFailed: a hook failed"},
		},
	}, {
		name: "stalled: the update-status-controller reports Update Stalled",
		in: func() Input {
			in := nothingInstalled()
			in.ClusterVersion.Object = clusterVersion("4.15.3", "4.16.2", true)
			in.UpgradeStatus = Read[*updatev1alpha1.UpgradeStatus]{Outcome: Found, Object: &updatev1alpha1.UpgradeStatus{Status: updatev1alpha1.UpgradeStatusStatus{
				ControlPlane: &updatev1alpha1.ControlPlane{ClusterVersion: &updatev1alpha1.ClusterVersionStatusInsight{Assessment: updatev1alpha1.ControlPlaneAssessmentProgressing, Completion: 97}},
				Health: []updatev1alpha1.HealthInsight{
					{Impact: updatev1alpha1.InsightImpact{Level: updatev1alpha1.InfoImpactLevel, Type: updatev1alpha1.UpdateSpeedImpactType, Summary: "info 1"}},
					{Impact: updatev1alpha1.InsightImpact{Level: updatev1alpha1.InfoImpactLevel, Type: updatev1alpha1.UpdateSpeedImpactType, Summary: "info 2"}},
					{Impact: updatev1alpha1.InsightImpact{Level: updatev1alpha1.InfoImpactLevel, Type: updatev1alpha1.UpdateSpeedImpactType, Summary: "info 3"}},
					{Impact: updatev1alpha1.InsightImpact{Level: updatev1alpha1.ErrorImpactLevel,
						Type: updatev1alpha1.UpdateStalledImpactType, Summary: "Node worker-3 is unavailable"}}},
			}}}
			return in
		},
		want: want{
			verdict: VerdictBlocked,
			states:  map[string]State{ClusterUpdate: StateBlocked},
			waiting: map[string]string{ClusterUpdate: "update stalled: Node worker-3 is unavailable"},
			// The error is listed first, so the cap leaves out an info.
			lines:  []string{"health insights: 1 Error, 3 Info", "Error Update Stalled: Node worker-3 is unavailable", "and 1 more"},
			absent: []string{"info 3"},
		},
	}, {
		name: "a failing step blocks the upgrade",
		in: func() Input {
			in := nothingInstalled()
			uc := upgradeConfig(upgradev1alpha1.UpgradePhaseUpgrading, func(uc *upgradev1alpha1.UpgradeConfig) {
				uc.Status.CurrentStep = "ComputeCapacityReserved"
				uc.Status.History[0].Conditions = upgradev1alpha1.Conditions{{Type: "ComputeCapacityReserved", Status: corev1.ConditionFalse,
					Attempts: 3, LastError: "machinesets.machine.openshift.io is forbidden", StartTime: at(-time.Hour)}}
			})
			in.UpgradeConfigs = Read[[]upgradev1alpha1.UpgradeConfig]{Object: []upgradev1alpha1.UpgradeConfig{uc}, Outcome: Found}
			return in
		},
		want: want{
			verdict: VerdictBlocked,
			states:  map[string]State{UpgradeScheduler: StateBlocked},
			waiting: map[string]string{UpgradeScheduler: "step ComputeCapacityReserved failing (attempt 3): machinesets.machine.openshift.io is forbidden"},
			lines:   []string{"FAILING  ComputeCapacityReserved"},
		},
	}, {
		name: "completed: upgraded, every pool done, the rollout held no more",
		in: func() Input {
			in := nothingInstalled()
			in.ClusterVersion.Object = clusterVersion("4.16.2", "4.16.2", false)
			uc := upgradeConfig(upgradev1alpha1.UpgradePhaseUpgraded, func(uc *upgradev1alpha1.UpgradeConfig) {
				uc.Status.History[0].CompleteTime = at(-2 * time.Hour)
				withCondition(&uc.Status.Conditions, upgradev1alpha1.WorkersUpgradedCondition, metav1.ConditionTrue, "AllPoolsUpdated", "")
				uc.Status.Pools = []upgradev1alpha1.PoolUpdate{{Name: "worker", MachineCount: 3, Nodes: upgradev1alpha1.PoolNodeCounts{Done: 3}, CompleteTime: at(-3 * time.Hour)}}
			})
			in.UpgradeConfigs = Read[[]upgradev1alpha1.UpgradeConfig]{Object: []upgradev1alpha1.UpgradeConfig{uc}, Outcome: Found}
			in.ControlPlaneMachineSet = Read[*machinev1.ControlPlaneMachineSet]{Outcome: Found, Object: cpms("AllReplicasUpdated", metav1.ConditionFalse)}
			return in
		},
		want: want{
			verdict: VerdictNotUpdating,
			states:  map[string]State{UpgradeScheduler: StateDone, MCPTracker: StateDone, CPMSController: StateIdle},
			waiting: map[string]string{UpgradeScheduler: "upgraded to 4.16.2 at 21:00 UTC", MCPTracker: "every worker pool is updated",
				CPMSController: "3 of 3 replicas up to date"},
			lines: []string{"pool worker: 3 machines: 3 done, updated 20:00 UTC"},
		},
	}, {
		name: "the control-plane rollout waits for the cluster update",
		in: func() Input {
			in := nothingInstalled()
			in.ClusterVersion.Object = clusterVersion("4.15.3", "4.16.2", true)
			in.ControlPlaneMachineSet = Read[*machinev1.ControlPlaneMachineSet]{Outcome: Found, Object: cpms("ClusterUpdating", metav1.ConditionFalse)}
			return in
		},
		want: want{
			verdict: VerdictUpdating,
			states:  map[string]State{CPMSController: StateWaiting},
			waiting: map[string]string{CPMSController: "waiting for the cluster update to finish"},
		},
	}, {
		name: "aro-monitor's findings ask for attention but block nothing",
		in: func() Input {
			in := nothingInstalled()
			mc := &aromonitorv1alpha1.MonitorConfig{}
			mc.Status.Conditions = []operatorv1.OperatorCondition{
				{Type: "InternetReachableFromWorker", Status: operatorv1.ConditionFalse, Reason: "CheckFailed", Message: "https://quay.io: timeout"},
				{Type: "NSGAssociated", Status: operatorv1.ConditionTrue},
			}
			in.MonitorConfig = Read[*aromonitorv1alpha1.MonitorConfig]{Outcome: Found, Object: mc}
			return in
		},
		want: want{
			verdict: VerdictNotUpdating,
			states:  map[string]State{AROMonitor: StateAttention},
			waiting: map[string]string{AROMonitor: "1 finding: InternetReachableFromWorker"},
			lines:   []string{"InternetReachableFromWorker=False: CheckFailed: https://quay.io: timeout"},
			absent:  []string{"NSGAssociated=True"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := Build(tc.in())
			if m.Verdict != tc.want.verdict {
				t.Errorf("verdict %s, want %s (headline %q)", m.Verdict, tc.want.verdict, m.Headline)
			}
			sections := map[string]Section{}
			for _, s := range m.Sections {
				sections[s.Component] = s
			}
			for c, st := range tc.want.states {
				if got := sections[c].State; got != st {
					t.Errorf("%s: state %q, want %q (waiting %q)", c, got, st, sections[c].Waiting)
				}
			}
			for c, w := range tc.want.waiting {
				if got := sections[c].Waiting; !strings.Contains(got, w) {
					t.Errorf("%s: waiting %q, want it to contain %q", c, got, w)
				}
			}
			var out bytes.Buffer
			if err := Render(&out, m, 200); err != nil {
				t.Fatal(err)
			}
			for _, l := range tc.want.lines {
				if !strings.Contains(out.String(), l) {
					t.Errorf("the view lacks %q:\n%s", l, out.String())
				}
			}
			for _, l := range tc.want.absent {
				if strings.Contains(out.String(), l) {
					t.Errorf("the view holds %q:\n%s", l, out.String())
				}
			}
		})
	}
}

func cpms(reason string, progressing metav1.ConditionStatus) *machinev1.ControlPlaneMachineSet {
	c := &machinev1.ControlPlaneMachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-machine-api", Name: "cluster"}}
	c.Spec.State = machinev1.ControlPlaneMachineSetStateActive
	c.Spec.Replicas = ptr.To[int32](3)
	c.Spec.Strategy.Type = machinev1.RollingUpdate
	c.Status = machinev1.ControlPlaneMachineSetStatus{Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 3}
	c.Status.Conditions = []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue}, {Type: "Degraded", Status: metav1.ConditionFalse},
		{Type: "Progressing", Status: progressing, Reason: reason}}
	return c
}

func TestExitCodes(t *testing.T) {
	seen := map[int]Verdict{}
	for _, v := range []Verdict{VerdictNotUpdating, VerdictUpdating, VerdictBlocked, VerdictUnknown} {
		code := v.ExitCode()
		if code == 1 || code == 2 {
			t.Errorf("%s exits %d, which scripts read as a command error or misuse", v, code)
		}
		if other, dup := seen[code]; dup {
			t.Errorf("%s and %s both exit %d", v, other, code)
		}
		seen[code] = v
	}
	if VerdictNotUpdating.ExitCode() != 0 {
		t.Errorf("NotUpdating must exit 0")
	}
}

// Every line of a busy view fits the width asked for.
func TestRenderFitsWidth(t *testing.T) {
	in := nothingInstalled()
	in.MutexRuns = Read[[]nodegatev1alpha1.MutexRunConfig]{Outcome: Failed, Err: strings.Repeat("a very long error ", 30)}
	var out bytes.Buffer
	if err := Render(&out, Build(in), 80); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("line of %d runes: %q", n, l)
		}
	}
	if !strings.Contains(out.String(), "…") {
		t.Errorf("no line was cut:\n%s", out.String())
	}
}
