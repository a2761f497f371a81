package ocm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	sdk "github.com/openshift-online/ocm-sdk-go"
	cmv1 "github.com/openshift-online/ocm-sdk-go/clustersmgmt/v1"
	"github.com/openshift-online/ocm-sdk-go/logging"
	slv1 "github.com/openshift-online/ocm-sdk-go/servicelogs/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Operations, the op label of the request counter.
const (
	OpSearchClusters   = "search_clusters"
	OpListPolicies     = "list_upgrade_policies"
	OpGetPolicyState   = "get_policy_state"
	OpPatchPolicyState = "patch_policy_state"
	OpAddServiceLog    = "add_service_log"
	OpListServiceLogs  = "list_service_logs"
)

// Service log fields MUO sets on every notification.
const (
	ServiceName = "RedHat Managed Upgrade Notifications"
	LogType     = "Cluster Updates"
)

// ErrClusterNotFound is MUO's error when the external ID finds no single
// cluster.
var ErrClusterNotFound = errors.New("cluster not found in OCM: the pull-secret may be invalid, or the cluster's owner disabled or banned")

// ErrNotFound is a 404 from OCM (a policy deleted meanwhile).
var ErrNotFound = errors.New("not found in OCM")

// Client is the thin layer over ocm-sdk-go. It is built for one base URL and
// one access token; the caller builds a new one when either changes.
type Client struct {
	conn    *sdk.Connection
	timeout time.Duration
	// agent: conn is the in-cluster ocm-agent (NewAgentClient), not OCM.
	agent bool
	// observe counts every request by operation and HTTP status ("error"
	// when no answer came).
	observe func(op, code string)
}

// pageSize is how many policies one list request asks for.
const pageSize = 100

// Options are a connection's settings besides its address and credential.
type Options struct {
	// Timeout bounds one request; 30 s when not positive.
	Timeout time.Duration
	// Observe, when set, counts every request by operation and HTTP status.
	Observe func(op, code string)
	// Wrap, when set, wraps the HTTP transport (the leader fence).
	Wrap func(http.RoundTripper) http.RoundTripper
	// UserAgent is what the requests carry (DefaultUserAgent when empty).
	// The binary names its pod in it, so that OCM's logs, like the API
	// server's audit log, tell the replicas apart.
	UserAgent string
}

// DefaultUserAgent is the User-Agent of a client whose Options name none.
const DefaultUserAgent = "upshift-upgrade-scheduler"

// NewClient connects to baseURL with the pull-secret access token (see
// AccessToken). The SDK's own retries are off: a request is retried by the
// reconciler, which reads back what a lost response may have applied before
// writing again; an SDK retry of a POST would post a second service log.
func NewClient(baseURL, accessToken string, o Options) (*Client, error) {
	c, err := connect(sdk.NewConnectionBuilder().Tokens(accessToken), baseURL, o)
	if err != nil {
		return nil, fmt.Errorf("OCM connection to %s: %w", baseURL, err)
	}
	return c, nil
}

// connect builds the client on b: no SDK log, no SDK retries.
func connect(b *sdk.ConnectionBuilder, baseURL string, o Options) (*Client, error) {
	logger, err := logging.NewStdLoggerBuilder().Streams(io.Discard, io.Discard).Build()
	if err != nil {
		return nil, err
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	b = b.URL(baseURL).Logger(logger).Agent(o.UserAgent).RetryLimit(0)
	if o.Wrap != nil {
		b = b.TransportWrapper(o.Wrap)
	}
	conn, err := b.Build()
	if err != nil {
		return nil, err
	}
	if o.Observe == nil {
		o.Observe = func(string, string) {}
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	return &Client{conn: conn, timeout: o.Timeout, observe: o.Observe}, nil
}

// The ocm-agent's routes. It serves one cluster, the one it runs in, and
// proxies each route to OCM with its own credentials: GET / is the cluster
// (OCM's Cluster), GET /upgrade_policies its policies (a plain JSON array,
// no list envelope and no paging), GET and PATCH
// /upgrade_policies/{id}/state a policy's state. It has no service-log
// route.
const (
	agentClusterPath  = "/"
	agentPoliciesPath = "/upgrade_policies"
)

// ErrAgentNoServiceLogs: the ocm-agent serves no service-log route, so a
// service log cannot be posted or read back through it.
var ErrAgentNoServiceLogs = errors.New("the ocm-agent has no service-log route: service logs cannot be sent through it")

// NewAgentClient connects to the in-cluster ocm-agent at baseURL, which MUO
// uses instead of OCM when configManager.ocmBaseUrl names it. No credential
// is sent: the agent authenticates to OCM itself, so the pull secret's token
// is not handed to another workload. The SDK's retries are off, as for OCM.
func NewAgentClient(baseURL string, o Options) (*Client, error) {
	c, err := connect(sdk.NewUnauthenticatedConnectionBuilder(), baseURL, o)
	if err != nil {
		return nil, fmt.Errorf("ocm-agent connection to %s: %w", baseURL, err)
	}
	c.agent = true
	return c, nil
}

// raw sends a request the SDK has no typed call for (the ocm-agent's
// routes) and returns the body; an answer of 400 or more is an error, so
// that send counts and retries it as it does the typed calls' errors.
func (c *Client) raw(ctx context.Context, op string, again func(int) bool, build func() *sdk.Request) ([]byte, error) {
	resp, err := send(ctx, c, op, again, func(ctx context.Context) (*sdk.Response, error) {
		resp, err := build().SendContext(ctx)
		if err == nil && resp.Status() >= http.StatusBadRequest {
			err = fmt.Errorf("the ocm-agent answered %d: %s", resp.Status(), resp.String())
		}
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	return resp.Bytes(), nil
}

// Close releases the connection.
func (c *Client) Close() error { return c.conn.Close() }

// statusOf is the response status the SDK reports (0 without a response).
type statusOf interface{ Status() int }

func (c *Client) done(op string, resp statusOf, err error) error {
	code := "error"
	if resp != nil && resp.Status() != 0 {
		code = strconv.Itoa(resp.Status())
		if resp.Status() == http.StatusNotFound {
			c.observe(op, code)
			return fmt.Errorf("%s: %w", op, ErrNotFound)
		}
	}
	c.observe(op, code)
	if err != nil {
		return fmt.Errorf("OCM %s: %w", op, err)
	}
	return nil
}

// Retry is how often and how fast a request is tried again within one call
// when it failed for a reason that passes. A read is retried after any such
// failure: it has no side effect, and a blip on one of the two or three reads
// a notification makes would otherwise fail the whole attempt and cost the
// step its backoff (10 s, doubling with each failure). A write is retried
// only when OCM refused it with 429 (throttled: not handled at all). After
// any other failure it may have taken effect, and it is left to the
// reconciler, which reads back what OCM has before writing again.
var Retry = wait.Backoff{Steps: 3, Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.2}

// readAgain says whether a read that got status (0: no answer at all, a
// timeout or a dropped connection) may succeed if sent again: no answer,
// throttled or a server error. Any other 4xx will not change.
func readAgain(status int) bool {
	return status == 0 || status == http.StatusTooManyRequests || status >= http.StatusInternalServerError
}

// writeAgain says whether a write that got status certainly had no effect.
func writeAgain(status int) bool { return status == http.StatusTooManyRequests }

// send sends one request, each try with its own timeout, trying it again by
// Retry while again(status) and ctx is live, and returns the last try's
// response (nil without one) and error. Every try is counted by op and
// status. (Not client-go's retry.OnError: it reports a last error that
// wraps a context deadline, a request that timed out, as success.)
func send[R interface {
	comparable
	statusOf
}](ctx context.Context, c *Client, op string, again func(status int) bool, req func(context.Context) (R, error)) (R, error) {
	var resp, none R
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, Retry, func(ctx context.Context) (bool, error) {
		rctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		var err error
		resp, err = req(rctx)
		status := 0
		var answer statusOf // an untyped nil without a response
		if resp != none {
			status, answer = resp.Status(), resp
		}
		last = c.done(op, answer, err)
		return last == nil || ctx.Err() != nil || !again(status), nil
	})
	if last == nil && err != nil {
		// ctx ended before the first try: nothing was sent.
		return none, fmt.Errorf("OCM %s: %w", op, err)
	}
	return resp, last
}

// FindCluster finds the cluster by its external ID, as MUO does (exactly one
// must match).
func (c *Client) FindCluster(ctx context.Context, externalID string) (Cluster, error) {
	if c.agent {
		return c.agentCluster(ctx, externalID)
	}
	resp, err := send(ctx, c, OpSearchClusters, readAgain, func(ctx context.Context) (*cmv1.ClustersListResponse, error) {
		return c.conn.ClustersMgmt().V1().Clusters().List().
			Search(fmt.Sprintf("external_id = '%s'", externalID)).Size(1).SendContext(ctx)
	})
	if err != nil {
		return Cluster{}, err
	}
	if resp.Total() != 1 || resp.Items().Len() != 1 {
		return Cluster{}, ErrClusterNotFound
	}
	cl := resp.Items().Get(0)
	return Cluster{ID: cl.ID(), ExternalID: cl.ExternalID(), ChannelGroup: cl.Version().ChannelGroup(),
		NodeDrainGracePeriod: cl.NodeDrainGracePeriod().Value()}, nil
}

// agentCluster reads the cluster the ocm-agent serves: its own. One that
// names another external ID is not this cluster's agent.
func (c *Client) agentCluster(ctx context.Context, externalID string) (Cluster, error) {
	body, err := c.raw(ctx, OpSearchClusters, readAgain, func() *sdk.Request { return c.conn.Get().Path(agentClusterPath) })
	if err != nil {
		return Cluster{}, err
	}
	return agentClusterFrom(body, externalID)
}

// agentClusterFrom reads the body of the ocm-agent's cluster: the cluster
// when it has an ID and is externalID (or does not say), else
// ErrClusterNotFound.
func agentClusterFrom(body []byte, externalID string) (Cluster, error) {
	cl, err := cmv1.UnmarshalCluster(body)
	if err != nil {
		return Cluster{}, fmt.Errorf("reading the ocm-agent's cluster: %w", err)
	}
	if ext, ok := cl.GetExternalID(); cl.ID() == "" || (ok && ext != externalID) {
		return Cluster{}, ErrClusterNotFound
	}
	return Cluster{ID: cl.ID(), ExternalID: externalID, ChannelGroup: cl.Version().ChannelGroup(),
		NodeDrainGracePeriod: cl.NodeDrainGracePeriod().Value()}, nil
}

// Policies reads every upgrade policy of the cluster (all pages; MUO reads
// only the first policy) and each one's state.
func (c *Client) Policies(ctx context.Context, clusterID string) ([]Policy, error) {
	list := c.listPolicies
	if c.agent {
		list = c.agentPolicies
	}
	out, err := list(ctx, clusterID)
	if err != nil {
		return nil, err
	}
	for i := range out {
		st, _, err := c.PolicyState(ctx, clusterID, out[i].ID)
		if err != nil {
			return nil, err
		}
		out[i].State = st
	}
	return out, nil
}

// listPolicies reads OCM's list of the cluster's policies, page by page.
func (c *Client) listPolicies(ctx context.Context, clusterID string) ([]Policy, error) {
	var out []Policy
	for page := 1; ; page++ {
		resp, err := send(ctx, c, OpListPolicies, readAgain, func(ctx context.Context) (*cmv1.UpgradePoliciesListResponse, error) {
			return c.conn.ClustersMgmt().V1().Clusters().Cluster(clusterID).UpgradePolicies().List().
				Page(page).Size(pageSize).SendContext(ctx)
		})
		if err != nil {
			return nil, err
		}
		resp.Items().Each(func(p *cmv1.UpgradePolicy) bool {
			out = append(out, policyOf(p))
			return true
		})
		if resp.Items().Len() == 0 || len(out) >= resp.Total() {
			return out, nil
		}
	}
}

// agentPolicies reads the ocm-agent's list, which comes whole (its cluster
// is the agent's own).
func (c *Client) agentPolicies(ctx context.Context, _ string) ([]Policy, error) {
	body, err := c.raw(ctx, OpListPolicies, readAgain, func() *sdk.Request { return c.conn.Get().Path(agentPoliciesPath) })
	if err != nil {
		return nil, err
	}
	list, err := cmv1.UnmarshalUpgradePolicyList(body)
	if err != nil {
		return nil, fmt.Errorf("reading the ocm-agent's upgrade policies: %w", err)
	}
	var out []Policy
	for _, p := range list {
		out = append(out, policyOf(p))
	}
	return out, nil
}

// policyOf is what the scheduler reads of an upgrade policy (its state is
// read apart).
func policyOf(p *cmv1.UpgradePolicy) Policy {
	return Policy{ID: p.ID(), Version: p.Version(), NextRun: p.NextRun(), ScheduleType: string(p.ScheduleType())}
}

func (c *Client) stateResource(clusterID, policyID string) *cmv1.UpgradePolicyStateClient {
	return c.conn.ClustersMgmt().V1().Clusters().Cluster(clusterID).UpgradePolicies().UpgradePolicy(policyID).State()
}

// PolicyState reads a policy's state and description.
func (c *Client) PolicyState(ctx context.Context, clusterID, policyID string) (string, string, error) {
	if c.agent {
		body, err := c.raw(ctx, OpGetPolicyState, readAgain, func() *sdk.Request { return c.conn.Get().Path(agentStatePath(policyID)) })
		if err != nil {
			return "", "", err
		}
		return agentPolicyStateFrom(body)
	}
	resp, err := send(ctx, c, OpGetPolicyState, readAgain, func(ctx context.Context) (*cmv1.UpgradePolicyStateGetResponse, error) {
		return c.stateResource(clusterID, policyID).Get().SendContext(ctx)
	})
	if err != nil {
		return "", "", err
	}
	return string(resp.Body().Value()), resp.Body().Description(), nil
}

// agentPolicyStateFrom reads the body of a policy's state from the
// ocm-agent: its value and description.
func agentPolicyStateFrom(body []byte) (string, string, error) {
	st, err := cmv1.UnmarshalUpgradePolicyState(body)
	if err != nil {
		return "", "", fmt.Errorf("reading the ocm-agent's policy state: %w", err)
	}
	return string(st.Value()), st.Description(), nil
}

// SetPolicyState patches a policy's state.
func (c *Client) SetPolicyState(ctx context.Context, clusterID, policyID, value, description string) error {
	body, err := cmv1.NewUpgradePolicyState().Value(cmv1.UpgradePolicyStateValue(value)).Description(description).Build()
	if err != nil {
		return err
	}
	if c.agent {
		var buf bytes.Buffer
		if err := cmv1.MarshalUpgradePolicyState(body, &buf); err != nil {
			return err
		}
		_, err := c.raw(ctx, OpPatchPolicyState, writeAgain, func() *sdk.Request {
			return c.conn.Patch().Path(agentStatePath(policyID)).Header("Content-Type", "application/json").Bytes(buf.Bytes())
		})
		return err
	}
	_, err = send(ctx, c, OpPatchPolicyState, writeAgain, func(ctx context.Context) (*cmv1.UpgradePolicyStateUpdateResponse, error) {
		return c.stateResource(clusterID, policyID).Update().Body(body).SendContext(ctx)
	})
	return err
}

// ServiceLog is one service log to post.
type ServiceLog struct {
	Summary     string
	Description string
	// DocReferences are the articles the entry links (MUO's health check
	// service logs link one).
	DocReferences []string
	// Key is the idempotency key, stored as the entry's event_stream_id and
	// searched for before posting.
	Key string
}

// ErrReadBackRefused: OCM refused the service-log search (403 or 400). The
// search by event_stream_id is not something every OCM lets a cluster's
// pull-secret token do; it is a safeguard against duplicates, not a
// precondition for posting.
var ErrReadBackRefused = errors.New("OCM refused the service log read-back")

// ServiceLogPosted reports whether a service log with key was posted for the
// cluster already.
func (c *Client) ServiceLogPosted(ctx context.Context, cl Cluster, key string) (bool, error) {
	if c.agent {
		return false, ErrAgentNoServiceLogs
	}
	resp, err := send(ctx, c, OpListServiceLogs, readAgain, func(ctx context.Context) (*slv1.ClusterLogsListResponse, error) {
		return c.conn.ServiceLogs().V1().ClusterLogs().List().
			Search(fmt.Sprintf("cluster_id = '%s' and event_stream_id = '%s'", cl.ID, key)).Size(1).SendContext(ctx)
	})
	if err != nil {
		if resp != nil && (resp.Status() == http.StatusForbidden || resp.Status() == http.StatusBadRequest) {
			return false, fmt.Errorf("%w: %w", ErrReadBackRefused, err)
		}
		return false, err
	}
	return resp.Total() > 0, nil
}

// AddServiceLog posts a service log as MUO does: severity Info, visible to
// the customer, MUO's service name and log type.
func (c *Client) AddServiceLog(ctx context.Context, cl Cluster, l ServiceLog) error {
	if c.agent {
		return ErrAgentNoServiceLogs
	}
	b := slv1.NewLogEntry().ClusterID(cl.ID).ClusterUUID(cl.ExternalID).Severity(slv1.SeverityInfo).
		InternalOnly(false).ServiceName(ServiceName).LogType(slv1.LogType(LogType)).
		Summary(l.Summary).Description(l.Description).EventStreamID(l.Key)
	if len(l.DocReferences) > 0 {
		b.DocReferences(l.DocReferences...)
	}
	entry, err := b.Build()
	if err != nil {
		return err
	}
	_, err = send(ctx, c, OpAddServiceLog, writeAgain, func(ctx context.Context) (*slv1.ClusterLogsAddResponse, error) {
		return c.conn.ServiceLogs().V1().ClusterLogs().Add().Body(entry).SendContext(ctx)
	})
	return err
}

// agentStatePath is a policy's state on the ocm-agent.
func agentStatePath(policyID string) string {
	return agentPoliciesPath + "/" + url.PathEscape(policyID) + "/state"
}
