package assess

import (
	"errors"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

func mustAssess(t *testing.T, s Snapshot) Result {
	t.Helper()
	r, err := Assess(s, nil)
	if err != nil {
		t.Fatalf("Assess: %v", err)
	}
	return r
}

func TestAssessRefusesIncompleteSnapshots(t *testing.T) {
	noCV := baseSnapshot()
	noCV.ClusterVersion = nil
	noCOs := baseSnapshot()
	noCOs.ClusterOperators = nil
	noProgressing := baseSnapshot()
	noProgressing.ClusterVersion.Status.Conditions = noProgressing.ClusterVersion.Status.Conditions[1:]
	for name, tc := range map[string]struct {
		s    Snapshot
		want error
	}{
		"no ClusterVersion":     {noCV, ErrNoClusterVersion},
		"no ClusterOperators":   {noCOs, ErrNoClusterOperators},
		"no Progressing status": {noProgressing, ErrNoProgressingStatus},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Assess(tc.s, nil); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestControlPlaneAssessment(t *testing.T) {
	tests := []struct {
		name        string
		mutate      func(*Snapshot)
		assessment  updatev1alpha1.ControlPlaneAssessment
		completion  int32
		hasEstimate bool
	}{
		{"half of the operators updated", func(*Snapshot) {}, updatev1alpha1.ControlPlaneAssessmentProgressing, 50, true},
		{"all operators updated", func(s *Snapshot) {
			s.ClusterOperators[1] = co("kube-apiserver", "4.18.1")
		}, updatev1alpha1.ControlPlaneAssessmentCompleted, 100, false},
		{"operators without release annotations do not count", func(s *Snapshot) {
			s.ClusterOperators[1] = co("kube-apiserver", "4.18.0", notPlatform)
		}, updatev1alpha1.ControlPlaneAssessmentCompleted, 100, false},
		{"a bit over the estimate is slow", func(s *Snapshot) {
			// last progress 5m after start is too little to project from:
			// baseline 1h - 65m = -5m, shrunk to -4m10s.
			s.ClusterVersion = updatingCV(65 * time.Minute)
			s.ClusterOperators[1] = co("kube-apiserver", "4.18.0", withCond("Progressing", configv1.ConditionTrue, "", "", 60*time.Minute))
		}, updatev1alpha1.ControlPlaneAssessmentSlow, 50, true},
		{"far over the estimate is stalled", func(s *Snapshot) {
			// 1h - 2h = -60m, shrunk to -50m: more than 10m late.
			s.ClusterVersion = updatingCV(2 * time.Hour)
			s.ClusterOperators[1] = co("kube-apiserver", "4.18.0", withCond("Progressing", configv1.ConditionTrue, "", "", 115*time.Minute))
		}, updatev1alpha1.ControlPlaneAssessmentStalled, 50, true},
		{"machine-config with another image is not updated", func(s *Snapshot) {
			mco := co("machine-config", "4.18.1")
			mco.Status.Versions = append(mco.Status.Versions, configv1.OperandVersion{Name: "operator-image", Version: "old"})
			s.ClusterOperators = append(s.ClusterOperators, mco)
			s.MCOImage = "new"
		}, updatev1alpha1.ControlPlaneAssessmentProgressing, 33, true},
		{"machine-config with the deployment's image is updated", func(s *Snapshot) {
			mco := co("machine-config", "4.18.1")
			mco.Status.Versions = append(mco.Status.Versions, configv1.OperandVersion{Name: "operator-image", Version: "new"})
			s.ClusterOperators = append(s.ClusterOperators, mco)
			s.MCOImage = "new"
		}, updatev1alpha1.ControlPlaneAssessmentProgressing, 67, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := baseSnapshot()
			tc.mutate(&s)
			cv := mustAssess(t, s).Status.ControlPlane.ClusterVersion
			if cv.Assessment != tc.assessment {
				t.Errorf("assessment = %q, want %q", cv.Assessment, tc.assessment)
			}
			if cv.Completion != tc.completion {
				t.Errorf("completion = %d, want %d", cv.Completion, tc.completion)
			}
			if (cv.EstimatedCompletedAt != nil) != tc.hasEstimate {
				t.Errorf("estimatedCompletedAt = %v, want set: %v", cv.EstimatedCompletedAt, tc.hasEstimate)
			}
		})
	}
}

func TestNotUpdatingCluster(t *testing.T) {
	s := baseSnapshot()
	s.ClusterVersion = idleCV()
	s.ClusterOperators[1] = co("kube-apiserver", "4.18.1")
	cp := mustAssess(t, s).Status.ControlPlane
	updating := meta.FindStatusCondition(cp.Conditions, updatev1alpha1.ConditionUpdating)
	if updating == nil || updating.Status != metav1.ConditionFalse {
		t.Fatalf("Updating condition = %+v, want False", updating)
	}
	if cp.ClusterVersion.Assessment != updatev1alpha1.ControlPlaneAssessmentCompleted || cp.ClusterVersion.Completion != 100 {
		t.Errorf("assessment %q completion %d, want Completed 100", cp.ClusterVersion.Assessment, cp.ClusterVersion.Completion)
	}
	if cp.ClusterVersion.EstimatedCompletedAt != nil {
		t.Errorf("a finished update has no estimate, got %v", cp.ClusterVersion.EstimatedCompletedAt)
	}
}

func TestControlPlaneEstimateIsNowPlusRemaining(t *testing.T) {
	s := baseSnapshot()
	s.ClusterVersion = updatingCV(30 * time.Minute)
	s.ClusterOperators[1] = co("kube-apiserver", "4.18.0", withCond("Progressing", configv1.ConditionTrue, "", "", 30*time.Minute))
	cv := mustAssess(t, s).Status.ControlPlane.ClusterVersion
	// No progress observed after the start, so "last progress" is now (30m in).
	// 50% done: f(0.5) = 0.3895, projected 30m/0.3895 = 77.0m, (77.0-30)*1.2 = 56.4m -> 56m.
	if got := cv.EstimatedCompletedAt.Sub(now); got != 56*time.Minute {
		t.Errorf("remaining = %v, want 56m", got)
	}
	if !cv.StartedAt.Equal(&metav1.Time{Time: now.Add(-30 * time.Minute)}) {
		t.Errorf("startedAt = %v", cv.StartedAt)
	}
}

func TestOperatorInsights(t *testing.T) {
	s := baseSnapshot()
	s.ClusterOperators = append(s.ClusterOperators,
		co("network", "4.18.0"), // waiting: Progressing=False
		co("dns", "4.18.1", withCond("Available", configv1.ConditionFalse, "NoPods", "", time.Minute)),
		co("ingress", "4.18.1", withCond("Degraded", configv1.ConditionTrue, "Bad", "bad", time.Minute)),
	)
	cp := mustAssess(t, s).Status.ControlPlane
	want := map[string][2]string{ // name -> Updating reason, Healthy reason
		"dns":            {updatev1alpha1.ReasonUpdated, updatev1alpha1.ReasonUnavailable},
		"etcd":           {updatev1alpha1.ReasonUpdated, updatev1alpha1.ReasonAsExpected},
		"ingress":        {updatev1alpha1.ReasonUpdated, updatev1alpha1.ReasonDegraded},
		"kube-apiserver": {updatev1alpha1.ReasonProgressing, updatev1alpha1.ReasonAsExpected},
		"network":        {updatev1alpha1.ReasonPending, updatev1alpha1.ReasonAsExpected},
	}
	var names []string
	for _, in := range cp.ClusterOperators {
		names = append(names, in.Name)
		w, ok := want[in.Name]
		if !ok {
			t.Errorf("unexpected insight %s", in.Name)
			continue
		}
		if got := cond(in.Conditions, "Updating").Reason; got != w[0] {
			t.Errorf("%s Updating reason = %s, want %s", in.Name, got, w[0])
		}
		if got := cond(in.Conditions, "Healthy").Reason; got != w[1] {
			t.Errorf("%s Healthy reason = %s, want %s", in.Name, got, w[1])
		}
	}
	if len(names) != len(want) || names[0] != "dns" || names[4] != "network" {
		t.Errorf("insights not sorted by name or incomplete: %v", names)
	}
	kas := cp.ClusterOperators[3]
	if kas.ProgressingReason != "NodeInstaller" || cond(kas.Conditions, "Updating").Message != "installing revision 7" {
		t.Errorf("updating operator does not carry its Progressing reason and message: %+v", kas)
	}
}

func cond(cs []metav1.Condition, t string) metav1.Condition {
	for _, c := range cs {
		if c.Type == t {
			return c
		}
	}
	return metav1.Condition{}
}

func TestVersions(t *testing.T) {
	install := baseSnapshot()
	install.ClusterVersion.Status.History = install.ClusterVersion.Status.History[:1]
	partial := baseSnapshot()
	partial.ClusterVersion.Status.History = []configv1.UpdateHistory{
		partialEntry("4.18.2", 10*time.Minute), partialEntry("4.18.1", time.Hour), completedEntry("4.18.0", 5*time.Hour, 4*time.Hour),
	}
	multi := baseSnapshot()
	multi.ClusterVersion.Status.History = []configv1.UpdateHistory{
		partialEntry("4.18.1", 10*time.Minute), completedEntry("4.18.1", 5*time.Hour, 4*time.Hour),
	}
	multi.ClusterVersion.Status.History[0].Image = "multi-image"

	tests := []struct {
		name                      string
		s                         Snapshot
		previous                  string // "" = none
		target                    string
		installation, partial, ma bool
	}{
		{"update", baseSnapshot(), "4.18.0", "4.18.1", false, false, false},
		{"fresh install", install, "", "4.18.1", true, false, false},
		{"previous update incomplete", partial, "4.18.1", "4.18.2", false, true, false},
		{"multi-arch migration", multi, "4.18.1", "4.18.1", false, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := mustAssess(t, tc.s).Status.ControlPlane.ClusterVersion.Versions
			if (v.Previous == nil) != (tc.previous == "") || (v.Previous != nil && v.Previous.Version != tc.previous) {
				t.Errorf("previous = %+v, want %q", v.Previous, tc.previous)
			}
			if v.Target.Version != tc.target {
				t.Errorf("target = %q, want %q", v.Target.Version, tc.target)
			}
			if got := v.Target.HasMetadata(updatev1alpha1.InstallationMetadata); got != tc.installation {
				t.Errorf("Installation = %v, want %v", got, tc.installation)
			}
			if got := v.Previous != nil && v.Previous.HasMetadata(updatev1alpha1.PartialMetadata); got != tc.partial {
				t.Errorf("Partial = %v, want %v", got, tc.partial)
			}
			if got := v.Target.HasMetadata(updatev1alpha1.ArchitectureMetadata); got != tc.ma {
				t.Errorf("Architecture = %v, want %v", got, tc.ma)
			}
		})
	}
}

func TestNodePhases(t *testing.T) {
	five, ten, zero := 5*time.Minute, 10*time.Minute, time.Duration(0)
	tests := []struct {
		name       string
		node       *corev1.Node
		paused     bool
		phase      string
		available  metav1.ConditionStatus
		degraded   metav1.ConditionStatus
		estimate   *time.Duration
		version    string
		messageHas string
	}{
		{"updated", node("w", "worker", "w-new", "w-new", "Done"), false, "Completed", "True", "False", &zero, "4.18.1", ""},
		{"pending", node("w", "worker", "w-old", "w-old", "Done"), false, "Pending", "True", "False", nil, "4.18.0", ""},
		{"paused pool", node("w", "worker", "w-old", "w-old", "Done"), true, "Paused", "True", "False", &zero, "4.18.0", ""},
		{"updating", node("w", "worker", "w-old", "w-new", "Working"), false, "Updating", "True", "False", &five, "4.18.0", ""},
		{"rebooting", node("w", "worker", "w-old", "w-new", "Rebooting"), false, "Rebooting", "True", "False", &five, "4.18.0", ""},
		{"draining: drain requested, not applied", node("w", "worker", "w-old", "w-new", "Working",
			annotate(annoDesiredDrain, "drain-w-new"), annotate(annoLastAppliedDrain, "uncordon-w-old")), false, "Draining", "True", "False", &ten, "4.18.0", ""},
		{"draining: MCD not started yet", node("w", "worker", "w-old", "w-new", "Done",
			annotate(annoDesiredDrain, "uncordon-w-old"), annotate(annoLastAppliedDrain, "uncordon-w-old")), false, "Draining", "True", "False", &ten, "4.18.0", ""},
		{"desired config is not the pool's target: not updating", node("w", "worker", "w-old", "w-other", "Working"), false, "Pending", "False", "False", nil, "4.18.0", "Machine Config Daemon"},
		{"unknown configs: version unknown", node("w", "worker", "x", "x", "Done"), false, "Pending", "True", "False", nil, "", ""},
		{"degraded", node("w", "worker", "w-old", "w-new", "Degraded", annotate(annoReason, "failed to drain node w")), false, "Updating", "True", "True", nil, "4.18.0", "failed to drain"},
		{"not ready, not updating", node("w", "worker", "w-old", "w-old", "Done", notReadyFor(time.Hour)), false, "Pending", "False", "False", nil, "4.18.0", "Not ready"},
		{"not ready but updated", node("w", "worker", "w-new", "w-new", "Done", notReadyFor(time.Hour)), false, "Completed", "False", "False", &zero, "4.18.1", "Not ready"},
		{"cordoned and not ready", node("w", "worker", "w-old", "w-old", "Done", notReadyFor(time.Hour), cordoned), false, "Pending", "False", "False", nil, "4.18.0", "Not ready | Node is marked unschedulable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := baseSnapshot()
			s.MachineConfigPools[1].Spec.Paused = tc.paused
			s.Nodes = []*corev1.Node{tc.node}
			r := mustAssess(t, s)
			if len(r.Nodes) != 1 {
				t.Fatalf("got %d node insights", len(r.Nodes))
			}
			n := r.Nodes[0]
			if got := cond(n.Conditions, "Updating").Reason; got != tc.phase {
				t.Errorf("phase = %s, want %s", got, tc.phase)
			}
			if got := cond(n.Conditions, "Available").Status; got != tc.available {
				t.Errorf("Available = %s, want %s", got, tc.available)
			}
			if got := cond(n.Conditions, "Degraded").Status; got != tc.degraded {
				t.Errorf("Degraded = %s, want %s", got, tc.degraded)
			}
			if (n.EstimatedToComplete == nil) != (tc.estimate == nil) || (tc.estimate != nil && n.EstimatedToComplete.Duration != *tc.estimate) {
				t.Errorf("estimate = %v, want %v", n.EstimatedToComplete, tc.estimate)
			}
			if n.Version != tc.version {
				t.Errorf("version = %q, want %q", n.Version, tc.version)
			}
			if tc.messageHas == "" && n.Message != "" || !contains(n.Message, tc.messageHas) {
				t.Errorf("message = %q, want it to contain %q", n.Message, tc.messageHas)
			}
			if n.ScopeType != updatev1alpha1.ScopeTypeWorkerPool || n.PoolResource.Name != "worker" {
				t.Errorf("scope = %s pool = %s", n.ScopeType, n.PoolResource.Name)
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestPoolMembership(t *testing.T) {
	s := baseSnapshot()
	s.MachineConfigPools = append(s.MachineConfigPools, pool("infra", "infra", "i", false), pool("zeta", "infra", "z", false))
	both := node("both", "master", "m-old", "m-old", "Done")
	both.Labels["node-role.kubernetes.io/worker"] = ""
	infra := node("infra-0", "infra", "w-old", "w-old", "Done")
	infra.Labels["node-role.kubernetes.io/worker"] = ""
	s.Nodes = []*corev1.Node{both, infra, node("lost", "nothing", "", "", "")}
	r := mustAssess(t, s)
	got := map[string]string{}
	for _, n := range r.Nodes {
		got[n.Name] = n.PoolResource.Name
	}
	want := map[string]string{"both": "master", "infra-0": "infra"}
	if len(got) != len(want) || got["both"] != "master" || got["infra-0"] != "infra" {
		t.Errorf("membership = %v, want %v (nodes in no pool are left out)", got, want)
	}
}

func TestPoolAssessment(t *testing.T) {
	updated := node("a", "worker", "w-new", "w-new", "Done")
	pending := node("b", "worker", "w-old", "w-old", "Done")
	draining := node("c", "worker", "w-old", "w-new", "Working", annotate(annoDesiredDrain, "drain-x"), annotate(annoLastAppliedDrain, "uncordon-y"))
	degraded := node("d", "worker", "w-old", "w-new", "Degraded", annotate(annoReason, "boom"))
	tests := []struct {
		name       string
		nodes      []*corev1.Node
		paused     bool
		assessment updatev1alpha1.PoolAssessment
		completion int32
		summary    map[updatev1alpha1.NodeSummaryType]int32
	}{
		{"all updated", []*corev1.Node{updated}, false, updatev1alpha1.PoolCompleted, 100, map[updatev1alpha1.NodeSummaryType]int32{"Total": 1, "Available": 1, "Outdated": 0}},
		{"all pending", []*corev1.Node{pending, pending}, false, updatev1alpha1.PoolPending, 0, map[updatev1alpha1.NodeSummaryType]int32{"Total": 2, "Outdated": 2}},
		{"progressing", []*corev1.Node{updated, pending, draining}, false, updatev1alpha1.PoolProgressing, 33,
			map[updatev1alpha1.NodeSummaryType]int32{"Total": 3, "Available": 2, "Progressing": 1, "Draining": 1, "Outdated": 2}},
		{"degraded wins", []*corev1.Node{updated, degraded}, false, updatev1alpha1.PoolDegraded, 50,
			map[updatev1alpha1.NodeSummaryType]int32{"Degraded": 1, "Progressing": 0, "Outdated": 1}},
		{"paused", []*corev1.Node{updated, pending}, true, updatev1alpha1.PoolExcluded, 50, map[updatev1alpha1.NodeSummaryType]int32{"Excluded": 1, "Outdated": 1}},
		{"empty", nil, false, updatev1alpha1.PoolCompleted, 0, map[updatev1alpha1.NodeSummaryType]int32{"Total": 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := baseSnapshot()
			s.MachineConfigPools[1].Spec.Paused = tc.paused
			s.Nodes = tc.nodes
			r := mustAssess(t, s)
			if len(r.Status.WorkerPools) != 1 {
				t.Fatalf("worker pools = %d", len(r.Status.WorkerPools))
			}
			p := r.Status.WorkerPools[0].Pool
			if p.Assessment != tc.assessment || p.Completion != tc.completion {
				t.Errorf("assessment/completion = %s/%d, want %s/%d", p.Assessment, p.Completion, tc.assessment, tc.completion)
			}
			for k, v := range tc.summary {
				if got := p.Summary(k); got != v {
					t.Errorf("summary %s = %d, want %d", k, got, v)
				}
			}
		})
	}
}

func TestPercentRoundsHalfToEven(t *testing.T) {
	// 1/8 = 12.5% -> 12 (as %.0f prints it), 3/8 = 37.5% -> 38, 2/3 -> 67.
	for _, tc := range []struct{ part, total, want int }{{1, 8, 12}, {3, 8, 38}, {2, 3, 67}, {0, 0, 0}, {5, 5, 100}} {
		if got := percent(tc.part, tc.total); got != int32(tc.want) {
			t.Errorf("percent(%d,%d) = %d, want %d", tc.part, tc.total, got, tc.want)
		}
	}
}

func TestKeepStable(t *testing.T) {
	s := baseSnapshot()
	s.Nodes = append(s.Nodes, node("w-deg", "worker", "w-old", "w-new", "Degraded", annotate(annoReason, "boom")))
	first := mustAssess(t, s)

	// A later recomputation with the first result as Previous.
	s.Now = now.Add(time.Hour)
	prevNodes := map[string]*updatev1alpha1.NodeStatusInsight{}
	for i := range first.Nodes {
		prevNodes[first.Nodes[i].Name] = &first.Nodes[i]
	}
	firstStarted := metav1.NewTime(now.Add(-time.Minute))
	for i := range first.Status.Health {
		if first.Status.Health[i].UID == "node-w-deg-degraded" {
			first.Status.Health[i].StartedAt = &firstStarted // as if the controller recorded it
		}
	}
	second, err := Assess(s, &Previous{Status: &first.Status, Nodes: prevNodes})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range second.Nodes {
		if n.Name != "w-deg" {
			continue
		}
		if got := cond(n.Conditions, "Degraded").LastTransitionTime; !got.Equal(&metav1.Time{Time: now}) {
			t.Errorf("Degraded LTT = %v, want the first observation %v", got, now)
		}
	}
	found := false
	for _, h := range second.Status.Health {
		if h.UID == "node-w-deg-degraded" {
			found = true
			if h.StartedAt == nil || !h.StartedAt.Equal(&firstStarted) {
				t.Errorf("startedAt = %v, want %v kept", h.StartedAt, firstStarted)
			}
		}
	}
	if !found {
		t.Errorf("degraded node insight missing: %+v", second.Status.Health)
	}

	// Without Previous the time is now again, and the unknown start stays unknown.
	third := mustAssess(t, s)
	for _, h := range third.Status.Health {
		if h.UID == "node-w-deg-degraded" && h.StartedAt != nil {
			t.Errorf("startedAt = %v without previous, want none", h.StartedAt)
		}
	}
}

func TestEstimateIsKeptWithinJitter(t *testing.T) {
	s := baseSnapshot()
	first := mustAssess(t, s)
	est := first.Status.ControlPlane.ClusterVersion.EstimatedCompletedAt
	if est == nil {
		t.Fatal("the base snapshot should have an estimate")
	}
	for _, tc := range []struct {
		name string
		prev time.Duration // published estimate relative to the new one
		kept bool
	}{
		{"a few seconds of drift keeps the published estimate", 5 * time.Second, true},
		{"drift under a minute the other way keeps it too", -59 * time.Second, true},
		{"a real change replaces it", 3 * time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prevStatus := first.Status.DeepCopy()
			published := metav1.NewTime(est.Add(tc.prev))
			prevStatus.ControlPlane.ClusterVersion.EstimatedCompletedAt = &published
			r, err := Assess(s, &Previous{Status: prevStatus})
			if err != nil {
				t.Fatal(err)
			}
			got := r.Status.ControlPlane.ClusterVersion.EstimatedCompletedAt
			want := est
			if tc.kept {
				want = &published
			}
			if got == nil || !got.Equal(want) {
				t.Errorf("estimate = %v, want %v", got, want)
			}
		})
	}
}

func TestAlertEqual(t *testing.T) {
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	base := Alert{Labels: map[string]string{"alertname": "KubeNodeNotReady"}, Annotations: map[string]string{"summary": "s"}, State: "firing", ActiveAt: at}
	for name, tc := range map[string]struct {
		other Alert
		want  bool
	}{
		"the same":                         {base, true},
		"the same instant in another zone": {Alert{Labels: base.Labels, Annotations: base.Annotations, State: "firing", ActiveAt: at.In(time.FixedZone("CET", 3600))}, true},
		"another state":                    {Alert{Labels: base.Labels, Annotations: base.Annotations, State: "pending", ActiveAt: at}, false},
		"active since another time":        {Alert{Labels: base.Labels, Annotations: base.Annotations, State: "firing", ActiveAt: at.Add(time.Second)}, false},
		"another label":                    {Alert{Labels: map[string]string{"alertname": "Other"}, Annotations: base.Annotations, State: "firing", ActiveAt: at}, false},
		"another annotation":               {Alert{Labels: base.Labels, Annotations: map[string]string{"summary": "t"}, State: "firing", ActiveAt: at}, false},
	} {
		if got := base.Equal(tc.other); got != tc.want {
			t.Errorf("%s: Equal = %v, want %v", name, got, tc.want)
		}
	}
}
