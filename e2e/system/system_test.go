package system

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/go-openapi/strfmt"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	amsilence "github.com/prometheus/alertmanager/api/v2/client/silence"
	"github.com/prometheus/alertmanager/api/v2/models"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/services/nodegate/plan"
	"github.com/upshift-io/upshift/tools/ocmsim"
	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
)

// newInstanceType is what the control-plane machines are changed to in the
// middle of the update.
const newInstanceType = "m6i.2xlarge"

var _ = Describe("One OSD upgrade with every controller, under faults", Ordered, func() {
	It("completes, and every invariant holds at every revision", func(ctx SpecContext) {
		// A cleanup of the spec's own: a suite-level one cannot tell whether
		// the spec failed.
		DeferCleanup(func(ctx SpecContext) {
			if CurrentSpecReport().Failed() || os.Getenv("E2E_SHOW_LOGS") != "" {
				showState(ctx)
			}
		}, NodeTimeout(time.Minute))
		recCtx, stopRecording := context.WithCancel(ctx)
		defer stopRecording()
		rec, err := startRecorder(recCtx, env.Config)
		Expect(err).NotTo(HaveOccurred())
		start := currentRevision(ctx)

		By("gating the workers: a rule with one pre-update hook Job, a run with a health gate on Alertmanager")
		createGate(ctx)
		Expect(framework.LabelMachinePools(ctx, env.Client)).To(Succeed())

		By("scheduling the update in OCM; OCM then fails 30% of requests, some after taking effect")
		Expect(framework.ScheduleInOCM(ctx, env.Client, ocm, namespace, framework.OSDConfig(ocm.URL(), ""), to,
			time.Now().Add(5*time.Second).Truncate(time.Second))).To(Succeed())
		ocm.FailRandomly(0.3, seed, ocmsim.Fault{Status: 500}, ocmsim.Fault{Status: 503}, ocmsim.Fault{Status: 429},
			ocmsim.Fault{LoseResponse: true})

		By("injecting the faults, and changing the control-plane machines once the cluster update is under way")
		faults := &chaos{start: time.Now(), count: map[faultKind]int{}}
		chaosDone := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(chaosDone)
			faults.run(ctx, faultPlan())
		}()
		// Under 30 % OCM faults the started notice alone may wait out several
		// of MUO's retry backoffs (10 s, doubling) before the update is
		// requested: the profile's whole time is the bound, as below.
		Eventually(updateUnderWay).WithContext(ctx).WithTimeout(prof.timeout).Should(BeTrue(), "ClusterVersion never started updating to %s", to)
		changeControlPlane(ctx)
		faults.note("requested the control-plane machines' change to %s", newInstanceType)

		By("waiting for the upgrade, the gated rollout and the control-plane rollout to complete")
		Eventually(func(g Gomega) {
			upgradeCompleted(ctx, g)
			controlPlaneRolled(ctx, g)
		}).WithContext(ctx).WithTimeout(prof.timeout).WithPolling(time.Second).Should(Succeed())
		faults.note("upgrade and rollouts completed")
		Eventually(chaosDone).WithTimeout(5 * time.Minute).Should(BeClosed())
		ocm.FailRandomly(0, 0)

		By("the end state: nothing left paused, cordoned, labelled, reserved or silenced; every Lease held by a live process")
		Eventually(func(g Gomega) { endState(ctx, g) }).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		By("the scheduler, the mcp-tracker and the update-status report agree that the workers are done")
		Eventually(func(g Gomega) { workersDoneEverywhere(ctx, g) }).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		for _, r := range replicas {
			Expect(r.Err()).NotTo(HaveOccurred())
		}
		// The components are settled; no revision after this matters.
		stopRecording()

		By("the faults happened as planned")
		fmt.Fprintf(GinkgoWriter, "seed %d; faults: %s\n%s\n", seed, faults.summary(), strings.Join(faults.log, "\n"))
		AddReportEntry("faults", faults.summary()+"\n"+strings.Join(faults.log, "\n"))
		Expect(faults.failures).To(BeEmpty())
		Expect(faults.count[killLeader]).To(BeNumerically(">=", prof.kills))
		Expect(faults.count[freezeLeader]).To(Equal(prof.freezes))
		Expect(faults.count[restartAPI]).To(Equal(prof.apiRestarts))
		Expect(faults.count[restartAlerts]).To(Equal(prof.amRestarts))
		Expect(faults.expired410).To(Equal(prof.apiRestarts), "after every apiserver restart a watch resumed from a resourceVersion of before is refused as expired (410 Gone)")
		for _, t := range faults.thawed {
			before, acted, refused := afterThaw(t)
			fmt.Fprintf(GinkgoWriter, "split brain: %s made %d requests before it froze; after it woke %d writes were refused\n", t.pod, before, refused)
			Expect(before).To(BeNumerically(">", 0), "the audit log tells pod %s's requests apart", t.pod)
			Expect(acted).To(BeEmpty(), "pod %s woke after losing its Lease and changed the cluster", t.pod)
		}

		By("replaying every revision in resourceVersion order")
		recording := rec.ordered()
		rep := replay(recording, start)
		var checked []string
		for k, v := range rep.checked {
			checked = append(checked, fmt.Sprintf("%s at %d revisions", k, v))
		}
		for k, v := range rep.undecided {
			checked = append(checked, fmt.Sprintf("%s undecided at %d revisions (in a blind window)", k, v))
		}
		sort.Strings(checked)
		var blinds []string
		for _, b := range recording.blinds {
			blinds = append(blinds, fmt.Sprintf("%s (%d, %d]", b.kind, b.from, b.to))
		}
		fmt.Fprintf(GinkgoWriter, "invariants: %d revisions replayed from resourceVersion %d on (%d deletions seen without their revision; blind windows after relists: %s); %s\n",
			rep.revisions, start, rep.gaps, strings.Join(blinds, ", "), strings.Join(checked, "; "))
		AddReportEntry("invariants", strings.Join(checked, "\n"))
		Expect(rep.violations).To(BeEmpty())
		for _, inv := range []string{"etcd quorum", "workers unavailable", "released after its hook", "update-status never Stalled",
			"no control-plane replacement during the cluster update", "one writer per field", "workers done only when done"} {
			Expect(rep.checked[inv]).To(BeNumerically(">", 0), "invariant %q was never checked", inv)
		}
		// A blind window is the few seconds after an apiserver restart: most
		// releases must still be decided.
		Expect(rep.undecided["released after its hook"]).To(BeNumerically("<", rep.checked["released after its hook"]),
			"most releases are decided from revisions the recorder saw")

		By("no side effect twice: hook Jobs, Machines, MachineSets, ClusterVersion's request, OCM notices, silences")
		workers := gatedWorkers(ctx)
		for k, uids := range rep.hookJobs {
			Expect(uids).To(HaveLen(1), "hook Jobs for %s", k)
		}
		for _, n := range workers {
			Expect(rep.hooked(n)).To(BeTrue(), "worker %s's hook ran", n)
		}
		Expect(rep.temporaryNodes).NotTo(BeEmpty(), "temporary workers joined")
		for n := range rep.temporaryNodes {
			Expect(rep.hooked(n)).To(BeTrue(), "temporary worker %s was gated as any worker: its hook ran", n)
		}
		Expect(rep.masterMachines).To(HaveLen(3), "one replacement per control-plane machine")
		for name, uids := range rep.masterMachines {
			Expect(uids).To(HaveLen(1), "control-plane Machine %s created once", name)
		}
		Expect(rep.surgeSets).NotTo(BeEmpty(), "capacity was reserved")
		for name, uids := range rep.surgeSets {
			Expect(uids).To(HaveLen(1), "temporary MachineSet %s", name)
		}
		Expect(rep.desiredVersions).To(HaveLen(1), "ClusterVersion's desiredUpdate set once: %v", rep.desiredVersions)
		Expect(rep.desiredVersions[0]).To(HavePrefix(to + "@"))
		ocmNoticesOnce()
		alertmanagerRequestsNamed()
		silencesOnce(ctx)

		By("one writer per field of the UpgradeConfig status, at the end as at every revision")
		uc := upgradeConfig(ctx, Default)
		misowned, err := framework.MisownedStatusFields(uc)
		Expect(err).NotTo(HaveOccurred())
		Expect(misowned).To(BeEmpty())
	}, SpecTimeout(specTimeout()))
})

// specTimeout bounds the spec: its waits in turn (the update started, the
// update and rollouts done, the faults over, the end state) and a margin for
// the checks. It ends before go test's own -timeout so that, should
// something block, Ginkgo says where (the spec's stack, at the timeout)
// instead of go test's goroutine dump of the whole process.
func specTimeout() time.Duration {
	return 2*profiles[*profileName].timeout + 8*time.Minute
}

// afterThaw reads the audit log for a leader woken after losing its Lease:
// how many requests it made before (the user agent names its pod), and every
// write it made succeed after it woke — those of its leader election
// (Leases, Events) aside: a stale leader must not act. OCM's request log
// and the Alertmanager proxy's are read the same way (the scheduler's
// requests to both name its pod too).
func afterThaw(t thawed) (before int, acted []string, refused int) {
	GinkgoHelper()
	evs, err := env.AuditEvents(t.user)
	Expect(err).NotTo(HaveOccurred())
	for _, e := range evs {
		if !strings.HasSuffix(e.UserAgent, "("+t.pod+")") {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, e.StageTimestamp)
		Expect(err).NotTo(HaveOccurred())
		if at.Before(t.at) {
			before++
			continue
		}
		switch e.Verb {
		case "create", "update", "patch", "delete", "deletecollection":
		default:
			continue
		}
		if e.ObjectRef != nil && (e.ObjectRef.Resource == "leases" || e.ObjectRef.Resource == "events") {
			continue
		}
		if e.ResponseStatus == nil || e.ResponseStatus.Code >= 300 {
			refused++
			continue
		}
		acted = append(acted, fmt.Sprintf("%s %s at %s", e.Verb, e.RequestURI, e.StageTimestamp))
	}
	// A write to a service outside the cluster, by the services' own logs.
	outside := func(service, userAgent string, at time.Time, method, path string, applied bool) {
		if !strings.HasSuffix(userAgent, "("+t.pod+")") || at.Before(t.at) || method == http.MethodGet {
			return
		}
		if !applied {
			refused++
			return
		}
		acted = append(acted, fmt.Sprintf("%s %s %s at %s", service, method, path, at.UTC().Format(time.RFC3339Nano)))
	}
	for _, r := range ocm.Requests() {
		outside("OCM", r.UserAgent, r.Time, r.Method, r.Path, r.Applied)
	}
	for _, r := range amLog.Requests() {
		outside("Alertmanager", r.UserAgent, r.Time, r.Method, r.Path, r.Applied())
	}
	return before, acted, refused
}

// showState prints, for a failed run, where the UpgradeConfig stands (each
// step's status and last error) and every replica's output.
func showState(ctx context.Context) {
	uc := &upgradev1alpha1.UpgradeConfig{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "managed-upgrade-config"}, uc); err == nil && len(uc.Status.History) > 0 {
		h := uc.Status.History[0]
		fmt.Fprintf(GinkgoWriter, "UpgradeConfig: phase %s, current step %s; workers started %v, completed %v (the mcp-tracker's)\n",
			h.Phase, uc.Status.CurrentStep, h.WorkerStartTime, h.WorkerCompleteTime)
		for _, c := range h.Conditions {
			fmt.Fprintf(GinkgoWriter, "  %s %s: %s (attempts %d, last error %q)\n", c.Type, c.Status, c.Message, c.Attempts, c.LastError)
		}
		for _, p := range uc.Status.Pools {
			fmt.Fprintf(GinkgoWriter, "  pool %s: target %s, started %v, completed %v, removed %v, nodes %+v\n",
				p.Name, p.TargetConfig, p.StartTime, p.CompleteTime, p.RemovedTime, p.Nodes)
		}
		for _, c := range uc.Status.Conditions {
			fmt.Fprintf(GinkgoWriter, "  condition %s %s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	for _, r := range replicas {
		GinkgoWriter.Println(r.Logs())
	}
}

// currentRevision is etcd's revision now, as a list returns it.
func currentRevision(ctx context.Context) int64 {
	GinkgoHelper()
	var list corev1.NamespaceList
	Expect(env.Client.List(ctx, &list)).To(Succeed())
	var rv int64
	_, err := fmt.Sscan(list.ResourceVersion, &rv)
	Expect(err).NotTo(HaveOccurred())
	return rv
}

func createGate(ctx context.Context) {
	GinkgoHelper()
	limit := intstr.FromInt32(maxUnavailable)
	rule, target, run := framework.OneHookGate(namespace)
	run.Spec.MaxUnavailable = &limit
	run.Spec.HealthGate = &nodegatev1alpha1.HealthGate{IgnoredAlertNames: []string{"Watchdog"}}
	objs := []client.Object{rule, target, run}
	for _, o := range objs {
		Expect(env.Client.Create(ctx, o)).To(Succeed())
	}
}

// updateUnderWay: ClusterVersion is updating to the target.
func updateUnderWay(ctx context.Context) bool {
	cv := &configv1.ClusterVersion{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv); err != nil {
		return false
	}
	return len(cv.Status.History) > 0 && cv.Status.History[0].Version == to && cv.Status.History[0].State == configv1.PartialUpdate
}

// changeControlPlane changes the instance type in the
// ControlPlaneMachineSet's template. The webhook that validates it is served
// by a replica that faults may have just killed: the change is retried until
// the apiserver accepts it.
func changeControlPlane(ctx context.Context) {
	GinkgoHelper()
	Eventually(func() error {
		set := &machinev1.ControlPlaneMachineSet{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: cpmsNamespace, Name: "cluster"}, set); err != nil {
			return err
		}
		tmpl := set.Spec.Template.OpenShiftMachineV1Beta1Machine
		old := machineapi.ReadProviderSpec(&machinev1beta1.Machine{Spec: tmpl.Spec})
		patch := client.MergeFromWithOptions(set.DeepCopy(), client.MergeFromWithOptimisticLock{})
		tmpl.Spec.ProviderSpec.Value = machineapi.NewProviderSpec(old.Placement.Region, "", newInstanceType)
		return env.Client.Patch(ctx, set, patch)
	}).WithContext(ctx).Should(Succeed())
}

func upgradeConfig(ctx context.Context, g Gomega) *upgradev1alpha1.UpgradeConfig {
	uc := &upgradev1alpha1.UpgradeConfig{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "managed-upgrade-config"}, uc)).To(Succeed())
	return uc
}

// upgradeCompleted: the UpgradeConfig says Upgraded, ClusterVersion
// completed the target, and the node-gate run passed every worker.
func upgradeCompleted(ctx context.Context, g Gomega) {
	uc := upgradeConfig(ctx, g)
	g.Expect(uc.Status.History).NotTo(BeEmpty())
	g.Expect(uc.Status.History[0].Phase).To(BeEquivalentTo("Upgraded"))
	cv := &configv1.ClusterVersion{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
	g.Expect(cv.Status.History[0].Version).To(Equal(to))
	g.Expect(cv.Status.History[0].State).To(Equal(configv1.CompletedUpdate))
	run := &nodegatev1alpha1.MutexRunConfig{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "workers"}, run)).To(Succeed())
	g.Expect(run.Status.Phase).To(Equal(nodegatev1alpha1.RunCompleted))
}

// controlPlaneRolled: three Running control-plane machines of the new
// instance type, none being deleted, and the set says so.
func controlPlaneRolled(ctx context.Context, g Gomega) {
	var list machinev1beta1.MachineList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(cpmsNamespace), client.MatchingLabels{machineapi.RoleLabel: "master"})).To(Succeed())
	g.Expect(list.Items).To(HaveLen(3))
	for i := range list.Items {
		m := &list.Items[i]
		g.Expect(machineapi.ReadProviderSpec(m).InstanceType).To(Equal(newInstanceType), "machine %s", m.Name)
		g.Expect(m.DeletionTimestamp).To(BeNil())
		g.Expect(ptr.Deref(m.Status.Phase, "")).To(Equal(machinev1beta1.PhaseRunning))
	}
	set := &machinev1.ControlPlaneMachineSet{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: cpmsNamespace, Name: "cluster"}, set)).To(Succeed())
	g.Expect(set.Status.UpdatedReplicas).To(BeEquivalentTo(3))
	g.Expect(meta.IsStatusConditionFalse(set.Status.Conditions, "Progressing")).To(BeTrue())
}

// workersDoneEverywhere: the worker pool is done in the UpgradeConfig's
// history (the scheduler's worker step) and status.pools (the mcp-tracker),
// and Completed in the update-status report.
func workersDoneEverywhere(ctx context.Context, g Gomega) {
	uc := upgradeConfig(ctx, g)
	g.Expect(uc.Status.History[0].WorkerCompleteTime).NotTo(BeNil(), "the UpgradeConfig's worker completion")
	var worker *upgradev1alpha1.PoolUpdate
	for i := range uc.Status.Pools {
		if uc.Status.Pools[i].Name == "worker" {
			worker = &uc.Status.Pools[i]
		}
	}
	g.Expect(worker).NotTo(BeNil(), "status.pools has the worker pool")
	g.Expect(worker.CompleteTime).NotTo(BeNil(), "the mcp-tracker's worker pool completion")
	g.Expect(worker.Nodes.Done).To(Equal(worker.MachineCount))
	// MUO's worker times are the worker pool's update (its target changes
	// once in this run): neither node-gate holding the workers nor the
	// extra capacity joining starts it.
	g.Expect(uc.Status.History[0].WorkerStartTime).To(Equal(worker.StartTime), "workerStartTime is the worker pool's start")
	g.Expect(uc.Status.History[0].WorkerCompleteTime).To(Equal(worker.CompleteTime), "workerCompleteTime is the worker pool's completion")
	us := &updatev1alpha1.UpgradeStatus{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: updatev1alpha1.UpgradeStatusName}, us)).To(Succeed())
	pools := map[string]updatev1alpha1.PoolAssessment{}
	for _, p := range us.Status.WorkerPools {
		pools[p.Name] = p.Pool.Assessment
	}
	g.Expect(pools).To(Equal(map[string]updatev1alpha1.PoolAssessment{"worker": updatev1alpha1.PoolCompleted}))
}

// endState: no pool paused and no gate pool left, no node cordoned or
// carrying node-gate's label, no temporary MachineSet, no active silence,
// and every component led by a live replica.
func endState(ctx context.Context, g Gomega) {
	var pools mcfgv1.MachineConfigPoolList
	g.Expect(env.Client.List(ctx, &pools)).To(Succeed())
	for _, p := range pools.Items {
		g.Expect(p.Spec.Paused).To(BeFalse(), "pool %s paused", p.Name)
		g.Expect(p.Labels).NotTo(HaveKey(plan.GatePoolLabel), "gate pool %s left", p.Name)
	}
	var nodeList corev1.NodeList
	g.Expect(env.Client.List(ctx, &nodeList)).To(Succeed())
	for _, n := range nodeList.Items {
		g.Expect(n.Spec.Unschedulable).To(BeFalse(), "node %s cordoned", n.Name)
		for k := range n.Labels {
			// node-gate's hold and canary labels, and any other of Upshift's.
			g.Expect(k).NotTo(ContainSubstring("upshift.io/"), "node %s labelled", n.Name)
		}
	}
	var sets machinev1beta1.MachineSetList
	g.Expect(env.Client.List(ctx, &sets, client.InNamespace(cpmsNamespace))).To(Succeed())
	for _, s := range sets.Items {
		g.Expect(s.Name).NotTo(HaveSuffix("-upgrade"), "temporary MachineSet left")
	}
	for _, s := range silences(ctx, g) {
		g.Expect(*s.Status.State).NotTo(Equal(models.SilenceStatusStateActive), "silence %s (%s) active", *s.ID, *s.Comment)
	}
	for _, r := range replicas {
		_, _, ok := r.Leader()
		g.Expect(ok).To(BeTrue(), "%s has no leader", r.Name)
	}
}

func silences(ctx context.Context, g Gomega) models.GettableSilences {
	api, err := am.API()
	g.Expect(err).NotTo(HaveOccurred())
	res, err := api.Silence.GetSilences(amsilence.NewGetSilencesParamsWithContext(ctx))
	g.Expect(err).NotTo(HaveOccurred())
	return res.Payload
}

// gatedWorkers are the worker nodes at the end (the temporary ones are
// gone; each of the others passed the gate).
func gatedWorkers(ctx context.Context) []string {
	GinkgoHelper()
	var list corev1.NodeList
	Expect(env.Client.List(ctx, &list, client.HasLabels{"node-role.kubernetes.io/worker"})).To(Succeed())
	var out []string
	for _, n := range list.Items {
		if _, master := n.Labels["node-role.kubernetes.io/master"]; !master {
			out = append(out, n.Name)
		}
	}
	return out
}

// ocmNoticesOnce: the policy went scheduled → started → completed with
// each state written once, and each service log was posted once, whatever
// the faults did to the requests.
func ocmNoticesOnce() {
	GinkgoHelper()
	var states []string
	for _, s := range ocm.StateHistory(framework.OCMClusterID, framework.OCMPolicyID) {
		states = append(states, s.Value)
	}
	Expect(states).To(Equal([]string{"scheduled", "started", "completed"}))
	count := map[string]int{}
	for _, l := range ocm.ServiceLogs() {
		count[l.Summary()]++
	}
	for summary, n := range count {
		Expect(n).To(Equal(1), "service log %q posted %d times", summary, n)
	}
	Expect(count).NotTo(BeEmpty())
	faults := 0
	for _, r := range ocm.Requests() {
		if r.Fault != "" {
			faults++
		}
		// What afterThaw tells a stale leader's OCM requests by.
		Expect(r.UserAgent).To(MatchRegexp(`^upshift-upgrade-scheduler/\S+ \(\S+\)$`), "OCM request %s %s does not name its scheduler pod", r.Method, r.Path)
	}
	Expect(faults).To(BeNumerically(">", 0), "the OCM faults must have hit something")
}

// alertmanagerRequestsNamed: every request that reached Alertmanager names
// the pod that sent it, and every write is the scheduler's (node-gate and
// update-status only read): what afterThaw tells a stale leader's silence
// writes by. Some writes were made, or the check would pass on none.
func alertmanagerRequestsNamed() {
	GinkgoHelper()
	writes := 0
	for _, r := range amLog.Requests() {
		if r.Method == http.MethodGet {
			Expect(r.UserAgent).To(MatchRegexp(`^upshift-[a-z-]+/\S+ \(\S+\)$`), "Alertmanager request %s %s does not name its pod", r.Method, r.Path)
			continue
		}
		writes++
		Expect(r.UserAgent).To(MatchRegexp(`^upshift-upgrade-scheduler/\S+ \(\S+\)$`), "Alertmanager write %s %s is not a scheduler pod's", r.Method, r.Path)
	}
	Expect(writes).To(BeNumerically(">", 0), "the scheduler wrote its silences through the proxy")
}

// silencesOnce: no two silences with the same matchers were active at the
// same time (a silence created twice).
func silencesOnce(ctx context.Context) {
	GinkgoHelper()
	type span struct{ from, to strfmt.DateTime }
	byMatchers := map[string][]span{}
	for _, s := range silences(ctx, Default) {
		var ms []string
		for _, m := range s.Matchers {
			ms = append(ms, fmt.Sprintf("%s %t %t %s", *m.Name, *m.IsEqual, *m.IsRegex, *m.Value))
		}
		sort.Strings(ms)
		k := strings.Join(ms, ", ")
		for _, o := range byMatchers[k] {
			overlap := time.Time(*s.StartsAt).Before(time.Time(o.to)) && time.Time(o.from).Before(time.Time(*s.EndsAt))
			Expect(overlap).To(BeFalse(), "two silences of %s at once", k)
		}
		byMatchers[k] = append(byMatchers[k], span{*s.StartsAt, *s.EndsAt})
	}
	Expect(byMatchers).NotTo(BeEmpty(), "the upgrade silenced its alerts")
}
