// Package ocm is the upgrade-scheduler's OpenShift Cluster Manager (OCM)
// integration, as the managed-upgrade-operator (MUO) talks to OCM: it
// authenticates with the cluster's pull-secret token, finds the cluster by its
// external ID (ClusterVersion spec.clusterID), reads the cluster's upgrade
// policies, turns the one to act on into an UpgradeConfig spec, writes policy
// states and posts service logs.
//
// The decisions are pure (Pick, Spec, NextState, AccessToken): plain inputs,
// plain outputs, table-tested. Client is the thin layer over ocm-sdk-go.
package ocm

import (
	"fmt"
	"sort"
	"time"

	"github.com/blang/semver/v4"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// Cluster is what the scheduler needs of OCM's cluster.
type Cluster struct {
	// ID is OCM's internal cluster ID (upgrade policies and service logs are
	// addressed by it).
	ID string
	// ExternalID is the cluster's own ID, ClusterVersion spec.clusterID.
	ExternalID string
	// ChannelGroup is the version's channel group (stable, fast, candidate,
	// eus); empty on ARO.
	ChannelGroup string
	// NodeDrainGracePeriod is node_drain_grace_period.value; OCM gives it in
	// minutes.
	NodeDrainGracePeriod float64
}

// Policy is one upgrade policy with its state.
type Policy struct {
	ID           string
	Version      string
	NextRun      time.Time
	ScheduleType string
	// State is the policy state's value (pending, scheduled, started, ...).
	State string
}

// Policy state values (OCM's UpgradePolicyStateValue).
const (
	StatePending   = "pending"
	StateScheduled = "scheduled"
	StateStarted   = "started"
	StateDelayed   = "delayed"
	StateFailed    = "failed"
	StateCompleted = "completed"
	StateCancelled = "cancelled"
)

// actionable are the states MUO acts on: a policy pending (not yet
// confirmed), completed or cancelled is not an upgrade to run.
var actionable = map[string]bool{StateScheduled: true, StateStarted: true, StateDelayed: true, StateFailed: true}

// Pick chooses the policy to act on among all of a cluster's policies: the
// actionable one (scheduled, started, delayed or failed, with a version)
// that runs next, ties broken by ID so that the same set always gives the
// same answer. Two preferences come first: the policy the UpgradeConfig
// already answers to (current, its annotation), unless it failed, so that
// the attempt under way keeps its policy; then any policy that has not
// failed, so that a stale failed policy (its run past) does not hide the
// one scheduled since. MUO fetches a single policy and checks its state
// after choosing, so a completed automatic policy listed first hides a
// scheduled one; here every policy is read and the ignored ones are dropped
// before choosing.
func Pick(policies []Policy, current string) (Policy, bool) {
	var c []Policy
	for _, p := range policies {
		if actionable[p.State] && p.Version != "" {
			c = append(c, p)
		}
	}
	if len(c) == 0 {
		return Policy{}, false
	}
	rank := func(p Policy) int {
		switch {
		case p.State == StateFailed:
			return 2
		case current != "" && p.ID == current:
			return 0
		}
		return 1
	}
	sort.Slice(c, func(i, j int) bool {
		if ri, rj := rank(c[i]), rank(c[j]); ri != rj {
			return ri < rj
		}
		if !c[i].NextRun.Equal(c[j].NextRun) {
			return c[i].NextRun.Before(c[j].NextRun)
		}
		return c[i].ID < c[j].ID
	})
	return c[0], true
}

// Spec is the UpgradeConfig spec of policy p on cluster c, as MUO's OCM
// provider builds it:
//   - desired.version is the policy's version;
//   - desired.channel is "<channel group>-<major>.<minor>", the group stable
//     when OCM gives none (ARO), and for eus an odd minor rounded up to the
//     next even one (EUS channels exist for even minors only);
//   - upgradeAt is the policy's next run, RFC 3339;
//   - PDBForceDrainTimeout is the node drain grace period, in minutes as OCM
//     gives it;
//   - type is the configuration's upgradeType;
//   - capacityReservation is always true (OCM's own flag is not readable
//     through the policy, so MUO forces it).
func Spec(c Cluster, p Policy, t upgradev1alpha1.UpgradeType) (upgradev1alpha1.UpgradeConfigSpec, error) {
	v, err := semver.ParseTolerant(p.Version)
	if err != nil {
		return upgradev1alpha1.UpgradeConfigSpec{}, fmt.Errorf("upgrade policy %s: version %q: %w", p.ID, p.Version, err)
	}
	group := c.ChannelGroup
	if group == "" {
		group = "stable"
	}
	minor := v.Minor
	if group == "eus" && minor%2 == 1 {
		minor++
	}
	if c.NodeDrainGracePeriod < 0 {
		return upgradev1alpha1.UpgradeConfigSpec{}, fmt.Errorf("cluster %s: negative node drain grace period %v", c.ID, c.NodeDrainGracePeriod)
	}
	return upgradev1alpha1.UpgradeConfigSpec{
		Desired: upgradev1alpha1.Update{
			Version: p.Version,
			Channel: fmt.Sprintf("%s-%d.%d", group, v.Major, minor),
		},
		UpgradeAt:            p.NextRun.UTC().Format(time.RFC3339),
		PDBForceDrainTimeout: int32(c.NodeDrainGracePeriod),
		Type:                 t,
		CapacityReservation:  true,
	}, nil
}
