package upgradescheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/services/upgradescheduler/silence"
	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/cvo"
	"github.com/upshift-io/upshift/tools/ocpsim/faults"
)

const ucName = "managed-upgrade-config"

var ucKey = client.ObjectKey{Namespace: namespace, Name: ucName}

// newUC is an UpgradeConfig as OCM writes them for MUO.
func newUC(typ upgradev1alpha1.UpgradeType, version string, upgradeAt time.Time) *upgradev1alpha1.UpgradeConfig {
	return &upgradev1alpha1.UpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: ucName, Namespace: namespace},
		Spec: upgradev1alpha1.UpgradeConfigSpec{
			Desired:   upgradev1alpha1.Update{Version: version, Channel: "stable-4.16"},
			UpgradeAt: upgradeAt.UTC().Format(time.RFC3339), Type: typ,
			PDBForceDrainTimeout: 60, CapacityReservation: true,
		},
	}
}

func getUC(ctx context.Context) *upgradev1alpha1.UpgradeConfig {
	GinkgoHelper()
	uc := &upgradev1alpha1.UpgradeConfig{}
	Expect(env.Client.Get(ctx, ucKey, uc)).To(Succeed())
	return uc
}

// phaseStep is history[0]'s phase and the current step, e.g. "Upgrading/ControlPlaneUpgraded".
func phaseStep(ctx context.Context) func(Gomega) string {
	return func(g Gomega) string {
		uc := &upgradev1alpha1.UpgradeConfig{}
		g.Expect(env.Client.Get(ctx, ucKey, uc)).To(Succeed())
		if len(uc.Status.History) == 0 {
			return ""
		}
		return string(uc.Status.History[0].Phase) + "/" + uc.Status.CurrentStep
	}
}

func surgeMachineSets(ctx context.Context) func(Gomega) []string {
	return func(g Gomega) []string {
		var list machinev1beta1.MachineSetList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(machineAPI), client.MatchingLabels{surgeLabel: "true"})).To(Succeed())
		var names []string
		for _, ms := range list.Items {
			names = append(names, ms.Name)
		}
		return names
	}
}

func surgeMachines(ctx context.Context) func(Gomega) int {
	return func(g Gomega) int {
		var list machinev1beta1.MachineList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(machineAPI), client.MatchingLabels{surgeLabel: "true"})).To(Succeed())
		return len(list.Items)
	}
}

func withSuffix(names []string, suffix string) []string {
	var out []string
	for _, n := range names {
		out = append(out, n+suffix)
	}
	return out
}

// deleteUC deletes the UpgradeConfig and waits for the scheduler to release
// its finalizer, so the next spec starts from a clean namespace.
func deleteUC(ctx context.Context) {
	GinkgoHelper()
	uc := &upgradev1alpha1.UpgradeConfig{}
	if err := env.Client.Get(ctx, ucKey, uc); apierrors.IsNotFound(err) {
		return
	}
	Expect(env.Client.Delete(ctx, uc)).To(Succeed())
	Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(ctx, ucKey, uc)) }, time.Minute).Should(BeTrue())
}

// sideEffects counts the scheduler's successful side effects in the audit log.
type sideEffectCounts struct {
	cvPatches int
	msCreates map[string]int
	msDeletes map[string]int
}

func sideEffects() sideEffectCounts {
	GinkgoHelper()
	events, err := env.AuditEvents(framework.ServiceAccountUser(namespace, id.ServiceAccount))
	Expect(err).NotTo(HaveOccurred())
	c := sideEffectCounts{msCreates: map[string]int{}, msDeletes: map[string]int{}}
	for _, e := range events {
		if e.ObjectRef == nil || e.ResponseStatus == nil || e.ResponseStatus.Code >= 300 {
			continue
		}
		switch {
		case e.Verb == "patch" && e.ObjectRef.Resource == "clusterversions" && e.ObjectRef.Subresource == "":
			c.cvPatches++
		case e.Verb == "create" && e.ObjectRef.Resource == "machinesets":
			c.msCreates[e.ObjectRef.Name]++
		case e.Verb == "delete" && e.ObjectRef.Resource == "machinesets":
			c.msDeletes[e.ObjectRef.Name]++
		}
	}
	return c
}

func sub(after, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func once(names []string) map[string]int {
	out := map[string]int{}
	for _, n := range names {
		out[n] = 1
	}
	return out
}

func desiredUpdate(ctx context.Context) func(Gomega) string {
	return func(g Gomega) string {
		cv := &configv1.ClusterVersion{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
		if cv.Spec.DesiredUpdate == nil {
			return ""
		}
		return cv.Spec.DesiredUpdate.Version
	}
}

func eventReasons(ctx context.Context) func(Gomega) []string {
	return func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(namespace))).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "UpgradeConfig" {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}
}

// printerRow asks the apiserver for the UpgradeConfig list as a Table (what
// `kubectl get upgrade` prints) and returns the header and the row.
func printerRow(ctx context.Context) (header, row []string) {
	GinkgoHelper()
	cs, err := env.Clientset()
	Expect(err).NotTo(HaveOccurred())
	body, err := cs.Discovery().RESTClient().Get().
		AbsPath("/apis/upgrade.managed.openshift.io/v1alpha1/namespaces", namespace, "upgradeconfigs").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Raw()
	Expect(err).NotTo(HaveOccurred())
	var table metav1.Table
	Expect(json.Unmarshal(body, &table)).To(Succeed())
	for _, c := range table.ColumnDefinitions {
		header = append(header, c.Name)
		// Upshift's columns show with -o wide only: MUO's stay as they were.
		Expect(c.Priority).To(Equal(map[bool]int32{true: 1, false: 0}[c.Name == "findings" || c.Name == "workers_eta"]), c.Name)
	}
	Expect(table.Rows).To(HaveLen(1))
	for _, cell := range table.Rows[0].Cells {
		row = append(row, fmt.Sprint(cell))
	}
	return header, row
}

var reactions []time.Duration

var _ = Describe("the upgrade-scheduler", Ordered, func() {
	var track *tracker
	BeforeAll(func() {
		ctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		track = startTracker(ctx)
	})
	AfterEach(func(ctx SpecContext) {
		if !CurrentSpecReport().Failed() {
			return
		}
		GinkgoWriter.Println("upgrade-scheduler logs:\n" + sched.Logs())
		uc := &upgradev1alpha1.UpgradeConfig{}
		if err := env.Client.Get(ctx, ucKey, uc); err == nil {
			out, _ := yaml.Marshal(uc.Status)
			GinkgoWriter.Println("UpgradeConfig status:\n" + string(out))
		}
		var list eventsv1.EventList
		if err := env.Client.List(ctx, &list, client.InNamespace(namespace)); err == nil {
			sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].EventTime.Before(&list.Items[j].EventTime) })
			for _, e := range list.Items {
				GinkgoWriter.Printf("event %s %s %s: %s\n", e.EventTime.Format(time.RFC3339Nano), e.Type, e.Reason, e.Note)
			}
		}
	})

	It("becomes ready once its caches have synced", func(ctx SpecContext) {
		Eventually(func() (int, error) {
			resp, err := http.Get(readyz)
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			return resp.StatusCode, nil
		}, time.Minute).Should(Equal(http.StatusOK))
	})

	It("runs an OSD upgrade with capacity reservation at upgradeAt, New → Upgraded, as MUO records it", func(ctx SpecContext) {
		before := sideEffects()
		// Far enough ahead that the scheduler's first plan, however late on
		// a loaded machine, comes before it and writes Pending.
		upgradeAt := time.Now().Add(10 * time.Second).Truncate(time.Second)
		Expect(env.Client.Create(ctx, newUC(upgradev1alpha1.OSD, "4.16.2", upgradeAt))).To(Succeed())

		By("waiting for upgradeAt: Pending, nothing touched")
		Eventually(phaseStep(ctx)).Should(HavePrefix("Pending"))
		Expect(desiredUpdate(ctx)(Default)).To(BeEmpty())

		By("reserving capacity: one temporary MachineSet per worker MachineSet, whose machines join")
		Eventually(surgeMachineSets(ctx), time.Minute).Should(ConsistOf(withSuffix(workerMS, "-upgrade")))
		Eventually(surgeMachines(ctx), time.Minute).Should(Equal(len(workerMS)))

		By("commencing the control plane at or after upgradeAt")
		Eventually(desiredUpdate(ctx), time.Minute).Should(Equal("4.16.2"))

		By("completing: the temporary capacity is gone and the history is MUO's")
		Eventually(phaseStep(ctx), 4*time.Minute).Should(Equal("Upgraded/"))
		Expect(surgeMachineSets(ctx)(Default)).To(BeEmpty())
		Expect(surgeMachines(ctx)(Default)).To(BeZero())
		uc := getUC(ctx)
		h := uc.Status.History[0]
		Expect(h.Version).To(Equal("4.16.2"))
		Expect(h.PrecedingVersion).To(Equal("4.16.1"))
		Expect(h.Conditions).To(HaveLen(17), "the OSD step list")
		for _, c := range h.Conditions {
			Expect(c.Status).To(Equal(corev1.ConditionTrue), string(c.Type))
		}
		Expect(h.Conditions[0].Type).To(BeEquivalentTo("CompletedNotificationSent"), "newest condition first, as MUO")
		var commence *upgradev1alpha1.UpgradeCondition
		for i := range h.Conditions {
			if h.Conditions[i].Type == "UpgradeCommenced" {
				commence = &h.Conditions[i]
			}
		}
		Expect(commence).NotTo(BeNil())
		Expect(commence.CompleteTime.Time).NotTo(BeTemporally("<", upgradeAt), "commenced before upgradeAt")
		Expect(h.StartTime).NotTo(BeNil())
		Expect(h.CompleteTime).NotTo(BeNil())
		AddReportEntry("OSD step timings", strings.Join(framework.StepTimings(uc), "\n"))

		By("`kubectl get upgrade` prints MUO's columns from history[0]")
		header, row := printerRow(ctx)
		Expect(header).To(Equal([]string{"Name", "desired_version", "phase", "stage", "status", "reason", "message", "findings", "workers_eta"}),
			"MUO's columns, then Upshift's preflight report in -o wide")
		Expect(row[:5]).To(Equal([]string{ucName, "4.16.2", "Upgraded", "CompletedNotificationSent", "True"}))

		By("every side effect exactly once (audit log)")
		after := sideEffects()
		Expect(after.cvPatches-before.cvPatches).To(Equal(1), "ClusterVersion patches")
		Expect(sub(after.msCreates, before.msCreates)).To(Equal(once(withSuffix(workerMS, "-upgrade"))), "temporary MachineSet creations")
		Expect(sub(after.msDeletes, before.msDeletes)).To(Equal(once(withSuffix(workerMS, "-upgrade"))), "temporary MachineSet deletions")
		Eventually(eventReasons(ctx)).Should(ContainElements("PhaseUpgrading", "UpgradeCommenced", "PhaseUpgraded"))

		By("exporting MUO's gauges and Upshift's phase")
		body := scrape()
		Expect(body).To(ContainSubstring(`upgradeoperator_upgrade_state_timestamp{`))
		Expect(body).To(ContainSubstring(`upshift_upgrade_scheduler_phase{name="` + ucName + `",namespace="` + namespace + `",phase="Upgraded"} 1`))

		d, ok := track.reaction("4.16.2")
		Expect(ok).To(BeTrue(), "the watch saw both the CVO's Completed and ControlPlaneUpgraded")
		reactions = append(reactions, d)
	})

	It("holds an ARO upgrade at the pre-check while an operator is degraded, and proceeds once it clears", func(ctx SpecContext) {
		deleteUC(ctx)
		before := sideEffects()
		Expect(ocpsim.InjectFault(ctx, env.Client, faults.Request{Kind: "clusteroperator", Name: "monitoring", Fault: faults.OperatorDegraded})).To(Succeed())
		Eventually(func(g Gomega) bool {
			co := &configv1.ClusterOperator{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "monitoring"}, co)).To(Succeed())
			for _, c := range co.Status.Conditions {
				if c.Type == configv1.OperatorDegraded {
					return c.Status == configv1.ConditionTrue
				}
			}
			return false
		}).Should(BeTrue())
		Expect(env.Client.Create(ctx, newUC(upgradev1alpha1.ARO, "4.16.3", time.Now()))).To(Succeed())

		By("the pre-check blocks and names the operator, in status.preflight and an Event")
		Eventually(phaseStep(ctx), time.Minute).Should(Equal("Upgrading/ClusterHealthyBeforeUpgrade"))
		Eventually(func(g Gomega) string {
			for _, c := range getUC(ctx).Status.Preflight {
				if c.Check == "ClusterOperators" && !c.Passed {
					return c.Details
				}
			}
			return ""
		}).Should(ContainSubstring("monitoring"))
		Eventually(eventReasons(ctx)).Should(ContainElement("HealthCheckFailed"))
		Eventually(scrape).Should(ContainSubstring(`upshift_upgrade_scheduler_preflight_check_failing{check="ClusterOperators"`))
		Consistently(desiredUpdate(ctx), "2s").Should(Equal("4.16.2"), "nothing commenced while the check fails")
		Expect(surgeMachineSets(ctx)(Default)).To(BeEmpty(), "no capacity reserved before the pre-check passes")

		By("the operator recovers: the upgrade proceeds to Upgraded")
		co := &configv1.ClusterOperator{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "monitoring"}, co)).To(Succeed())
		patch := client.MergeFrom(co.DeepCopy())
		delete(co.Annotations, faults.Annotation)
		Expect(env.Client.Patch(ctx, co, patch)).To(Succeed())
		Eventually(phaseStep(ctx), 4*time.Minute).Should(Equal("Upgraded/"))
		uc := getUC(ctx)
		Expect(uc.Status.History[0].Conditions).To(HaveLen(14), "the ARO step list")
		AddReportEntry("ARO step timings", strings.Join(framework.StepTimings(uc), "\n"))
		Expect(surgeMachineSets(ctx)(Default)).To(BeEmpty())
		after := sideEffects()
		Expect(after.cvPatches-before.cvPatches).To(Equal(1), "ClusterVersion patches")
		Expect(sub(after.msCreates, before.msCreates)).To(Equal(once(withSuffix(workerMS, "-upgrade"))))
		d, ok := track.reaction("4.16.3")
		Expect(ok).To(BeTrue())
		reactions = append(reactions, d)
		deleteUC(ctx)
	})

	It("fails an upgrade whose start window passes, and removes the capacity it reserved", func(ctx SpecContext) {
		// The first worker MachineSet's machines fail to provision: its
		// temporary copy (same template) never becomes ready, so the start
		// window runs out while the scheduler waits for capacity.
		ms := &machinev1beta1.MachineSet{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: machineAPI, Name: workerMS[0]}, ms)).To(Succeed())
		patch := client.MergeFrom(ms.DeepCopy())
		if ms.Spec.Template.ObjectMeta.Annotations == nil {
			ms.Spec.Template.ObjectMeta.Annotations = map[string]string{}
		}
		ms.Spec.Template.ObjectMeta.Annotations[faults.Annotation] = string(faults.ProvisionFailed)
		Expect(env.Client.Patch(ctx, ms, patch)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: machineAPI, Name: workerMS[0]}, ms)).To(Succeed())
			patch := client.MergeFrom(ms.DeepCopy())
			delete(ms.Spec.Template.ObjectMeta.Annotations, faults.Annotation)
			Expect(env.Client.Patch(ctx, ms, patch)).To(Succeed())
		})

		uc := newUC(upgradev1alpha1.OSD, "4.16.5", time.Now().Add(2*time.Second))
		uc.Spec.Deadlines = &upgradev1alpha1.Deadlines{Start: &upgradev1alpha1.Deadline{Minutes: ptrTo(int32(1)), Policy: upgradev1alpha1.DeadlineFail}}
		Expect(env.Client.Create(ctx, uc)).To(Succeed())
		Eventually(surgeMachineSets(ctx), time.Minute).Should(HaveLen(len(workerMS)))
		Eventually(phaseStep(ctx), 2*time.Minute).Should(HavePrefix("Failed"))
		got := getUC(ctx)
		failed := meta.FindStatusCondition(got.Status.Conditions, "DeadlineExceeded")
		Expect(failed).NotTo(BeNil())
		Expect(failed.Reason).To(Equal("StartDeadlineExceeded"))
		var fu *upgradev1alpha1.UpgradeCondition
		for i := range got.Status.History[0].Conditions {
			if got.Status.History[0].Conditions[i].Type == "FailedUpgrade" {
				fu = &got.Status.History[0].Conditions[i]
			}
		}
		Expect(fu).NotTo(BeNil(), "MUO's FailedUpgrade condition")
		Expect(fu.Message).To(ContainSubstring("start deadline"))
		Eventually(surgeMachineSets(ctx), time.Minute).Should(BeEmpty())
		Eventually(surgeMachines(ctx), time.Minute).Should(BeZero())
		Expect(desiredUpdate(ctx)(Default)).To(Equal("4.16.3"), "never commenced")
		Expect(scrape()).To(ContainSubstring(`upshift_upgrade_scheduler_deadline_exceeded{deadline="start"`))
		deleteUC(ctx)
	})

	It("keeps an upgrade that does not validate Pending past its start window, as MUO does, and exports the LOCAL sync", func(ctx SpecContext) {
		// 4.16.99 is not offered: validation fails. With MUO the attempt
		// stays Pending whatever its window says; the passed deadline is
		// reported, never applied.
		uc := newUC(upgradev1alpha1.OSD, "4.16.99", time.Now())
		uc.Spec.CapacityReservation = false
		uc.Spec.Deadlines = &upgradev1alpha1.Deadlines{Start: &upgradev1alpha1.Deadline{Minutes: ptrTo(int32(1)), Policy: upgradev1alpha1.DeadlineFail}}
		Expect(env.Client.Create(ctx, uc)).To(Succeed())
		Eventually(func(g Gomega) string {
			c := meta.FindStatusCondition(getUC(ctx).Status.Conditions, "DeadlineExceeded")
			g.Expect(c).NotTo(BeNil())
			return c.Reason
		}, 2*time.Minute).Should(Equal("StartDeadlineExceeded"))
		got := getUC(ctx)
		Expect(got.Status.History[0].Phase).To(Equal(upgradev1alpha1.UpgradePhasePending), "not Failed: the deadline is only reported")
		validated := meta.FindStatusCondition(got.Status.Conditions, "Validated")
		Expect(validated).NotTo(BeNil())
		Expect(validated.Status).To(Equal(metav1.ConditionFalse))
		Expect(desiredUpdate(ctx)(Default)).NotTo(Equal("4.16.99"), "never commenced")
		By("the LOCAL source's sync is recorded, as MUO records it (its absence fires the SRE sync alert)")
		Expect(scrape()).To(MatchRegexp(`upgradeoperator_upgradeconfig_sync_timestamp\{upgradeconfig_name="` + ucName + `"\} [0-9.e+]+`))
		deleteUC(ctx)
	})

	It("resumes after its leader is killed at every step boundary and after every side effect, two replicas with leader election as the chart runs them, each side effect exactly once", func(ctx SpecContext) {
		stopScheduler(sched)
		// A blocked drain on the way: its forced pod is a side effect too.
		setConfig(ctx, drainConfig())
		DeferCleanup(func(ctx context.Context) { setConfig(ctx, muoConfig) })
		worker := firstWorker(ctx)
		guarded := map[string]string{"app": "guarded", guardedLabel: "true"}
		Expect(env.CreateNamespace(ctx, "kill-guarded")).To(Succeed())
		Expect(env.Client.Create(ctx, pinnedPod("kill-guarded", "db-0", worker, guarded))).To(Succeed())
		guard := guardingPDB("kill-guarded", "db", guarded)
		Expect(env.Client.Create(ctx, guard)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, guard))).To(Succeed()) })
		budgetsComputed(ctx, client.ObjectKey{Namespace: "kill-guarded", Name: "db"})

		before, forcedBefore := sideEffects(), forcedSteps()
		addedBefore, deletedBefore := track.machineSets()
		reps, err := framework.StartReplicas("upgrade-scheduler", runtime.LeaseName(binary), 2, scraper, func(int) (*framework.Running, error) {
			return startSchedulerProcess(true, leaseFlags...)
		})
		Expect(err).NotTo(HaveOccurred())
		var mu sync.Mutex
		var moments []string
		track.setOnMoment(func(_, moment string) {
			// The moment follows the leader's side effect; the failover
			// after the last kill may still be under way.
			leader := -1
			Eventually(func() bool {
				i, _, ok := reps.Leader()
				leader = i
				return ok
			}, time.Minute, 50*time.Millisecond).Should(BeTrue(), "a leader at "+moment)
			reps.Kill(leader)
			mu.Lock()
			moments = append(moments, moment)
			mu.Unlock()
		})
		DeferCleanup(func() {
			track.setOnMoment(nil)
			Expect(reps.Stop(10 * time.Second)).To(Succeed())
			Expect(reps.Err()).NotTo(HaveOccurred())
			sched = startScheduler(true)
		})

		uc := newUC(upgradev1alpha1.OSD, "4.16.4", time.Now())
		uc.Spec.PDBForceDrainTimeout = 0
		Expect(env.Client.Create(ctx, uc)).To(Succeed())
		Eventually(phaseStep(ctx), 8*time.Minute).Should(Equal("Upgraded/"))
		track.setOnMoment(nil)
		mu.Lock()
		defer mu.Unlock()
		AddReportEntry("leader kill loop", fmt.Sprintf("%d kills, %d restarts: %s", len(moments), reps.Restarts(), strings.Join(moments, "; ")))
		steps := 0
		for _, m := range moments {
			if strings.HasPrefix(m, "step ") {
				steps++
			}
		}
		Expect(steps).To(Equal(len(track.stepsSeen("4.16.4"))), "a kill at every step boundary seen")
		Expect(moments).To(ContainElements("ClusterVersion patched to 4.16.4", "forced kill-guarded/db-0"))
		for _, ms := range withSuffix(workerMS, "-upgrade") {
			Expect(moments).To(ContainElements("created "+ms, "deleting "+ms))
		}
		// What took effect comes from the watch: a kill can cut a request
		// off after it took effect, and the apiserver then logs a 504, not a
		// success. The audit log still shows that no request succeeded twice.
		added, deleted := track.machineSets()
		Expect(sub(added, addedBefore)).To(Equal(once(withSuffix(workerMS, "-upgrade"))), "temporary MachineSets created across the kills (watch)")
		Expect(sub(deleted, deletedBefore)).To(Equal(once(withSuffix(workerMS, "-upgrade"))), "temporary MachineSets deleted across the kills (watch)")
		Expect(track.forced()).To(Equal(map[string]int{"kill-guarded/db-0": 1}), "pods forced across the kills (watch)")
		after := sideEffects()
		Expect(after.cvPatches-before.cvPatches).To(BeNumerically("<=", 1), "ClusterVersion patches across the kills")
		for name, n := range sub(after.msCreates, before.msCreates) {
			Expect(n).To(BeNumerically("<=", 1), "successful creates of MachineSet %s", name)
		}
		for name, n := range sub(after.msDeletes, before.msDeletes) {
			Expect(n).To(BeNumerically("<=", 1), "successful deletes of MachineSet %s", name)
		}
		for step, n := range sub(forcedSteps(), forcedBefore) {
			Expect(n).To(BeNumerically("<=", 1), "successful %s", step)
		}
		By("never two Alertmanager silences of one lease at a time across the leaders")
		// A lease renewed in place keeps its silence; one that lapsed while
		// no leader ran (its TTL is as short as a failover here) is
		// followed by a new one, never overlapped by it.
		got := getUC(ctx)
		perLease := map[string][]silence.Silence{}
		for _, s := range listSilences(Default, string(got.UID)) {
			perLease[s.Lease()] = append(perLease[s.Lease()], s)
		}
		Expect(perLease).NotTo(BeEmpty())
		for lease, ss := range perLease {
			sort.Slice(ss, func(i, j int) bool { return ss[i].StartsAt.Before(ss[j].StartsAt) })
			for i := 1; i < len(ss); i++ {
				Expect(ss[i].StartsAt).NotTo(BeTemporally("<", ss[i-1].EndsAt), "silences %s and %s of lease %s overlap", ss[i-1].ID, ss[i].ID, lease)
			}
		}
		Expect(surgeMachineSets(ctx)(Default)).To(BeEmpty())
		h := got.Status.History[0]
		Expect(h.Conditions).To(HaveLen(17))
		for _, c := range h.Conditions {
			Expect(c.Status).To(Equal(corev1.ConditionTrue), string(c.Type))
		}
		d, ok := track.reaction("4.16.4")
		Expect(ok).To(BeTrue())
		// Reported, not bounded: the CVO may complete while a leader is
		// being replaced.
		AddReportEntry("reaction across kills", d.String())
		deleteUC(ctx)
	})

	It("takes a conditional update (not recommended, with its risk) as MUO does: version and image", func(ctx SpecContext) {
		before := sideEffects()
		cv := &configv1.ClusterVersion{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
		var conditional *configv1.ConditionalUpdate
		for i := range cv.Status.ConditionalUpdates {
			if cv.Status.ConditionalUpdates[i].Release.Version == "4.16.6" {
				conditional = &cv.Status.ConditionalUpdates[i]
			}
		}
		Expect(conditional).NotTo(BeNil(), "ocpsim offers 4.16.6 as a conditional update")
		for _, r := range cv.Status.AvailableUpdates {
			Expect(r.Version).NotTo(Equal("4.16.6"), "a conditional update with a risk that applies is not recommended")
		}
		uc := newUC(upgradev1alpha1.OSD, "4.16.6", time.Now())
		uc.Spec.CapacityReservation = false
		Expect(env.Client.Create(ctx, uc)).To(Succeed())
		Eventually(phaseStep(ctx), 4*time.Minute).Should(Equal("Upgraded/"))
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
		Expect(cv.Spec.DesiredUpdate.Version).To(Equal("4.16.6"))
		Expect(cv.Spec.DesiredUpdate.Image).To(Equal(conditional.Release.Image), "the conditional edge's image goes with the version")
		Expect(sideEffects().cvPatches - before.cvPatches).To(Equal(1))
		deleteUC(ctx)
	})

	It("runs an image-mode UpgradeConfig (a release image by digest) without a registry", func(ctx SpecContext) {
		image := cvo.ReleaseImage("4.16.7")
		Expect(image).To(ContainSubstring("@sha256:"))
		uc := newUC(upgradev1alpha1.ARO, "4.16.7", time.Now())
		uc.Spec.Desired = upgradev1alpha1.Update{Version: "4.16.7", Image: image}
		uc.Spec.CapacityReservation = false
		Expect(env.Client.Create(ctx, uc)).To(Succeed())
		Eventually(phaseStep(ctx), 4*time.Minute).Should(Equal("Upgraded/"))
		cv := &configv1.ClusterVersion{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
		Expect(cv.Spec.DesiredUpdate.Image).To(Equal(image))
		Expect(cv.Status.Desired.Version).To(Equal("4.16.7"))
		deleteUC(ctx)
	})

	It("blocks the pre-check on a critical alert from Alertmanager, never on an ignored one, and holds its silences as leases", func(ctx SpecContext) {
		deleteUC(ctx)
		By("a critical alert in a platform namespace, one ignored by name, one in an ignored namespace")
		postAlert("KubeAPIErrorBudgetBurn", "openshift-kube-apiserver", time.Now().Add(time.Hour))
		postAlert("PrometheusRuleFailures", "openshift-monitoring", time.Now().Add(time.Hour))
		postAlert("FluentdDown", "openshift-logging", time.Now().Add(time.Hour))
		uc := newUC(upgradev1alpha1.OSD, "4.16.8", time.Now())
		uc.Spec.CapacityReservation = false
		Expect(env.Client.Create(ctx, uc)).To(Succeed())

		Eventually(func(g Gomega) {
			got := &upgradev1alpha1.UpgradeConfig{}
			g.Expect(env.Client.Get(ctx, ucKey, got)).To(Succeed())
			g.Expect(got.Status.CurrentStep).To(Equal("ClusterHealthyBeforeUpgrade"))
			var details string
			for _, c := range got.Status.Preflight {
				if c.Check == "CriticalAlerts" {
					g.Expect(c.Passed).To(BeFalse())
					details = c.Details
				}
			}
			g.Expect(details).To(Equal("critical alerts firing: KubeAPIErrorBudgetBurn"))
		}, time.Minute).Should(Succeed())
		Eventually(eventNotes(ctx, "HealthCheckFailed")).Should(ContainElement("CriticalAlerts: critical alerts firing: KubeAPIErrorBudgetBurn"))
		Expect(desiredUpdate(ctx)(Default)).NotTo(Equal("4.16.8"), "not commenced while the alert fires")

		By("resolving it lets the upgrade start (the check looks again 30 s after failing)")
		postAlert("KubeAPIErrorBudgetBurn", "openshift-kube-apiserver", time.Now().Add(-time.Second))
		Eventually(desiredUpdate(ctx), 90*time.Second).Should(Equal("4.16.8"))
		uid := string(getUC(ctx).UID)

		By("the control-plane silences are created, recorded and renewed in place")
		var first silence.Silence
		Eventually(func(g Gomega) {
			first = activeLease(g, uid, "4.16.8/control-plane")
			g.Expect(getUC(ctx).Status.Silences).To(ContainElement(HaveField("ID", first.ID)))
		}).Should(Succeed())
		// Renewed in place: two looks in a row find the same silence with a
		// later end. Not necessarily the first one: a scheduler held up past
		// the suite's short TTL lets it expire and makes another, as a lease
		// should, and that one must then be renewed in place.
		var last silence.Silence
		Eventually(func(g Gomega) {
			s, prev := activeLease(g, uid, "4.16.8/control-plane"), last
			last = s
			g.Expect(s.ID).To(Equal(prev.ID), "the silence of the previous look")
			g.Expect(s.EndsAt).To(BeTemporally(">", prev.EndsAt))
		}).Should(Succeed())

		By("completing: every lease expired, none left active, status.silences empty")
		Eventually(phaseStep(ctx), 4*time.Minute).Should(Equal("Upgraded/"))
		Eventually(func(g Gomega) {
			all := listSilences(g, uid)
			var leases []string
			for _, s := range all {
				g.Expect(s.State).NotTo(Equal(silence.StateActive), s.Lease())
				leases = append(leases, s.Lease())
			}
			g.Expect(leases).To(ContainElements("4.16.8/control-plane", "4.16.8/control-plane-criticals"))
			g.Expect(getUC(ctx).Status.Silences).To(BeEmpty())
		}).Should(Succeed())
		Expect(scrape()).To(ContainSubstring(`upshift_upgrade_scheduler_silences_active{name="` + ucName + `",namespace="` + namespace + `"} 0`))
		postAlert("PrometheusRuleFailures", "openshift-monitoring", time.Now().Add(-time.Second))
		postAlert("FluentdDown", "openshift-logging", time.Now().Add(-time.Second))
		deleteUC(ctx)
	})

	It("forces a blocked worker drain as MUO's NodeKeeper does: grace 0, then finalizers, never an ignored namespace, and times it out", func(ctx SpecContext) {
		forcesBlockedDrain(ctx)
	})

	It("runs a scheduled OSD upgrade from an OCM policy to completed, telling OCM each state and service log once", func(ctx SpecContext) {
		ocmScheduledUpgrade(ctx)
	})

	It("still tells OCM each state and service log exactly once with 30% of OCM requests failing and the scheduler killed 20 times", func(ctx SpecContext) {
		ocmChaos(ctx, track)
	})

	It("reports the reaction time from the CVO's Completed to the next step", func() {
		Expect(reactions).To(HaveLen(2))
		maxD := time.Duration(0)
		for _, d := range reactions {
			Expect(d).To(BeNumerically(">=", 0))
			maxD = max(maxD, d)
		}
		AddReportEntry("reaction", fmt.Sprintf("median %s max %s over %v", median(reactions), maxD, reactions))
		Expect(maxD).To(BeNumerically("<", 5*time.Second), "the scheduler reacts to the watch, not to a poll")
	})

	// Every scrape of the suite went into exposed: the alerts and panels
	// query series that exist only in some states (a current step, a
	// failing check, a passed deadline).
	It("exported every metric its chart's alerts and dashboard query", func(ctx SpecContext) {
		scrape()
		rendered, err := framework.RenderChart(chartName, release, namespace,
			"prometheusRule.enabled=true", "dashboard.enabled=true")
		Expect(err).NotTo(HaveOccurred())
		queries, err := rendered.MonitoringQueries()
		Expect(err).NotTo(HaveOccurred())
		Expect(queries).NotTo(BeEmpty())
		missing, err := exposed.MissingFor(queries)
		Expect(err).NotTo(HaveOccurred())
		Expect(missing).To(BeEmpty(), "the scheduler never exported what the chart queries")
	})

	It("reads node-gate's runs once node-gate is installed after it", func(ctx SpecContext) {
		Expect(framework.InstallCRD(ctx, env, gating.RunsCRD)).To(Succeed())
		run := &nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "workers"},
			Spec: nodegatev1alpha1.MutexRunConfigSpec{MutexTargets: []nodegatev1alpha1.ObjectReference{{Name: "all-workers"}}}}
		// The CRD is served a moment after it is created.
		Eventually(func() error { return env.Client.Create(ctx, run) }).Should(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, run))).To(Succeed()) })
		// The scheduler started its watch of the runs without a restart:
		// the audit log shows it watch them (a streaming list) as its
		// chart's identity.
		Eventually(func(g Gomega) []string {
			events, err := env.AuditEvents(framework.ServiceAccountUser(namespace, id.ServiceAccount))
			g.Expect(err).NotTo(HaveOccurred())
			var verbs []string
			for _, e := range events {
				if e.ObjectRef != nil && e.ObjectRef.Resource == "mutexrunconfigs" && !slices.Contains(verbs, e.Verb) {
					verbs = append(verbs, e.Verb)
				}
			}
			return verbs
		}).Should(ContainElement("watch"))
	})

	It("was never refused a request and used every permission its chart grants", func(ctx SpecContext) {
		perms, err := chart.Permissions()
		Expect(err).NotTo(HaveOccurred())
		roles, err := chart.BoundRoles(namespace, id.ServiceAccount)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			events, err := env.AuditEvents(framework.ServiceAccountUser(namespace, id.ServiceAccount))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(framework.Refused(events)).To(BeEmpty())
			g.Expect(framework.Unused(framework.OfRoles(perms, roles...), events)).To(BeEmpty())
		}).Should(Succeed())
	})

})

// exposed is every series and label any scrape of the suite saw.
var exposed = framework.Exposition{}

// scrape reads the running scheduler's metrics as the chart's
// metrics-reader, and adds them to exposed.
func scrape() string {
	GinkgoHelper()
	var body string
	Eventually(func() (err error) { body, err = scraper.Scrape(metrics); return err }, 30*time.Second).Should(Succeed())
	exp, err := framework.ParseExposition(body)
	Expect(err).NotTo(HaveOccurred())
	exposed.Merge(exp)
	return body
}

func ptrTo[T any](v T) *T { return &v }

// postAlert sends a critical alert to Alertmanager as Prometheus does; an end
// in the past resolves it.
func postAlert(name, ns string, ends time.Time) {
	GinkgoHelper()
	body, err := json.Marshal([]map[string]any{{
		"labels":   map[string]string{"alertname": name, "severity": "critical", "namespace": ns},
		"startsAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
		"endsAt":   ends.UTC().Format(time.RFC3339),
	}})
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.Post(env.Alertmanager.URL+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Body.Close()).To(Succeed())
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
}

// listSilences lists the UpgradeConfig's silences with Alertmanager's own
// client, as anyone could.
func listSilences(g Gomega, uid string) []silence.Silence {
	sc, err := silence.NewClient(env.Alertmanager.URL, nil, 5*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	all, err := sc.List(context.Background(), silence.OwnerFilter(uid))
	g.Expect(err).NotTo(HaveOccurred())
	return all
}

func activeLease(g Gomega, uid, lease string) silence.Silence {
	for _, s := range listSilences(g, uid) {
		if s.State == silence.StateActive && s.Lease() == lease {
			return s
		}
	}
	g.Expect(lease).To(BeEmpty(), "no active silence for lease")
	return silence.Silence{}
}

func eventNotes(ctx context.Context, reason string) func(Gomega) []string {
	return func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(namespace))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Reason == reason {
				out = append(out, e.Note)
			}
		}
		return out
	}
}
