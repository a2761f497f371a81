package upgradescheduler

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/libs/version"
	"github.com/upshift-io/upshift/services/upgradescheduler/silence"
	"github.com/upshift-io/upshift/tools/ocmsim"
)

// ocmConfig is muoConfig with MUO's OCM provider on, as OSD production
// configures it, and the service log notifications and pre-health-check
// gates.
func ocmConfig() string {
	c := strings.Replace(muoConfig, "  source: LOCAL\n  localConfigName: managed-upgrade-config\n",
		"  source: OCM\n  ocmBaseUrl: "+ocmSim.URL()+"\n", 1)
	Expect(c).NotTo(Equal(muoConfig))
	return c + "upgradeType: OSD\nfeatureGate:\n  enabled:\n  - ServiceLogNotification\n  - PreHealthCheck\n"
}

func setConfig(ctx context.Context, data string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "managed-upgrade-operator-config"}, cm)).To(Succeed())
		cm.Data["config.yaml"] = data
		g.Expect(env.Client.Update(ctx, cm)).To(Succeed())
	}).Should(Succeed())
}

// nextVersion is the next patch release after the cluster's version that is
// not a conditional update.
func nextVersion(ctx context.Context) string {
	GinkgoHelper()
	cv := &configv1.ClusterVersion{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
	cur, err := version.Parse(cv.Status.History[0].Version)
	Expect(err).NotTo(HaveOccurred())
	next := fmt.Sprintf("%d.%d.%d", cur.Major, cur.Minor, cur.Patch+1)
	if next == "4.16.6" {
		next = "4.16.7"
	}
	return next
}

// ocmOutcome is what the local OCM saw of one policy's upgrade.
type ocmOutcome struct {
	states      []string
	serviceLogs map[string]int
	// writes counts state patches that took effect, by state.
	writes             map[string]int
	requests, injected int
	startedAt          time.Time
}

func ocmSeen(policy string, since int) ocmOutcome {
	o := ocmOutcome{serviceLogs: map[string]int{}, writes: map[string]int{}}
	for _, s := range ocmSim.StateHistory(ocmClusterID, policy) {
		if s.Value == "scheduled" && slices.Equal(o.states, []string{"scheduled"}) {
			// OCM writes scheduled again when the policy is rescheduled;
			// the scheduler never writes it (o.writes counts its writes).
			continue
		}
		o.states = append(o.states, s.Value)
		if s.Value == "started" {
			o.startedAt = s.Time
		}
	}
	reqs := ocmSim.Requests()[since:]
	o.requests = len(reqs)
	for _, r := range reqs {
		if r.Fault != "" {
			o.injected++
		}
		if r.Applied && r.Op == ocmsim.OpPatchPolicyState && strings.Contains(r.Path, "/"+policy+"/") {
			for _, st := range []string{"started", "delayed", "completed", "failed"} {
				if strings.Contains(r.Body, `"`+st+`"`) {
					o.writes[st]++
				}
			}
		}
	}
	for _, l := range ocmSim.ServiceLogs() {
		if strings.Contains(l.Description(), "to version "+ocmVersionOf(policy)+" ") {
			o.serviceLogs[l.Summary()]++
		}
	}
	return o
}

func ocmVersionOf(policy string) string { return policy[strings.LastIndex(policy, "-")+1:] }

var wantServiceLogs = map[string]int{
	"Cluster is starting with control and worker plane upgrade": 1,
	"Cluster has finished control plane upgrade":                1,
	"Cluster has finished with worker plane upgrade":            1,
}

// MUO's service logs of its PreHealthCheck gate, by summary.
const (
	preHealthCheckSL = "Cluster has encountered pre-upgrade healthcheck failure"
	healthCheckSL    = "Cluster has encountered healthcheck failure during upgrade"
)

// expectExactlyOnce checks the policy's states and service logs: those of
// every upgrade, and the extra ones named.
func expectExactlyOnce(o ocmOutcome, extra ...string) {
	GinkgoHelper()
	Expect(o.states).To(Equal([]string{"scheduled", "started", "completed"}), "policy states in order, each once")
	Expect(o.writes).To(Equal(map[string]int{"started": 1, "completed": 1}), "state writes that took effect")
	want := maps.Clone(wantServiceLogs)
	for _, e := range extra {
		want[e] = 1
	}
	Expect(o.serviceLogs).To(Equal(want), "service logs, each once")
}

// expectLeasesEnded checks the UpgradeConfig's silences: created for the
// control plane, none active now. (Whether one was renewed cannot be read
// from an expired silence: expiring it moves its end to the moment of
// expiry, so the scheduled-upgrade spec watches a renewal while it happens.)
func expectLeasesEnded(g Gomega, uid, v string) []string {
	var leases []string
	for _, s := range listSilences(g, uid) {
		g.Expect(s.State).NotTo(Equal(silence.StateActive), s.Lease())
		leases = append(leases, s.Lease())
	}
	g.Expect(leases).To(ContainElements(v+"/control-plane", v+"/control-plane-criticals"))
	sort.Strings(leases)
	return leases
}

func ocmScheduledUpgrade(ctx SpecContext) {
	v := nextVersion(ctx)
	policy := "osd-" + v
	since := len(ocmSim.Requests())
	Expect(since).To(BeZero(), "LOCAL: the earlier specs sent OCM nothing")
	setConfig(ctx, ocmConfig())
	DeferCleanup(func(ctx SpecContext) {
		setConfig(ctx, muoConfig)
		deleteUC(ctx)
	})

	By("a customer's budget that allows no disruption, and a policy scheduled three hours ahead: MUO's PreHealthCheckSL names the budget, once")
	Expect(env.CreateNamespace(ctx, "customer-app")).To(Succeed())
	app := map[string]string{"app": "db"}
	budget := guardingPDB("customer-app", "db", app)
	Expect(env.Client.Create(ctx, budget)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, budget))).To(Succeed()) })
	const finding = `PDBHealthcheckFailed: [{"Name":"db","Namespace":"customer-app"}]`
	ocmSim.SetPolicy(ocmClusterID, ocmsim.Policy{ID: policy, Version: v, NextRun: time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)})
	preHealth := func() []string {
		var out []string
		for _, l := range ocmSim.ServiceLogs() {
			if l.Summary() == preHealthCheckSL {
				out = append(out, l.Description())
			}
		}
		return out
	}
	Eventually(preHealth, time.Minute).Should(ConsistOf(
		"Cluster upgrade to version " + v + " has been scheduled for more than 2 hours, cluster pre-upgrade health check has identified the following points which may impact the upgrade process: " +
			finding + ". Please take actions to review and fix the issues before the upgrade begins to have seamless upgrade experience"))
	Eventually(func(g Gomega) string {
		r := getUC(ctx).Status.Report
		g.Expect(r).NotTo(BeNil())
		return r.Findings
	}).Should(ContainSubstring("PodDisruptionBudgetConfiguration"))

	By("rescheduled in OCM to now: the managed UpgradeConfig follows, mapped as MUO maps it")
	at := time.Now().Add(5 * time.Second).UTC().Truncate(time.Second)
	ocmSim.SetPolicy(ocmClusterID, ocmsim.Policy{ID: policy, Version: v, NextRun: at})
	Eventually(func(g Gomega) upgradev1alpha1.UpgradeConfigSpec {
		uc := &upgradev1alpha1.UpgradeConfig{}
		g.Expect(env.Client.Get(ctx, ucKey, uc)).To(Succeed())
		return uc.Spec
	}).Should(Equal(upgradev1alpha1.UpgradeConfigSpec{Desired: upgradev1alpha1.Update{Version: v, Channel: "stable-4.16"},
		UpgradeAt: at.Format(time.RFC3339), PDBForceDrainTimeout: 60, Type: upgradev1alpha1.OSD, CapacityReservation: true}))
	uc := getUC(ctx)
	created := uc.CreationTimestamp.Time

	By("running it to Upgraded, the control-plane silence renewed in place on the way")
	var first silence.Silence
	Eventually(func(g Gomega) { first = activeLease(g, string(uc.UID), v+"/control-plane") }, 2*time.Minute).Should(Succeed())
	Eventually(func(g Gomega) time.Time {
		s := activeLease(g, string(uc.UID), v+"/control-plane")
		g.Expect(s.ID).To(Equal(first.ID))
		return s.EndsAt
	}).Should(BeTemporally(">", first.EndsAt))
	Eventually(phaseStep(ctx), 6*time.Minute).Should(Equal("Upgraded/"))

	By("OCM saw scheduled → started → completed once each, and each service log once; the budget held nothing")
	o := ocmSeen(policy, since)
	expectExactlyOnce(o, preHealthCheckSL, healthCheckSL)
	Expect(preHealth()).To(HaveLen(1), "PreHealthCheckSL once, however many plans saw the budget")
	Expect(o.injected).To(BeZero())
	Expect(o.startedAt).NotTo(BeZero())
	Expect(o.startedAt).To(BeTemporally(">=", at), "started is reported at upgradeAt, not before")

	By("exporting the notifications and OCM requests (this process did them all: the earlier specs sent OCM nothing)")
	body := scrape()
	for _, line := range []string{
		`upgradeoperator_upgrade_notification{event="StateCompleted",upgradeconfig_name="` + ucName + `",version="` + v + `"} 1`,
		`upshift_upgrade_scheduler_notifications_total{event="StateStarted",result="sent"} 1`,
		`upshift_upgrade_scheduler_notifications_total{event="StateCompleted",result="sent"} 1`,
		`upgrade_notification_failed{event="StateCompleted",upgradeconfig_name="` + ucName + `"} 0`,
		`upshift_upgrade_scheduler_ocm_requests_total{code="200",op="patch_policy_state"} 2`,
		`upshift_upgrade_scheduler_ocm_requests_total{code="201",op="add_service_log"} 5`,
	} {
		Expect(body).To(ContainSubstring(line))
	}

	By("silences created, renewed and expired: none left active")
	var leases []string
	Eventually(func(g Gomega) { leases = expectLeasesEnded(g, string(uc.UID), v) }).Should(Succeed())
	Expect(getUC(ctx).Status.Silences).To(BeEmpty())
	AddReportEntry("OCM scheduled upgrade", fmt.Sprintf("%d OCM requests; UpgradeConfig created %s before upgradeAt; started in OCM %s after the UpgradeConfig was created (upgradeAt %s after); leases %v",
		o.requests, at.Sub(created).Round(time.Millisecond), o.startedAt.Sub(created).Round(time.Millisecond), at.Sub(created).Round(time.Millisecond), leases))
}

// ocmChaos runs an upgrade from an OCM policy while OCM fails 30% of the
// requests at random (server errors, throttling, answers lost after the
// write took effect, answers slower than the client waits) and the
// scheduler is killed at random moments: at step boundaries, after its own
// side effects, and right after an OCM write took effect (before the record
// of it reaches the status).
func ocmChaos(ctx SpecContext, track *tracker) {
	const wantKills = 20
	v := nextVersion(ctx)
	policy := "osd-" + v
	since := len(ocmSim.Requests())
	setConfig(ctx, ocmConfig())
	stopScheduler(sched)

	// Two replicas with leader election, as the chart deploys them: each
	// kill takes the leader, and the other replica takes over.
	reps, err := framework.StartReplicas("upgrade-scheduler", runtime.LeaseName(binary), 2, scraper, func(int) (*framework.Running, error) {
		return startSchedulerProcess(true, leaseFlags...)
	})
	Expect(err).NotTo(HaveOccurred())
	rng := rand.New(rand.NewSource(2026))
	var mu sync.Mutex
	var kills []string
	// killMu makes the kills one at a time (they come from the watch and
	// from OCM's handlers); killedLogs holds each killed leader's output,
	// shown if the spec fails.
	var killMu sync.Mutex
	var killedLogs strings.Builder
	kill := func(where string, chance float64) {
		killMu.Lock()
		defer killMu.Unlock()
		mu.Lock()
		if len(kills) >= wantKills || rng.Float64() >= chance {
			mu.Unlock()
			return
		}
		mu.Unlock()
		// The moment follows the leader's own request; a failover after
		// the last kill may still be under way.
		deadline := time.Now().Add(time.Minute)
		i, p, ok := reps.Leader()
		for !ok && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			i, p, ok = reps.Leader()
		}
		if !ok {
			return
		}
		logs := p.Logs()
		reps.Kill(i)
		mu.Lock()
		kills = append(kills, where)
		fmt.Fprintf(&killedLogs, "--- upgrade-scheduler leader %d, killed %s:\n%s", len(kills), where, logs)
		mu.Unlock()
	}
	// Every write that took effect is followed by a kill (the window
	// between an OCM write and its record in the status); step boundaries
	// and side effects often; the policy syncer's reads now and then.
	track.setOnMoment(func(_, moment string) { kill(moment, 0.8) })
	ocmSim.OnRequest(func(r ocmsim.Request) {
		if r.Applied {
			kill("after OCM "+r.Op, 1)
		} else {
			kill("at OCM "+r.Op, 0.1)
		}
	})
	ocmSim.FailRandomly(0.3, 30, ocmsim.Fault{Status: 500}, ocmsim.Fault{Status: 503}, ocmsim.Fault{Status: 429},
		ocmsim.Fault{LoseResponse: true}, ocmsim.Fault{Delay: 3 * time.Second})
	DeferCleanup(func(ctx SpecContext) {
		track.setOnMoment(nil)
		ocmSim.OnRequest(nil)
		ocmSim.FailRandomly(0, 0)
		setConfig(ctx, muoConfig)
		killMu.Lock() // no kill is writing killedLogs now
		defer killMu.Unlock()
		if CurrentSpecReport().Failed() || os.Getenv("E2E_SHOW_LOGS") != "" {
			GinkgoWriter.Println("killed upgrade-scheduler leaders:\n" + killedLogs.String())
			GinkgoWriter.Println("the replicas now:\n" + reps.Logs())
			GinkgoWriter.Println("OCM requests:")
			for _, r := range ocmSim.Requests()[since:] {
				GinkgoWriter.Printf("%s %s %s %s?%s status %d fault %q applied %v %s\n", r.Time.Format(time.StampMilli), r.Op, r.Method, r.Path, r.Query, r.Status, r.Fault, r.Applied, r.Body)
			}
		}
		Expect(reps.Stop(10 * time.Second)).To(Succeed())
		Expect(reps.Err()).NotTo(HaveOccurred())
		sched = startScheduler(true)
		deleteUC(ctx)
	})

	ocmSim.SetPolicy(ocmClusterID, ocmsim.Policy{ID: policy, Version: v, NextRun: time.Now().UTC().Truncate(time.Second)})
	var created time.Time
	Eventually(func(g Gomega) {
		uc := &upgradev1alpha1.UpgradeConfig{}
		g.Expect(env.Client.Get(ctx, ucKey, uc)).To(Succeed())
		g.Expect(uc.Spec.Desired.Version).To(Equal(v))
		created = uc.CreationTimestamp.Time
	}, time.Minute).Should(Succeed())
	// The run takes about half a minute, plus whatever the OCM steps wait
	// out: a step whose attempt failed waits 10 s before the next, doubling
	// with each failure in a row. An attempt fails about a quarter of the
	// time here: its write fails 30% of the time and is sent again only
	// after a 429 (one fault kind in five); its reads are retried within the
	// attempt. Six failures in a row of one of the five OCM steps, 630 s of
	// waiting, are rare (5 × 0.27^6 ≈ 0.2%); the timeout covers them. Seven
	// (1,270 s) it does not (≈ 0.05%).
	Eventually(phaseStep(ctx), 12*time.Minute).Should(Equal("Upgraded/"))
	track.setOnMoment(nil)
	ocmSim.OnRequest(nil)
	ocmSim.FailRandomly(0, 0)
	mostAttempts, mostStep := int32(0), ""
	for _, c := range getUC(ctx).Status.History[0].Conditions {
		if c.Attempts > mostAttempts {
			mostAttempts, mostStep = c.Attempts, string(c.Type)
		}
	}

	o := ocmSeen(policy, since)
	mu.Lock()
	defer mu.Unlock()
	Expect(o.states).To(ContainElement("completed"))
	dups := 0
	for _, n := range o.writes {
		dups += n - 1
	}
	for _, n := range o.serviceLogs {
		dups += n - 1
	}
	afterOCM := 0
	for _, k := range kills {
		if strings.HasPrefix(k, "after OCM") {
			afterOCM++
		}
	}
	AddReportEntry("OCM chaos", fmt.Sprintf("%d OCM requests, %d failures injected, %d kills (%d right after an OCM write), %d duplicates; started in OCM %s after the UpgradeConfig was created; Upgraded %s after; most attempts of one step %d (%s); kills: %s",
		o.requests, o.injected, len(kills), afterOCM, dups, o.startedAt.Sub(created).Round(time.Millisecond), time.Since(created).Round(time.Second),
		mostAttempts, mostStep, strings.Join(kills, "; ")))
	expectExactlyOnce(o)
	Expect(dups).To(BeZero())
	Expect(o.injected).To(BeNumerically(">", 0))
	Expect(kills).To(HaveLen(wantKills), "kills during the upgrade")
	Expect(afterOCM).To(BeNumerically(">", 0), "a kill right after an OCM write, before its record")
	uid := string(getUC(ctx).UID)
	Eventually(func(g Gomega) { expectLeasesEnded(g, uid, v) }).Should(Succeed())
}
