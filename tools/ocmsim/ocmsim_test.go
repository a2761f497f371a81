package ocmsim

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/openshift-online/ocm-sdk-go"
	cmv1 "github.com/openshift-online/ocm-sdk-go/clustersmgmt/v1"
	"github.com/openshift-online/ocm-sdk-go/logging"
	slv1 "github.com/openshift-online/ocm-sdk-go/servicelogs/v1"
)

const (
	internalID = "2a5qqbd3dcba4ha1ft1ojq1cvhqmq8fe"
	externalID = "8b5c4fd2-8e2e-4b8e-9d62-7b1f0e6f1c3a"
)

var token = base64.StdEncoding.EncodeToString([]byte("user:secret"))

func start(t *testing.T) *Server {
	t.Helper()
	s := Start()
	t.Cleanup(s.Close)
	s.AddCluster(Cluster{ID: internalID, ExternalID: externalID, ChannelGroup: "stable", NodeDrainGracePeriodMinutes: 60, Token: token})
	return s
}

// connect builds the SDK connection as MUO does: a pull-secret access token
// "<cluster ID>:<token>" (sent as "AccessToken …"), no SDK retries.
func connect(t *testing.T, s *Server, tok string) *sdk.Connection {
	t.Helper()
	logger, err := logging.NewStdLoggerBuilder().Streams(io.Discard, io.Discard).Build()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sdk.NewConnectionBuilder().URL(s.URL()).Tokens(externalID + ":" + tok).Logger(logger).RetryLimit(0).Build()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func TestSearchClusterByExternalID(t *testing.T) {
	s := start(t)
	s.AddCluster(Cluster{ID: "other", ExternalID: "f0000000-0000-0000-0000-000000000000", Token: token})
	conn := connect(t, s, token)
	resp, err := conn.ClustersMgmt().V1().Clusters().List().Search(fmt.Sprintf("external_id = '%s'", externalID)).Size(1).Send()
	if err != nil {
		t.Fatal(err)
	}
	if resp.Total() != 1 || resp.Items().Len() != 1 {
		t.Fatalf("want exactly one cluster, got total %d items %d", resp.Total(), resp.Items().Len())
	}
	c := resp.Items().Get(0)
	if c.ID() != internalID || c.ExternalID() != externalID || c.Version().ChannelGroup() != "stable" || c.NodeDrainGracePeriod().Value() != 60 || c.NodeDrainGracePeriod().Unit() != "minutes" {
		t.Fatalf("cluster read back wrong: id %q ext %q group %q drain %v %q", c.ID(), c.ExternalID(), c.Version().ChannelGroup(), c.NodeDrainGracePeriod().Value(), c.NodeDrainGracePeriod().Unit())
	}
	got := s.Requests()
	if len(got) != 1 || got[0].Op != OpSearchClusters || !strings.Contains(got[0].Query, "search=") {
		t.Fatalf("request log: %+v", got)
	}
}

func TestWrongTokenFindsNothing(t *testing.T) {
	s := start(t)
	conn := connect(t, s, base64.StdEncoding.EncodeToString([]byte("wrong")))
	resp, err := conn.ClustersMgmt().V1().Clusters().List().Search(fmt.Sprintf("external_id = '%s'", externalID)).Send()
	if err != nil {
		t.Fatal(err)
	}
	if resp.Total() != 0 {
		t.Fatalf("a wrong pull-secret token must find no cluster, got %d", resp.Total())
	}
	if _, err := conn.ClustersMgmt().V1().Clusters().Cluster(internalID).UpgradePolicies().List().Send(); err == nil {
		t.Fatal("listing another cluster's policies with a wrong token must fail")
	}
}

func TestPoliciesPagedWithSDKShapes(t *testing.T) {
	s := start(t)
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for i := range 5 {
		s.SetPolicy(internalID, Policy{ID: fmt.Sprintf("p%d", i), Version: fmt.Sprintf("4.16.%d", i+2), NextRun: base.Add(time.Duration(i) * time.Hour)})
	}
	conn := connect(t, s, token)
	var seen []string
	for page := 1; ; page++ {
		resp, err := conn.ClustersMgmt().V1().Clusters().Cluster(internalID).UpgradePolicies().List().Page(page).Size(2).Send()
		if err != nil {
			t.Fatal(err)
		}
		if resp.Total() != 5 || resp.Page() != page {
			t.Fatalf("page %d: total %d page %d", page, resp.Total(), resp.Page())
		}
		resp.Items().Each(func(p *cmv1.UpgradePolicy) bool {
			seen = append(seen, p.ID()+"@"+p.Version()+"@"+p.NextRun().Format(time.RFC3339)+"@"+string(p.ScheduleType()))
			return true
		})
		if resp.Size() < 2 {
			break
		}
	}
	want := []string{
		"p0@4.16.2@2026-11-23T10:00:00Z@manual", "p1@4.16.3@2026-11-23T11:00:00Z@manual", "p2@4.16.4@2026-11-23T12:00:00Z@manual",
		"p3@4.16.5@2026-11-23T13:00:00Z@manual", "p4@4.16.6@2026-11-23T14:00:00Z@manual",
	}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Fatalf("paged policies:\n got %v\nwant %v", seen, want)
	}
}

func TestPolicyStateGetPatchAndHistory(t *testing.T) {
	s := start(t)
	s.SetPolicy(internalID, Policy{ID: "p1", Version: "4.16.2", NextRun: time.Now()})
	conn := connect(t, s, token)
	state := conn.ClustersMgmt().V1().Clusters().Cluster(internalID).UpgradePolicies().UpgradePolicy("p1").State()
	got, err := state.Get().Send()
	if err != nil {
		t.Fatal(err)
	}
	if got.Body().Value() != cmv1.UpgradePolicyStateValueScheduled {
		t.Fatalf("initial state %q", got.Body().Value())
	}
	body, _ := cmv1.NewUpgradePolicyState().Value(cmv1.UpgradePolicyStateValueStarted).Description("Upgrade in progress").Build()
	upd, err := state.Update().Body(body).Send()
	if err != nil {
		t.Fatal(err)
	}
	if upd.Body().Value() != cmv1.UpgradePolicyStateValueStarted || upd.Body().Description() != "Upgrade in progress" {
		t.Fatalf("patched state read back %q %q", upd.Body().Value(), upd.Body().Description())
	}
	var hist []string
	for _, c := range s.StateHistory(internalID, "p1") {
		hist = append(hist, c.Value)
	}
	if strings.Join(hist, ",") != "scheduled,started" {
		t.Fatalf("history %v", hist)
	}
	reqs := s.Requests()
	if reqs[len(reqs)-1].Method != http.MethodPatch || !reqs[len(reqs)-1].Applied || !strings.Contains(reqs[len(reqs)-1].Body, `"started"`) {
		t.Fatalf("last request %+v", reqs[len(reqs)-1])
	}
}

func TestServiceLogsAddAndSearch(t *testing.T) {
	s := start(t)
	conn := connect(t, s, token)
	entry, _ := slv1.NewLogEntry().ClusterID(internalID).ClusterUUID(externalID).Severity(slv1.SeverityInfo).
		ServiceName("RedHat Managed Upgrade Notifications").LogType("Cluster Updates").Summary("Cluster is starting with control and worker plane upgrade").
		Description("Cluster is starting").InternalOnly(false).EventStreamID("key-1").Build()
	resp, err := conn.ServiceLogs().V1().ClusterLogs().Add().Body(entry).Send()
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status() != http.StatusCreated || resp.Body().ID() == "" || resp.Body().EventStreamID() != "key-1" {
		t.Fatalf("add: status %d id %q", resp.Status(), resp.Body().ID())
	}
	for _, tc := range []struct {
		key  string
		want int
	}{{"key-1", 1}, {"key-2", 0}} {
		l, err := conn.ServiceLogs().V1().ClusterLogs().List().Search(fmt.Sprintf("cluster_id = '%s' and event_stream_id = '%s'", internalID, tc.key)).Send()
		if err != nil {
			t.Fatal(err)
		}
		if l.Total() != tc.want || l.Items().Len() != tc.want {
			t.Fatalf("search %s: total %d", tc.key, l.Total())
		}
	}
	if n := len(s.ServiceLogs()); n != 1 {
		t.Fatalf("stored %d logs", n)
	}
}

func TestScriptedFaults(t *testing.T) {
	s := start(t)
	s.SetPolicy(internalID, Policy{ID: "p1", Version: "4.16.2", NextRun: time.Now()})
	conn := connect(t, s, token)
	state := conn.ClustersMgmt().V1().Clusters().Cluster(internalID).UpgradePolicies().UpgradePolicy("p1").State()
	body, _ := cmv1.NewUpgradePolicyState().Value(cmv1.UpgradePolicyStateValueStarted).Description("d").Build()

	// 500 and 429: answered, not applied.
	s.FailNext(Fault{Status: 500}, Fault{Status: 429})
	for _, code := range []int{500, 429} {
		resp, err := state.Update().Body(body).Send()
		if err == nil || resp.Status() != code {
			t.Fatalf("want %d, got %v %v", code, resp.Status(), err)
		}
	}
	if v, _, _ := s.PolicyState(internalID, "p1"); v != "scheduled" {
		t.Fatalf("a failed patch changed the state to %q", v)
	}

	// Lost response: applied, and the client sees an error.
	s.FailNext(Fault{LoseResponse: true})
	if _, err := state.Update().Body(body).Send(); err == nil {
		t.Fatal("a lost response must be an error for the client")
	}
	if v, _, _ := s.PolicyState(internalID, "p1"); v != "started" {
		t.Fatalf("a lost response must still apply the patch, state %q", v)
	}
	// Logged before the connection closed: a client counting requests once
	// its call failed must count this one.
	if logged := s.Requests(); logged[len(logged)-1].Fault != "lost-response" || !logged[len(logged)-1].Applied {
		t.Fatalf("the last logged request is %+v, want the lost response, applied", logged[len(logged)-1])
	}

	// Timeout: the client gives up first; nothing applied.
	s.FailNext(Fault{Delay: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done, _ := cmv1.NewUpgradePolicyState().Value(cmv1.UpgradePolicyStateValueCompleted).Build()
	if _, err := state.Update().Body(done).SendContext(ctx); err == nil {
		t.Fatal("want a timeout")
	}
	// The handler records the request once it notices the client left.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		reqs := s.Requests()
		if len(reqs) == 4 {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling the log, with a deadline
	}
	reqs := s.Requests()
	if len(reqs) != 4 {
		t.Fatalf("want 4 requests logged, got %d", len(reqs))
	}
	wantFaults := []string{"500", "429", "lost-response", "slow"}
	wantApplied := []bool{false, false, true, false}
	for i, r := range reqs {
		if r.Fault != wantFaults[i] || r.Applied != wantApplied[i] {
			t.Fatalf("request %d: fault %q applied %v", i, r.Fault, r.Applied)
		}
	}
	if v, _, _ := s.PolicyState(internalID, "p1"); v != "started" {
		t.Fatalf("a timed-out patch changed the state to %q", v)
	}
}

func TestRandomFaultsAreSeeded(t *testing.T) {
	run := func(seed int64) []string {
		s := start(t)
		s.FailRandomly(0.3, seed, Fault{Status: 500}, Fault{Status: 503}, Fault{Status: 429})
		conn := connect(t, s, token)
		for range 50 {
			_, _ = conn.ClustersMgmt().V1().Clusters().List().Search("external_id = 'x'").Send()
		}
		var out []string
		for _, r := range s.Requests() {
			out = append(out, r.Fault)
		}
		return out
	}
	a, b := run(7), run(7)
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatal("the same seed must fail the same requests")
	}
	failed := 0
	for _, f := range a {
		if f != "" {
			failed++
		}
	}
	if failed < 5 || failed > 25 {
		t.Fatalf("ratio 0.3 over 50 requests failed %d", failed)
	}
}
