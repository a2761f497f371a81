package framework

import (
	"context"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LabelMachinePools labels the worker MachineSets with their machine pool,
// as OSD's provisioner (Hive) does, so that the upgrade-scheduler reserves
// capacity for them.
func LabelMachinePools(ctx context.Context, c client.Client) error {
	var list machinev1beta1.MachineSetList
	if err := c.List(ctx, &list, client.InNamespace("openshift-machine-api")); err != nil {
		return err
	}
	for i := range list.Items {
		ms := &list.Items[i]
		patch := client.MergeFrom(ms.DeepCopy())
		if ms.Labels == nil {
			ms.Labels = map[string]string{}
		}
		ms.Labels["hive.openshift.io/machine-pool"] = "worker"
		if err := c.Patch(ctx, ms, patch); err != nil {
			return err
		}
	}
	return nil
}
