package controller

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/upshift-io/upshift/services/aromonitor/subnets"
)

// specChanged ignores status-only updates: each check writes the Cluster's
// status, and must not wake every other check by doing so (ARO's reconcile
// storm before it added the same predicate).
func specChanged() builder.WatchesOption {
	return builder.WithPredicates(predicate.GenerationChangedPredicate{})
}

// masterMachineChanged passes master Machines being created, deleted or
// having their spec changed; worker Machines come and go with scaling and are
// covered by their MachineSet.
func masterMachineChanged() builder.WatchesOption {
	isMaster := func(o client.Object) bool { return o.GetLabels()[subnets.MachineRoleLabel] == "master" }
	return builder.WithPredicates(predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return isMaster(e.Object) },
		DeleteFunc: func(e event.DeleteEvent) bool { return isMaster(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return isMaster(e.ObjectNew) && e.ObjectNew.GetGeneration() != e.ObjectOld.GetGeneration()
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	})
}

// named passes one object.
func named(key types.NamespacedName) builder.WatchesOption {
	return builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetName() == key.Name && o.GetNamespace() == key.Namespace
	}))
}
