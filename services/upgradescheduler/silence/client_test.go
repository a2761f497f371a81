package silence_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-openapi/strfmt"
	. "github.com/onsi/gomega"
	amclient "github.com/prometheus/alertmanager/api/v2/client"
	amalert "github.com/prometheus/alertmanager/api/v2/client/alert"
	"github.com/prometheus/alertmanager/api/v2/models"

	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/upgradescheduler/silence"
)

// TestClientAgainstAlertmanager runs the lease lifecycle of one upgrade
// against the real Alertmanager: create, server-side listing that sees only
// this UpgradeConfig's silences, the silences really silencing (and the
// namespace scope really holding), re-adoption and in-place extension after a
// restart, a reconfigured criticals list, hand-over to the worker lease, and expiry at the end.
func TestClientAgainstAlertmanager(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	am, err := testenv.StartAlertmanager(ctx, "")
	g.Expect(err).NotTo(HaveOccurred())
	defer am.Stop()
	c, err := silence.NewClient(am.URL, nil, 10*time.Second)
	g.Expect(err).NotTo(HaveOccurred())

	now := time.Now()
	// Someone else's silence and another UpgradeConfig's lease: never listed
	// for ours, never touched.
	foreign, err := c.Post(ctx, "", silence.Silence{
		Matchers: []silence.Matcher{{Name: "alertname", Value: "Watchdog", IsEqual: true}},
		StartsAt: now, EndsAt: now.Add(time.Hour), CreatedBy: "sre", Comment: "hand-made",
	})
	g.Expect(err).NotTo(HaveOccurred())
	other := silence.Input{Owner: silence.Owner{Namespace: "ns", Name: "other", UID: "uid-other"}, Version: "4.16.2",
		CreatedBy: "managed-upgrade-operator", Now: now, Wanted: []silence.Want{{Purpose: silence.ControlPlane, End: now.Add(time.Hour)}}}
	otherRecord, _, err := c.Reconcile(ctx, other)
	g.Expect(err).NotTo(HaveOccurred())

	in := silence.Input{
		Owner:     silence.Owner{Namespace: "openshift-managed-upgrade-operator", Name: "managed-upgrade-config", UID: "uid-1"},
		Version:   "4.16.2",
		CreatedBy: "managed-upgrade-operator",
		Criticals: []string{"ClusterOperatorDown", "ClusterOperatorDegraded"},
		Now:       now,
		TTL:       30 * time.Minute,
	}
	cpEnd := silence.ControlPlaneWindow(now, 90*time.Minute)
	in.Wanted = []silence.Want{{Purpose: silence.ControlPlane, End: cpEnd}, {Purpose: silence.ControlPlaneCriticals, End: cpEnd}}

	// 1. The control-plane phase: two leases.
	record, plan, err := c.Reconcile(ctx, in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plan.Actions).To(HaveLen(2))
	g.Expect(record).To(HaveKey(silence.ControlPlane))
	g.Expect(record).To(HaveKey(silence.ControlPlaneCriticals))
	cpID, critID := record[silence.ControlPlane], record[silence.ControlPlaneCriticals]

	listed, err := c.List(ctx, silence.OwnerFilter("uid-1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(listed)).To(ConsistOf(cpID, critID), "the server-side filter returns ours only, not %s nor %v", foreign, otherRecord)
	for _, s := range listed {
		g.Expect(s.State).To(Equal(silence.StateActive))
		g.Expect(s.EndsAt).To(BeTemporally("~", now.Add(30*time.Minute), time.Second))
		g.Expect(s.CreatedBy).To(Equal("managed-upgrade-operator"))
	}

	// 2. They silence what MUO's silence: warning alerts in platform
	// namespaces, the listed criticals in platform namespaces; not the same
	// critical in a customer namespace, nor a critical not listed.
	api := rawAPI(t, am)
	postAlerts(ctx, t, api, now,
		models.LabelSet{"alertname": "KubePodNotReady", "severity": "warning", "namespace": "openshift-etcd"},
		models.LabelSet{"alertname": "ClusterOperatorDown", "severity": "critical", "namespace": "openshift-cluster-version"},
		models.LabelSet{"alertname": "ClusterOperatorDown", "severity": "critical", "namespace": "customer-app"},
		models.LabelSet{"alertname": "KubeAPIDown", "severity": "critical", "namespace": "openshift-kube-apiserver"},
		models.LabelSet{"alertname": "AppWarning", "severity": "warning", "namespace": "customer-app"},
	)
	g.Eventually(func() map[string][]string { return silencedBy(ctx, t, api) }).WithTimeout(30 * time.Second).Should(Equal(map[string][]string{
		// The other UpgradeConfig's control-plane lease silences it too.
		"KubePodNotReady/openshift-etcd":                sorted(cpID, otherRecord[silence.ControlPlane]),
		"ClusterOperatorDown/openshift-cluster-version": {critID},
		"ClusterOperatorDown/customer-app":              nil,
		"KubeAPIDown/openshift-kube-apiserver":          nil,
		"AppWarning/customer-app":                       nil,
	}))

	// 2b. The scheduler's silences are identifiable as maintenance silences
	// (libs/alerts), a person's is not; an alert silenced only by the
	// scheduler counts as active for a reader that gates on it (node-gate),
	// one a person silenced too does not.
	reader, err := alerts.New(alerts.Config{URL: am.URL, API: alerts.Alertmanager})
	g.Expect(err).NotTo(HaveOccurred())
	maintenance, err := reader.(alerts.SilenceReader).MaintenanceSilences(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(maintenance).To(Equal(map[string]bool{cpID: true, critID: true, otherRecord[silence.ControlPlane]: true}))
	personal, err := c.Post(ctx, "", silence.Silence{
		Matchers: []silence.Matcher{{Name: "alertname", Value: "ClusterOperatorDown", IsEqual: true}},
		StartsAt: now, EndsAt: now.Add(time.Hour), CreatedBy: "sre", Comment: "known issue",
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		as, err := reader.Alerts(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		gating := map[string]bool{}
		for _, a := range as {
			gating[a.Name()+"/"+a.Labels["namespace"]] = !a.Suppressed || a.SuppressedOnlyBy(maintenance)
		}
		g.Expect(gating).To(Equal(map[string]bool{
			"KubePodNotReady/openshift-etcd":                true,  // the scheduler's silences only
			"ClusterOperatorDown/openshift-cluster-version": false, // a person's silence too
			"ClusterOperatorDown/customer-app":              false, // a person's silence
			"KubeAPIDown/openshift-kube-apiserver":          true,
			"AppWarning/customer-app":                       true,
		}))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(c.Expire(ctx, personal)).To(Succeed())

	// 3. A restart that lost the recorded IDs, with a longer TTL so less
	// than half is left: the same two silences are re-adopted and extended
	// in place, and no third one appears.
	in.Recorded, in.TTL, in.Now = nil, 2*time.Hour, time.Now()
	record, plan, err = c.Reconcile(ctx, in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kinds(plan)).To(ConsistOf(silence.Extend, silence.Extend))
	g.Expect(record).To(Equal(map[silence.Purpose]string{silence.ControlPlane: cpID, silence.ControlPlaneCriticals: critID}))
	listed, err = c.List(ctx, silence.OwnerFilter("uid-1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(listed)).To(ConsistOf(cpID, critID))
	for _, s := range listed {
		// Capped by the control-plane window, not now+2h.
		g.Expect(s.EndsAt).To(BeTemporally("~", cpEnd, time.Second))
	}

	// 3b. The criticals list is reconfigured mid-phase: Alertmanager
	// replaces that silence under its ID (new ID, old one expired), the
	// other lease is untouched.
	in.Criticals, in.Now, in.Recorded = []string{"ClusterOperatorDown", "KubeletDown"}, time.Now(), record
	record, plan, err = c.Reconcile(ctx, in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kinds(plan)).To(Equal([]silence.Kind{silence.Replace}))
	g.Expect(record[silence.ControlPlane]).To(Equal(cpID))
	g.Expect(record[silence.ControlPlaneCriticals]).NotTo(Equal(critID))
	g.Expect(liveIDs(ctx, t, c, "uid-1")).To(ConsistOf(cpID, record[silence.ControlPlaneCriticals]))
	postAlerts(ctx, t, api, now, models.LabelSet{"alertname": "KubeletDown", "severity": "critical", "namespace": "kube-system"})
	g.Eventually(func() []string { return silencedBy(ctx, t, api)["KubeletDown/kube-system"] }).WithTimeout(30 * time.Second).
		Should(Equal([]string{record[silence.ControlPlaneCriticals]}))

	// 4. The worker phase: the control-plane leases expire, a worker lease.
	in.TTL, in.Now, in.Recorded = 30*time.Minute, time.Now(), record
	in.Wanted = []silence.Want{{Purpose: silence.Workers, End: silence.WorkerWindow(in.Now,
		[]silence.Pool{{Remaining: 6, MaxUnavailable: 2}}, 45*time.Minute, 8*time.Minute)}}
	record, _, err = c.Reconcile(ctx, in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(record).To(HaveLen(1))
	g.Expect(record).To(HaveKey(silence.Workers))
	g.Expect(liveIDs(ctx, t, c, "uid-1")).To(ConsistOf(record[silence.Workers]))

	// 5. A terminal phase (completed, failed, cancelled): nothing live.
	in.Wanted, in.Now, in.Recorded = nil, time.Now(), record
	record, _, err = c.Reconcile(ctx, in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(record).To(BeEmpty())
	g.Expect(liveIDs(ctx, t, c, "uid-1")).To(BeEmpty())
	// The others' silences are untouched.
	g.Expect(liveIDs(ctx, t, c, "uid-other")).To(ConsistOf(otherRecord[silence.ControlPlane]))
	all, err := c.List(ctx, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(liveOf(all)).To(ContainElement(foreign))

	// 6. Expiring again, or a silence Alertmanager never had, is no error.
	g.Expect(c.Expire(ctx, cpID)).To(Succeed())
	g.Expect(c.Expire(ctx, "00000000-0000-0000-0000-000000000000")).To(Succeed())
}

func TestNewClientRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "alertmanager:9093", "://x"} {
		if _, err := silence.NewClient(u, nil, time.Second); err == nil {
			t.Errorf("NewClient(%q) accepted", u)
		}
	}
}

func ids(ss []silence.Silence) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

func liveOf(ss []silence.Silence) []string {
	var out []string
	for _, s := range ss {
		if s.State == silence.StateActive || s.State == silence.StatePending {
			out = append(out, s.ID)
		}
	}
	return out
}

func liveIDs(ctx context.Context, t *testing.T, c *silence.Client, uid string) []string {
	t.Helper()
	ss, err := c.List(ctx, silence.OwnerFilter(uid))
	if err != nil {
		t.Fatal(err)
	}
	return liveOf(ss)
}

func kinds(p silence.Plan) []silence.Kind {
	var out []silence.Kind
	for _, a := range p.Actions {
		out = append(out, a.Kind)
	}
	return out
}

func sorted(s ...string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func rawAPI(t *testing.T, am *testenv.Alertmanager) *amclient.AlertmanagerAPI {
	api, err := am.API()
	if err != nil {
		t.Fatal(err)
	}
	return api
}

func postAlerts(ctx context.Context, t *testing.T, api *amclient.AlertmanagerAPI, now time.Time, labels ...models.LabelSet) {
	t.Helper()
	var alerts models.PostableAlerts
	for _, l := range labels {
		alerts = append(alerts, &models.PostableAlert{Alert: models.Alert{Labels: l},
			StartsAt: strfmt.DateTime(now.Add(-time.Minute)), EndsAt: strfmt.DateTime(now.Add(time.Hour))})
	}
	if _, err := api.Alert.PostAlerts(amalert.NewPostAlertsParamsWithContext(ctx).WithAlerts(alerts)); err != nil {
		t.Fatal(err)
	}
}

// silencedBy maps alertname/namespace to the silences Alertmanager says
// silence it.
func silencedBy(ctx context.Context, t *testing.T, api *amclient.AlertmanagerAPI) map[string][]string {
	t.Helper()
	res, err := api.Alert.GetAlerts(amalert.NewGetAlertsParamsWithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, a := range res.Payload {
		var by []string
		if len(a.Status.SilencedBy) > 0 {
			by = sorted(a.Status.SilencedBy...)
		}
		out[a.Labels["alertname"]+"/"+a.Labels["namespace"]] = by
	}
	return out
}

// TestClientRemovesADuplicate: a second live silence with our lease marker
// (two replicas racing during a leader hand-over) is expired by the next
// reconcile, which keeps the recorded one.
func TestClientRemovesADuplicate(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	am, err := testenv.StartAlertmanager(ctx, "")
	g.Expect(err).NotTo(HaveOccurred())
	defer am.Stop()
	c, err := silence.NewClient(am.URL, nil, 10*time.Second)
	g.Expect(err).NotTo(HaveOccurred())

	in := silence.Input{Owner: silence.Owner{Namespace: "ns", Name: "uc", UID: "uid-dup"}, Version: "4.17.0",
		CreatedBy: "managed-upgrade-operator", Now: time.Now(),
		Wanted: []silence.Want{{Purpose: silence.Workers, End: time.Now().Add(time.Hour)}}}
	// Two replicas both decide from an empty list and both create.
	p := silence.Decide(in)
	first, err := c.Apply(ctx, p)
	g.Expect(err).NotTo(HaveOccurred())
	second, err := c.Apply(ctx, p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second[silence.Workers]).NotTo(Equal(first[silence.Workers]))
	g.Expect(liveIDs(ctx, t, c, "uid-dup")).To(HaveLen(2))

	in.Recorded, in.Now = second, time.Now()
	record, _, err := c.Reconcile(ctx, in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(record).To(Equal(second))
	g.Expect(liveIDs(ctx, t, c, "uid-dup")).To(ConsistOf(second[silence.Workers]))
}

// TestClientUnreachable: with Alertmanager gone, Reconcile returns an error
// and the recorded IDs unchanged, so the caller keeps them in status.
func TestClientUnreachable(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr, err := testenv.FreeAddr()
	g.Expect(err).NotTo(HaveOccurred())
	c, err := silence.NewClient("http://"+addr, nil, 2*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	recorded := map[silence.Purpose]string{silence.Workers: "abc"}
	record, _, err := c.Reconcile(ctx, silence.Input{Owner: silence.Owner{UID: "u"}, Now: time.Now(), Recorded: recorded})
	g.Expect(err).To(MatchError(ContainSubstring("listing Alertmanager silences")))
	g.Expect(record).To(Equal(recorded))
}
