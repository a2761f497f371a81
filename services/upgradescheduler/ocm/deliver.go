package ocm

import (
	"context"
	"errors"
	"time"
)

// Notice is one notification: a policy state to report, or a service log.
type Notice struct {
	// State is MUO's name of the notice (StateStarted, StateSkipped, ...),
	// which MUO's transitions are written in; PolicyState is the OCM state
	// it writes (empty for a service log only), with Description.
	State       string
	PolicyState string
	Description string
	ServiceLog  *ServiceLog
}

// Outcome is what delivering a Notice did.
type Outcome string

const (
	// Sent: written now.
	Sent Outcome = "Sent"
	// AlreadySent: OCM already had it (an earlier send whose record was
	// lost); nothing written.
	AlreadySent Outcome = "AlreadySent"
	// TransitionNotAllowed: the policy is in a state MUO never moves from to this
	// one; nothing written.
	TransitionNotAllowed Outcome = "TransitionNotAllowed"
	// PolicyGone: the policy was deleted in OCM; nothing to write.
	PolicyGone Outcome = "PolicyGone"
)

// Deliver sends n for policyID of cluster cl, reading back first: a state
// already set or a service log already posted (by key) is not written again,
// so a resend after a crash or a lost response writes nothing twice. An error
// means nothing is known to have been written; the caller retries.
func (c *Client) Deliver(ctx context.Context, cl Cluster, policyID string, n Notice) (Outcome, error) {
	if l := n.ServiceLog; l != nil {
		posted, err := c.ServiceLogPosted(ctx, cl, l.Key)
		if errors.Is(err, ErrReadBackRefused) {
			// Posted without the read-back rather than never: a refused
			// search must not hold the upgrade (the notice comes right
			// before commencement). The cost is a possible duplicate log
			// after a crash between posting and recording.
			posted, err = false, nil
		}
		if err != nil {
			return "", err
		}
		if posted {
			return AlreadySent, nil
		}
		if err := c.AddServiceLog(ctx, cl, *l); err != nil {
			return "", err
		}
		return Sent, nil
	}
	current, description, err := c.PolicyState(ctx, cl.ID, policyID)
	if errors.Is(err, ErrNotFound) {
		return PolicyGone, nil
	}
	if err != nil {
		return "", err
	}
	switch NextState(current, description, n.State, n.PolicyState, n.Description) {
	case AlreadySet:
		return AlreadySent, nil
	case NotAllowed:
		return TransitionNotAllowed, nil
	}
	if err := c.SetPolicyState(ctx, cl.ID, policyID, n.PolicyState, n.Description); err != nil {
		if errors.Is(err, ErrNotFound) {
			return PolicyGone, nil
		}
		return "", err
	}
	return Sent, nil
}

// MatchPolicy finds the policy an UpgradeConfig came from: the one with the
// recorded ID when there is one, else MUO's match, the policy with the same
// version whose next run is upgradeAt.
func MatchPolicy(policies []Policy, id, version, upgradeAt string) (Policy, bool) {
	for _, p := range policies {
		if id != "" && p.ID == id {
			return p, true
		}
	}
	if id != "" {
		return Policy{}, false
	}
	at, err := time.Parse(time.RFC3339, upgradeAt)
	if err != nil {
		return Policy{}, false
	}
	for _, p := range policies {
		if p.Version == version && p.NextRun.Equal(at) {
			return p, true
		}
	}
	return Policy{}, false
}
