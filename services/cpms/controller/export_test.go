package controller

import (
	"context"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/services/cpms/plan"
)

// ConfirmWithStaleClusterVersion plans from c as the reconciler's snapshot,
// but with ClusterVersion as a cache that has not seen its latest writes
// would show it (stale), and returns the planned action and whether confirm,
// reading through c, lets it go ahead.
func ConfirmWithStaleClusterVersion(ctx context.Context, c client.Client, cfg plan.Config, stale *configv1.ClusterVersion) (*plan.Action, bool, error) {
	r := &Reconciler{Client: c, APIReader: c, Config: cfg}
	set := &machinev1.ControlPlaneMachineSet{}
	if err := c.Get(ctx, setKey, set); err != nil {
		return nil, false, err
	}
	in, _, err := r.snapshot(ctx, set, time.Now())
	if err != nil {
		return nil, false, err
	}
	in.ClusterVersion = stale
	a := plan.Plan(in).Action
	if a == nil {
		return nil, false, nil
	}
	ok, err := r.confirm(ctx, in, a)
	return a, ok, err
}
