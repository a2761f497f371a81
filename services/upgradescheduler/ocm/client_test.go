package ocm

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
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
	c, err := NewClient(s.URL(), externalID+":"+pullToken, 2*time.Second, n.observe)
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
	c, err := NewClient(s.URL(), externalID+":"+base64.StdEncoding.EncodeToString([]byte("other")), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.FindCluster(context.Background(), externalID); !errors.Is(err, ErrClusterNotFound) {
		t.Fatalf("want ErrClusterNotFound, got %v", err)
	}
}

func TestDeliverIsIdempotentAcrossLostResponses(t *testing.T) {
	s, c, n := setup(t)
	ctx := context.Background()
	s.SetPolicy(internalID, ocmsim.Policy{ID: "p1", Version: "4.16.2", NextRun: time.Now()})
	cl := Cluster{ID: internalID, ExternalID: externalID}
	started := Notice{PolicyState: StateStarted, Description: "Cluster is currently being upgraded to version 4.16.2"}

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
	if out, _ := c.Deliver(ctx, cl, "p1", Notice{PolicyState: StatePending}); out != TransitionNotAllowed {
		t.Fatalf("pending: %v", out)
	}
	if out, err := c.Deliver(ctx, cl, "p1", Notice{PolicyState: StateCompleted, Description: "done"}); err != nil || out != Sent {
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
	if out, err := c.Deliver(ctx, cl, "p1", Notice{PolicyState: StateCompleted}); err != nil || out != PolicyGone {
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
	// Any other failure of the search still holds the post (retried).
	s, c, _ := setup(t)
	cl, _ := c.FindCluster(context.Background(), externalID)
	s.FailNext(ocmsim.Fault{Status: 503})
	if _, err := c.Deliver(context.Background(), cl, "", Notice{ServiceLog: &ServiceLog{Summary: "s", Key: "k2"}}); err == nil || len(s.ServiceLogs()) != 0 {
		t.Fatalf("a 503 on the search: err %v, %d logs", err, len(s.ServiceLogs()))
	}
}
