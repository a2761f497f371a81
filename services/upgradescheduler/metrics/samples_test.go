package metrics

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/metricstest"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

var t0 = time.Date(2026, 11, 21, 22, 0, 0, 0, time.UTC)

func at(min int) *metav1.Time {
	t := metav1.NewTime(t0.Add(time.Duration(min) * time.Minute))
	return &t
}

func cond(t string, s metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason}
}

func step(t upgradev1alpha1.UpgradeConditionType, done bool, start, end int) upgradev1alpha1.UpgradeCondition {
	c := upgradev1alpha1.UpgradeCondition{Type: t, Status: corev1.ConditionFalse, StartTime: at(start)}
	if done {
		c.Status, c.CompleteTime = corev1.ConditionTrue, at(end)
	}
	return c
}

func uc(st upgradev1alpha1.UpgradeConfigStatus) *upgradev1alpha1.UpgradeConfig {
	return &upgradev1alpha1.UpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-managed-upgrade-operator", Name: "managed-upgrade-config"},
		Spec: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.16.2"},
			UpgradeAt: "2026-11-21T22:00:00Z", Type: upgradev1alpha1.OSD},
		Status: st,
	}
}

// series renders samples as "name{k=v,...}" -> value.
func series(samples []Sample) map[string]float64 {
	out := map[string]float64{}
	for _, s := range samples {
		var ls []string
		for k, v := range s.Labels {
			if k == LabelUpgradeConfig || k == LabelNamespace || k == LabelName {
				continue // the same on every series of these tests
			}
			ls = append(ls, k+"="+v)
		}
		sort.Strings(ls)
		key := s.Name + "{" + strings.Join(ls, ",") + "}"
		if _, dup := out[key]; dup {
			panic("duplicate series " + key)
		}
		out[key] = s.Value
	}
	return out
}

var cluster = Cluster{ID: "5cd04b34-7d5c-4e34-9c0b-2e7c0a1c4a21", Version: "4.16.1"}

func TestSamples(t *testing.T) {
	sec := func(min int) float64 { return float64(t0.Add(time.Duration(min) * time.Minute).Unix()) }
	for _, tc := range []struct {
		name   string
		status upgradev1alpha1.UpgradeConfigStatus
		want   map[string]float64
		absent []string // metric names with no series at all
	}{{
		name: "no configuration yet: only the configuration is reported",
		status: upgradev1alpha1.UpgradeConfigStatus{Conditions: []metav1.Condition{
			cond("ConfigValid", metav1.ConditionFalse, "InvalidConfig")}},
		want:   map[string]float64{ConfigInvalid + "{}": 1},
		absent: []string{Phase, ValidationFailed, DeadlineExceeded, UpgradeStarted, HealthCheckFailed},
	}, {
		name: "pending and failing validation on the last good configuration",
		status: upgradev1alpha1.UpgradeConfigStatus{
			History: []upgradev1alpha1.UpgradeHistory{{Version: "4.16.2", Phase: upgradev1alpha1.UpgradePhasePending}},
			Conditions: []metav1.Condition{
				cond("ConfigValid", metav1.ConditionFalse, "InvalidConfigKeptLastGood"),
				cond("Validated", metav1.ConditionFalse, "VersionNotAvailable"),
				cond("Paused", metav1.ConditionFalse, "NotPaused"),
				cond("DeadlineExceeded", metav1.ConditionFalse, "WithinDeadlines"),
			}},
		want: map[string]float64{
			ConfigInvalid + "{}": 1, ValidationFailed + "{}": 1, Paused + "{}": 0,
			Phase + "{phase=Pending}": 1, Phase + "{phase=New}": 0, Phase + "{phase=Upgrading}": 0,
			Phase + "{phase=Upgraded}": 0, Phase + "{phase=Failed}": 0, Phase + "{phase=Cancelled}": 0,
			DeadlineExceeded + "{deadline=start}": 0, DeadlineExceeded + "{deadline=controlPlane}": 0,
			DeadlineExceeded + "{deadline=workers}": 0, DeadlineExceeded + "{deadline=postCheck}": 0,
			UpgradeWindowBreached + "{}": 0, ControlPlaneTimeout + "{version=4.16.2}": 0, WorkerTimeout + "{version=4.16.2}": 0,
			UpgradeStateTimestamp + "{state=scheduled,version=4.16.2}": sec(0),
		},
		absent: []string{CurrentStepInfo, UpgradeStarted, HealthCheckFailed, ClusterCheckFailed, ScalingFailed},
	}, {
		name: "start deadline passed while a pre-upgrade check fails",
		status: upgradev1alpha1.UpgradeConfigStatus{
			History: []upgradev1alpha1.UpgradeHistory{{Version: "4.16.2", Phase: upgradev1alpha1.UpgradePhaseUpgrading, StartTime: at(0),
				Conditions: upgradev1alpha1.Conditions{step(plan.StepClusterHealthyBeforeUpgrade, false, 1, 0)}}},
			CurrentStep: string(plan.StepClusterHealthyBeforeUpgrade),
			Preflight: []upgradev1alpha1.PreflightCheck{
				{Check: plan.CheckCriticalAlerts, Passed: true}, {Check: plan.CheckClusterOperators, Passed: false},
				{Check: plan.CheckPodDisruptionBudgets, Passed: false},
			},
			Conditions: []metav1.Condition{cond("DeadlineExceeded", metav1.ConditionTrue, "StartDeadlineExceeded")}},
		want: map[string]float64{
			Phase + "{phase=Upgrading}": 1, CurrentStepInfo + "{step=ClusterHealthyBeforeUpgrade}": 1,
			DeadlineExceeded + "{deadline=start}": 1, DeadlineExceeded + "{deadline=controlPlane}": 0,
			UpgradeWindowBreached + "{}": 1, ControlPlaneTimeout + "{version=4.16.2}": 0,
			PreflightCheckFailing + "{check=ClusterOperators}": 1, PreflightCheckFailing + "{check=CriticalAlerts}": 0,
			PreflightCheckFailing + "{check=PodDisruptionBudgets}":                                   1,
			HealthCheckFailed + "{reason=cluster_operators_degraded,state=Upgrading,version=4.16.1}": 1,
			HealthCheckFailed + "{reason=critical_alerts_firing,state=Upgrading,version=4.16.1}":     0,
			HealthCheckFailed + "{reason=pdb_blocks_drain,state=Upgrading,version=4.16.1}":           1,
			ClusterCheckFailed + "{}":                                  1,
			UpgradeStarted + "{_id=" + cluster.ID + ",version=4.16.2}": sec(0),
			UpgradeStateTimestamp + "{state=started,version=4.16.2}":   sec(0),
		},
		absent: []string{ControlPlaneStarted, ControlPlaneCompleted, ScalingFailed},
	}, {
		name: "control plane late, capacity timed out, checks passing",
		status: upgradev1alpha1.UpgradeConfigStatus{
			History: []upgradev1alpha1.UpgradeHistory{{Version: "4.16.2", Phase: upgradev1alpha1.UpgradePhaseUpgrading, StartTime: at(0),
				Conditions: upgradev1alpha1.Conditions{
					step(plan.StepControlPlaneUpgraded, false, 40, 0), step(plan.StepUpgradeCommenced, true, 39, 40),
					step(plan.StepComputeCapacityReserved, true, 5, 35)}}},
			CurrentStep:         string(plan.StepControlPlaneUpgraded),
			CapacityReservation: &upgradev1alpha1.CapacityReservationStatus{Outcome: plan.CapacityTimedOut},
			Preflight:           []upgradev1alpha1.PreflightCheck{{Check: plan.CheckClusterOperators, Passed: true}},
			Conditions:          []metav1.Condition{cond("DeadlineExceeded", metav1.ConditionTrue, "ControlPlaneDeadlineExceeded")}},
		want: map[string]float64{
			ControlPlaneTimeout + "{version=4.16.2}": 1, WorkerTimeout + "{version=4.16.2}": 0, UpgradeWindowBreached + "{}": 0,
			DeadlineExceeded + "{deadline=controlPlane}": 1, DeadlineExceeded + "{deadline=start}": 0,
			ScalingFailed + "{}": 1, CapacityReservationSet + "{outcome=TimedOut}": 1, CapacityReservationSet + "{outcome=Ready}": 0,
			ClusterCheckFailed + "{}": 0,
			ControlPlaneStarted + "{_id=" + cluster.ID + ",version=4.16.2}":        sec(40),
			UpgradeStateTimestamp + "{state=control_plane_started,version=4.16.2}": sec(40),
		},
		absent: []string{ControlPlaneCompleted, WorkerNodesStarted, UpgradeCompleted},
	}, {
		name: "upgraded: every timestamp; workers start when the control plane completes unless recorded",
		status: upgradev1alpha1.UpgradeConfigStatus{
			History: []upgradev1alpha1.UpgradeHistory{{Version: "4.16.2", PrecedingVersion: "4.16.1", Phase: upgradev1alpha1.UpgradePhaseUpgraded,
				StartTime: at(0), CompleteTime: at(200), WorkerCompleteTime: at(150),
				Conditions: upgradev1alpha1.Conditions{
					step(plan.StepCompletedNotificationSent, true, 200, 200), step(plan.StepWorkerNodesUpgraded, true, 90, 160),
					step(plan.StepControlPlaneUpgraded, true, 40, 90), step(plan.StepUpgradeCommenced, true, 39, 40)}}},
			CapacityReservation: &upgradev1alpha1.CapacityReservationStatus{Outcome: plan.CapacityRemoved},
			Conditions:          []metav1.Condition{cond("DeadlineExceeded", metav1.ConditionFalse, "WithinDeadlines")}},
		want: map[string]float64{
			Phase + "{phase=Upgraded}": 1, Phase + "{phase=Upgrading}": 0, ScalingFailed + "{}": 0,
			UpgradeStarted + "{_id=" + cluster.ID + ",version=4.16.2}":        sec(0),
			ControlPlaneStarted + "{_id=" + cluster.ID + ",version=4.16.2}":   sec(40),
			ControlPlaneCompleted + "{_id=" + cluster.ID + ",version=4.16.2}": sec(90),
			WorkerNodesStarted + "{_id=" + cluster.ID + ",version=4.16.2}":    sec(90),
			// The recorded worker completion wins over the step's.
			WorkerNodesCompleted + "{_id=" + cluster.ID + ",version=4.16.2}": sec(150),
			UpgradeCompleted + "{_id=" + cluster.ID + ",version=4.16.2}":     sec(200),
			UpgradeStateTimestamp + "{state=finished,version=4.16.2}":        sec(200),
			UpgradeStateTimestamp + "{state=workers_started,version=4.16.2}": sec(90),
		},
		absent: []string{CurrentStepInfo},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := series(Samples(uc(tc.status), cluster))
			for k, v := range tc.want {
				if g, ok := got[k]; !ok || g != v {
					t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
				}
			}
			for _, name := range tc.absent {
				for k := range got {
					if strings.HasPrefix(k, name+"{") {
						t.Errorf("%s has a series, want none", k)
					}
				}
			}
			if t.Failed() {
				t.Logf("all series: %v", got)
			}
		})
	}
}

func TestStepsCompletedCountsEachCompletionOnce(t *testing.T) {
	before := upgradev1alpha1.UpgradeConfigStatus{History: []upgradev1alpha1.UpgradeHistory{{Version: "4.16.2",
		Conditions: upgradev1alpha1.Conditions{step(plan.StepUpgradeCommenced, false, 39, 0), step(plan.StepComputeCapacityReserved, true, 5, 35)}}}}
	after := upgradev1alpha1.UpgradeConfigStatus{History: []upgradev1alpha1.UpgradeHistory{{Version: "4.16.2",
		Conditions: upgradev1alpha1.Conditions{
			step(plan.ConditionFailedUpgrade, true, 41, 41), step(plan.StepControlPlaneUpgraded, false, 40, 0),
			step(plan.StepUpgradeCommenced, true, 39, 40), step(plan.StepComputeCapacityReserved, true, 5, 35)}}}}
	got := StepsCompleted(&before, &after)
	if len(got) != 1 || got[0].Step != string(plan.StepUpgradeCommenced) || got[0].Duration != time.Minute {
		t.Errorf("StepsCompleted = %+v, want UpgradeCommenced in 1m only", got)
	}
	if again := StepsCompleted(&after, &after); len(again) != 0 {
		t.Errorf("an unchanged status completed %+v", again)
	}
	// A new target: its steps are new even if an older attempt had them.
	next := *after.DeepCopy()
	next.History = append([]upgradev1alpha1.UpgradeHistory{{Version: "4.16.3",
		Conditions: upgradev1alpha1.Conditions{step(plan.StepComputeCapacityReserved, true, 300, 330)}}}, next.History...)
	if got := StepsCompleted(&after, &next); len(got) != 1 || got[0].Duration != 30*time.Minute {
		t.Errorf("StepsCompleted for a new target = %+v", got)
	}
}

// gathered returns reg's series of a metric as "k=v,..." -> value.
func gathered(t *testing.T, reg prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	out, err := metricstest.Series(reg, name)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestExporterDeletesSeriesThatGoAway(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := New(reg)
	a := []Sample{
		{Name: CurrentStepInfo, Labels: map[string]string{LabelNamespace: "ns", LabelName: "a", LabelStep: "UpgradeCommenced"}, Value: 1},
		{Name: UpgradeStateTimestamp, Labels: map[string]string{LabelVersion: "4.16.2", LabelState: "started"}, Value: 10},
	}
	b := []Sample{{Name: UpgradeStateTimestamp, Labels: map[string]string{LabelVersion: "4.16.2", LabelState: "started"}, Value: 10}}
	e.Update("ns/a", a)
	e.Update("ns/b", b)
	if got := gathered(t, reg, CurrentStepInfo); got["name=a,namespace=ns,step=UpgradeCommenced"] != 1 {
		t.Fatalf("current step = %v", got)
	}
	// The step moves on: the old step's series goes.
	a[0].Labels = map[string]string{LabelNamespace: "ns", LabelName: "a", LabelStep: "ControlPlaneUpgraded"}
	e.Update("ns/a", a)
	if got := gathered(t, reg, CurrentStepInfo); len(got) != 1 || got["name=a,namespace=ns,step=ControlPlaneUpgraded"] != 1 {
		t.Errorf("current step after moving on = %v", got)
	}
	// a goes away; the state series b shares stays.
	e.Forget("ns/a")
	if got := gathered(t, reg, CurrentStepInfo); len(got) != 0 {
		t.Errorf("current step of a forgotten UpgradeConfig = %v", got)
	}
	if got := gathered(t, reg, UpgradeStateTimestamp); got["state=started,version=4.16.2"] != 10 {
		t.Errorf("state timestamp shared with b = %v", got)
	}
	e.Forget("ns/b")
	if got := gathered(t, reg, UpgradeStateTimestamp); len(got) != 0 {
		t.Errorf("state timestamps after both forgotten = %v", got)
	}
}

func TestClearNotificationFailed(t *testing.T) {
	m := New(prometheus.NewRegistry())
	m.ObserveNotification("uc-clear", plan.EventStarted, "failed")
	m.ObserveNotification("uc-clear", plan.EventFailed, "failed")
	m.ObserveNotification("uc-clear", plan.EventCompleted, "sent")
	values := func() map[string]float64 {
		ch := make(chan prometheus.Metric, 64)
		m.notificationFailed.Collect(ch)
		close(ch)
		out := map[string]float64{}
		for m := range ch {
			var d dto.Metric
			_ = m.Write(&d)
			var uc, event string
			for _, l := range d.Label {
				switch l.GetName() {
				case LabelUpgradeConfig:
					uc = l.GetValue()
				case LabelEvent:
					event = l.GetValue()
				}
			}
			if uc == "uc-clear" {
				out[event] = d.GetGauge().GetValue()
			}
		}
		return out
	}
	m.ClearNotificationFailed("uc-clear", func(e string) bool { return e == plan.EventFailed })
	want := map[string]float64{plan.EventStarted: 0, plan.EventFailed: 1, plan.EventCompleted: 0}
	if got := values(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the started notice stopped being wanted: %v, want %v", got, want)
	}
	m.ClearNotificationFailed("uc-clear", nil)
	if got := values(); len(got) != 0 {
		t.Fatalf("after the UpgradeConfig is gone: %v", got)
	}
}

// MUO's node_drain_timeout, by node only: 1 while a timed-out drain is open,
// 0 once it ended; no series for a drain that never timed out or that a
// node-gate run owns.
func TestNodeDrainTimeout(t *testing.T) {
	open := &commonv1alpha1.DrainRecord{Request: "drain-rendered-worker-2", StartTime: *at(0)}
	ended := open.DeepCopy()
	ended.CompletionTime = at(80)
	st := upgradev1alpha1.UpgradeConfigStatus{Drains: []upgradev1alpha1.NodeDrain{
		{Node: "w1", Owner: upgradev1alpha1.DrainOwnerScheduler, Record: open, TimedOutTime: at(76)},
		{Node: "w2", Owner: upgradev1alpha1.DrainOwnerScheduler, Record: ended, TimedOutTime: at(76)},
		{Node: "w3", Owner: upgradev1alpha1.DrainOwnerScheduler, Record: open},
		{Node: "w4", Owner: "MutexRunConfig db/workers"},
	}}
	got := map[string]float64{}
	for _, s := range Samples(uc(st), cluster) {
		if s.Name == NodeDrainTimeout {
			if len(s.Labels) != 1 {
				t.Fatalf("labels %v, want MUO's node_name only", s.Labels)
			}
			got[s.Labels[LabelNode]] = s.Value
		}
	}
	if want := map[string]float64{"w1": 1, "w2": 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("%s = %v, want %v", NodeDrainTimeout, got, want)
	}
}

// MUO's stream label: y when the minor changes, z when not, unknown when a
// version does not read as x.y.z.
func TestStream(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{"4.16.1", "4.16.2", "z"}, {"4.15.30", "4.16.2", "y"}, {"4.16.1", "4.16.2-rc.1", "z"},
		{"", "4.16.2", "unknown"}, {"4.16", "4.16.2", "unknown"}, {"4.16.1", "quay.io/x@sha256:1", "unknown"},
	} {
		if got := Stream(c.from, c.to); got != c.want {
			t.Errorf("Stream(%q, %q) = %q, want %q", c.from, c.to, got, c.want)
		}
	}
}
