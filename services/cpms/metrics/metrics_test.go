package metrics

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	machinev1 "github.com/openshift/api/machine/v1"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/upshift-io/upshift/libs/metricstest"
	"github.com/upshift-io/upshift/services/cpms/plan"
)

// series gathers a metric from g as "label=value,..." -> value (a
// histogram's sample count and sum as "<labels>#count", "<labels>#sum").
func series(t *testing.T, g prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	out, err := metricstest.Series(g, name)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var t0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

func pass(conds []metav1.Condition, ixs ...plan.IndexReport) plan.Output {
	return plan.Output{Indexes: ixs, Status: machinev1.ControlPlaneMachineSetStatus{Replicas: 4, ReadyReplicas: 3, UpdatedReplicas: 1, UnavailableReplicas: 0, Conditions: conds}}
}

func TestRecorderTransitions(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := New(reg)
	created := map[string]time.Time{"c1-master-abcde-0": t0}
	deleting := t0.Add(4 * time.Minute)
	before := series(t, reg, "upshift_cpms_replacement_duration_seconds")
	beforeHook := series(t, reg, "upshift_cpms_etcd_hook_wait_duration_seconds")

	// A replacement provisions, then the old machine waits on the etcd hook.
	r.Observe(t0.Add(time.Minute), pass(nil, plan.IndexReport{Index: 0, State: plan.ReplacementProvisioning, Machines: []string{"c1-master-0", "c1-master-abcde-0"}}), 3, created)
	if got := series(t, reg, "upshift_cpms_index_state")["index=0,state=ReplacementProvisioning"]; got != 1 {
		t.Fatalf("index 0 ReplacementProvisioning = %v, want 1", got)
	}
	r.Observe(t0.Add(5*time.Minute), pass(nil, plan.IndexReport{Index: 0, State: plan.OldDeleting, Machines: []string{"c1-master-0", "c1-master-abcde-0"}, DeletingSince: &deleting, HeldByEtcdHook: true}), 3, created)
	if got := series(t, reg, "upshift_cpms_etcd_hook_wait_start_timestamp_seconds")["index=0"]; got != float64(deleting.Unix()) {
		t.Fatalf("hook wait start = %v, want %v", got, deleting.Unix())
	}
	// The hook is released: the wait is timed, the start series goes.
	r.Observe(t0.Add(7*time.Minute), pass(nil, plan.IndexReport{Index: 0, State: plan.OldDeleting, Machines: []string{"c1-master-0", "c1-master-abcde-0"}, DeletingSince: &deleting}), 3, created)
	if _, ok := series(t, reg, "upshift_cpms_etcd_hook_wait_start_timestamp_seconds")["index=0"]; ok {
		t.Fatal("hook wait start still published after the release")
	}
	hook := series(t, reg, "upshift_cpms_etcd_hook_wait_duration_seconds")
	if hook["#count"]-beforeHook["#count"] != 1 || hook["#sum"]-beforeHook["#sum"] != 180 {
		t.Fatalf("hook wait histogram moved by %v samples / %v s, want 1 / 180", hook["#count"]-beforeHook["#count"], hook["#sum"]-beforeHook["#sum"])
	}
	// The old machine is gone: the replacement took 10 minutes from its creation.
	r.Observe(t0.Add(10*time.Minute), pass(nil, plan.IndexReport{Index: 0, State: plan.Stable, Machines: []string{"c1-master-abcde-0"}}), 3, created)
	d := series(t, reg, "upshift_cpms_replacement_duration_seconds")
	if d["#count"]-before["#count"] != 1 || d["#sum"]-before["#sum"] != 600 {
		t.Fatalf("replacement histogram moved by %v samples / %v s, want 1 / 600", d["#count"]-before["#count"], d["#sum"]-before["#sum"])
	}
	// Staying Stable times nothing again.
	r.Observe(t0.Add(11*time.Minute), pass(nil, plan.IndexReport{Index: 0, State: plan.Stable, Machines: []string{"c1-master-abcde-0"}}), 3, created)
	if d2 := series(t, reg, "upshift_cpms_replacement_duration_seconds"); d2["#count"] != d["#count"] {
		t.Fatal("a Stable index was timed twice")
	}
}

func TestRecorderFirstPassTimesNothing(t *testing.T) {
	// After a restart the first pass has no history: an index found Stable
	// is not a finished replacement.
	reg := prometheus.NewRegistry()
	r := New(reg)
	before := series(t, reg, "upshift_cpms_replacement_duration_seconds")["#count"]
	r.Observe(t0, pass(nil, plan.IndexReport{Index: 1, State: plan.Stable, Machines: []string{"c1-master-1"}}), 3, map[string]time.Time{"c1-master-1": t0.Add(-time.Hour)})
	if got := series(t, reg, "upshift_cpms_replacement_duration_seconds")["#count"]; got != before {
		t.Fatalf("first pass observed %v replacements", got-before)
	}
}

func TestBlockedReasons(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason}
	}
	cases := []struct {
		name  string
		conds []metav1.Condition
		want  []string
	}{
		{"rolling", []metav1.Condition{cond(plan.ConditionDegraded, metav1.ConditionFalse, plan.ReasonAsExpected), cond(plan.ConditionProgressing, metav1.ConditionTrue, plan.ReasonNeedsUpdateReplicas)}, nil},
		{"done", []metav1.Condition{cond(plan.ConditionProgressing, metav1.ConditionFalse, plan.ReasonAllReplicasUpdated)}, nil},
		{"inactive only observes", []metav1.Condition{cond(plan.ConditionProgressing, metav1.ConditionFalse, plan.ReasonInactive)}, nil},
		{"pre-flight", []metav1.Condition{cond(plan.ConditionProgressing, metav1.ConditionTrue, plan.ReasonNodesNotReady)}, []string{plan.ReasonNodesNotReady}},
		{"halted", []metav1.Condition{cond(plan.ConditionDegraded, metav1.ConditionTrue, plan.ReasonUnmanagedNodes), cond(plan.ConditionProgressing, metav1.ConditionFalse, plan.ReasonOperatorDegraded)}, []string{plan.ReasonUnmanagedNodes}},
		{"failed replacement", []metav1.Condition{cond(plan.ConditionDegraded, metav1.ConditionTrue, plan.ReasonFailedReplacement), cond(plan.ConditionProgressing, metav1.ConditionTrue, plan.ReasonFailedReplacement)}, []string{plan.ReasonFailedReplacement}},
		{"on delete", []metav1.Condition{cond(plan.ConditionProgressing, metav1.ConditionFalse, plan.ReasonWaitingForUserDeletion)}, []string{plan.ReasonWaitingForUserDeletion}},
		{"paused", []metav1.Condition{cond(plan.ConditionProgressing, metav1.ConditionFalse, plan.ReasonPaused)}, []string{plan.ReasonPaused}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			r := New(reg)
			r.Observe(t0, pass(tc.conds), 3, nil)
			got := series(t, reg, "upshift_cpms_blocked")
			var on []string
			for k, v := range got {
				if v == 1 {
					on = append(on, strings.TrimPrefix(k, "reason="))
				}
			}
			sort.Strings(on)
			if strings.Join(on, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("blocked %v, want %v", on, tc.want)
			}
			if len(got) != len(BlockedReasons) {
				t.Fatalf("%d reason series, want one per reason (%d)", len(got), len(BlockedReasons))
			}
		})
	}
}

func TestForgetRemovesIndexSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := New(reg)
	since := t0
	r.Observe(t0, pass(nil, plan.IndexReport{Index: 4, State: plan.OldDeleting, DeletingSince: &since, HeldByEtcdHook: true}), 3, nil)
	if series(t, reg, "upshift_cpms_index_state")["index=4,state=OldDeleting"] != 1 {
		t.Fatal("index 4 not published")
	}
	r.Forget()
	for k := range series(t, reg, "upshift_cpms_index_state") {
		if strings.Contains(k, "index=4,") {
			t.Fatalf("series %s left after Forget", k)
		}
	}
	if _, ok := series(t, reg, "upshift_cpms_etcd_hook_wait_start_timestamp_seconds")["index=4"]; ok {
		t.Fatal("hook wait start left after Forget")
	}
	if len(series(t, reg, "upshift_cpms_replicas")) != 0 {
		t.Fatal("replica gauges left after Forget")
	}
}

func TestConditionGauge(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := New(reg)
	conds := []metav1.Condition{
		{Type: plan.ConditionAvailable, Status: metav1.ConditionTrue, Reason: plan.ReasonAllReplicasAvailable},
		{Type: plan.ConditionDegraded, Status: metav1.ConditionTrue, Reason: plan.ReasonFailedReplacement},
		{Type: plan.ConditionProgressing, Status: metav1.ConditionFalse, Reason: plan.ReasonAllReplicasUpdated},
		{Type: plan.ConditionError, Status: metav1.ConditionTrue, Reason: plan.ReasonContinuousErrors},
	}
	r.Observe(t0, pass(conds), 3, nil)
	want := map[string]float64{"condition=Available": 1, "condition=Degraded": 1, "condition=Progressing": 0, "condition=Error": 1}
	if got := series(t, reg, "upshift_cpms_condition"); !equalSeries(got, want) {
		t.Fatalf("upshift_cpms_condition = %v, want %v", got, want)
	}
	// A condition missing from the status is not True.
	r.Observe(t0, pass(conds[:1]), 3, nil)
	want = map[string]float64{"condition=Available": 1, "condition=Degraded": 0, "condition=Progressing": 0, "condition=Error": 0}
	if got := series(t, reg, "upshift_cpms_condition"); !equalSeries(got, want) {
		t.Fatalf("upshift_cpms_condition = %v, want %v", got, want)
	}
}

func equalSeries(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestActionsCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := New(reg)
	// Every kind and result is published from the start, so a rate over
	// the counter has a series before the first mutation.
	if got := series(t, reg, "upshift_cpms_actions_total"); len(got) != 2*len(ActionKinds) {
		t.Fatalf("%d series, want %d", len(got), 2*len(ActionKinds))
	}
	r.ObserveAction(plan.CreateMachine, nil)
	r.ObserveAction(plan.DeleteMachine, errors.New("conflict"))
	got := series(t, reg, "upshift_cpms_actions_total")
	if got["kind=CreateMachine,result=success"] != 1 || got["kind=DeleteMachine,result=error"] != 1 || got["kind=DeleteMachine,result=success"] != 0 {
		t.Fatalf("upshift_cpms_actions_total = %v", got)
	}
}
