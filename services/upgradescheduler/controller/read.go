package controller

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

// config reads the ConfigMap of namespace. An invalid or missing one is
// returned as the error next to the last good configuration (nil if none):
// the scheduler never runs on a zero value.
func (r *Reconciler) config(ctx context.Context, namespace string) (*config.Config, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastGood == nil {
		r.lastGood = map[string]*config.Config{}
	}
	cm := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: config.ConfigMapName}, cm)
	var cfg *config.Config
	switch {
	case apierrors.IsNotFound(err):
		err = fmt.Errorf("ConfigMap %s/%s not found", namespace, config.ConfigMapName)
	case err == nil:
		cfg, err = config.FromConfigMapData(cm.Data)
	}
	if err != nil {
		return r.lastGood[namespace], err
	}
	r.lastGood[namespace] = cfg
	return cfg, nil
}

// snapshot reads what the planner decides from, from the cache (and, on
// FedRAMP clusters, the FileIntegrity object from the apiserver). The alerts
// are not read here: Reconcile reads them only for a plan that checks them.
//
// The lists are the cache's own objects, not copies: copying every Node and
// Machine on every plan was a quarter of the scheduler's CPU in an update of
// 500 workers. That is safe because nothing writes to a snapshot: the
// planner only reads it (its harness checks that after every plan) and every
// object an action sends is a deep copy (act.go).
func (r *Reconciler) snapshot(ctx context.Context, cfg *config.Config) (plan.Snapshot, error) {
	var s plan.Snapshot
	cv := &configv1.ClusterVersion{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv); {
	case err == nil:
		s.ClusterVersion = cv
	case !apierrors.IsNotFound(err):
		return s, err
	}
	var cos configv1.ClusterOperatorList
	var pools mcfgv1.MachineConfigPoolList
	var nodes corev1.NodeList
	var pdbs policyv1.PodDisruptionBudgetList
	var mss machinev1beta1.MachineSetList
	var machines machinev1beta1.MachineList
	for _, l := range []struct {
		list client.ObjectList
		opts []client.ListOption
	}{
		{&cos, nil}, {&pools, nil}, {&nodes, nil}, {&pdbs, nil},
		{&mss, []client.ListOption{client.InNamespace(plan.MachineAPINamespace)}},
		{&machines, []client.ListOption{client.InNamespace(plan.MachineAPINamespace)}},
	} {
		if err := r.Client.List(ctx, l.list, append(l.opts, client.UnsafeDisableDeepCopy)...); err != nil {
			return s, err
		}
	}
	s.ClusterOperators, s.Pools, s.Nodes, s.PDBs = cos.Items, pools.Items, nodes.Items, pdbs.Items
	if r.runs.Watched() {
		var runs nodegatev1alpha1.MutexRunConfigList
		if err := r.Client.List(ctx, &runs, client.UnsafeDisableDeepCopy); err != nil {
			return s, err
		}
		for i := range runs.Items {
			s.NodeGateRuns = append(s.NodeGateRuns, gating.Read(&runs.Items[i]))
		}
	}
	s.MachineSets, s.Machines = mss.Items, machines.Items
	if cfg != nil && cfg.FedRAMP {
		// Without this the post-upgrade task would never see its own
		// annotation and would patch on every plan. One object, read
		// uncached (the client does not cache unstructured objects): an
		// informer for it would need list and watch across its namespace.
		fi := &unstructured.Unstructured{}
		fi.SetGroupVersionKind(fileIntegrityGVK)
		switch err := r.Client.Get(ctx, fileIntegrityKey, fi); {
		case err == nil:
			_, s.FileIntegrityReinitRequested = fi.GetAnnotations()[fileIntegrityReinit]
		case !apierrors.IsNotFound(err):
			return s, err
		}
	}
	return s, nil
}
