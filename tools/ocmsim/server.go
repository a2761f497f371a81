package ocmsim

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"time"

	cmv1 "github.com/openshift-online/ocm-sdk-go/clustersmgmt/v1"
	slv1 "github.com/openshift-online/ocm-sdk-go/servicelogs/v1"
)

// Operations, as recorded in Request.Op.
const (
	OpSearchClusters     = "SearchClusters"
	OpListPolicies       = "ListUpgradePolicies"
	OpGetPolicyState     = "GetUpgradePolicyState"
	OpPatchPolicyState   = "PatchUpgradePolicyState"
	OpAddServiceLog      = "AddServiceLog"
	OpListServiceLogs    = "ListServiceLogs"
	OpUnknown            = "Unknown"
	clustersPrefix       = "/api/clusters_mgmt/v1/clusters"
	clusterLogsPath      = "/api/service_logs/v1/cluster_logs"
	defaultPageSize      = 100
	accessTokenAuthPrefx = "AccessToken "
)

// Cluster is a cluster OCM knows.
type Cluster struct {
	// ID is OCM's internal cluster ID.
	ID string
	// ExternalID is the cluster's own ID (ClusterVersion spec.clusterID).
	ExternalID string
	// ChannelGroup is the cluster version's channel group (stable, fast,
	// candidate, eus); empty leaves it out, as on ARO.
	ChannelGroup string
	// NodeDrainGracePeriodMinutes is node_drain_grace_period.value (unit
	// "minutes").
	NodeDrainGracePeriodMinutes float64
	// Token is the pull-secret token (the base64 auth of cloud.openshift.com)
	// the cluster authenticates with; empty accepts any request.
	Token string
}

// Policy is one upgrade policy of a cluster.
type Policy struct {
	ID           string
	Version      string
	ScheduleType string // manual or automatic
	Schedule     string // cron, for automatic policies
	NextRun      time.Time
	// State and Description are the policy's state (scheduled, pending, ...).
	State       string
	Description string
}

// StateChange is one write of a policy's state.
type StateChange struct {
	Time        time.Time
	Value       string
	Description string
}

// Request is one entry of the request log.
type Request struct {
	Time   time.Time
	Op     string
	Method string
	Path   string
	Query  string
	// Body is the request body as sent.
	Body string
	// Authorization is the Authorization header as sent ("" for none).
	Authorization string
	// UserAgent is the User-Agent header as sent: a test tells apart the
	// clients (replicas) that share one credential by it.
	UserAgent string
	// Status is the HTTP status answered; 0 when no answer was sent (a lost
	// response or a client that gave up).
	Status int
	// Fault names the injected fault, empty for none.
	Fault string
	// Applied is true when the request took effect (a state written, a
	// service log stored), whatever the client saw.
	Applied bool
}

// Fault is an injected failure.
type Fault struct {
	// Status answers with this HTTP status (500, 503, 429, ...) and OCM's
	// error body, without applying the request.
	Status int
	// Delay holds the request back this long before it is handled; a client
	// that gives up meanwhile leaves it unapplied (a timeout).
	Delay time.Duration
	// LoseResponse applies the request and then closes the connection
	// without answering, as when the response is lost on the way back.
	LoseResponse bool
}

func (f Fault) String() string {
	switch {
	case f.LoseResponse:
		return "lost-response"
	case f.Status != 0 && f.Delay > 0:
		return fmt.Sprintf("slow-%d", f.Status)
	case f.Status != 0:
		return strconv.Itoa(f.Status)
	case f.Delay > 0:
		return "slow"
	}
	return ""
}

type policyState struct {
	Policy
	history []StateChange
}

type cluster struct {
	Cluster
	policies []*policyState
}

// Server is the local OCM. Create it with Start; Close stops it.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	now      func() time.Time
	clusters map[string]*cluster // by internal ID
	logs     []*slv1.LogEntry
	requests []Request
	scripted []Fault
	ratio    float64
	rng      *rand.Rand
	kinds    []Fault
	seq      int
	observer func(Request)
}

// Start starts the server on a free loopback port.
func Start() *Server {
	s := New()
	s.srv = httptest.NewServer(s)
	return s
}

// New returns a server not yet listening, to serve with ServeHTTP.
func New() *Server {
	return &Server{now: time.Now, clusters: map[string]*cluster{}}
}

// URL is the base URL (ocmBaseUrl).
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server.
func (s *Server) Close() {
	if s.srv != nil {
		s.srv.CloseClientConnections()
		s.srv.Close()
	}
}

// AddCluster adds (or replaces) a cluster.
func (s *Server) AddCluster(c Cluster) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.clusters[c.ID]
	n := &cluster{Cluster: c}
	if old != nil {
		n.policies = old.policies
	}
	s.clusters[c.ID] = n
}

// SetPolicy adds or replaces a policy of cluster clusterID (matched by ID).
// Its State (scheduled when empty) starts its state history.
func (s *Server) SetPolicy(clusterID string, p Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters[clusterID]
	if c == nil {
		panic("ocmsim: unknown cluster " + clusterID)
	}
	if p.State == "" {
		p.State = string(cmv1.UpgradePolicyStateValueScheduled)
	}
	if p.ScheduleType == "" {
		p.ScheduleType = "manual"
	}
	for i, old := range c.policies {
		if old.ID == p.ID {
			c.policies[i] = &policyState{Policy: p, history: append(old.history, StateChange{s.now(), p.State, p.Description})}
			return
		}
	}
	c.policies = append(c.policies, &policyState{Policy: p, history: []StateChange{{s.now(), p.State, p.Description}}})
}

// DeletePolicy removes a policy, as OCM does when a user cancels it.
func (s *Server) DeletePolicy(clusterID, policyID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters[clusterID]
	if c == nil {
		return
	}
	for i, p := range c.policies {
		if p.ID == policyID {
			c.policies = append(c.policies[:i], c.policies[i+1:]...)
			return
		}
	}
}

// PolicyState returns a policy's current state and description.
func (s *Server) PolicyState(clusterID, policyID string) (value, description string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.policy(clusterID, policyID); p != nil {
		return p.State, p.Description, true
	}
	return "", "", false
}

// StateHistory returns every state a policy had, the initial one first.
func (s *Server) StateHistory(clusterID, policyID string) []StateChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.policy(clusterID, policyID); p != nil {
		return append([]StateChange(nil), p.history...)
	}
	return nil
}

// ServiceLogs returns the stored service logs, oldest first.
func (s *Server) ServiceLogs() []*slv1.LogEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*slv1.LogEntry(nil), s.logs...)
}

// Requests returns the request log, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// FailNext makes the next len(faults) requests fail, in order.
func (s *Server) FailNext(faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripted = append(s.scripted, faults...)
}

// FailRandomly makes each request fail with probability ratio, with a fault
// drawn from kinds, from a generator seeded with seed (the same seed and the
// same request sequence fail the same way). A ratio of 0 stops it.
func (s *Server) FailRandomly(ratio float64, seed int64, kinds ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ratio, s.rng, s.kinds = ratio, rand.New(rand.NewSource(seed)), kinds
}

// OnRequest calls f with every request once it is logged (after its answer,
// or its loss), e.g. to stop a client right after a write took effect. nil
// stops it.
func (s *Server) OnRequest(f func(Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.observer = f
}

func (s *Server) policy(clusterID, policyID string) *policyState {
	c := s.clusters[clusterID]
	if c == nil {
		return nil
	}
	for _, p := range c.policies {
		if p.ID == policyID {
			return p
		}
	}
	return nil
}

// nextFault picks the fault for one request (under s.mu).
func (s *Server) nextFault() (Fault, bool) {
	if len(s.scripted) > 0 {
		f := s.scripted[0]
		s.scripted = s.scripted[1:]
		return f, true
	}
	if s.ratio > 0 && len(s.kinds) > 0 && s.rng.Float64() < s.ratio {
		return s.kinds[s.rng.Intn(len(s.kinds))], true
	}
	return Fault{}, false
}

var (
	policiesPath = regexp.MustCompile(`^` + clustersPrefix + `/([^/]+)/upgrade_policies$`)
	statePath    = regexp.MustCompile(`^` + clustersPrefix + `/([^/]+)/upgrade_policies/([^/]+)/state$`)
	searchTerm   = regexp.MustCompile(`([a-z_]+)\s*=\s*'([^']*)'`)
)

func opOf(r *http.Request) string {
	p := r.URL.Path
	switch {
	case p == clustersPrefix && r.Method == http.MethodGet:
		return OpSearchClusters
	case policiesPath.MatchString(p) && r.Method == http.MethodGet:
		return OpListPolicies
	case statePath.MatchString(p) && r.Method == http.MethodGet:
		return OpGetPolicyState
	case statePath.MatchString(p) && r.Method == http.MethodPatch:
		return OpPatchPolicyState
	case p == clusterLogsPath && r.Method == http.MethodPost:
		return OpAddServiceLog
	case p == clusterLogsPath && r.Method == http.MethodGet:
		return OpListServiceLogs
	}
	return OpUnknown
}

// ServeHTTP logs the request, injects its fault, authenticates it and
// handles it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, opOf(r), s.handle)
}

// serve logs a request as op, injects its fault and answers it with handle.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, op string, handle func(http.ResponseWriter, *http.Request, string, []byte) bool) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	f, faulty := s.nextFault()
	s.mu.Unlock()
	rec := Request{Time: time.Now(), Op: op, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: string(body), Fault: f.String(),
		Authorization: r.Header.Get("Authorization"), UserAgent: r.UserAgent()}
	// The request is logged before the client can see any answer, so a
	// client (or test) that counts requests after a call returns counts
	// this one. A normal answer is flushed only after ServeHTTP returns,
	// so the deferred log precedes it; a lost response is logged by hand
	// before its connection is closed.
	logged := false
	logRequest := func() {
		if logged {
			return
		}
		logged = true
		s.mu.Lock()
		s.requests = append(s.requests, rec)
		observe := s.observer
		s.mu.Unlock()
		if observe != nil {
			observe(rec)
		}
	}
	defer logRequest()
	if faulty && f.Delay > 0 {
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
			return // the client gave up: nothing applied, nothing answered
		}
	}
	if faulty && f.Status != 0 {
		rec.Status = f.Status
		writeError(w, f.Status, "injected fault")
		return
	}
	var buf bytes.Buffer
	rw := &recorder{header: http.Header{}, body: &buf}
	rec.Applied = handle(rw, r, op, body)
	if faulty && f.LoseResponse {
		logRequest()
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	for k, v := range rw.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rw.status)
	_, _ = w.Write(buf.Bytes())
	rec.Status = rw.status
}

type recorder struct {
	header http.Header
	body   *bytes.Buffer
	status int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.status = code }

// writeError writes OCM's error body.
func writeError(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"kind":"Error","id":"%d","href":"/api/clusters_mgmt/v1/errors/%d","code":"CLUSTERS-MGMT-%d","reason":%q}`, status, status, status, reason)
}

func writeJSON(w http.ResponseWriter, status int, marshal func(io.Writer) error) {
	var buf bytes.Buffer
	if err := marshal(&buf); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// writeList writes OCM's list envelope around items (already JSON).
func writeList(w http.ResponseWriter, kind string, page, size, total int, items func(io.Writer) error) {
	var buf bytes.Buffer
	if err := items(&buf); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprintf(w, `{"kind":%q,"page":%d,"size":%d,"total":%d,"items":%s}`, kind, page, size, total, bytes.TrimSpace(buf.Bytes()))
}

// authorised finds the cluster the request authenticates as (the one whose
// pull-secret token it carries) and checks it may touch clusterID ("" for
// any of its own).
func (s *Server) authorised(r *http.Request, clusterID string) bool {
	h := r.Header.Get("Authorization")
	for _, c := range s.clusters {
		if clusterID != "" && c.ID != clusterID {
			continue
		}
		if c.Token == "" || h == accessTokenAuthPrefx+c.ExternalID+":"+c.Token {
			return true
		}
	}
	return false
}

func pageParams(q map[string][]string) (page, size int) {
	page, size = 1, defaultPageSize
	if v, err := strconv.Atoi(first(q["page"])); err == nil && v > 0 {
		page = v
	}
	if v, err := strconv.Atoi(first(q["size"])); err == nil && v >= 0 {
		size = v
	}
	return page, size
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func pageOf[T any](all []T, page, size int) []T {
	from := (page - 1) * size
	if from >= len(all) {
		return nil
	}
	to := min(from+size, len(all))
	return all[from:to]
}

// handle answers one request that got past the fault; true when it changed
// something.
func (s *Server) handle(w http.ResponseWriter, r *http.Request, op string, body []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := r.URL.Query()
	page, size := pageParams(q)
	switch op {
	case OpSearchClusters:
		terms := map[string]string{}
		for _, m := range searchTerm.FindAllStringSubmatch(first(q["search"]), -1) {
			terms[m[1]] = m[2]
		}
		var found []*cmv1.Cluster
		for _, c := range s.sortedClusters() {
			if ext, ok := terms["external_id"]; ok && c.ExternalID != ext {
				continue
			}
			if !s.authorised(r, c.ID) {
				continue
			}
			found = append(found, buildCluster(c.Cluster))
		}
		items := pageOf(found, page, size)
		writeList(w, "ClusterList", page, len(items), len(found), func(out io.Writer) error { return cmv1.MarshalClusterList(items, out) })
	case OpListPolicies:
		id := policiesPath.FindStringSubmatch(r.URL.Path)[1]
		c := s.clusters[id]
		if c == nil || !s.authorised(r, id) {
			writeError(w, http.StatusNotFound, "cluster '"+id+"' not found")
			return false
		}
		var all []*cmv1.UpgradePolicy
		for _, p := range c.policies {
			all = append(all, buildPolicy(c.ID, p.Policy))
		}
		items := pageOf(all, page, size)
		writeList(w, "UpgradePolicyList", page, len(items), len(all), func(out io.Writer) error { return cmv1.MarshalUpgradePolicyList(items, out) })
	case OpGetPolicyState, OpPatchPolicyState:
		m := statePath.FindStringSubmatch(r.URL.Path)
		if !s.authorised(r, m[1]) {
			writeError(w, http.StatusNotFound, "upgrade policy '"+m[2]+"' not found")
			return false
		}
		return s.policyStateLocked(w, r.URL.Path, m[1], m[2], op == OpPatchPolicyState, body)
	case OpAddServiceLog:
		in, err := slv1.UnmarshalLogEntry(body)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return false
		}
		if !s.authorised(r, s.internalID(in.ClusterID(), in.ClusterUUID())) {
			writeError(w, http.StatusForbidden, "not allowed to post service logs for this cluster")
			return false
		}
		s.seq++
		id := fmt.Sprintf("log-%d", s.seq)
		stored, err := slv1.NewLogEntry().Copy(in).ID(id).HREF(clusterLogsPath + "/" + id).
			Timestamp(s.now().UTC()).CreatedAt(s.now().UTC()).Build()
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return false
		}
		s.logs = append(s.logs, stored)
		writeJSON(w, http.StatusCreated, func(out io.Writer) error { return slv1.MarshalLogEntry(stored, out) })
		return true
	case OpListServiceLogs:
		terms := map[string]string{}
		for _, m := range searchTerm.FindAllStringSubmatch(first(q["search"]), -1) {
			terms[m[1]] = m[2]
		}
		var found []*slv1.LogEntry
		for _, l := range s.logs {
			if v, ok := terms["cluster_id"]; ok && l.ClusterID() != v {
				continue
			}
			if v, ok := terms["cluster_uuid"]; ok && l.ClusterUUID() != v {
				continue
			}
			if v, ok := terms["event_stream_id"]; ok && l.EventStreamID() != v {
				continue
			}
			if !s.authorised(r, s.internalID(l.ClusterID(), l.ClusterUUID())) {
				continue
			}
			found = append(found, l)
		}
		items := pageOf(found, page, size)
		writeList(w, "ClusterLogList", page, len(items), len(found), func(out io.Writer) error { return slv1.MarshalLogEntryList(items, out) })
	default:
		writeError(w, http.StatusNotFound, "ocmsim does not serve "+r.Method+" "+r.URL.Path)
	}
	return false
}

// policyStateLocked answers a read or (patch) a change of a policy's state,
// with s.mu held; true when it changed something.
func (s *Server) policyStateLocked(w http.ResponseWriter, href, clusterID, policyID string, patch bool, body []byte) bool {
	p := s.policy(clusterID, policyID)
	if p == nil {
		writeError(w, http.StatusNotFound, "upgrade policy '"+policyID+"' not found")
		return false
	}
	if patch {
		in, err := cmv1.UnmarshalUpgradePolicyState(body)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return false
		}
		if v, ok := in.GetValue(); ok {
			p.State = string(v)
		}
		if d, ok := in.GetDescription(); ok {
			p.Description = d
		}
		p.history = append(p.history, StateChange{s.now(), p.State, p.Description})
	}
	st, _ := cmv1.NewUpgradePolicyState().ID(p.ID).HREF(href).
		Value(cmv1.UpgradePolicyStateValue(p.State)).Description(p.Description).Build()
	writeJSON(w, http.StatusOK, func(out io.Writer) error { return cmv1.MarshalUpgradePolicyState(st, out) })
	return patch
}

// internalID resolves a service log's cluster (by internal or external ID).
func (s *Server) internalID(id, uuid string) string {
	for _, c := range s.clusters {
		if c.ID == id || (uuid != "" && c.ExternalID == uuid) {
			return c.ID
		}
	}
	return "\x00unknown" // matches no cluster: refused
}

func (s *Server) sortedClusters() []*cluster {
	out := make([]*cluster, 0, len(s.clusters))
	for _, c := range s.clusters {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func buildCluster(c Cluster) *cmv1.Cluster {
	b := cmv1.NewCluster().ID(c.ID).HREF(clustersPrefix + "/" + c.ID).ExternalID(c.ExternalID).
		NodeDrainGracePeriod(cmv1.NewValue().Value(c.NodeDrainGracePeriodMinutes).Unit("minutes"))
	v := cmv1.NewVersion()
	if c.ChannelGroup != "" {
		v = v.ChannelGroup(c.ChannelGroup)
	}
	b = b.Version(v)
	out, err := b.Build()
	if err != nil {
		panic(err)
	}
	return out
}

func buildPolicy(clusterID string, p Policy) *cmv1.UpgradePolicy {
	b := cmv1.NewUpgradePolicy().ID(p.ID).HREF(clustersPrefix + "/" + clusterID + "/upgrade_policies/" + p.ID).
		ClusterID(clusterID).ScheduleType(cmv1.ScheduleType(p.ScheduleType)).UpgradeType(cmv1.UpgradeTypeOSD).
		Version(p.Version).NextRun(p.NextRun.UTC())
	if p.Schedule != "" {
		b = b.Schedule(p.Schedule)
	}
	out, err := b.Build()
	if err != nil {
		panic(err)
	}
	return out
}
