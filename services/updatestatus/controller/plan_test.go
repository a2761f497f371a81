package controller

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// status builds an UpgradeStatus status: the control plane updating or not
// with an assessment, and worker pools with assessments.
func status(cpUpdating bool, cpAssessment updatev1alpha1.ControlPlaneAssessment, pools ...string) updatev1alpha1.UpgradeStatusStatus {
	cond := func(updating bool) metav1.Condition {
		c := metav1.Condition{Type: updatev1alpha1.ConditionUpdating, Status: metav1.ConditionFalse, Reason: "X", LastTransitionTime: metav1.NewTime(t0)}
		if updating {
			c.Status = metav1.ConditionTrue
		}
		return c
	}
	s := updatev1alpha1.UpgradeStatusStatus{ControlPlane: &updatev1alpha1.ControlPlane{
		Conditions: []metav1.Condition{cond(cpUpdating)},
		ClusterVersion: &updatev1alpha1.ClusterVersionStatusInsight{
			Assessment: cpAssessment, Completion: 50,
			Versions: updatev1alpha1.ControlPlaneUpdateVersions{
				Previous: &updatev1alpha1.Version{Version: "4.18.0"}, Target: updatev1alpha1.Version{Version: "4.18.1"}},
		},
	}}
	for _, p := range pools {
		name, assessment, _ := strings.Cut(p, "=")
		a := updatev1alpha1.PoolAssessment(assessment)
		s.WorkerPools = append(s.WorkerPools, updatev1alpha1.Pool{Name: name,
			Conditions: []metav1.Condition{cond(a == updatev1alpha1.PoolProgressing || a == updatev1alpha1.PoolDegraded)},
			Pool:       updatev1alpha1.MachineConfigPoolStatusInsight{Name: name, Assessment: a}})
	}
	return s
}

// withConditions adds the controller's own conditions as a plan writes them.
func withConditions(s updatev1alpha1.UpgradeStatusStatus, beatAt *time.Time) updatev1alpha1.UpgradeStatusStatus {
	meta.SetStatusCondition(&s.Conditions, statusCondition(nil, t0.Add(-time.Hour)))
	if beatAt != nil {
		s.Conditions = append(s.Conditions, metav1.Condition{Type: updatev1alpha1.ConditionHeartbeat, Status: metav1.ConditionTrue,
			Reason: reasonUpdating, Message: "The cluster is updating; this condition is refreshed at most once a minute.",
			LastTransitionTime: metav1.NewTime(*beatAt)})
	}
	return s
}

func reasons(evs []events.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return out
}

func TestDecideEventsComeWithTheStatusWriteThatMakesTheTransition(t *testing.T) {
	recent := t0.Add(-10 * time.Second)
	tests := []struct {
		name      string
		published updatev1alpha1.UpgradeStatusStatus
		desired   updatev1alpha1.UpgradeStatusStatus
		write     bool
		events    []string
	}{
		{"nothing published yet: a write, no history told",
			updatev1alpha1.UpgradeStatusStatus{}, status(true, "Progressing", "worker=Pending"), true, nil},
		{"nothing changed: no write, no Event",
			withConditions(status(true, "Progressing", "worker=Pending"), &recent), status(true, "Progressing", "worker=Pending"), false, nil},
		{"update starts",
			withConditions(status(false, "Completed", "worker=Completed"), nil), status(true, "Progressing", "worker=Completed"), true,
			[]string{"ControlPlaneUpdateStarted", "ControlPlaneProgressing"}},
		{"update ends",
			withConditions(status(true, "Progressing", "worker=Progressing"), &recent), status(false, "Completed", "worker=Completed"), true,
			[]string{"ControlPlaneUpdateCompleted", "ControlPlaneCompleted", "WorkerPoolCompleted"}},
		{"the control plane turns slow",
			withConditions(status(true, "Progressing"), &recent), status(true, "Progressing - Slow"), true,
			[]string{"ControlPlaneProgressingSlow"}},
		{"one pool of two degrades, a new pool appears",
			withConditions(status(true, "Progressing", "a=Progressing", "b=Progressing"), &recent),
			status(true, "Progressing", "a=Progressing", "b=Degraded", "c=Pending"), true,
			[]string{"WorkerPoolDegraded"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := decide(planInput{now: t0, published: tc.published, desired: tc.desired})
			if (p.status != nil) != tc.write {
				t.Fatalf("status write = %v, want %v", p.status != nil, tc.write)
			}
			if got := reasons(p.events); strings.Join(got, ",") != strings.Join(tc.events, ",") {
				t.Errorf("events = %v, want %v", got, tc.events)
			}
		})
	}
}

func TestPoolEventsNameTheirPool(t *testing.T) {
	us := &updatev1alpha1.UpgradeStatus{ObjectMeta: metav1.ObjectMeta{Name: updatev1alpha1.UpgradeStatusName, UID: "us-uid"}}
	evs := transitionEvents(us, ptr.To(status(true, "Progressing", "infra=Progressing")), ptr.To(status(true, "Progressing", "infra=Degraded")))
	if len(evs) != 1 || evs[0].Type() != "Warning" ||
		evs[0].Note != "Worker pool infra assessment changed from Progressing to Degraded (0% complete)" {
		t.Fatalf("events = %+v", evs)
	}
	if pool, ok := evs[0].Related.(*mcfgv1.MachineConfigPool); !ok || pool.Name != "infra" || pool.Kind != "MachineConfigPool" {
		t.Errorf("related = %+v, want MachineConfigPool infra", evs[0].Related)
	}
	if evs[0].Regarding != us {
		t.Errorf("regarding = %+v, want the UpgradeStatus", evs[0].Regarding)
	}
}

func TestDecideWithoutAnAssessmentKeepsTheInsightsAndSaysWhy(t *testing.T) {
	pub := withConditions(status(true, "Progressing", "worker=Progressing"), nil)
	p := decide(planInput{now: t0, published: pub, assessErr: errors.New("no cluster version information available")})
	if p.status == nil {
		t.Fatal("no status write")
	}
	if len(p.events) != 0 || len(p.nodes) != 0 || p.requeueAfter != 0 {
		t.Errorf("events %v, node writes %v, requeue %v: want none", p.events, p.nodes, p.requeueAfter)
	}
	c := meta.FindStatusCondition(p.status.Conditions, updatev1alpha1.ConditionStatusAvailable)
	if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "no cluster version") {
		t.Errorf("StatusAvailable = %+v", c)
	}
	if p.status.WorkerPools[0].Pool.Assessment != "Progressing" {
		t.Errorf("the insights were not kept")
	}
}

func TestHeartbeat(t *testing.T) {
	beat := func(s metav1.ConditionStatus, ago time.Duration) *metav1.Condition {
		return &metav1.Condition{Type: updatev1alpha1.ConditionHeartbeat, Status: s, LastTransitionTime: metav1.NewTime(t0.Add(-ago))}
	}
	tests := []struct {
		name       string
		published  *metav1.Condition
		updating   bool
		want       metav1.ConditionStatus // "" for no write
		wantReason string
		next       time.Duration // from t0; 0 for none
	}{
		{"idle, never updated: nothing", nil, false, "", "", 0},
		{"idle after an update: False once", beat(metav1.ConditionTrue, 30*time.Second), false, metav1.ConditionFalse, reasonIdle, 0},
		{"idle, already False: nothing", beat(metav1.ConditionFalse, time.Hour), false, "", "", 0},
		{"update starts: True now", nil, true, metav1.ConditionTrue, reasonUpdating, time.Minute},
		{"update starts again after idle", beat(metav1.ConditionFalse, time.Hour), true, metav1.ConditionTrue, reasonUpdating, time.Minute},
		{"refreshed 30s ago: not yet, due in 30s", beat(metav1.ConditionTrue, 30*time.Second), true, "", "", 30 * time.Second},
		{"refreshed a minute ago: refresh", beat(metav1.ConditionTrue, time.Minute), true, metav1.ConditionTrue, reasonUpdating, time.Minute},
		{"refreshed long ago: refresh", beat(metav1.ConditionTrue, time.Hour), true, metav1.ConditionTrue, reasonUpdating, time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, next := heartbeat(tc.published, tc.updating, t0)
			switch {
			case tc.want == "" && c != nil:
				t.Errorf("wrote %+v, want no write", c)
			case tc.want != "" && c == nil:
				t.Errorf("no write, want %s", tc.want)
			case c != nil && (c.Status != tc.want || c.Reason != tc.wantReason || !c.LastTransitionTime.Time.Equal(t0)):
				t.Errorf("wrote %s/%s at %v, want %s/%s at now", c.Status, c.Reason, c.LastTransitionTime, tc.want, tc.wantReason)
			}
			if (tc.next == 0) != next.IsZero() || (!next.IsZero() && next.Sub(t0) != tc.next) {
				t.Errorf("next refresh = %v, want now+%v", next, tc.next)
			}
		})
	}
}

func TestDecideRequeuesAtTheNextThresholdOrHeartbeat(t *testing.T) {
	recent := t0.Add(-10 * time.Second)
	idle := withConditions(status(false, "Completed", "worker=Completed"), nil)
	updating := withConditions(status(true, "Progressing", "worker=Progressing"), &recent)
	tests := []struct {
		name      string
		published updatev1alpha1.UpgradeStatusStatus
		desired   updatev1alpha1.UpgradeStatusStatus
		nextCheck time.Time
		want      time.Duration
	}{
		{"idle, nothing pending: never", idle, status(false, "Completed", "worker=Completed"), time.Time{}, 0},
		{"idle, an operator degraded for 3m: at 5m", idle, status(false, "Completed", "worker=Completed"), t0.Add(2 * time.Minute), 2 * time.Minute},
		{"updating: the heartbeat is due in 50s", updating, status(true, "Progressing", "worker=Progressing"), time.Time{}, 50 * time.Second},
		{"updating: a threshold before the heartbeat", updating, status(true, "Progressing", "worker=Progressing"), t0.Add(5 * time.Second), 5 * time.Second},
		{"updating: a threshold after the heartbeat", updating, status(true, "Progressing", "worker=Progressing"), t0.Add(5 * time.Minute), 50 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := decide(planInput{now: t0, published: tc.published, desired: tc.desired, nextCheck: tc.nextCheck})
			if p.requeueAfter != tc.want {
				t.Errorf("requeueAfter = %v, want %v", p.requeueAfter, tc.want)
			}
		})
	}
}

func nodeInsight(name, pool, phase string, degraded bool) updatev1alpha1.NodeStatusInsight {
	in := updatev1alpha1.NodeStatusInsight{Name: name,
		PoolResource: updatev1alpha1.PoolResourceRef{ResourceRef: updatev1alpha1.ResourceRef{Name: pool}},
		Conditions: []metav1.Condition{
			{Type: updatev1alpha1.ConditionUpdating, Status: metav1.ConditionFalse, Reason: phase},
			{Type: updatev1alpha1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: "AsExpected"},
		}}
	if degraded {
		in.Conditions[1].Status = metav1.ConditionTrue
	}
	return in
}

func pubNode(in updatev1alpha1.NodeStatusInsight) *updatev1alpha1.NodeProgressInsight {
	return &updatev1alpha1.NodeProgressInsight{
		ObjectMeta: metav1.ObjectMeta{Name: in.Name, Labels: updatev1alpha1.NodeInsightLabels(&in)},
		Status:     in,
	}
}

// ownerIn looks owners up in a map, as the reconciler does in its cache.
func ownerIn(owners map[string]metav1.OwnerReference) func(string) (metav1.OwnerReference, bool) {
	return func(node string) (metav1.OwnerReference, bool) {
		o, ok := owners[node]
		return o, ok
	}
}

func TestPlanNodes(t *testing.T) {
	long := strings.Repeat("p", 70)
	owners := map[string]metav1.OwnerReference{"a": {Name: "a"}, "b": {Name: "b"}, "c": {Name: "c"}, "d": {Name: "d"}, "e": {Name: "e"}}
	published := map[string]*updatev1alpha1.NodeProgressInsight{
		"b":    pubNode(nodeInsight("b", "worker", "Pending", false)),
		"c":    pubNode(nodeInsight("c", "worker", "Pending", false)),
		"d":    pubNode(nodeInsight("d", "worker", "Pending", false)),
		"e":    pubNode(nodeInsight("e", "worker", "Pending", false)),
		"gone": pubNode(nodeInsight("gone", "worker", "Completed", false)),
	}
	dMessage := nodeInsight("d", "worker", "Pending", false)
	dMessage.Message = "something to say"
	desired := []updatev1alpha1.NodeStatusInsight{
		nodeInsight("a", "worker", "Pending", false), // new
		nodeInsight("b", "worker", "Pending", false), // unchanged
		nodeInsight("c", "worker", "Draining", true), // phase and degraded change
		dMessage,                                 // status only
		nodeInsight("e", long, "Pending", false), // moved to a pool whose name is no label value
		nodeInsight("new-but-gone", "worker", "Pending", false), // its Node went away
	}
	// A node insight that exists but whose labels someone else changed.
	fLabels := pubNode(nodeInsight("f", "worker", "Pending", false))
	fLabels.Labels = map[string]string{updatev1alpha1.LabelPool: "worker", updatev1alpha1.LabelPhase: "Completed",
		updatev1alpha1.LabelDegraded: "false", "team": "blue"}
	published["f"] = fLabels
	owners["f"] = metav1.OwnerReference{Name: "f"}
	desired = append(desired, nodeInsight("f", "worker", "Pending", false))
	// Labels others set are not the controller's to compare.
	gTeam := pubNode(nodeInsight("g", "worker", "Pending", false))
	gTeam.Labels["team"] = "green"
	published["g"] = gTeam
	owners["g"] = metav1.OwnerReference{Name: "g"}
	desired = append(desired, nodeInsight("g", "worker", "Pending", false))

	ws := map[string]nodeWrite{}
	for _, w := range planNodes(published, desired, ownerIn(owners)) {
		ws[w.name] = w
	}
	if len(ws) != 6 {
		t.Errorf("writes for %d insights, want 6 (a, c, d, e, f, gone): %v", len(ws), ws)
	}
	// Every write but a delete is the whole insight: owner, labels, status.
	for _, name := range []string{"a", "c", "d", "e", "f"} {
		w := ws[name]
		want := desired[slices.IndexFunc(desired, func(n updatev1alpha1.NodeStatusInsight) bool { return n.Name == name })]
		if w.remove || w.status == nil || !equality.Semantic.DeepEqual(*w.status, want) || w.owner.Name != name ||
			!maps.Equal(w.labels, updatev1alpha1.NodeInsightLabels(&want)) {
			t.Errorf("%s: %+v, want an apply of the whole insight", name, w)
		}
	}
	if l := ws["c"].labels; l[updatev1alpha1.LabelPhase] != "Draining" || l[updatev1alpha1.LabelDegraded] != "true" {
		t.Errorf("c: labels %v, want phase Draining and degraded true", l)
	}
	if _, ok := ws["e"].labels[updatev1alpha1.LabelPool]; ok {
		t.Errorf("e: labels %v, want no pool label for a pool name that is no label value", ws["e"].labels)
	}
	if _, ok := ws["g"]; ok {
		t.Errorf("g differs only in a label the controller does not own, but is written")
	}
	if _, ok := ws["b"]; ok {
		t.Errorf("b is unchanged but written")
	}
	if w, ok := ws["gone"]; !ok || !w.remove {
		t.Errorf("gone: %+v, want a delete", w)
	}
	if _, ok := ws["new-but-gone"]; ok {
		t.Errorf("an insight is created for a Node that is gone")
	}
}

func TestLabelsAreFoundBySelectors(t *testing.T) {
	l := updatev1alpha1.NodeInsightLabels(ptr.To(nodeInsight("n", "infra", "Rebooting", true)))
	want := map[string]string{updatev1alpha1.LabelPool: "infra", updatev1alpha1.LabelPhase: "Rebooting", updatev1alpha1.LabelDegraded: "true", updatev1alpha1.LabelAvailable: "true"}
	for k, v := range want {
		if l[k] != v {
			t.Errorf("label %s = %q, want %q", k, l[k], v)
		}
	}
	unavailable := nodeInsight("n", "worker", "Pending", false)
	unavailable.Conditions = append(unavailable.Conditions, metav1.Condition{Type: updatev1alpha1.ConditionAvailable, Status: metav1.ConditionFalse, Reason: updatev1alpha1.ReasonNodeNotReady})
	if got := updatev1alpha1.NodeInsightLabels(&unavailable)[updatev1alpha1.LabelAvailable]; got != "false" {
		t.Errorf("an unavailable node's %s label = %q, want \"false\"", updatev1alpha1.LabelAvailable, got)
	}
}

// TestInsightsEqualIsSemanticDeepEqual holds insightsEqual to what it stands
// in for. Every field of a fully filled insight is changed in turn, found by
// reflection rather than listed, so a field added to the type is covered
// without editing the test.
func TestInsightsEqualIsSemanticDeepEqual(t *testing.T) {
	var a updatev1alpha1.NodeStatusInsight
	seed := 0
	fillEveryField(t, reflect.ValueOf(&a).Elem(), &seed)
	check := func(what string, b *updatev1alpha1.NodeStatusInsight) {
		t.Helper()
		want := equality.Semantic.DeepEqual(&a, b)
		if got, back := insightsEqual(&a, b), insightsEqual(b, &a); got != want || back != want {
			t.Errorf("%s: insightsEqual says %t (and %t the other way), Semantic.DeepEqual %t", what, got, back, want)
		}
	}
	check("a deep copy", a.DeepCopy())
	changes := 0
	for ; ; changes++ {
		b := a.DeepCopy()
		k := changes
		if !changeOne(reflect.ValueOf(b).Elem(), &k) {
			break
		}
		if equality.Semantic.DeepEqual(&a, b) {
			t.Fatalf("change %d changed nothing", changes)
		}
		check(fmt.Sprintf("change %d", changes), b)
	}
	// 6 strings, 2 × 4 in the references, 2 conditions × 6 fields, the
	// estimate's presence and value, the list's length: far more than 20.
	if changes < 20 {
		t.Fatalf("only %d fields changed: the walk misses some", changes)
	}

	// Equal in value, different in form.
	b := a.DeepCopy()
	for i := range b.Conditions {
		b.Conditions[i].LastTransitionTime = metav1.NewTime(b.Conditions[i].LastTransitionTime.In(time.FixedZone("UTC+1", 3600)))
	}
	check("the same instants in another zone", b)
	if !insightsEqual(&a, b) {
		t.Error("the same instants in another zone compare unequal")
	}
	noConditions, emptyConditions := a.DeepCopy(), a.DeepCopy()
	noConditions.Conditions, emptyConditions.Conditions = nil, []metav1.Condition{}
	if !insightsEqual(noConditions, emptyConditions) || !equality.Semantic.DeepEqual(noConditions, emptyConditions) {
		t.Error("a nil and an empty condition list compare unequal")
	}
}

var timeType = reflect.TypeFor[metav1.Time]()

// fillEveryField sets every field reachable from v to a distinct value that
// is not zero, with two elements in every list.
func fillEveryField(t *testing.T, v reflect.Value, seed *int) {
	*seed++
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(metav1.NewTime(t0.Add(time.Duration(*seed) * time.Second))))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *seed))
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*seed))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillEveryField(t, v.Elem(), seed)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillEveryField(t, v.Index(i), seed)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillEveryField(t, v.Field(i), seed)
			}
		}
	default:
		t.Fatalf("fillEveryField: a %s field: teach it that kind", v.Kind())
	}
}

// changeOne makes the k-th change that the walk of v can make (each leaf
// changed, each pointer set to nil, each list shortened) and says whether
// there was a k-th.
func changeOne(v reflect.Value, k *int) bool {
	here := func() bool {
		if *k == 0 {
			return true
		}
		*k--
		return false
	}
	if v.Type() == timeType {
		if here() {
			v.Set(reflect.ValueOf(metav1.NewTime(v.Interface().(metav1.Time).Add(time.Second))))
			return true
		}
		return false
	}
	switch v.Kind() {
	case reflect.String:
		if here() {
			v.SetString(v.String() + "x")
			return true
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		if here() {
			v.SetInt(v.Int() + 1)
			return true
		}
	case reflect.Bool:
		if here() {
			v.SetBool(!v.Bool())
			return true
		}
	case reflect.Pointer:
		if v.IsNil() {
			return false
		}
		if here() {
			v.Set(reflect.Zero(v.Type()))
			return true
		}
		return changeOne(v.Elem(), k)
	case reflect.Slice:
		if v.Len() > 0 && here() {
			v.Set(v.Slice(0, v.Len()-1))
			return true
		}
		for i := range v.Len() {
			if changeOne(v.Index(i), k) {
				return true
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && changeOne(v.Field(i), k) {
				return true
			}
		}
	}
	return false
}

func TestPlanPrototype(t *testing.T) {
	cp := status(true, "Progressing").ControlPlane
	cp.ClusterVersion.StartedAt = metav1.NewTime(t0)
	current, err := planPrototype(&prototypeState{}, cp)
	if err != nil || current == nil {
		t.Fatalf("planPrototype = %v, %v; want a value", current, err)
	}
	for _, want := range []string{"assessment: Progressing", "startedAt: \"2025-03-01T12:00:00Z\"", "target:"} {
		if !strings.Contains(*current, want) {
			t.Errorf("value %q lacks %q", *current, want)
		}
	}
	tests := []struct {
		name  string
		cur   *prototypeState
		cp    *updatev1alpha1.ControlPlane
		write bool
	}{
		{"no ConfigMap: never created", nil, cp, false},
		{"the key is missing", &prototypeState{}, cp, true},
		{"the key holds something else", &prototypeState{value: "assessment: Completed\n"}, cp, true},
		{"the key is current", &prototypeState{value: *current}, cp, false},
		{"no control plane insight", &prototypeState{}, nil, false},
		{"no ClusterVersion insight", &prototypeState{}, &updatev1alpha1.ControlPlane{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := planPrototype(tc.cur, tc.cp)
			if err != nil {
				t.Fatal(err)
			}
			if (got != nil) != tc.write {
				t.Fatalf("write = %v, want %v", got != nil, tc.write)
			}
			if got != nil && *got != *current {
				t.Errorf("value = %q, want %q", *got, *current)
			}
		})
	}

	// Without an assessment the key is left as it is.
	p := decide(planInput{now: t0, published: status(true, "Progressing"), desired: status(true, "Progressing"),
		assessErr: errors.New("no cluster version information available"), prototype: &prototypeState{}})
	if p.prototype != nil {
		t.Errorf("prototype written without an assessment: %q", *p.prototype)
	}
	p = decide(planInput{now: t0, desired: status(true, "Progressing"), prototype: &prototypeState{}, owner: ownerIn(nil)})
	if p.prototype == nil {
		t.Errorf("no prototype value planned with an assessment")
	}
}
