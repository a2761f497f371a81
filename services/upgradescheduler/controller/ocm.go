package controller

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/ocm"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

// OCM is the scheduler's connection to OCM, used when the configuration's
// configManager.source is OCM: the policy syncer reads the upgrade policies
// through it and the reconciler delivers notifications. The connection is
// built from the pull secret and ClusterVersion's cluster ID — or, when
// ocmBaseUrl names the in-cluster ocm-agent, to the agent without a
// credential — and rebuilt when the URL or the token change. The cluster is
// read again on every policy sync (its channel group and node drain grace
// period feed the spec, and change in OCM); notifications only need its
// internal ID, which is kept from the last read.
type OCM struct {
	// Reader reads the pull secret, by name and uncached: a Secret informer
	// would need list and watch on the Secrets of openshift-config.
	Reader client.Reader
	// Timeout bounds one OCM request.
	Timeout time.Duration
	// Transport, when set, wraps the HTTP transport: the binary fences
	// OCM's writes with the leader election (libs/runtime.Fenced).
	Transport func(http.RoundTripper) http.RoundTripper
	// UserAgent is what OCM requests carry (ocm.Options.UserAgent).
	UserAgent string

	// observe counts each OCM request (the Reconciler's metrics, set by
	// SetupWithManager).
	observe func(op, code string)

	mu      sync.Mutex
	conn    *ocm.Client
	connKey string
	cluster *ocm.Cluster
}

// ocmSource says whether cfg routes the scheduler to OCM (any case, as MUO).
func ocmSource(cfg *config.Config) bool {
	return cfg != nil && strings.EqualFold(cfg.Source, "OCM")
}

// localSource: the UpgradeConfig is the user's own (configManager.source
// LOCAL).
func localSource(cfg *config.Config) bool {
	return cfg != nil && strings.EqualFold(cfg.Source, "LOCAL")
}

// client returns the connection for cfg's base URL and the cluster's token,
// and the cluster: read from OCM when fresh (or not known yet), else as last
// read.
func (o *OCM) client(ctx context.Context, cfg *config.Config, cv *configv1.ClusterVersion, fresh bool) (*ocm.Client, ocm.Cluster, error) {
	if cv == nil {
		return nil, ocm.Cluster{}, fmt.Errorf("clusterversion/version cannot be read")
	}
	externalID := string(cv.Spec.ClusterID)
	// The ocm-agent needs no credential (it authenticates to OCM itself);
	// OCM takes the pull secret's token.
	token := ""
	if !cfg.OCMAgent {
		secret := &corev1.Secret{}
		if err := o.Reader.Get(ctx, client.ObjectKey{Namespace: ocm.PullSecretNamespace, Name: ocm.PullSecretName}, secret); err != nil {
			return nil, ocm.Cluster{}, fmt.Errorf("reading the pull secret: %w", err)
		}
		var err error
		if token, err = ocm.AccessToken(secret.Data, externalID); err != nil {
			return nil, ocm.Cluster{}, err
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if key := fmt.Sprintf("%s\x00%s\x00%v", cfg.OCMBaseURL, token, cfg.OCMAgent); key != o.connKey || o.conn == nil {
		if o.conn != nil {
			_ = o.conn.Close()
		}
		var c *ocm.Client
		var err error
		opts := ocm.Options{Timeout: o.Timeout, Observe: o.observe, Wrap: o.Transport, UserAgent: o.UserAgent}
		if cfg.OCMAgent {
			c, err = ocm.NewAgentClient(cfg.OCMBaseURL, opts)
		} else {
			c, err = ocm.NewClient(cfg.OCMBaseURL, token, opts)
		}
		if err != nil {
			return nil, ocm.Cluster{}, err
		}
		o.conn, o.connKey, o.cluster = c, key, nil
	}
	if fresh || o.cluster == nil || o.cluster.ExternalID != externalID {
		cl, err := o.conn.FindCluster(ctx, externalID)
		if err != nil {
			return nil, ocm.Cluster{}, err
		}
		o.cluster = &cl
	}
	return o.conn, *o.cluster, nil
}

// deliver sends notification n of uc to OCM: to the policy the syncer
// recorded on uc, or (an UpgradeConfig written by hand) to MUO's match by
// version and next run.
func (o *OCM) deliver(ctx context.Context, uc *upgradev1alpha1.UpgradeConfig, cfg *config.Config, cv *configv1.ClusterVersion, n *plan.Notification) (ocm.Outcome, error) {
	c, cl, err := o.client(ctx, cfg, cv, false)
	if err != nil {
		return "", err
	}
	notice := ocm.Notice{State: n.Event, PolicyState: n.PolicyState, Description: n.Description}
	if n.ServiceLog {
		notice = ocm.Notice{ServiceLog: &ocm.ServiceLog{Summary: n.ServiceLogSummary, Description: n.ServiceLogDescription,
			DocReferences: n.DocReferences, Key: n.Key(string(uc.UID))}}
		return c.Deliver(ctx, cl, "", notice)
	}
	id := uc.Annotations[ocm.PolicyAnnotation]
	if id == "" {
		policies, err := c.Policies(ctx, cl.ID)
		if err != nil {
			return "", err
		}
		p, ok := ocm.MatchPolicy(policies, "", uc.Spec.Desired.Version, uc.Spec.UpgradeAt)
		if !ok {
			return ocm.PolicyGone, nil
		}
		id = p.ID
	}
	return c.Deliver(ctx, cl, id, notice)
}
