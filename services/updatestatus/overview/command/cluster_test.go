package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/updatestatus/overview"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

// The specs run the command against a real kube-apiserver (libs/testenv);
// set UPSHIFT_TESTBIN to the test control plane (`make testbin`).
func TestOverviewCommand(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kubectl upshift overview")
}

var now = time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC)

// overviewOf runs the command with --exit-status and returns the view and
// the exit code main would use (-1 for a command error, which is returned).
func overviewOf(ctx context.Context, cfg *rest.Config) (string, int, error) {
	var out bytes.Buffer
	err := Run(ctx, Options{
		RESTConfig: func() (*rest.Config, error) { return cfg, nil },
		Now:        func() time.Time { return now },
		ExitStatus: true,
		Out:        &out,
	})
	var verdict overview.ExitStatus
	switch {
	case err == nil:
		return out.String(), overview.ExitNotUpdating, nil
	case errors.As(err, &verdict):
		return out.String(), verdict.ExitCode(), nil
	}
	return out.String(), -1, err
}

func createClusterVersion(ctx context.Context, c client.Client) {
	GinkgoHelper()
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}, Spec: configv1.ClusterVersionSpec{ClusterID: "6b2f1d6e-4c5a-4f3e-9a57-0f8a5b7c2d10"}}
	Expect(c.Create(ctx, cv)).To(Succeed())
	cv.Status.Desired.Version = "4.15.3"
	cv.Status.History = []configv1.UpdateHistory{{Version: "4.15.3", State: configv1.CompletedUpdate, StartedTime: metav1.Now(), Image: "quay.io/openshift-release-dev/ocp-release@sha256:0000000000000000000000000000000000000000000000000000000000000000"}}
	cv.Status.Conditions = []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorProgressing, Status: configv1.ConditionFalse,
		Message: "Cluster version is 4.15.3", LastTransitionTime: metav1.Now()}}
	cv.Status.VersionHash = "x"
	Expect(c.Status().Update(ctx, cv)).To(Succeed())
}

func createNamespace(ctx context.Context, c client.Client, name string) {
	GinkgoHelper()
	Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
}

var _ = Describe("with the Upshift CRDs installed", Ordered, func() {
	var env *testenv.Env

	BeforeAll(func(ctx SpecContext) {
		cluster, err := simcluster.Start(ctx, simcluster.Options{ControlPlane: testenv.Options{}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cluster.Stop)
		env = cluster.Env
		createClusterVersion(ctx, env.Client)
	})

	It("shows nothing scheduled and exits 0 while no component published anything", func(ctx SpecContext) {
		out, code, err := overviewOf(ctx, env.Config)
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(overview.ExitNotUpdating))
		Expect(out).To(ContainSubstring("Not updating: at 4.15.3"))
		Expect(out).To(MatchRegexp(`upgrade-scheduler +idle +nothing scheduled \(no UpgradeConfig\)`))
		Expect(out).To(MatchRegexp(`node-gate +idle +no MutexRunConfig`))
		Expect(out).To(MatchRegexp(`cpms-controller +idle +no ControlPlaneMachineSet`))
		Expect(out).To(ContainSubstring("update-status-controller: no UpgradeStatus"))
	})

	It("shows a scheduled upgrade and a gated node waiting for its hook, and exits with 'updating'", func(ctx SpecContext) {
		createNamespace(ctx, env.Client, "openshift-managed-upgrade-operator")
		uc := &upgradev1alpha1.UpgradeConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-managed-upgrade-operator", Name: "managed-upgrade-config"},
			Spec: upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: "4.16.2", Channel: "stable-4.16"},
				UpgradeAt: "2026-12-03T02:00:00Z", Type: upgradev1alpha1.OSD},
		}
		Expect(env.Client.Create(ctx, uc)).To(Succeed())
		uc.Status.ObservedGeneration = uc.Generation
		uc.Status.History = []upgradev1alpha1.UpgradeHistory{{Version: "4.16.2", Phase: upgradev1alpha1.UpgradePhasePending}}
		uc.Status.Conditions = []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionFalse, Reason: "WaitingForStart",
			Message: "the upgrade starts at 2026-12-03T02:00:00Z", LastTransitionTime: metav1.Now()}}
		Expect(env.Client.Status().Update(ctx, uc)).To(Succeed())

		createNamespace(ctx, env.Client, "node-gate")
		run := &nodegatev1alpha1.MutexRunConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: "node-gate", Name: "workers"},
			Spec:       nodegatev1alpha1.MutexRunConfigSpec{MutexTargets: []nodegatev1alpha1.ObjectReference{{Name: "workers"}}},
		}
		Expect(env.Client.Create(ctx, run)).To(Succeed())
		run.Status.Phase = nodegatev1alpha1.RunProgressing
		run.Status.Progress = "1/3"
		run.Status.Nodes = []nodegatev1alpha1.NodeRecord{
			{Name: "worker-0", Pool: "worker", Phase: nodegatev1alpha1.NodeCompleted},
			{Name: "worker-1", Pool: "worker", Phase: nodegatev1alpha1.NodePreHooks, Hooks: []nodegatev1alpha1.HookRecord{
				{Rule: "apps/db-failover", Name: "job", Stage: nodegatev1alpha1.StagePre, Phase: nodegatev1alpha1.HookRunning, Attempts: 1}}},
			{Name: "worker-2", Pool: "worker", Phase: nodegatev1alpha1.NodePending},
		}
		Expect(env.Client.Status().Update(ctx, run)).To(Succeed())

		out, code, err := overviewOf(ctx, env.Config)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`upgrade-scheduler +scheduled +waiting for the start of the upgrade to 4\.16\.2 at 2026-12-03 02:00 UTC \(in 3h\)`))
		Expect(out).To(MatchRegexp(`node-gate +progressing +waiting for pre-hook job of apps/db-failover \(Running\) on node worker-1`))
		Expect(out).To(ContainSubstring("nodes: 1 Completed, 1 PreHooks, 1 Pending"))
		Expect(code).To(Equal(overview.ExitUpdating), out)

		By("a failed hook pausing the run makes the verdict 'blocked'")
		run.Status.Phase = nodegatev1alpha1.RunPaused
		run.Status.Conditions = []metav1.Condition{{Type: "Paused", Status: metav1.ConditionTrue, Reason: "HookFailed",
			Message: "a hook failed; change the spec (for example toggle spec.paused) to resume", LastTransitionTime: metav1.Now()}}
		Expect(env.Client.Status().Update(ctx, run)).To(Succeed())
		out, code, err = overviewOf(ctx, env.Config)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(HavePrefix("Blocked: node-gate: paused: HookFailed"))
		Expect(code).To(Equal(overview.ExitBlocked), out)
	})

	It("prints the model with -o json, the verdict included", func(ctx SpecContext) {
		var out bytes.Buffer
		err := Run(ctx, Options{RESTConfig: func() (*rest.Config, error) { return env.Config, nil },
			Now: func() time.Time { return now }, Output: "json", Out: &out})
		Expect(err).NotTo(HaveOccurred(), "without --exit-status a blocked verdict is no error")
		var m overview.Model
		Expect(json.Unmarshal(out.Bytes(), &m)).To(Succeed())
		Expect(m.Verdict).To(Equal(overview.VerdictBlocked))
		Expect(m.Sections).To(ContainElement(And(
			HaveField("Component", overview.NodeGate), HaveField("State", overview.StateBlocked))))
	})

	It("names the reads RBAC refuses and shows the rest", func(ctx SpecContext) {
		// A user who may read the ClusterVersion and nothing else.
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "clusterversion-reader"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{configv1.GroupName}, Resources: []string{"clusterversions"}, Verbs: []string{"get"}}}}
		Expect(env.Client.Create(ctx, role)).To(Succeed())
		Expect(env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
		})).To(Succeed())
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice"}

		// The binding takes effect when the authorizer's cache has it.
		Eventually(func(ctx context.Context) (string, error) {
			out, _, err := overviewOf(ctx, cfg)
			return out, err
		}).WithContext(ctx).WithTimeout(10 * time.Second).Should(ContainSubstring("Not updating: at 4.15.3"))
		out, code, err := overviewOf(ctx, cfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`upgrade-scheduler +unknown +cannot read UpgradeConfig: forbidden by RBAC`))
		Expect(out).To(MatchRegexp(`node-gate +unknown +cannot read MutexRunConfig: forbidden by RBAC`))
		Expect(out).To(ContainSubstring("update-status-controller: forbidden by RBAC"))
		Expect(code).To(Equal(overview.ExitNotUpdating), out)
	})
})

var _ = Describe("without the Upshift CRDs", Ordered, func() {
	var env *testenv.Env

	BeforeAll(func(ctx SpecContext) {
		cluster, err := simcluster.Start(ctx, simcluster.Options{ControlPlane: testenv.Options{WithoutUpshiftCRDs: true}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cluster.Stop)
		env = cluster.Env
	})

	It("says the ClusterVersion cannot be read and exits 'unknown' before it exists", func(ctx SpecContext) {
		out, code, err := overviewOf(ctx, env.Config)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(HavePrefix("Unknown: cannot read the ClusterVersion (not found)"))
		Expect(code).To(Equal(overview.ExitUnknown))
	})

	It("says 'not installed' for every component whose CRD is missing, and exits 0", func(ctx SpecContext) {
		createClusterVersion(ctx, env.Client)
		out, code, err := overviewOf(ctx, env.Config)
		Expect(err).NotTo(HaveOccurred())
		for _, want := range []string{
			`upgrade-scheduler +not installed +not installed \(the UpgradeConfig CRD is not served\)`,
			`mcp-tracker +not installed`,
			`node-gate +not installed +not installed \(the MutexRunConfig CRD is not served\)`,
			`aro-monitor +not installed +not installed \(the MonitorConfig CRD is not served\)`,
			`cluster-update +idle +not updating: at 4\.15\.3`,
		} {
			Expect(out).To(MatchRegexp(want))
		}
		Expect(out).To(ContainSubstring("update-status-controller: its CRD is not installed; summary from ClusterVersion"))
		Expect(code).To(Equal(overview.ExitNotUpdating))
	})
})
