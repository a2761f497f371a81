package seed

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// createRetries: a create the API server gave up on (its 34 s create
// timeout, on a machine running several test clusters at once) is sent
// again, a second later, then two: it may have been stored meanwhile, and
// AlreadyExists counts as created. Any other error fails the seed at once.
var createRetries = wait.Backoff{Steps: 3, Duration: time.Second, Factor: 2}

// serverGaveUp: the API server timed out or shed the request; trying again
// is safe for a create.
func serverGaveUp(err error) bool {
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err)
}

// Seed builds the topology and creates it through c. Objects that already
// exist are left as they are, so Seed can be re-run.
func Seed(ctx context.Context, c client.Client, t Topology) (*Objects, error) {
	o, err := Build(t, time.Now())
	if err != nil {
		return nil, err
	}
	return o, Apply(ctx, c, o)
}

// Apply creates the objects and writes their status.
func Apply(ctx context.Context, c client.Client, o *Objects) error {
	create := func(obj client.Object, withStatus bool) error {
		var status client.Object
		if withStatus {
			status = obj.DeepCopyObject().(client.Object)
		}
		err := retry.OnError(createRetries, serverGaveUp, func() error { return c.Create(ctx, obj) })
		if err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return fmt.Errorf("create %s %s: %w", kindOf(c.Scheme(), obj), obj.GetName(), err)
		}
		if status == nil {
			return nil
		}
		status.SetResourceVersion(obj.GetResourceVersion())
		status.SetUID(obj.GetUID())
		status.SetGeneration(obj.GetGeneration())
		status.SetCreationTimestamp(obj.GetCreationTimestamp())
		if err := c.Status().Update(ctx, status); err != nil {
			return fmt.Errorf("status of %s %s: %w", kindOf(c.Scheme(), obj), obj.GetName(), err)
		}
		return nil
	}
	for _, x := range o.Namespaces {
		if err := create(x, false); err != nil {
			return err
		}
	}
	if o.GraphConfigMap != nil {
		if err := create(o.GraphConfigMap, false); err != nil {
			return err
		}
	}
	if o.MCODeployment != nil {
		if err := create(o.MCODeployment, false); err != nil {
			return err
		}
	}
	if o.CPMSOperatorDeployment != nil {
		if err := create(o.CPMSOperatorDeployment, false); err != nil {
			return err
		}
	}
	if o.Infrastructure != nil {
		if err := create(o.Infrastructure, true); err != nil {
			return err
		}
	}
	o.ClusterVersion.Status.ObservedGeneration = 1
	if err := create(o.ClusterVersion, true); err != nil {
		return err
	}
	for _, x := range o.ClusterOperators {
		if err := create(x, true); err != nil {
			return err
		}
	}
	for _, x := range o.MachineConfigs {
		if err := create(x, false); err != nil {
			return err
		}
	}
	for _, x := range o.Pools {
		x.Status.ObservedGeneration = 1
		if err := create(x, true); err != nil {
			return err
		}
	}
	for _, x := range o.MachineSets {
		x.Status.ObservedGeneration = 1
		if err := create(x, true); err != nil {
			return err
		}
	}
	for _, x := range o.Machines {
		if err := create(x, true); err != nil {
			return err
		}
	}
	for _, x := range o.Nodes {
		if err := create(x, false); err != nil {
			return err
		}
	}
	if o.CPMS != nil {
		if err := create(o.CPMS, false); err != nil {
			return err
		}
	}
	for _, x := range o.Deployments {
		if err := create(x, false); err != nil {
			return err
		}
	}
	for _, x := range o.PDBs {
		if err := create(x, false); err != nil {
			return err
		}
	}
	return nil
}

func kindOf(s *runtime.Scheme, obj runtime.Object) string {
	if gvks, _, err := s.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		return gvks[0].Kind
	}
	return fmt.Sprintf("%T", obj)
}
