package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/upshift-io/upshift/services/aromonitor/ownership"
	"github.com/upshift-io/upshift/services/aromonitor/subnets"
)

// specChanged ignores status-only updates: each check writes the
// MonitorConfig's status (and some the Cluster's), and must not wake every
// other check by doing so (ARO's reconcile storm before it added the same
// predicate). Creations pass: the MonitorConfig appearing wakes every check.
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
	return builder.WithPredicates(isNamed(key))
}

// isNamed is the predicate of named, to combine with others (a second
// WithPredicates replaces the first).
func isNamed(key types.NamespacedName) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetName() == key.Name && o.GetNamespace() == key.Namespace
	})
}

// toCluster maps every watched object to the one work item: each check runs
// over the whole cluster.
var toCluster = handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
	return []reconcile.Request{clusterKey}
})

// aroOperatorDeployments passes ARO operator's two deployments appearing,
// going, or changing their replicas or readiness: what decides, and is
// reported as, who owns each check.
func aroOperatorDeployments() builder.WatchesOption {
	isARO := func(o client.Object) bool {
		return o.GetNamespace() == ownership.Namespace &&
			(o.GetName() == ownership.MasterDeployment || o.GetName() == ownership.WorkerDeployment)
	}
	return builder.WithPredicates(predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return isARO(e.Object) },
		DeleteFunc: func(e event.DeleteEvent) bool { return isARO(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*appsv1.Deployment)
			n, ok2 := e.ObjectNew.(*appsv1.Deployment)
			return isARO(e.ObjectNew) && (!ok1 || !ok2 || !equality.Semantic.DeepEqual(o.Spec.Replicas, n.Spec.Replicas) ||
				o.Status.ReadyReplicas != n.Status.ReadyReplicas)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	})
}
