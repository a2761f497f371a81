package ocm

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/upshift-io/upshift/tools/ocmsim"
)

const (
	internalID = "2a5qqbd3dcba4ha1ft1ojq1cvhqmq8fe"
	externalID = "8b5c4fd2-8e2e-4b8e-9d62-7b1f0e6f1c3a"
)

var pullToken = base64.StdEncoding.EncodeToString([]byte("user:secret"))

type counts struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counts) observe(op, code string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[op+"/"+code]++
}

func setup(t *testing.T) (*ocmsim.Server, *Client, *counts) {
	t.Helper()
	s := ocmsim.Start()
	t.Cleanup(s.Close)
	s.AddCluster(ocmsim.Cluster{ID: internalID, ExternalID: externalID, ChannelGroup: "eus", NodeDrainGracePeriodMinutes: 30, Token: pullToken})
	n := &counts{}
	c, err := NewClient(s.URL(), externalID+":"+pullToken, Options{Timeout: 2 * time.Second, Observe: n.observe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return s, c, n
}

func TestFindClusterAndAllPolicies(t *testing.T) {
	s, c, n := setup(t)
	ctx := context.Background()
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	// More policies than one page holds: all are read.
	for i := range pageSize + 5 {
		st := ocmsim.Policy{ID: fmt.Sprintf("p%03d", i), Version: "4.15.9", NextRun: base.Add(time.Duration(i) * time.Hour), State: "completed"}
		s.SetPolicy(internalID, st)
	}
	s.SetPolicy(internalID, ocmsim.Policy{ID: "p104", Version: "4.15.10", NextRun: base.Add(200 * time.Hour), State: "scheduled"})
	cl, err := c.FindCluster(ctx, externalID)
	if err != nil {
		t.Fatal(err)
	}
	if cl != (Cluster{ID: internalID, ExternalID: externalID, ChannelGroup: "eus", NodeDrainGracePeriod: 30}) {
		t.Fatalf("cluster %+v", cl)
	}
	ps, err := c.Policies(ctx, cl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != pageSize+5 {
		t.Fatalf("read %d policies, want %d", len(ps), pageSize+5)
	}
	p, ok := Pick(ps, "")
	if !ok || p.ID != "p104" {
		t.Fatalf("picked %+v", p)
	}
	spec, err := Spec(cl, p, "OSD")
	if err != nil || spec.Desired.Channel != "eus-4.16" || spec.PDBForceDrainTimeout != 30 || spec.UpgradeAt != base.Add(200*time.Hour).Format(time.RFC3339) {
		t.Fatalf("spec %+v %v", spec, err)
	}
	if n.m[OpListPolicies+"/200"] != 2 || n.m[OpSearchClusters+"/200"] != 1 {
		t.Fatalf("counted %v", n.m)
	}
	// The request carried the pull-secret access token in MUO's form.
	if _, err := c.FindCluster(ctx, "f0000000-0000-0000-0000-000000000000"); !errors.Is(err, ErrClusterNotFound) {
		t.Fatalf("unknown external ID: %v", err)
	}
}

func TestWrongTokenFindsNoCluster(t *testing.T) {
	s, _, _ := setup(t)
	c, err := NewClient(s.URL(), externalID+":"+base64.StdEncoding.EncodeToString([]byte("other")), Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.FindCluster(context.Background(), externalID); !errors.Is(err, ErrClusterNotFound) {
		t.Fatalf("want ErrClusterNotFound, got %v", err)
	}
}

// Every request carries the client's User-Agent, DefaultUserAgent unless
// the options name one (the binary names its pod, so that a test can tell a
// stale leader's requests from its successor's).
func TestUserAgent(t *testing.T) {
	s, c, _ := setup(t)
	named, err := NewClient(s.URL(), externalID+":"+pullToken, Options{Timeout: time.Second, UserAgent: "upshift-upgrade-scheduler/v1 (sched-0)"})
	if err != nil {
		t.Fatal(err)
	}
	defer named.Close()
	for _, cl := range []*Client{c, named} {
		if _, err := cl.FindCluster(context.Background(), externalID); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range s.Requests() {
		got = append(got, r.UserAgent)
	}
	if want := []string{DefaultUserAgent, "upshift-upgrade-scheduler/v1 (sched-0)"}; !slices.Equal(got, want) {
		t.Errorf("User-Agents %q, want %q", got, want)
	}
}

func TestDeliverIsIdempotentAcrossLostResponses(t *testing.T) {
	s, c, n := setup(t)
	ctx := context.Background()
	s.SetPolicy(internalID, ocmsim.Policy{ID: "p1", Version: "4.16.2", NextRun: time.Now()})
	cl := Cluster{ID: internalID, ExternalID: externalID}
	started := Notice{State: "StateStarted", PolicyState: StateStarted, Description: "Cluster is currently being upgraded to version 4.16.2"}

	// The patch takes effect but its answer is lost: an error, then the
	// resend reads back "started" and writes nothing.
	s.FailNext(ocmsim.Fault{}, ocmsim.Fault{LoseResponse: true}) // GET ok, PATCH lost
	if _, err := c.Deliver(ctx, cl, "p1", started); err == nil {
		t.Fatal("a lost response must be an error")
	}
	if n.m[OpPatchPolicyState+"/error"] != 1 || n.m[OpGetPolicyState+"/200"] != 1 {
		t.Fatalf("a lost answer is counted as code error: %v", n.m)
	}
	out, err := c.Deliver(ctx, cl, "p1", started)
	if err != nil || out != AlreadySent {
		t.Fatalf("resend: %v %v", out, err)
	}
	// Not allowed: scheduled/started → pending is no transition of MUO's.
	if out, _ := c.Deliver(ctx, cl, "p1", Notice{State: "StatePending", PolicyState: StatePending}); out != TransitionNotAllowed {
		t.Fatalf("pending: %v", out)
	}
	if out, err := c.Deliver(ctx, cl, "p1", Notice{State: "StateCompleted", PolicyState: StateCompleted, Description: "done"}); err != nil || out != Sent {
		t.Fatalf("completed: %v %v", out, err)
	}
	var hist []string
	for _, h := range s.StateHistory(internalID, "p1") {
		hist = append(hist, h.Value)
	}
	if strings.Join(hist, ",") != "scheduled,started,completed" {
		t.Fatalf("state history %v", hist)
	}

	// Service logs: a lost POST answer, then the resend finds it by key.
	sl := Notice{ServiceLog: &ServiceLog{Summary: "Cluster has finished control plane upgrade", Description: "d", Key: "uid/1/4.16.2/cp"}}
	s.FailNext(ocmsim.Fault{}, ocmsim.Fault{LoseResponse: true})
	if _, err := c.Deliver(ctx, cl, "p1", sl); err == nil {
		t.Fatal("a lost response must be an error")
	}
	if out, err := c.Deliver(ctx, cl, "p1", sl); err != nil || out != AlreadySent {
		t.Fatalf("service log resend: %v %v", out, err)
	}
	logs := s.ServiceLogs()
	if len(logs) != 1 || logs[0].ServiceName() != ServiceName || logs[0].LogType() != LogType || logs[0].InternalOnly() || logs[0].ClusterUUID() != externalID {
		t.Fatalf("service logs %d", len(logs))
	}

	// A policy deleted in OCM: nothing to write, not an error.
	s.DeletePolicy(internalID, "p1")
	if out, err := c.Deliver(ctx, cl, "p1", Notice{State: "StateCompleted", PolicyState: StateCompleted}); err != nil || out != PolicyGone {
		t.Fatalf("gone: %v %v", out, err)
	}
}

func TestMatchPolicy(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	ps := []Policy{{ID: "a", Version: "4.16.2", NextRun: at.Add(time.Hour)}, {ID: "b", Version: "4.16.2", NextRun: at}}
	for _, tc := range []struct {
		id, version, upgradeAt, want string
	}{
		{"a", "", "", "a"},
		{"gone", "4.16.2", at.Format(time.RFC3339), ""},
		{"", "4.16.2", at.Format(time.RFC3339), "b"},
		{"", "4.16.3", at.Format(time.RFC3339), ""},
		{"", "4.16.2", "not a time", ""},
	} {
		got, ok := MatchPolicy(ps, tc.id, tc.version, tc.upgradeAt)
		if got.ID != tc.want || ok != (tc.want != "") {
			t.Errorf("MatchPolicy(%q,%q,%q) = %q", tc.id, tc.version, tc.upgradeAt, got.ID)
		}
	}
}

func TestServiceLogPostedWhenTheReadBackIsRefused(t *testing.T) {
	for _, code := range []int{403, 400} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			s, c, _ := setup(t)
			ctx := context.Background()
			cl, err := c.FindCluster(ctx, externalID)
			if err != nil {
				t.Fatal(err)
			}
			s.FailNext(ocmsim.Fault{Status: code}) // the search, first request of the delivery
			got, err := c.Deliver(ctx, cl, "", Notice{ServiceLog: &ServiceLog{Summary: "s", Description: "d", Key: "k1"}})
			if err != nil || got != Sent {
				t.Fatalf("Deliver = %s, %v; want Sent", got, err)
			}
			if n := len(s.ServiceLogs()); n != 1 {
				t.Fatalf("%d service logs", n)
			}
		})
	}
	// A search that keeps failing for any other reason holds the post (the
	// caller retries the delivery).
	s, c, _ := setup(t)
	cl, _ := c.FindCluster(context.Background(), externalID)
	s.FailNext(ocmsim.Fault{Status: 503}, ocmsim.Fault{Status: 503}, ocmsim.Fault{Status: 503})
	if _, err := c.Deliver(context.Background(), cl, "", Notice{ServiceLog: &ServiceLog{Summary: "s", Key: "k2"}}); err == nil || len(s.ServiceLogs()) != 0 {
		t.Fatalf("a 503 on every try of the search: err %v, %d logs", err, len(s.ServiceLogs()))
	}
}

// TestRetryWhatPasses: a read that failed for a passing reason is sent again
// within the call, up to Retry.Steps tries; an answer that will not change
// (404, 403) is not. A write is sent again only after a 429, the one answer
// that says it was not handled.
func TestRetryWhatPasses(t *testing.T) {
	lost, slow := ocmsim.Fault{LoseResponse: true}, ocmsim.Fault{Delay: 3 * time.Second} // slow: past the 2 s client timeout
	for _, tc := range []struct {
		name   string
		faults []ocmsim.Fault
		tries  int
		ok     bool
	}{
		{"500 then 429, then an answer", []ocmsim.Fault{{Status: 500}, {Status: 429}}, 3, true},
		{"no answer, then an answer", []ocmsim.Fault{lost}, 2, true},
		{"too slow, then an answer", []ocmsim.Fault{slow}, 2, true},
		{"503 on every try", []ocmsim.Fault{{Status: 503}, {Status: 503}, {Status: 503}, {}}, 3, false},
		{"403 is final", []ocmsim.Fault{{Status: 403}}, 1, false},
		{"400 is final", []ocmsim.Fault{{Status: 400}}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c, _ := setup(t)
			s.SetPolicy(internalID, ocmsim.Policy{ID: "p1", Version: "4.16.2", NextRun: time.Now()})
			base := len(s.Requests())
			s.FailNext(tc.faults...)
			st, _, err := c.PolicyState(context.Background(), internalID, "p1")
			if tc.ok != (err == nil) || (tc.ok && st != StateScheduled) {
				t.Fatalf("PolicyState = %q, %v; want ok %v", st, err, tc.ok)
			}
			if n := len(s.Requests()) - base; n != tc.tries {
				t.Fatalf("%d requests, want %d", n, tc.tries)
			}
		})
	}
	t.Run("a write that timed out is an error", func(t *testing.T) {
		// Its own server: a slow request is logged only once the server
		// sees the client gone, too late to be counted reliably.
		s, c, _ := setup(t)
		s.SetPolicy(internalID, ocmsim.Policy{ID: "p1", Version: "4.16.2", NextRun: time.Now()})
		s.FailNext(slow, slow)
		if err := c.SetPolicyState(context.Background(), internalID, "p1", StateStarted, "d"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a PATCH that timed out: err %v", err)
		}
		if err := c.AddServiceLog(context.Background(), Cluster{ID: internalID, ExternalID: externalID}, ServiceLog{Summary: "s", Key: "k"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a POST that timed out: err %v", err)
		}
	})
	t.Run("too slow on every try is an error", func(t *testing.T) {
		s, _, _ := setup(t)
		s.SetPolicy(internalID, ocmsim.Policy{ID: "p1", Version: "4.16.2", NextRun: time.Now()})
		c, err := NewClient(s.URL(), externalID+":"+pullToken, Options{Timeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		slowest := ocmsim.Fault{Delay: time.Second}
		s.FailNext(slowest, slowest, slowest)
		if _, _, err := c.PolicyState(context.Background(), internalID, "p1"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("PolicyState timed out on every try: err %v", err)
		}
	})
	t.Run("a context already ended is an error, nothing sent", func(t *testing.T) {
		s, c, _ := setup(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		base := len(s.Requests())
		if _, _, err := c.PolicyState(ctx, internalID, "p1"); !errors.Is(err, context.Canceled) {
			t.Fatalf("PolicyState: err %v", err)
		}
		if err := c.SetPolicyState(ctx, internalID, "p1", StateStarted, "d"); !errors.Is(err, context.Canceled) {
			t.Fatalf("SetPolicyState: err %v", err)
		}
		if n := len(s.Requests()) - base; n != 0 {
			t.Fatalf("%d requests sent", n)
		}
	})
	t.Run("404 is final", func(t *testing.T) {
		s, c, _ := setup(t)
		base := len(s.Requests())
		if _, _, err := c.PolicyState(context.Background(), internalID, "gone"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("want ErrNotFound, got %v", err)
		}
		if n := len(s.Requests()) - base; n != 1 {
			t.Fatalf("%d requests", n)
		}
	})
	t.Run("writes are sent again only after a 429", func(t *testing.T) {
		s, c, _ := setup(t)
		s.SetPolicy(internalID, ocmsim.Policy{ID: "p1", Version: "4.16.2", NextRun: time.Now()})
		cl := Cluster{ID: internalID, ExternalID: externalID}
		for _, f := range []ocmsim.Fault{{Status: 500}, {Status: 503}, lost} {
			base := len(s.Requests())
			s.FailNext(f)
			if err := c.SetPolicyState(context.Background(), internalID, "p1", StateStarted, "d"); err == nil {
				t.Fatalf("%+v: PATCH succeeded", f)
			}
			s.FailNext(f)
			if err := c.AddServiceLog(context.Background(), cl, ServiceLog{Summary: "s", Key: "k"}); err == nil {
				t.Fatalf("%+v: POST succeeded", f)
			}
			if n := len(s.Requests()) - base; n != 2 {
				t.Fatalf("%+v: %d requests for one PATCH and one POST", f, n)
			}
		}
		base, logs := len(s.Requests()), len(s.ServiceLogs())
		throttled := ocmsim.Fault{Status: 429}
		s.FailNext(throttled, throttled)
		if err := c.SetPolicyState(context.Background(), internalID, "p1", StateCompleted, "d"); err != nil {
			t.Fatalf("PATCH after two 429s: %v", err)
		}
		s.FailNext(throttled)
		if err := c.AddServiceLog(context.Background(), cl, ServiceLog{Summary: "s", Key: "k2"}); err != nil {
			t.Fatalf("POST after a 429: %v", err)
		}
		if n := len(s.Requests()) - base; n != 5 {
			t.Fatalf("%d requests for a PATCH throttled twice and a POST throttled once, want 5", n)
		}
		if n := len(s.ServiceLogs()) - logs; n != 1 {
			t.Fatalf("%d service logs posted, want 1", n)
		}
	})
}

// Through the in-cluster ocm-agent (MUO's agent mode): the agent's routes,
// its plain policy list, no credential sent, and no service logs.
func TestAgentClient(t *testing.T) {
	s := ocmsim.Start()
	t.Cleanup(s.Close)
	s.AddCluster(ocmsim.Cluster{ID: internalID, ExternalID: externalID, ChannelGroup: "stable", NodeDrainGracePeriodMinutes: 60, Token: pullToken})
	agent := s.StartAgent(internalID)
	t.Cleanup(agent.Close)
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	s.SetPolicy(internalID, ocmsim.Policy{ID: "p1", Version: "4.16.3", NextRun: base, State: "scheduled"})
	s.SetPolicy(internalID, ocmsim.Policy{ID: "p2", Version: "4.16.2", NextRun: base.Add(-240 * time.Hour), State: "completed"})
	n := &counts{}
	c, err := NewAgentClient(agent.URL, Options{Timeout: 2 * time.Second, Observe: n.observe})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	cl, err := c.FindCluster(ctx, externalID)
	if err != nil || cl != (Cluster{ID: internalID, ExternalID: externalID, ChannelGroup: "stable", NodeDrainGracePeriod: 60}) {
		t.Fatalf("cluster %+v, %v", cl, err)
	}
	if _, err := c.FindCluster(ctx, "f0000000-0000-0000-0000-000000000000"); !errors.Is(err, ErrClusterNotFound) {
		t.Fatalf("an agent of another cluster: %v", err)
	}
	ps, err := c.Policies(ctx, cl.ID)
	if err != nil || len(ps) != 2 {
		t.Fatalf("policies %+v, %v", ps, err)
	}
	if p, ok := Pick(ps, ""); !ok || p.ID != "p1" || p.State != "scheduled" {
		t.Fatalf("picked %+v", p)
	}
	if err := c.SetPolicyState(ctx, cl.ID, "p1", "started", "Upgrade has started"); err != nil {
		t.Fatal(err)
	}
	if v, d, _ := s.PolicyState(internalID, "p1"); v != "started" || d != "Upgrade has started" {
		t.Fatalf("OCM has %q %q", v, d)
	}
	if err := c.AddServiceLog(ctx, cl, ServiceLog{Summary: "x"}); !errors.Is(err, ErrAgentNoServiceLogs) {
		t.Fatalf("service log through the agent: %v", err)
	}
	var ops []string
	for _, r := range s.Requests() {
		ops = append(ops, r.Op)
		if r.Authorization != "" {
			t.Errorf("%s carried a credential: %q", r.Op, r.Authorization)
		}
	}
	want := []string{ocmsim.OpAgentGetCluster, ocmsim.OpAgentGetCluster, ocmsim.OpAgentListPolicies, ocmsim.OpAgentGetPolicyState, ocmsim.OpAgentGetPolicyState, ocmsim.OpAgentPatchPolicyState}
	if strings.Join(ops, ",") != strings.Join(want, ",") {
		t.Errorf("requests %v, want %v", ops, want)
	}
	if n.m[OpSearchClusters+"/200"] != 2 || n.m[OpPatchPolicyState+"/200"] != 1 {
		t.Errorf("counted %v", n.m)
	}

	// An agent answering 503 is retried as OCM is; 404 is not found.
	s.FailNext(ocmsim.Fault{Status: 503})
	if _, _, err := c.PolicyState(ctx, cl.ID, "p1"); err != nil {
		t.Fatalf("a 503 then a 200: %v", err)
	}
	if _, _, err := c.PolicyState(ctx, cl.ID, "gone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an unknown policy: %v", err)
	}
}
