package controller_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/controller"
	"github.com/upshift-io/upshift/services/updatestatus/render"
)

// The cluster's objects are less constrained than the update status API; if
// the assessment produced a status the API refuses, every status write would
// fail from then on. This feeds the assessment random snapshots, wild where
// the cluster allows it (forty pools, dotted names, long texts, missing
// times), and has the apiserver validate every result against the CRDs'
// own OpenAPI schema and CEL rules with server-side dry-run writes.
var _ = Describe("the update status API", func() {
	It("accepts the assessment of any snapshot", func(ctx SpecContext) {
		seed := uint64(GinkgoRandomSeed())
		rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
		By(fmt.Sprintf("random seed %d", seed))

		// Dry-run status writes need existing objects: the singleton and
		// one NodeProgressInsight per node name the snapshots use.
		us := &updatev1alpha1.UpgradeStatus{ObjectMeta: metav1.ObjectMeta{Name: updatev1alpha1.UpgradeStatusName}}
		if err := env.Client.Create(ctx, us); err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		nodeNames := fuzzNodeNames()
		for _, name := range nodeNames {
			npi := &updatev1alpha1.NodeProgressInsight{ObjectMeta: metav1.ObjectMeta{Name: name}}
			Expect(env.Client.Create(ctx, npi)).To(Succeed())
			DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, npi))).To(Succeed()) })
		}

		assessed := 0
		for i := range 150 {
			snap := randomSnapshot(rng, nodeNames)
			result, err := assess.Assess(snap, nil)
			if err != nil {
				continue // refused snapshots publish nothing
			}
			assessed++
			// With the report's node tables, as the controller publishes it.
			result.Status.ReportedNodes = render.Reported(result.Status, result.Nodes)
			obj := &updatev1alpha1.UpgradeStatus{
				TypeMeta:   metav1.TypeMeta{APIVersion: updatev1alpha1.GroupVersion.String(), Kind: "UpgradeStatus"},
				ObjectMeta: metav1.ObjectMeta{Name: updatev1alpha1.UpgradeStatusName},
				Status:     result.Status,
			}
			Expect(dryRunStatus(ctx, obj)).To(Succeed(), "snapshot %d: %d worker pools, %d operators, %d health insights",
				i, len(result.Status.WorkerPools), len(result.Status.ControlPlane.ClusterOperators), len(result.Status.Health))
			for _, n := range result.Nodes {
				npi := &updatev1alpha1.NodeProgressInsight{
					TypeMeta:   metav1.TypeMeta{APIVersion: updatev1alpha1.GroupVersion.String(), Kind: "NodeProgressInsight"},
					ObjectMeta: metav1.ObjectMeta{Name: n.Name},
					Status:     n,
				}
				Expect(dryRunStatus(ctx, npi)).To(Succeed(), "snapshot %d, node %s", i, n.Name)
			}
		}
		Expect(assessed).To(BeNumerically(">", 100), "too few snapshots were assessable to mean anything")
	})
})

func dryRunStatus(ctx context.Context, obj client.Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	ac := client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u})
	// The controller's own field manager, so that the applied status
	// replaces whatever the controller specs published before instead of
	// being merged with it: what is validated is exactly the assessment.
	if _, insight := obj.(*updatev1alpha1.NodeProgressInsight); insight { // no status subresource
		return env.Client.Apply(ctx, ac, client.FieldOwner(controller.FieldManager), client.ForceOwnership, client.DryRunAll)
	}
	return env.Client.Status().Apply(ctx, ac, client.FieldOwner(controller.FieldManager), client.ForceOwnership, client.DryRunAll)
}

// fuzzNodeNames are valid Node names, short and up to the 253 characters
// the API allows, with dots.
func fuzzNodeNames() []string {
	names := []string{"fuzz-a", "fuzz-b.example.com", "fuzz-" + strings.Repeat("x", 248)}
	for i := range 9 {
		names = append(names, fmt.Sprintf("fuzz-%d.%s", i, strings.Repeat("n", 1+10*i)))
	}
	return names
}

var textRunes = []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .-_:/é日\n\"'|")

// text is a random text, usually short, sometimes far over any API limit.
func text(rng *rand.Rand) string {
	n := rng.IntN(20)
	switch rng.IntN(10) {
	case 0:
		n = 0
	case 1:
		n = 200 + rng.IntN(400)
	case 2:
		n = 3000 + rng.IntN(40000)
	}
	b := make([]rune, n)
	for i := range b {
		b[i] = textRunes[rng.IntN(len(textRunes))]
	}
	return string(b)
}

// dnsName is a random valid object name: DNS labels joined by dots, up to 253.
func dnsName(rng *rand.Rand) string {
	const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	var labels []string
	for range 1 + rng.IntN(3) {
		n := 1 + rng.IntN(20)
		if rng.IntN(8) == 0 {
			n = 63
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = alnum[rng.IntN(len(alnum))]
			if i > 0 && i < n-1 && rng.IntN(6) == 0 {
				b[i] = '-'
			}
		}
		labels = append(labels, string(b))
	}
	return strings.Join(labels, ".")
}

func pick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

func randomTime(rng *rand.Rand, now time.Time) metav1.Time {
	if rng.IntN(10) == 0 {
		return metav1.Time{} // a missing time
	}
	return metav1.NewTime(now.Add(-time.Duration(rng.Int64N(int64(72 * time.Hour)))).Truncate(time.Second))
}

func randomSnapshot(rng *rand.Rand, nodeNames []string) assess.Snapshot {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour))))
	versions := []string{"4.18.0", "4.18.1", "", text(rng), strings.Repeat("9", 70)}
	status := func() configv1.ConditionStatus {
		return pick(rng, configv1.ConditionTrue, configv1.ConditionFalse, configv1.ConditionUnknown)
	}
	cond := func(t configv1.ClusterStatusConditionType) configv1.ClusterOperatorStatusCondition {
		return configv1.ClusterOperatorStatusCondition{Type: t, Status: status(), Reason: text(rng), Message: text(rng),
			LastTransitionTime: randomTime(rng, now)}
	}

	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}}
	cv.Status.Desired.Version = pick(rng, versions...)
	for range rng.IntN(5) {
		e := configv1.UpdateHistory{State: pick(rng, configv1.CompletedUpdate, configv1.PartialUpdate),
			Version: pick(rng, versions...), Image: text(rng), StartedTime: randomTime(rng, now)}
		if rng.IntN(2) == 0 {
			t := randomTime(rng, now)
			e.CompletionTime = &t
		}
		cv.Status.History = append(cv.Status.History, e)
	}
	cv.Status.Conditions = []configv1.ClusterOperatorStatusCondition{cond(configv1.OperatorProgressing)}
	if rng.IntN(3) > 0 {
		cv.Status.Conditions = append(cv.Status.Conditions, cond("Failing"))
	}

	s := assess.Snapshot{ClusterVersion: cv, Now: now, MCOImage: pick(rng, "", "img-a", "img-b")}
	nCO := 1 + rng.IntN(12)
	if rng.IntN(6) == 0 {
		nCO = 120 + rng.IntN(30)
	}
	taken := map[string]bool{}
	for i := range nCO {
		name := pick(rng, fmt.Sprintf("op-%d", i), fmt.Sprintf("op.%d.%s", i, dnsName(rng)), "machine-config")
		if taken[name] {
			continue // object names are unique in a cluster
		}
		taken[name] = true
		co := configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if rng.IntN(6) > 0 {
			co.Annotations = map[string]string{"include.release.openshift.io/self-managed-high-availability": "true"}
		}
		co.Status.Versions = []configv1.OperandVersion{{Name: "operator", Version: pick(rng, versions...)},
			{Name: "operator-image", Version: pick(rng, "img-a", "img-b")}}
		for _, t := range []configv1.ClusterStatusConditionType{configv1.OperatorAvailable, configv1.OperatorDegraded, configv1.OperatorProgressing} {
			if rng.IntN(5) > 0 {
				co.Status.Conditions = append(co.Status.Conditions, cond(t))
			}
		}
		s.ClusterOperators = append(s.ClusterOperators, co)
	}

	mcNames := []string{"rendered-a", "rendered-b", "rendered-c"}
	for _, name := range mcNames {
		s.MachineConfigs = append(s.MachineConfigs, mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{"machineconfiguration.openshift.io/release-image-version": pick(rng, versions...)}}})
	}
	nPools := rng.IntN(6)
	if rng.IntN(4) == 0 {
		nPools = 30 + rng.IntN(15)
	}
	for i := range nPools {
		name := pick(rng, "master", "worker", fmt.Sprintf("pool-%d", i), dnsName(rng))
		if taken["pool/"+name] {
			continue
		}
		taken["pool/"+name] = true
		p := mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": fmt.Sprint(i % 5)}}
		p.Spec.Configuration.Name = pick(rng, mcNames...)
		p.Spec.Paused = rng.IntN(5) == 0
		s.MachineConfigPools = append(s.MachineConfigPools, p)
	}
	for _, name := range nodeNames {
		if rng.IntN(3) == 0 {
			continue
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": fmt.Sprint(rng.IntN(5))},
			Annotations: map[string]string{
				"machineconfiguration.openshift.io/currentConfig":    pick(rng, append(mcNames, "", "missing")...),
				"machineconfiguration.openshift.io/desiredConfig":    pick(rng, append(mcNames, "", "missing")...),
				"machineconfiguration.openshift.io/state":            pick(rng, "Working", "Done", "Degraded", "Rebooting", "Unreconcilable", "", text(rng)),
				"machineconfiguration.openshift.io/reason":           text(rng),
				"machineconfiguration.openshift.io/desiredDrain":     pick(rng, "", "drain-x", "uncordon-x"),
				"machineconfiguration.openshift.io/lastAppliedDrain": pick(rng, "", "drain-x", "uncordon-x"),
			}}}
		n.Spec.Unschedulable = rng.IntN(6) == 0
		for _, t := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeDiskPressure, corev1.NodeNetworkUnavailable} {
			if rng.IntN(4) > 0 {
				n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: t,
					Status: pick(rng, corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown),
					Reason: text(rng), Message: text(rng), LastTransitionTime: randomTime(rng, now)})
			}
		}
		s.Nodes = append(s.Nodes, n)
	}
	for range rng.IntN(6) {
		s.Alerts = append(s.Alerts, assess.Alert{
			Labels: map[string]string{"alertname": pick(rng, "PodDisruptionBudgetAtLimit", text(rng)),
				"severity": pick(rng, "warning", "critical", "info"), "namespace": pick(rng, "", "openshift-etcd", text(rng))},
			Annotations: map[string]string{"summary": text(rng), "description": text(rng), "runbook_url": text(rng)},
			State:       pick(rng, "firing", "pending"),
			ActiveAt:    randomTime(rng, now).Time,
		})
	}
	return s
}
