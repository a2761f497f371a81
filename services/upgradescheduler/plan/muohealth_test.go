package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
)

func countOf(list []string, s string) int {
	n := 0
	for _, e := range list {
		if e == s {
			n++
		}
	}
	return n
}

// gated is a world whose configuration turns MUO's PreHealthCheck and
// ServiceLogNotification gates on, with OCM notifications wired in.
func gated(t *testing.T) *world {
	w := newWorld(t)
	w.cfg = mustConfig(t, "featureGate:\n  enabled:\n  - PreHealthCheck\n  - ServiceLogNotification\n")
	w.integrations = Integrations{Notifications: true}
	return w
}

func cordon(n *corev1.Node) {
	n.Spec.Unschedulable = true
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
}

func taint(n *corev1.Node, key string) {
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
}

func specPDB(ns, name string, maxUnavailable, minAvailable *intstr.IntOrString) policyv1.PodDisruptionBudget {
	return policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: maxUnavailable, MinAvailable: minAvailable}}
}

// MUO's findings, each by MUO's rule, and its result string in its words
// and order (its PreUpgradeHealthCheck's format strings).
func TestMUOFindings(t *testing.T) {
	zero, zeroPct, hundredPct, one := intstr.FromInt32(0), intstr.FromString("0%"), intstr.FromString("100%"), intstr.FromInt32(1)
	for _, tc := range []struct {
		name  string
		setup func(w *world)
		want  string
	}{
		{"a healthy cluster", func(*world) {}, ""},
		{"a worker cordoned by hand; one the MCO works on; an infra node; unschedulable without the taint", func(w *world) {
			for i := range w.snap.Nodes {
				n := &w.snap.Nodes[i]
				switch n.Name {
				case "worker-0":
					n.Labels = map[string]string{workerRoleLabel: ""}
					cordon(n)
				case "worker-1":
					n.Labels = map[string]string{workerRoleLabel: ""}
					cordon(n)
					n.Annotations[mcostate.State] = mcostate.StateWorking
				case "worker-2":
					n.Labels = map[string]string{workerRoleLabel: "", infraRoleLabel: ""}
					cordon(n)
				case "master-0":
					n.Labels = map[string]string{workerRoleLabel: ""}
					n.Spec.Unschedulable = true
				}
			}
		}, "NodeUnschedulableHealthcheckFailed:(worker-0)"},
		{"pressure taints, by taint, on any node", func(w *world) {
			taint(&w.snap.Nodes[0], corev1.TaintNodePIDPressure)
			taint(&w.snap.Nodes[1], corev1.TaintNodeDiskPressure)
			taint(&w.snap.Nodes[3], corev1.TaintNodeMemoryPressure)
			taint(&w.snap.Nodes[3], corev1.TaintNodeDiskPressure)
			w.snap.Nodes[5].Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoExecute}}
		}, "NodeUnschedulableTaintHealthcheckFailed:(worker-1,worker-0,worker-1,master-0)"},
		{"the first budget that allows no disruption by its spec, in the apiserver's order", func(w *world) {
			w.snap.PDBs = []policyv1.PodDisruptionBudget{specPDB("b", "z", &zero, nil), specPDB("a", "y", nil, &hundredPct),
				specPDB("a", "x", &one, nil), specPDB("c", "w", &zeroPct, nil)}
		}, `PDBHealthcheckFailed: [{"Name":"y","Namespace":"a"}]`},
		{"no worker MachineSet to copy for the capacity reservation", func(w *world) {
			w.snap.MachineSets = w.snap.MachineSets[2:]
		}, "CapacityReservationHealthcheckFailed"},
		{"critical alerts and operators first", func(w *world) {
			w.snap.Alerts = &AlertsResult{Firing: []string{"KubeAPIDown"}}
			w.snap.ClusterOperators[0].Status.Conditions[1].Status = "True"
			w.snap.PDBs = []policyv1.PodDisruptionBudget{specPDB("app", "db", &zero, nil)}
		}, `CriticalAlertsHealthcheckFailed,ClusterOperatorsHealthcheckFailed,PDBHealthcheckFailed: [{"Name":"db","Namespace":"app"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := gated(t)
			tc.setup(w)
			p := newPlanner(Input{UpgradeConfig: w.uc, Config: w.cfg, Snapshot: w.snap, Integrations: w.integrations, Now: w.now})
			if got := p.muoFindings().result(p.healthChecks()); got != tc.want {
				t.Fatalf("result\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// PreHealthCheckSL: told once, while the upgrade is scheduled more than two
// hours ahead, with MUO's texts; the findings block nothing.
func TestPreHealthCheckSL(t *testing.T) {
	w := gated(t)
	w.uc.Spec.UpgradeAt = t0.Add(3 * time.Hour).Format(time.RFC3339)
	w.snap.PDBs = []policyv1.PodDisruptionBudget{specPDB("app", "db", ptr(intstr.FromInt32(0)), nil)}
	w.settle()
	var sls []*Notification
	for _, n := range w.notices {
		if n.Event == EventPreHealthCheckSL {
			sls = append(sls, n)
		}
	}
	if len(sls) != 1 || !sls[0].ServiceLog || sls[0].ServiceLogSummary != "Cluster has encountered pre-upgrade healthcheck failure" ||
		sls[0].ServiceLogDescription != `Cluster upgrade to version 4.14.15 has been scheduled for more than 2 hours, cluster pre-upgrade health check has identified the following points which may impact the upgrade process: PDBHealthcheckFailed: [{"Name":"db","Namespace":"app"}]. Please take actions to review and fix the issues before the upgrade begins to have seamless upgrade experience` ||
		!slices.Equal(sls[0].DocReferences, []string{"https://access.redhat.com/solutions/7081505"}) {
		t.Fatalf("service logs %+v", sls)
	}
	var c *upgradev1alpha1.PreflightCheck
	for i := range w.uc.Status.Preflight {
		if w.uc.Status.Preflight[i].Check == CheckPDBConfiguration {
			c = &w.uc.Status.Preflight[i]
		}
	}
	if c == nil || c.Passed || !c.Advisory || !strings.Contains(c.Details, "app/db") {
		t.Fatalf("preflight %+v", c)
	}
	// Something else found later: not told again.
	cordon(&w.snap.Nodes[1])
	w.snap.Nodes[1].Labels = map[string]string{workerRoleLabel: ""}
	w.now = t0.Add(30 * time.Minute)
	w.settle()
	if got := countOf(w.notified, EventPreHealthCheckSL); got != 1 {
		t.Fatalf("PreHealthCheckSL sent %d times", got)
	}
}

// Less than two hours ahead nothing is told before the attempt; at its
// pre-upgrade check HealthCheckSL is, once, and only critical alerts and
// operators hold the upgrade.
func TestHealthCheckSL(t *testing.T) {
	w := gated(t)
	w.uc.Spec.CapacityReservation = false
	w.snap.PDBs = []policyv1.PodDisruptionBudget{specPDB("app", "db", ptr(intstr.FromInt32(0)), nil)}
	w.settle()
	if countOf(w.notified, EventPreHealthCheckSL) != 0 {
		t.Fatalf("told ahead of a start within two hours: %v", w.notified)
	}
	w.now = t0.Add(time.Hour)
	w.settle()
	var desc []string
	for _, n := range w.notices {
		if n.Event == EventHealthCheckSL {
			desc = append(desc, n.ServiceLogSummary+": "+n.ServiceLogDescription)
		}
	}
	want := `Cluster has encountered healthcheck failure during upgrade: Cluster upgrade to version 4.14.15 may experience a delay as following healthcheck(s): PDBHealthcheckFailed: [{"Name":"db","Namespace":"app"}] are failing for the cluster which could impact the upgrade's operation.`
	if !slices.Equal(desc, []string{want}) {
		t.Fatalf("HealthCheckSL %q, want %q", desc, want)
	}
	if w.desiredPatches != 1 {
		t.Fatalf("the PDB finding held the upgrade: %s", w.uc.Status.CurrentStep)
	}
}
