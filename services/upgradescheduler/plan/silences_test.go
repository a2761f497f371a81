package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/services/upgradescheduler/silence"
)

const silenceConfig = `maintenance:
  controlPlaneTime: 90
  ignoredAlerts:
    controlPlaneCriticals: [ClusterOperatorDown]
nodeDrain:
  timeOut: 45
  expectedNodeDrainTime: 8
`

func silenceWorld(t *testing.T) *world {
	w := newWorld(t)
	w.cfg = mustConfig(t, silenceConfig)
	w.uc.Spec.UpgradeAt = t0.Format(time.RFC3339)
	w.uc.Spec.CapacityReservation = false
	w.integrations = Integrations{Silences: true}
	return w
}

func purposes(ss []silence.Silence) []string {
	var out []string
	for _, s := range ss {
		out = append(out, strings.TrimPrefix(s.Lease(), "4.14.15/"))
	}
	slices.Sort(out)
	return out
}

func recorded(w *world) []string {
	var out []string
	for _, l := range w.uc.Status.Silences {
		out = append(out, l.Purpose+"="+l.ID)
	}
	return out
}

// The leases follow the phases: the control-plane pair from its window step
// to its removal step, renewed while it runs, the worker lease from its
// window step to its removal; every one recorded in status.silences and
// none left live at the end.
func TestSilencesFollowThePhases(t *testing.T) {
	w := silenceWorld(t)
	w.settle()
	if w.uc.Status.CurrentStep != string(StepControlPlaneUpgraded) {
		t.Fatalf("at %s", w.uc.Status.CurrentStep)
	}
	live := w.am.live(w.now)
	if got := purposes(live); !slices.Equal(got, []string{"control-plane", "control-plane-criticals"}) {
		t.Fatalf("live leases %v", got)
	}
	if got := recorded(w); len(got) != 2 || got[0] != "control-plane="+live[0].ID && got[0] != "control-plane="+live[1].ID {
		t.Fatalf("status.silences %v, live %+v", got, live)
	}
	if c := w.stepCondition(StepControlPlaneMaintenanceWindowCreated); c.Status != corev1.ConditionTrue || !strings.Contains(c.Message, "control plane silence s") {
		t.Fatalf("window step %+v", c)
	}
	for _, s := range live {
		if !s.EndsAt.Equal(t0.Add(silence.DefaultTTL)) {
			t.Fatalf("lease %s ends %v, want now+TTL", s.ID, s.EndsAt)
		}
	}
	ids := recorded(w)

	// 20 minutes on: less than half the TTL left, both renewed in place.
	w.now = w.now.Add(20 * time.Minute)
	w.plan()
	if w.am.posts[silence.Extend] != 2 || !slices.Equal(recorded(w), ids) {
		t.Fatalf("renewal: posts %v, status %v (was %v)", w.am.posts, recorded(w), ids)
	}
	if l := w.uc.Status.Silences[0]; l.EndsAt == nil || !l.EndsAt.Time.Equal(w.now.Add(silence.DefaultTTL)) {
		t.Fatalf("renewed end %+v", l.EndsAt)
	}
	// A restart: the status write was lost, the lease is re-adopted.
	w.uc.Status.Silences = nil
	w.plan()
	if w.am.posts[silence.Create] != 2 || !slices.Equal(recorded(w), ids) {
		t.Fatalf("re-adoption: posts %v, status %v", w.am.posts, recorded(w))
	}

	// The control plane is done; two of three workers still to go, with
	// maxUnavailable 2: the worker lease's window is one round of drain and
	// node time from the window step, not three.
	w.now = w.now.Add(10 * time.Minute)
	w.cvo()
	w.snap.Pools[1] = pool("worker", 3, 1, "rendered-worker-2")
	w.snap.Pools[1].Status.Configuration.Name = "rendered-worker-1"
	w.snap.Pools[1].Spec.MaxUnavailable = ptr(intstr.FromInt32(2))
	w.settle()
	if w.uc.Status.CurrentStep != string(StepWorkerNodesUpgraded) {
		t.Fatalf("at %s", w.uc.Status.CurrentStep)
	}
	live = w.am.live(w.now)
	if got := purposes(live); !slices.Equal(got, []string{"workers"}) {
		t.Fatalf("live leases in the worker phase %v", got)
	}
	window := w.last.Silences.Wanted[0].End
	if want := w.now.Add(60*time.Minute + 8*time.Minute); !window.Equal(want) {
		t.Fatalf("worker window ends %v, want %v (one round of max(60m PDB, 45m) + 8m)", window, want)
	}
	if !live[0].EndsAt.Equal(w.now.Add(silence.DefaultTTL)) {
		t.Fatalf("worker lease ends %v", live[0].EndsAt)
	}

	w.now = w.now.Add(20 * time.Minute)
	w.mco()
	w.settle()
	if w.phase() != upgradev1alpha1.UpgradePhaseUpgraded {
		t.Fatalf("phase %s", w.phase())
	}
	if live := w.am.live(w.now); len(live) != 0 || len(w.uc.Status.Silences) != 0 {
		t.Fatalf("left at the end: live %+v, status %+v", live, w.uc.Status.Silences)
	}
	if c := w.stepCondition(StepWorkersMaintenanceWindowRemoved); c.Status != corev1.ConditionTrue || !strings.Contains(c.Message, "worker silence expired") {
		t.Fatalf("removal step %+v", c)
	}
}

// Every way an attempt ends expires its leases.
func TestSilencesExpireOnEveryTerminalPath(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(w *world)
		want upgradev1alpha1.UpgradePhase
	}{
		{"failed at the control-plane deadline", func(w *world) {
			w.uc.Spec.Deadlines = &upgradev1alpha1.Deadlines{ControlPlane: &upgradev1alpha1.Deadline{Policy: upgradev1alpha1.DeadlineFail}}
			w.uc.Generation++
			w.now = w.now.Add(91 * time.Minute)
		}, upgradev1alpha1.UpgradePhaseFailed},
		{"superseded by a new target", func(w *world) {
			w.snap.ClusterVersion.Status.AvailableUpdates = append(w.snap.ClusterVersion.Status.AvailableUpdates, w.snap.ClusterVersion.Status.AvailableUpdates[0])
			w.snap.ClusterVersion.Status.AvailableUpdates[1].Version = "4.14.16"
			w.uc.Spec.Desired.Version = "4.14.16"
			w.uc.Generation++
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := silenceWorld(t)
			w.settle()
			if len(w.am.live(w.now)) != 2 {
				t.Fatalf("live %+v", w.am.live(w.now))
			}
			tc.end(w)
			w.settle()
			if tc.want != "" && w.uc.Status.History[0].Phase != tc.want {
				t.Fatalf("phase %s", w.uc.Status.History[0].Phase)
			}
			for _, s := range w.am.live(w.now) {
				if strings.HasPrefix(s.Lease(), "4.14.15/") {
					t.Fatalf("lease of the ended attempt still live: %+v", s)
				}
			}
		})
	}

	t.Run("cancelled before commencement", func(t *testing.T) {
		w := silenceWorld(t)
		// Hold the upgrade between the window step and commencement: the
		// ClusterVersion patch fails.
		w.failing = map[ActionKind]bool{PatchClusterVersion: true}
		for i := 0; i < 10; i++ {
			w.plan()
		}
		if w.uc.Status.CurrentStep != string(StepUpgradeCommenced) {
			t.Fatalf("at %s", w.uc.Status.CurrentStep)
		}
		if len(w.am.live(w.now)) != 2 {
			t.Fatalf("at %s, live %+v", w.uc.Status.CurrentStep, w.am.live(w.now))
		}
		w.uc.Spec.Cancel = true
		w.uc.Generation++
		w.settle()
		if w.phase() != upgradev1alpha1.UpgradePhaseCancelled || len(w.am.live(w.now)) != 0 || len(w.uc.Status.Silences) != 0 {
			t.Fatalf("cancel: phase %s live %+v status %+v", w.phase(), w.am.live(w.now), w.uc.Status.Silences)
		}
	})

	t.Run("deleted: the finalizer waits for the expiry", func(t *testing.T) {
		w := silenceWorld(t)
		w.uc.Finalizers = []string{Finalizer}
		w.settle()
		del := metav1.NewTime(w.now)
		w.uc.DeletionTimestamp = &del
		out := w.plan()
		if out.Action != nil && out.Action.Kind == RemoveFinalizer {
			t.Fatal("finalizer removed with live leases recorded")
		}
		if len(w.am.live(w.now)) != 0 || len(w.uc.Status.Silences) != 0 {
			t.Fatalf("not expired on delete: %+v", w.am.live(w.now))
		}
		if out := w.plan(); out.Action == nil || out.Action.Kind != RemoveFinalizer {
			t.Fatalf("then the finalizer: %+v", out.Action)
		}
	})

	t.Run("paused: neither renewed nor expired", func(t *testing.T) {
		w := silenceWorld(t)
		w.settle()
		w.uc.Spec.Paused = true
		w.uc.Generation++
		if out := w.plan(); out.Silences.Manage {
			t.Fatalf("paused plan manages leases: %+v", out.Silences)
		}
	})
}

func TestWorkerPoolsForWindow(t *testing.T) {
	mk := func(machines, updated int32, mu *intstr.IntOrString) mcfgv1.MachineConfigPool {
		p := pool("worker", machines, updated, "c")
		p.Spec.MaxUnavailable = mu
		return p
	}
	for _, tc := range []struct {
		pool mcfgv1.MachineConfigPool
		want silence.Pool
	}{
		{mk(10, 0, nil), silence.Pool{Remaining: 10, MaxUnavailable: 1}},
		{mk(10, 4, ptr(intstr.FromInt32(3))), silence.Pool{Remaining: 6, MaxUnavailable: 3}},
		{mk(10, 0, ptr(intstr.FromString("25%"))), silence.Pool{Remaining: 10, MaxUnavailable: 2}},
		// A percentage rounding to 0 still moves one machine, as the MCO.
		{mk(3, 0, ptr(intstr.FromString("10%"))), silence.Pool{Remaining: 3, MaxUnavailable: 1}},
	} {
		if got := WorkerPoolsForWindow([]mcfgv1.MachineConfigPool{tc.pool}); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%+v: got %+v, want %+v", tc.pool.Spec.MaxUnavailable, got, tc.want)
		}
	}
}

// MUO's alert query: severity critical, namespace ^openshift.*|^kube-.*|^default$,
// minus the ignored names and namespaces.
func TestCriticalAlerts(t *testing.T) {
	cfg := mustConfig(t, "healthCheck:\n  ignoredCriticals: [DNSErrors05MinSRE]\n  ignoredNamespaces: [openshift-logging]\n")
	a := func(name, severity, ns string) alerts.Alert {
		l := map[string]string{"alertname": name, "severity": severity}
		if ns != "" {
			l["namespace"] = ns
		}
		return alerts.Alert{Labels: l, State: alerts.StateFiring}
	}
	in := []alerts.Alert{
		a("KubeAPIDown", "critical", "openshift-kube-apiserver"),
		a("KubeAPIDown", "critical", "openshift-kube-apiserver"), // one name once
		a("EtcdDown", "critical", "kube-system"),
		a("DefaultDown", "critical", "default"),
		a("NotPlatform", "critical", "my-app"),
		a("KubeletNoDash", "critical", "kubelet"), // ^kube-.* needs the dash
		a("NoNamespace", "critical", ""),
		a("Warn", "warning", "openshift-monitoring"),
		a("DNSErrors05MinSRE", "critical", "openshift-dns"),
		a("LoggingDown", "critical", "openshift-logging"),
		{Labels: map[string]string{"alertname": "Pending", "severity": "critical", "namespace": "openshift-x"}, State: alerts.StatePending},
		{Labels: map[string]string{"alertname": "Silenced", "severity": "critical", "namespace": "openshift-x"}, State: alerts.StateFiring, Suppressed: true},
	}
	got := CriticalAlerts(in, cfg)
	want := []string{"DefaultDown", "EtcdDown", "KubeAPIDown", "Silenced"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// An unreachable alert source fails the pre-check closed, says "metrics
// unavailable" in status.preflight and looks again soon; a critical alert
// blocks the same way and its resolution lets the upgrade go on.
func TestCriticalAlertsGateThePreCheck(t *testing.T) {
	w := silenceWorld(t)
	w.snap.Alerts = &AlertsResult{Err: "Get \"http://am/api/v2/alerts\": connection refused"}
	out := w.plan()
	for i := 0; i < 10 && w.uc.Status.CurrentStep != string(StepClusterHealthyBeforeUpgrade); i++ {
		out = w.plan()
	}
	c := w.stepCondition(StepClusterHealthyBeforeUpgrade)
	if c == nil || c.Status != corev1.ConditionFalse || !strings.Contains(c.LastError, "metrics unavailable") {
		t.Fatalf("unreachable: %+v", c)
	}
	if out.RequeueAfter != AlertsRecheck {
		t.Fatalf("requeue %v, want %v", out.RequeueAfter, AlertsRecheck)
	}
	var pf *upgradev1alpha1.PreflightCheck
	for i := range w.uc.Status.Preflight {
		if w.uc.Status.Preflight[i].Check == CheckCriticalAlerts {
			pf = &w.uc.Status.Preflight[i]
		}
	}
	if pf == nil || pf.Passed || !strings.HasPrefix(pf.Details, "metrics unavailable: ") {
		t.Fatalf("preflight %+v", pf)
	}
	w.snap.Alerts = &AlertsResult{Firing: []string{"KubeAPIDown"}}
	w.now = w.now.Add(AlertsRecheck)
	w.plan()
	if c := w.stepCondition(StepClusterHealthyBeforeUpgrade); c.Status != corev1.ConditionFalse || !strings.Contains(c.LastError, "critical alerts firing: KubeAPIDown") {
		t.Fatalf("firing: %+v", c)
	}
	if !w.hasEvent("HealthCheckFailed") {
		t.Fatal("no HealthCheckFailed Event")
	}
	w.snap.Alerts = &AlertsResult{}
	w.now = w.now.Add(AlertsRecheck)
	w.settle()
	if w.stepCondition(StepClusterHealthyBeforeUpgrade).Status != corev1.ConditionTrue || w.desiredPatches != 1 {
		t.Fatalf("resolved: step %+v, patches %d", w.stepCondition(StepClusterHealthyBeforeUpgrade), w.desiredPatches)
	}
}

// The silences are listed only for a plan that manages leases; a plan given
// a failed listing plans no lease step but still looks again in time to
// renew.
func TestLeasesAreAPlannerInput(t *testing.T) {
	w := silenceWorld(t)
	w.settle()
	in := Input{UpgradeConfig: w.uc, Config: w.cfg, Snapshot: w.snap, Integrations: w.integrations, Now: w.now}
	in.Snapshot.LeasesUnread = true
	if out := Plan(in); !out.NeedsLeases || out.Leases != nil {
		t.Fatalf("a plan holding leases must ask for the listing: %+v", out.NeedsLeases)
	}
	in.Snapshot.LeasesUnread, in.Snapshot.Leases = false, &LeasesRead{Err: "connection refused"}
	out := Plan(in)
	if out.NeedsLeases || out.Leases != nil {
		t.Fatalf("a failed listing plans no lease step: %+v", out.Leases)
	}
	if want := silence.DefaultTTL / 4; out.RequeueAfter == 0 || out.RequeueAfter > want {
		t.Fatalf("requeue %v, want at most %v for the renewal", out.RequeueAfter, want)
	}
	in.Snapshot.Leases = &LeasesRead{Existing: w.am.list(w.now)}
	if out := Plan(in); out.Leases == nil {
		t.Fatal("a listing gives a lease step")
	}

	paused := *w.uc.DeepCopy()
	paused.Spec.Paused = true
	in.UpgradeConfig = &paused
	in.Snapshot.Leases, in.Snapshot.LeasesUnread = nil, true
	if out := Plan(in); out.NeedsLeases || out.Leases != nil {
		t.Fatal("a paused upgrade neither lists nor touches its leases")
	}
}
