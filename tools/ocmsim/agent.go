package ocmsim

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"

	cmv1 "github.com/openshift-online/ocm-sdk-go/clustersmgmt/v1"
)

// The ocm-agent's operations, as recorded in Request.Op.
const (
	OpAgentGetCluster       = "AgentGetCluster"
	OpAgentListPolicies     = "AgentListUpgradePolicies"
	OpAgentGetPolicyState   = "AgentGetUpgradePolicyState"
	OpAgentPatchPolicyState = "AgentPatchUpgradePolicyState"
)

var agentStatePath = regexp.MustCompile(`^/upgrade_policies/([^/]+)/state$`)

// StartAgent starts a local ocm-agent for the cluster with internal ID
// clusterID: the routes openshift/ocm-agent serves when its clusters
// service is on, answered from this server's state (a request through the
// agent and one to OCM see the same policies). Like the agent, it serves one
// cluster, takes no credential (it authenticates to OCM itself), answers
// GET / with the cluster, GET /upgrade_policies with a plain JSON array of
// its policies (no list envelope, no paging) and GET and PATCH
// /upgrade_policies/{id}/state with a policy's state, and has no
// service-log route. Requests are logged and faults injected as for OCM.
// Stop it with Close.
func (s *Server) StartAgent(clusterID string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, agentOpOf(r), func(w http.ResponseWriter, r *http.Request, op string, body []byte) bool {
			return s.handleAgent(w, r, op, body, clusterID)
		})
	}))
}

func agentOpOf(r *http.Request) string {
	p := r.URL.Path
	switch {
	case p == "/" && r.Method == http.MethodGet:
		return OpAgentGetCluster
	case p == "/upgrade_policies" && r.Method == http.MethodGet:
		return OpAgentListPolicies
	case agentStatePath.MatchString(p) && r.Method == http.MethodGet:
		return OpAgentGetPolicyState
	case agentStatePath.MatchString(p) && r.Method == http.MethodPatch:
		return OpAgentPatchPolicyState
	}
	return OpUnknown
}

// handleAgent answers one agent request for clusterID; true when it changed
// something. The policy state routes are OCM's, under the cluster's path.
func (s *Server) handleAgent(w http.ResponseWriter, r *http.Request, op string, body []byte, clusterID string) bool {
	s.mu.Lock()
	c := s.clusters[clusterID]
	s.mu.Unlock()
	if c == nil {
		writeError(w, http.StatusNotFound, "cluster '"+clusterID+"' not found")
		return false
	}
	switch op {
	case OpAgentGetCluster:
		s.mu.Lock()
		cl := buildCluster(c.Cluster)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, func(out io.Writer) error { return cmv1.MarshalCluster(cl, out) })
	case OpAgentListPolicies:
		s.mu.Lock()
		var all []*cmv1.UpgradePolicy
		for _, p := range c.policies {
			all = append(all, buildPolicy(c.ID, p.Policy))
		}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, func(out io.Writer) error { return cmv1.MarshalUpgradePolicyList(all, out) })
	case OpAgentGetPolicyState, OpAgentPatchPolicyState:
		// OCM's own handling; the agent's own credential authorises it.
		policyID := agentStatePath.FindStringSubmatch(r.URL.Path)[1]
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.policyStateLocked(w, r.URL.Path, clusterID, policyID, op == OpAgentPatchPolicyState, body)
	default:
		writeError(w, http.StatusNotFound, "the ocm-agent does not serve "+r.Method+" "+r.URL.Path)
	}
	return false
}
